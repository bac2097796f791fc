"""`ttdash diff`: compare a baseline and a candidate; a CI gate.

Exit codes: 0 ok; 1 when `--fail-above PCT` finds the candidate slower than the baseline by more
than PCT percent on `--metric`; 2 bad input (a TraceError, printed by the CLI as one line).
"""

from __future__ import annotations

import sys
from typing import TextIO

from ..model.errors import TraceError
from .common import (
    color_wanted,
    drop_stdout,
    load_view,
    load_views,
    refuse_input_as_output,
    write_output,
)
from .options import DiffOptions

EXIT_OK, EXIT_REGRESSION = 0, 1


def gate(result, fail_above: float | None, metric: str, err: TextIO | None = None,
         allow_arch_mismatch: bool = False) -> int:
    """Exit code of --fail-above: 1 (with one line on stderr) when the candidate is slower by
    more than `fail_above` percent on `metric` (its totals, or the ops both sides ran:
    DiffResult.gate_pct); 2 (a TraceError) when the comparison cannot be trusted (fail closed:
    DiffResult.problems, the rules of ttdash.model.gate); else 0."""
    if fail_above is None:
        return EXIT_OK
    problems = result.problems(metric, allow_arch_mismatch=allow_arch_mismatch)
    if problems:
        raise TraceError(None, "--fail-above cannot trust this comparison: "
                         + "; ".join(problems))
    pct = result.gate_pct(metric)  # the totals' change, or the common ops' when larger
    s = result.spread(metric)
    if (pct > fail_above and s is not None and s.within_noise
            and pct == result.slower_pct(metric)):
        (err or sys.stderr).write(f"ttdash: {pct:+.2f}% is within the run-to-run noise "
                                  f"({s.text()}): not a regression\n")
        return EXIT_OK
    if pct > fail_above:
        (err or sys.stderr).write(
            f"ttdash: regression: {result.verdict(metric)}, above --fail-above "
            f"{fail_above:g}%\n")
        return EXIT_REGRESSION
    return EXIT_OK


def _check_windows(baseline, candidate) -> None:
    """An empty window compares nothing: say which side and how to widen it (exit 2)."""
    for name, view in (("baseline", baseline), ("candidate", candidate)):
        if not len(view.op_rows):
            raise TraceError(view.trace.path, f"the {name}'s window has no ops to compare: "
                             + (view.window_note() or "the file has no ops"))


def _run_totals(path: str, opts: DiffOptions) -> dict:
    view = load_view(path, opts.window)
    if not len(view.op_rows):
        raise TraceError(view.trace.path, "this run's window has no ops to compare: "
                         + (view.window_note() or "the file has no ops"))
    return view.totals()


def diff(opts: DiffOptions) -> int:
    """The `ttdash diff` command (see the module docstring for exit codes)."""
    from ..health.telemetry import readings_for_report, summarize
    from ..model.diff import diff_traces
    from ..report.diff import render_diff

    refuse_input_as_output(opts.out, [opts.baseline, opts.candidate, *opts.baseline_runs,
                                      *opts.candidate_runs])
    fmt = opts.format
    if fmt in (None, "tui") and opts.out.output:
        fmt = "markdown"  # --output without --format: the pull-request summary
    interactive = fmt == "tui" or (fmt is None and sys.stdout.isatty())
    columns = "lazy" if interactive else "analysis"  # the TUI's details show every column
    baseline, candidate = load_views([opts.baseline, opts.candidate], opts.window, columns)
    _check_windows(baseline, candidate)
    result = diff_traces(baseline, candidate, top=opts.top)
    result.telemetry = {side: summarize(readings_for_report(v.trace.path, v.trace.devices))
                        for side, v in (("baseline", baseline), ("candidate", candidate))}
    if opts.baseline_runs or opts.candidate_runs:
        result.runs = {
            "baseline": [baseline.totals()] + [_run_totals(p, opts) for p in opts.baseline_runs],
            "candidate": [candidate.totals()] + [_run_totals(p, opts)
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
    if fmt is not None:
        color = color_wanted(fmt, opts.out)
        try:
            write_output(opts.out, lambda out: render_diff(result, fmt, out, top=opts.top,
                                                           metric=opts.metric, color=color))
            sys.stdout.flush()
        except BrokenPipeError:  # `diff ... | head`: the gate still decides the exit code
            drop_stdout()
    return gate(result, opts.fail_above, opts.metric,
                allow_arch_mismatch=opts.allow_arch_mismatch)
