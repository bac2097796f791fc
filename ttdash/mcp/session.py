"""What one server session keeps: the traces it loaded (an LRU of a few views), the history
store, the last look at each live directory (for its row rate); and the two ways a tool reaches
the CLI's numbers: the report writers' functions on a cached view, or a command's own function
with its JSON written into memory (the command's one code path, stdout captured)."""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..commands.options import WindowOptions
from ..model.errors import TraceError

#: Views kept in memory per session (a loaded 93,600-op trace is ~100 MB).
CACHE_SIZE = 4


class ToolError(Exception):
    """A tool's failure: one line, as the CLI prints it (`ttdash: ...`), never a traceback."""


def cli_line(exc: BaseException) -> str:
    """The line `ttdash.cli.main` prints on stderr for `exc` (without the newline)."""
    from ..commands.common import inert_line

    if isinstance(exc, ToolError):
        return str(exc)
    if isinstance(exc, TraceError):
        return inert_line(f"ttdash: {exc.oneline()}")
    if isinstance(exc, OSError):
        where = exc.filename or "output"
        return inert_line(f"ttdash: {TraceError(where, exc.strerror or str(exc)).oneline()}")
    if isinstance(exc, ValueError):  # a filter that cannot mean anything, a bad label
        return inert_line(f"ttdash: {exc}")
    return inert_line(f"ttdash: internal error: {type(exc).__name__}: {exc}")


def window_options(args: dict[str, Any]) -> WindowOptions:
    """The CLI's WindowOptions from a tool's window arguments (model.columns defaults)."""
    from ..model.arch import get_arch
    from ..model.columns import PAUSE_ABOVE_US

    arch = args.get("arch")
    return WindowOptions(
        signpost=args.get("signpost"), start_signpost=args.get("start_signpost"),
        end_signpost=args.get("end_signpost"),
        perf_report_window=bool(args.get("perf_report_window")), replay=args.get("replay"),
        per_device=bool(args.get("per_device")),
        arch=get_arch(arch).name if arch else None,
        pause_above_us=float(args.get("pause_above_us") or PAUSE_ABOVE_US))


def _stamp(path: str) -> tuple[Any, ...]:
    """What says a trace changed on disk: each file's (path, inode, size, mtime)."""
    from ..model.read.discover import resolve_trace_paths

    out = []
    for p in resolve_trace_paths(path):
        st = p.stat()
        out.append((str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


@dataclass
class Session:
    store: str | None = None  # the history tools' store (`ttdash mcp --store`)
    views: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict)
    looks: dict[str, tuple[float, int]] = field(default_factory=dict)  # watch: (time, rows)
    lock: threading.Lock = field(default_factory=threading.Lock)
    loads: int = 0  # views loaded from disk (a test reads it: the cache works)

    def view(self, path: str, window: WindowOptions):  # -> model.View
        """The view of `path` under `window`, loaded once per session while the files do not
        change (the model's on-disk cache makes a reload after a change cheap)."""
        from ..commands.common import view_of

        try:
            key = (_stamp(path), window)
        except (OSError, TraceError):  # missing or unreadable: the load says so, as the CLI's
            return view_of(path, window, "analysis")
        hit = self.views.get(key)
        if hit is not None:
            self.views.move_to_end(key)
            return hit
        view = view_of(path, window, "analysis")
        self.loads += 1
        self.views[key] = view
        while len(self.views) > CACHE_SIZE:
            self.views.popitem(last=False)
        return view


def run_command(command: Callable[[Any], int], opts: Any) -> tuple[int, dict[str, Any]]:
    """`command(opts)` (a `ttdash.commands` function with --format json and no --output) with
    its stdout in memory: its exit code and the JSON document it wrote. The MCP transport
    keeps its own handle on the real stdout, so nothing of this reaches the wire; the session's
    lock keeps one command at a time."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = command(opts)
    text = buf.getvalue()
    if not text.strip():
        raise ToolError("ttdash: internal error: the command wrote no JSON")
    return rc, json.loads(text)


def as_json(obj: Any) -> Any:
    """A document as the CLI's JSON writers leave it (report.safe.json_clean, then a JSON
    round trip: numpy scalars and tuples become what a reader of the CLI's output sees)."""
    from ..report.safe import json_clean

    return json.loads(json.dumps(json_clean(obj), separators=(",", ":"), allow_nan=False))
