"""Export by file name: the suffix picks the format from the one registry (report.formats), as
`report -o` and `diff -o` do; the trace screen's op rows and grouped table, the diff screen's diff.

In a browser session (`ttdash serve`: Textual's web driver) a typed name is never a path on the
server: the export goes into the one directory the server was started with (--export-dir, passed
to its sessions as SERVE_EXPORT_DIR), by file name only, and is off without it (`served_target`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import numpy as np

from ..model import View
from ..model.errors import TraceError
from ..report import formats
from ..report.single import groups_csv, groups_markdown

#: Set by `ttdash serve` in its sessions' environment: the directory their exports go into.
SERVE_EXPORT_DIR = "TTDASH_SERVE_EXPORT_DIR"
EXPORT_OFF = ("export is off in this browser session: the server was started without "
              "--export-dir")
NAME_ONLY = "give a file name only: a browser session exports into the server's export directory"

#: What the op table exports: every registered format with a writer and a file suffix.
OP_EXPORTS = tuple(f.name for f in formats.FORMATS if f.writer and f.suffixes)
#: The grouped view's writers, by registry format.
GROUP_WRITERS: dict[str, Callable[..., None]] = {"csv": groups_csv, "markdown": groups_markdown}


def suffix_list(offered: tuple[str, ...]) -> str:
    """The offered formats' suffixes, as a prompt or an error names them."""
    return ", ".join(f.suffixes[0] for f in formats.FORMATS if f.name in offered and f.suffixes)


def export_format(target: Path, offered: tuple[str, ...]) -> formats.OutputFormat:
    """The format `target`'s suffix asks for, among `offered`; TraceError otherwise."""
    fmt = formats.for_path(target, offered)
    if fmt is None:
        raise TraceError(target, f"no export format for this name; end it in "
                         f"{suffix_list(offered)}")
    return fmt


def write_ops(fmt: formats.OutputFormat, view: View, rows: np.ndarray,
              shown: Callable[[], View], out: TextIO) -> None:
    """The op rows a table shows, in `fmt`: a writer that takes `rows` gets the table's rows (its
    order and filter; shares stay those of the whole window); a whole-view writer (Perfetto, the
    text report) gets `shown()`, the shown ops as a view."""
    write = fmt.write()
    if "rows" in inspect.signature(write).parameters:
        write(view, out, rows=rows)
    else:
        write(shown(), out)


def served_target(name: str, root: str | None = None) -> Path:
    """Where a browser session's export named `name` goes: `root` (default: the server's
    --export-dir) / name, a plain file name (no directory, no `..`, not hidden); not over a
    symlink or anything but a regular file. TraceError otherwise, and when exports are off."""
    root = os.environ.get(SERVE_EXPORT_DIR) if root is None else root
    if not root:
        raise TraceError(None, EXPORT_OFF)
    name = name.strip()
    if (not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name
            or Path(name).name != name):
        raise TraceError(name or None, NAME_ONLY)
    target = Path(root) / name
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise TraceError(target, "is not a regular file; not writing to it")
    return target
