"""The tools over runs: diff, gate, history_list, history_trend, history_check, doctor and
watch_status. Each runs the command's own function (ttdash.commands) with --format json into
memory (Session.run_command), so its numbers are the CLI's by construction, then cuts the
lists that grow with the trace to their first N (the full counts beside them)."""

from __future__ import annotations

from typing import Any

from ..commands.options import DiffOptions, HistoryOptions
from ..model.columns import DEFAULT_METRIC
from .session import Session, ToolError, run_command, window_options

#: diff's lists that grow with the traces, cut to `top` (their counts kept)
GROUP_LISTS = ("by_op_code", "by_region")
MAX_RUNS = 1000


def _diff_options(args: dict[str, Any], **gate: Any) -> DiffOptions:
    return DiffOptions(
        baseline=args["baseline"], candidate=args["candidate"], format="json",
        baseline_runs=tuple(args.get("baseline_runs") or ()),
        candidate_runs=tuple(args.get("candidate_runs") or ()),
        metric=args.get("metric") or DEFAULT_METRIC,
        allow_arch_mismatch=bool(args.get("allow_arch_mismatch")),
        top=int(args.get("top") or 10), window=window_options(args), **gate)


def diff(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash diff A B --format json` less its pair list (one entry per op: `pairs_total`
    counts them), its by-op-code and by-region lists cut to `top`; the verdict, the top
    regressions and improvements with their causes, the totals, the noise, the context."""
    from ..commands.diff import diff as diff_command

    _, doc = run_command(diff_command, _diff_options(args))
    return bounded_diff(doc, int(args.get("top") or 10))


def bounded_diff(doc: dict[str, Any], top: int) -> dict[str, Any]:
    doc["pairs_total"] = len(doc.pop("ops"))
    for key in GROUP_LISTS:
        doc[f"{key}_total"] = len(doc[key])
        doc[key] = doc[key][:top]
    return doc


#: the gate tool's fields of the diff document
GATE_FIELDS = ("schema_version", "verdict", "metric", "delta_pct", "gate_pct", "median_pct",
               "problems", "gate", "spread", "counts", "match_rate", "top_regressions",
               "top_improvements")


def gate(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash diff A B --fail-above PCT [--fail-below PCT] [--min-delta-us US] --format json`:
    the gate's outcome (pass, regression: exit 1, faster than the target: exit 3) with the
    verdict and the top regressions and their causes. A comparison the gate cannot trust is a
    tool error with the CLI's line (it exits 2: fail closed)."""
    from ..commands.diff import diff as diff_command

    if args.get("fail_above") is None and args.get("fail_below") is None:
        raise ToolError("ttdash: gate: give fail_above (a slowdown in percent that fails) "
                        "and/or fail_below")
    rc, doc = run_command(diff_command, _diff_options(
        args, fail_above=args.get("fail_above"), fail_below=args.get("fail_below"),
        min_delta_us=args.get("min_delta_us")))
    out = {k: doc[k] for k in GATE_FIELDS}
    out["exit_code"] = rc
    out["passed"] = rc == 0
    return out


def _history(s: Session, action: str, args: dict[str, Any], **extra: Any) -> HistoryOptions:
    return HistoryOptions(action=action, store=s.store, where=tuple(args.get("where") or ()),
                          last=args.get("last"), format="json", **extra)


def history_list(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash history list [--where K=V] [--last N] --format json` (N default 50)."""
    from ..commands.history import list_runs

    args = {**args, "last": args.get("last") or 50}
    return run_command(list_runs, _history(s, "list", args))[1]


def history_trend(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash history trend [--op CODE | --region NAME] [--where] [--last N] --format json`
    (N default 50)."""
    from ..commands.history import trend

    args = {**args, "last": args.get("last") or 50}
    return run_command(trend, _history(s, "trend", args, op=args.get("op"),
                                       region=args.get("region")))[1]


def history_check(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash history check PATH --fail-above PCT [--last N] --format json`: the run against
    the last N comparable stored runs; `regression` says whether it fails (the CLI exits 1)."""
    from ..commands.history import check

    opts = _history(s, "check", args, paths=(args["path"],), fail_above=args["fail_above"],
                    window=window_options(args))
    return run_command(check, opts)[1]


def doctor(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash doctor --format json`: read-only host checks (sysfs, procfs, the environment)."""
    from ..commands.doctor import doctor as doctor_command
    from ..commands.options import DoctorOptions

    return run_command(doctor_command, DoctorOptions(format="json",
                                                     smi_snapshot=args.get("smi_snapshot")))[1]


def watch_status(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`ttdash watch DIR --once --format json` with its newest report, the live rows' rate
    since this session's previous look at DIR, and the reports cut to the newest `runs`."""
    import time

    from ..commands.watch import watch_state
    from ..model.arch import get_arch
    from ..model.read.discover import resolve_profiler_dir

    root = resolve_profiler_dir(args.get("dir"))
    arch = get_arch(args["arch"]).name if args.get("arch") else None
    doc = watch_state(root, arch)
    parts = doc.get("ranks") or [doc]
    rows = sum(int(p["live"]["rows"]) for p in parts)
    now = time.monotonic()
    key = str(root.resolve())
    before = s.looks.get(key)
    s.looks[key] = (now, rows)
    rate = None
    if before is not None and now > before[0]:
        rate = {"rows": rows, "rows_before": before[1], "seconds": round(now - before[0], 3),
                "rows_per_s": round((rows - before[1]) / (now - before[0]), 3)}
    runs = sorted(doc["runs"], key=lambda r: r["timestamp"], reverse=True)
    doc["newest_report"] = runs[0] if runs else None
    doc["runs_total"] = len(runs)
    doc["runs"] = runs[:int(args.get("runs") or 20)]
    doc["rate"] = rate
    return doc
