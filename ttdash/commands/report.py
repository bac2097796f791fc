"""`ttdash report` and `ttdash open`: one trace, as text or on screen."""

from __future__ import annotations

import shutil
import sys

from .common import color_wanted, load_view, note, write_output
from .options import OpenOptions, ReportOptions

EXIT_OK = 0


def report(opts: ReportOptions) -> int:
    from ..report.single import render

    view = load_view(opts.path, opts.window)
    if view.window_note() and not len(view.op_rows):
        note(view.window_note())
    color = color_wanted(opts.format, opts.out)
    width = shutil.get_terminal_size().columns if color else None
    write_output(opts.out, lambda out: render(view, opts.format, out, top=opts.top, color=color,
                                              rank_by=opts.rank_by, width=width,
                                              with_advice=opts.advice))
    sys.stdout.flush()
    return EXIT_OK


def open_trace(opts: OpenOptions) -> int:
    from ..tui.app import run_open

    # The details pane shows every column of an op's row: load them all.
    view = load_view(opts.path, opts.window, columns="all")
    return run_open(view, theme=opts.theme)
