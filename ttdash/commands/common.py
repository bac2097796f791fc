"""What several commands share: loading a trace's view, writing an output."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from ..memory import trim
from ..model.read.text import clean_text
from .options import OutputOptions, WindowOptions


def load_view(path: str | tuple[str, ...], opts: WindowOptions,
              columns: str = "analysis", keep: bool = True):  # -> model.View
    """One trace's view; several paths: reports of one run merged (tt-perf-report's several
    CSV arguments). Progress on stderr on a terminal. `keep`: see view_of."""
    from .progress import on_stderr

    with on_stderr():
        return view_of(path, opts, columns, keep)


def load_views(paths: list[str | tuple[str, ...]], opts: WindowOptions,
               columns: str = "analysis", entries: list | None = None
               ) -> list:  # -> list[model.View]
    """Several traces' views (a diff's two sides), loaded side by side in threads: the parse of
    one overlaps the analysis of the other (pyarrow and numpy release the GIL). An error is
    raised for the first path that has one, as a one-by-one load would. The views analysed
    here are not yet kept in the analysis cache: the caller keeps them (remember_all) once
    its output is written, with what it worked out from them. `entries`: each path's cache
    entry when the caller has found them already (cache_entry)."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from .progress import on_stderr

    with on_stderr(), ThreadPoolExecutor(len(paths)) as pool:
        futures = [pool.submit(contextvars.copy_context().run, view_of, p, opts, columns,
                               False, entries[k] if entries is not None else _ASK)
                   for k, p in enumerate(paths)]
        return [f.result() for f in futures]


_ASK = object()  # view_of: find the cache entry


def view_of(path: str | tuple[str, ...], opts: WindowOptions, columns: str, keep: bool = True,
            entry: Any = _ASK):
    """load_view without the progress display (a caller that shows it its own way). The
    analysed view of a large file is kept in the cache (model.analysis_cache; at once, or,
    not `keep`, when the caller calls `remember`) and read from there when the same content
    is asked for with the same options. `entry`: cache_entry's, when already found."""
    if entry is _ASK:
        entry = cache_entry(path, opts, columns)
    view = entry.read(lazy=columns == "lazy") if entry is not None else None
    if view is not None:
        return view
    trace = trace_of(path, opts, columns)
    view = view_from(trace, opts.window(trace), opts)
    if entry is not None:
        view.__dict__["_acache"] = entry
        if keep:
            view.warnings()  # (every front end shows them: kept with the view, not found again)
            remember(view)
    return view


def cache_entry(path: str | tuple[str, ...], opts: WindowOptions, columns: str):
    """Where the analysed view of one large file read with `opts` is cached (a
    model.analysis_cache.Entry), or None: several files, every column asked for, a live log,
    the cache off or the file small."""
    from ..model.errors import TraceError
    from ..model.read.analysis_cache import Entry
    from ..model.read.discover import resolve_trace_paths

    if columns not in ("analysis", "compare", "lazy") or (isinstance(path, tuple)
                                                          and len(path) != 1):
        return None
    given = path[0] if isinstance(path, tuple) else path
    try:
        paths = resolve_trace_paths(given)
    except (TraceError, OSError):
        return None  # the load says what is wrong
    if len(paths) != 1 or paths[0].parent.name == ".logs":
        return None
    return Entry.of(paths[0], repr(opts))


def remember(view) -> None:  # (model.View)
    """Keep `view` in the analysis cache when it was analysed here (not read from there),
    with whatever its command worked out from it meanwhile (iterations, why-slow figures)."""
    entry = view.__dict__.get("_acache")
    if entry is not None and entry.grown(view):
        from .progress import on_stderr

        with on_stderr():
            entry.write(view)


def remember_all(views) -> None:  # (list[model.View])
    """`remember` each view, once per cache entry (a file and its hard link, or the same
    content twice, share one: it is written once)."""
    done: set = set()
    for view in views:
        entry = view.__dict__.get("_acache")
        if entry is not None and entry.file not in done:
            done.add(entry.file)
            remember(view)


class Loaded(NamedTuple):
    """A trace read and the window asked for found in it (load_trace), not yet analysed; or,
    from the analysis cache, already analysed (`view`)."""
    trace: Any  # model.Trace
    window: Any  # model.Window
    selected: tuple[Any, str] | None  # Trace.window_rows: its rows and their description
    entry: Any = None  # model.analysis_cache.Entry: where the view is to be kept
    view: Any = None  # model.View read from the cache


def load_trace(path: str | tuple[str, ...], opts: WindowOptions) -> Loaded:
    """One trace read and its rows in the window `opts` ask for (a window it does not have, a
    replay session or a steady state it lacks, fails here: before any analysis or output),
    with the progress display; or its analysed view from the cache."""
    from .progress import on_stderr

    with on_stderr():
        entry = cache_entry(path, opts, "analysis")
        view = entry.read() if entry is not None else None
        if view is not None:
            return Loaded(view.trace, view.window, None, entry, view)
        trace = trace_of(path, opts, "analysis")
        window = opts.window(trace)
        return Loaded(trace, window, trace.window_rows(window), entry)


def analysed(loaded: Loaded, opts: WindowOptions):  # -> model.View
    """load_trace's trace analysed in its window, with the progress display (the command
    calls `remember` on it once its output is written)."""
    from .progress import on_stderr

    if loaded.view is not None:
        return loaded.view
    with on_stderr():
        view = view_from(loaded.trace, loaded.window, opts, loaded.selected)
    if loaded.entry is not None:
        view.__dict__["_acache"] = loaded.entry
    return view


def trace_of(path: str | tuple[str, ...], opts: WindowOptions, columns: str):
    """The trace (a model.Trace) at `path`, or the reports of one run merged."""
    from ..model import Trace
    from ..model.read.discover import resolve_trace_path, resolve_trace_paths

    if isinstance(path, tuple) and len(path) > 1:
        paths = [resolve_trace_path(p) for p in path]
    else:  # a multi-host run's root: every rank's report
        paths = resolve_trace_paths(path[0] if isinstance(path, tuple) else path)
    for given, p in zip(path if isinstance(path, tuple) else (path,), paths):
        if p.parent.name == ".logs" and p.parent.parent == Path(given):
            note(f"{given}: no ops_perf_results*.csv report (yet): reading its live log {p} "
                 "(the device ops so far)")
    if len(paths) > 1:
        trace = Trace.load_many(paths, arch=opts.arch, columns=columns)
    else:
        trace = Trace.load(paths[0], arch=opts.arch, columns=columns)
    trim()  # the parse's freed buffers: not part of the analysis's peak
    return trace


def view_from(trace, window, opts: WindowOptions, selected=None):  # -> model.View
    """`trace` analysed in `window` as `opts` ask (devices merged, the pause threshold);
    `selected`: the window's rows, when already found."""
    view = trace.view(window, merge=not opts.per_device, selected=selected)
    view.pause_above_us = opts.pause_above_us
    trim()  # the load's freed chunks: not part of the peak of what comes next
    return view


def preview_of(table, opts: WindowOptions):  # (model.RawTable) -> model.View
    """The first rows of a trace still loading, as `open` shows them meanwhile: every op (the
    window needs the whole file's signposts), the user's other options."""
    from ..model import Trace, Window

    view = Trace.from_table(table, arch=opts.arch).view(Window("all"),
                                                        merge=not opts.per_device)
    view.pause_above_us = opts.pause_above_us
    view.description = f"the first {len(table.df):,} rows, while the rest loads"
    return view


def refuse_input_as_output(out: OutputOptions, inputs) -> None:
    """TraceError (exit 2) when --output is one of the files read (`inputs`: the paths given,
    a directory standing for the report it resolves to): `--force` would replace the trace
    with its own analysis."""
    from ..model.errors import TraceError
    from ..model.read.discover import resolve_trace_paths

    if not out.output:
        return
    try:
        target = os.stat(out.output)
    except OSError:
        return  # a new file is never an input
    for given in inputs:
        try:
            files = resolve_trace_paths(given)
        except (TraceError, OSError):
            files = [Path(given)]  # the load names what is wrong with it
        for f in files:
            try:
                same = os.path.samestat(target, os.stat(f))
            except OSError:
                continue
            if same:
                raise TraceError(out.output, f"--output is the input {f}: refusing to write over "
                                 "the trace it reads, even with --force (give another file)")


def write_output(out: OutputOptions, render: Callable[[TextIO], None]) -> None:
    """Run `render(stream)` into stdout, or into --output FILE (streamed into a temp file and
    renamed into place for a regular file)."""
    from ..report.export import write_atomic
    from .progress import on_stderr

    if not out.output:
        if sys.stdout.isatty():  # the output on the terminal is its own progress
            render(sys.stdout)
            return
        with on_stderr():
            render(sys.stdout)
        return
    with on_stderr():
        write_atomic(out.output, render, force=out.force)


def no_terminal() -> str | None:
    """What keeps a full-screen view from running here: "stdin", "stdout" or "stderr" (Textual
    reads keys from stdin and draws on stderr) not being a terminal; None when all three are.
    Without one the view would draw into a pipe and wait for keys that never come."""
    if os.environ.get("TEXTUAL_DRIVER", "").startswith("textual.drivers.web_driver:"):
        return None  # ttdash serve: textual-serve's pipes carry the browser's terminal
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            tty = stream is not None and stream.isatty()
        except (AttributeError, ValueError, OSError):  # closed or replaced
            tty = False
        if not tty:
            return name
    return None


def needs_terminal(where: object, what: str, instead: str) -> None:
    """TraceError (one line naming `where`, exit 2) when there is no terminal for `what`."""
    from ..model.errors import TraceError

    missing = no_terminal()
    if missing is not None:
        raise TraceError(where, f"{what} needs a terminal ({missing} is not one); try {instead}")


def color_wanted(fmt: str, out: OutputOptions) -> bool:
    """A format a terminal may colour (present.formats), written to one, NO_COLOR unset."""
    from ..present.formats import BY_NAME

    return (BY_NAME[fmt].terminal and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            and not out.output)


LINE_BREAKS_RE = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")


def inert_line(text: object) -> str:
    """Text for one line on the terminal: line breaks made spaces, control characters (escape
    sequences start with one), C1 controls and bidi marks removed (model.text.clean_text)."""
    return str(clean_text(LINE_BREAKS_RE.sub(" ", str(text))))


def stderr_line(text: object) -> None:
    """`ttdash: TEXT` on stderr, one inert line: every line ttdash writes there goes through
    here, as file names, op codes and store paths are untrusted."""
    sys.stderr.write(f"ttdash: {inert_line(text)}\n")


def note(message: str) -> None:
    """A remark for the user on stderr (stdout stays machine-readable)."""
    stderr_line(f"note: {message}")


def warn_data(view) -> None:  # view: model.View
    """The view's data-trust warnings on stderr, for outputs with no place for them (CSV,
    Perfetto): one line each, naming the file."""
    for w in view.warnings():
        stderr_line(f"warning: {view.trace.path}: {w.message}")


def drop_stdout() -> None:
    """Point stdout at /dev/null (opened for writing, never replaced) so that the interpreter's
    final flush of what could not be written cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
