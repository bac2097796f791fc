"""`ttdash report` and `ttdash open`: one trace, as text or on screen."""

from __future__ import annotations

import shutil
import sys

from .common import (
    analysed,
    color_wanted,
    load_trace,
    load_view,
    needs_terminal,
    note,
    preview_of,
    refuse_input_as_output,
    remember,
    view_of,
    warn_data,
    write_output,
)
from .options import OpenOptions, ReportOptions

EXIT_OK = 0
# A trace this large opens on the loading screen (progress, keys) rather than after its load.
LOADING_SCREEN_BYTES = 4 << 20


def report(opts: ReportOptions) -> int:
    from ..health.telemetry import readings_for_report, summarize
    from ..present.formats import writer
    from ..report.single import Shown, file_line, render

    refuse_input_as_output(opts.out, opts.path)
    written = writer("summary" if opts.summary else "report", opts.format)
    loaded = load_trace(opts.path, opts.window)
    trace = loaded.trace
    color = color_wanted(opts.format, opts.out)
    width = shutil.get_terminal_size().columns if color else None
    # The table's first line names the file: written once the file is read, before the
    # analysis (a pipe's reader sees the report start while the rest is worked out).
    first = written.file_first
    shown = Shown(top=opts.top, rank_by=opts.rank_by, min_pct=opts.min_percentage,
                  advice=opts.advice, raw_op_codes=opts.raw_op_codes,
                  all_signposts=opts.print_signposts, summary=opts.summary,
                  telemetry=summarize(readings_for_report(trace.path, trace.devices)),
                  file_line=not first)

    def write(out) -> None:
        if first:
            out.write(file_line(trace, width) + "\n")
            out.flush()
        view = whole = analysed(loaded, opts.window)
        if view.window_note() and not len(view.op_rows):
            note(view.window_note())
        view = restrict(view, opts)
        if not written.warnings:  # the others carry the warnings in their text
            warn_data(view)
        render(view, opts.format, out, shown, color=color, width=width)
        views.append(whole)

    views: list = []
    write_output(opts.out, write)
    for view in views:  # kept once written, with what the output worked out from it
        remember(view)
    sys.stdout.flush()
    return EXIT_OK


def restrict(view, opts: ReportOptions):  # -> model.View
    """tt-perf-report's row filters, in its order: --id-range, then --no-host-ops."""
    import numpy as np

    if opts.id_range is not None:
        lo, hi = opts.id_range
        ids = view.ops["id"].to_numpy()
        keep = np.ones(len(ids), dtype=bool)
        if lo is not None:
            keep &= ids >= lo
        if hi is not None:
            keep &= ids <= hi
        what = f"IDs {'' if lo is None else lo}-{'' if hi is None else hi}"
        view = view.subset(keep, reset_first_gap=True, what=what)
        if not len(view.op_rows):
            note(f"no op has an ID in {what[4:]}")
    if opts.no_host_ops:
        view = view.subset(~view.ops["is_host"].to_numpy(dtype=bool), what="no host ops")
    return view


def open_trace(opts: OpenOptions) -> int:
    from ..model.read.discover import resolve_trace_paths
    from ..tui.app import run_open, run_open_loading

    # The details pane shows every column of an op's row: those the analysis does not read stay
    # in the cached copy of a large file, read a row at a time.
    paths = resolve_trace_paths(opts.path)  # a wrong path fails before any screen starts
    # no terminal (a pipe, a cron job, an IDE's runner): the view would draw into the pipe and
    # wait for keys forever; the same analysis as text is `report`
    needs_terminal(opts.path, "`ttdash open`", f"`ttdash report {opts.path}`")
    if len(paths) > 1:  # a multi-host run's ranks, merged
        return run_open(load_view(opts.path, opts.window, columns="lazy"), theme=opts.theme)
    path = paths[0]
    if path.stat().st_size < LOADING_SCREEN_BYTES:
        return run_open(load_view(str(path), opts.window, columns="lazy"), theme=opts.theme)
    return run_open_loading(lambda: view_of(str(path), opts.window, "lazy"), path.name,
                            theme=opts.theme, preview=lambda t: preview_of(t, opts.window))
