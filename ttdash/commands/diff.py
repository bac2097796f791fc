"""`ttdash diff`: compare a baseline and a candidate; a CI gate.

Exit codes: 0 ok; 1 when `--fail-above PCT` finds the candidate slower than the baseline by more
than PCT percent on `--metric`; 2 bad input (a TraceError, printed by the CLI as one line); 3
when `--fail-below PCT` finds it faster by more than PCT percent (the target is out of date). A
change smaller than `--min-delta-us` in absolute time never fails. The rules:
ttdash.model.compare.gate.decide.

The gate's line is written once to the terminal: in the report when a table or markdown report
goes to stdout (its Gate line), else on stderr (json, csv, --output, the interactive view). A
json report holds it as its ``gate`` object, a table or markdown file written with --output as
its Gate line.
"""

from __future__ import annotations

import sys

from ..memory import scratch_heap
from ..model.errors import TraceError
from .common import (
    cache_entry,
    color_wanted,
    drop_stdout,
    load_view,
    load_views,
    needs_terminal,
    refuse_input_as_output,
    remember_all,
    stderr_line,
    write_output,
)
from .options import DiffOptions

EXIT_OK, EXIT_REGRESSION, EXIT_FASTER = 0, 1, 3


def gate(result, limits, metric: str, allow_arch_mismatch: bool = False):
    """The gate's outcome (model.gate.Outcome; None without --fail-above/--fail-below). Raises
    a TraceError (exit 2) when the comparison cannot be trusted (fail closed:
    DiffResult.problems, the rules of ttdash.model.compare.gate)."""
    if not limits.active:
        return None
    problems = result.problems(metric, allow_arch_mismatch=allow_arch_mismatch)
    if problems:
        flag = "--fail-above" if limits.fail_above is not None else "--fail-below"
        raise TraceError(None, f"{flag} cannot trust this comparison: " + "; ".join(problems))
    return result.gate(limits, metric)


def _check_windows(baseline, candidate) -> None:
    """An empty window compares nothing: say which side and how to widen it (exit 2)."""
    for name, view in (("baseline", baseline), ("candidate", candidate)):
        if not len(view.op_rows):
            raise TraceError(view.trace.path, f"the {name}'s window has no ops to compare: "
                             + (view.window_note() or "the file has no ops"))


def _run_totals(path: str, opts: DiffOptions, first=None) -> dict:
    """A further run's totals. With a gate (`first`: its side's first run), the run is aligned
    with that run and refused (exit 2) when its matched ops timed on one side only hold over
    model.gate.MAX_UNCOMPARED_SHARE of the first run's time: a mean over runs is no better
    than its worst run's device log."""
    view = load_view(path, opts.window)
    if not len(view.op_rows):
        raise TraceError(view.trace.path, "this run's window has no ops to compare: "
                         + (view.window_note() or "the file has no ops"))
    if first is not None:
        from ..model.compare.diff import diff_traces
        from ..model.compare.gate import MAX_UNCOMPARED_SHARE

        basis = diff_traces(first, view, noise=False).basis
        if basis.uncompared_share(opts.metric) > MAX_UNCOMPARED_SHARE:
            text = (basis.uncompared_text(opts.metric) or "").replace(
                "the candidate", "this run").replace("the baseline", "the side's first run")
            flag = "--fail-above" if opts.fail_above is not None else "--fail-below"
            raise TraceError(view.trace.path, f"{flag} cannot trust this run: {text}: over "
                             f"{MAX_UNCOMPARED_SHARE:.0%} (compare runs with complete device "
                             "data)")
    return view.totals()


def _stored(opts: DiffOptions):  # -> model.compare.stored.DiffEntry | None
    """Where this diff of two cacheable files is kept (both sides' cache entries and the
    options the result depends on), or None."""
    from ..model.compare.stored import DiffEntry
    from .progress import on_stderr

    with on_stderr():
        a = cache_entry(opts.baseline, opts.window, "compare")
        b = cache_entry(opts.candidate, opts.window, "compare") if a is not None else None
    return DiffEntry.of(a, b, repr(("diff", opts.top)))


def diff(opts: DiffOptions) -> int:
    """The `ttdash diff` command (see the module docstring for exit codes)."""
    from ..health.telemetry import readings_for_report, summarize
    from ..model.compare.context import with_readings
    from ..model.compare.diff import diff_traces
    from ..model.compare.gate import Limits
    from ..report.diff import render_diff

    refuse_input_as_output(opts.out, [opts.baseline, opts.candidate, *opts.baseline_runs,
                                      *opts.candidate_runs])
    fmt = opts.format
    if fmt in (None, "tui") and opts.out.output:
        fmt = "markdown"  # --output without --format: the pull-request summary
    if fmt == "tui":  # asked for by name without a terminal: one line, not a screen in a pipe
        needs_terminal(opts.candidate, "diff --format tui",
                       "--format table, markdown, csv or json")
    interactive = fmt == "tui" or (fmt is None and sys.stdout.isatty())
    # the TUI's details show every column; the text outputs read what they compare at once
    columns = "lazy" if interactive else "compare"
    # the text outputs of two files: the result kept (model.compare.stored) is read instead
    stored = None if interactive or opts.baseline_runs or opts.candidate_runs else \
        _stored(opts)
    result = stored.read() if stored is not None else None
    views, made = [], {}
    if result is None:
        views = load_views([opts.baseline, opts.candidate], opts.window, columns,
                           list(stored.sides) if stored is not None else None)
        baseline, candidate = views
        _check_windows(baseline, candidate)
        with scratch_heap():  # (its whole-column temporaries reused)
            result = diff_traces(baseline, candidate, top=opts.top)
        made = dict(result.context)  # as kept: the readings are the files' beside it, now
    baseline, candidate = result.baseline, result.candidate
    for side, v in (("baseline", baseline), ("candidate", candidate)):
        readings = readings_for_report(v.trace.path, v.trace.devices)
        result.telemetry[side] = summarize(readings)
        if side in result.context:
            result.context[side] = with_readings(result.context[side], readings)
    if opts.baseline_runs or opts.candidate_runs:
        gated = opts.fail_above is not None or opts.fail_below is not None
        result.runs = {
            "baseline": [baseline.totals()] + [_run_totals(p, opts, baseline if gated else None)
                                               for p in opts.baseline_runs],
            "candidate": [candidate.totals()] + [_run_totals(p, opts, candidate if gated
                                                             else None)
                                                 for p in opts.candidate_runs]}

    if fmt is None or fmt == "tui":
        fmt = "table"
        if opts.format == "tui" or sys.stdout.isatty():
            try:
                from ..tui.diffview import run_diff_tui  # type: ignore[import-not-found]
            except ImportError:
                pass
            else:
                rc = run_diff_tui(result, theme=opts.theme)
                if isinstance(rc, int) and rc not in (EXIT_OK, EXIT_REGRESSION):
                    return rc
                fmt = None
    limits = Limits(opts.fail_above, opts.fail_below, opts.min_delta_us)
    problem: TraceError | None = None
    try:
        outcome = gate(result, limits, opts.metric, opts.allow_arch_mismatch)
    except TraceError as exc:  # the report is still written, then exit 2
        outcome, problem = None, exc
    # A table or markdown report on stdout carries the gate's line; else it goes to stderr.
    carried = fmt in ("table", "markdown") and not opts.out.output
    if fmt is not None:
        color = color_wanted(fmt, opts.out)
        shown = outcome if fmt in ("table", "markdown", "json") else None
        try:
            write_output(opts.out, lambda out: render_diff(
                result, fmt, out, top=opts.top, metric=opts.metric, color=color, gate=shown,
                limits=limits.as_dict()))
            sys.stdout.flush()
        except BrokenPipeError:  # `diff ... | head`: the gate still decides the exit code
            drop_stdout()
    # kept with what the diff worked out from them (the CSV columns read again for the pairs)
    remember_all(views)
    if views and stored is not None:
        from .progress import on_stderr

        with on_stderr():
            stored.write(result, made)
    if problem is not None:
        raise problem
    if outcome is None:
        return EXIT_OK
    if outcome.kind != "pass" and not carried:
        stderr_line(outcome.line)
    return outcome.exit_code
