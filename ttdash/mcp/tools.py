"""The registry of tools: name, what it does, its input schema, its output schema (the package's
JSON Schemas, ttdash.mcp.schemas) and its function. `call` checks the arguments, runs the tool
under the session's lock and turns every failure into one line. Nothing here imports the MCP
SDK (ttdash.mcp.server does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model.filters import MAX_FILTER_CHARS, MAX_FILTER_TERMS
from . import run_tools, trace_tools
from . import schemas as sc
from .schemas import COUNT, WINDOW, boolean, integer, number, string, strings
from .session import Session, ToolError, cli_line


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Session, dict[str, Any]], dict[str, Any]]


def _trace_inputs(extra: dict[str, Any], required: tuple[str, ...] = ("path",)
                  ) -> dict[str, Any]:
    return sc.inputs({"path": sc.PATH, **extra, **WINDOW}, required)


OP = sc.part("report", "ops", "items")
#: explain_op's `reason`: one op's reason, in the words of the report's why.by_op_code entries
REASON = sc.obj({key: sc.part("report", "why", "by_op_code", "items", key)
                 for key in ("class", "basis", "reason", "saving_us", "assumes")},
                description="the op's own reason class, its sentence, the device time it "
                "would save and what that assumes (model.reasons)")
NULLABLE_STR = {"type": ["string", "null"]}
TOP = integer("how many of each top list (top regressions, improvements, by op code, by "
              "region)", minimum=1, maximum=100, default=10)
METRIC = string("the total compared and gated (diff --metric)",
                enum=["steady", "device", "dispatch", "pauses", "wall"], default="steady")
DIFF_INPUTS: dict[str, Any] = {
    "baseline": string("the baseline trace (a CSV or a profiler directory)"),
    "candidate": string("the candidate trace"),
    "baseline_runs": strings("more runs of the baseline (noise: their spread)"),
    "candidate_runs": strings("more runs of the candidate"),
    "metric": METRIC, "top": TOP,
    "allow_arch_mismatch": boolean("compare traces of different archs"),
}
WHERE = strings("KEY=VALUE: only runs with this label (or arch=..., window=...)")
LAST = integer("the last N runs (default 50)", minimum=1, maximum=run_tools.MAX_RUNS)
RATE = {"type": ["object", "null"], "additionalProperties": False,
        "required": ["rows", "rows_before", "seconds", "rows_per_s"],
        "properties": {"rows": COUNT, "rows_before": COUNT, "seconds": {"type": "number"},
                       "rows_per_s": {"type": "number"}},
        "description": "live rows per second since this session's previous look at the "
                       "directory (null on the first look)"}


def _gate_output() -> dict[str, Any]:
    diff = sc.load_copy("diff")
    props = {k: diff["properties"][k] for k in run_tools.GATE_FIELDS}
    props["exit_code"] = {"type": "integer", "enum": [0, 1, 3], "description": "what `ttdash "
                          "diff` exits with: 0 pass, 1 slower than fail_above, 3 faster than "
                          "fail_below"}
    props["passed"] = {"type": "boolean"}
    return sc.obj(props, description="the gate's outcome, from `ttdash diff --fail-above ... "
                  "--format json`")


TOOLS: tuple[Tool, ...] = (
    Tool("open_trace",
         "Load a Tenstorrent profiler trace and summarise it: arch, devices, window, totals "
         "(device time, dispatch gaps, host pauses), data-trust warnings, signposts, where the "
         "time goes, why it is slow (performance model, core balance, collectives, program "
         "cache) and the grouped advice. `ttdash report --format json` less its op list.",
         _trace_inputs({}),
         sc.output("report", drop=("ops", "advice", "guide_advice", "ranked_by"),
                   description="`ttdash report --format json` less `ops` and `advice` (use "
                   "top_ops and explain_op)"),
         trace_tools.open_trace),
    Tool("top_ops",
         "The heaviest ops of a trace's window, ranked by device time, recoverable time "
         "(above the performance model), op-to-op gap or share of wall time, optionally "
         "filtered with the TUI's filter language (`matmul`, `cores<10`, `device>1ms`, "
         "`-cat:TM`); a page of at most 500 with the counts. Records as in `ttdash report "
         "--format json`'s ops.",
         _trace_inputs({
             "by": string("rank by", enum=list(trace_tools.RANK), default="device"),
             "filter": string("the TUI's filter (`/`): text, key:value, comparisons; terms "
                              f"ANDed, -term negates; at most {MAX_FILTER_TERMS} terms",
                              maxLength=MAX_FILTER_CHARS),
             "limit": integer("ops returned", 1, trace_tools.MAX_OPS, 20),
             "offset": integer("skip this many ranked ops first", 0, None, 0)}),
         sc.obj({"schema_version": sc.part("report", "schema_version"),
                 "file": {"type": "string"}, "window": {"type": "string"},
                 "by": {"type": "string", "enum": list(trace_tools.RANK)},
                 "field": {"type": "string"}, "filter": NULLABLE_STR,
                 "ops_in_window": COUNT, "matched": COUNT, "offset": COUNT, "shown": COUNT,
                 "ops": {"type": "array", "items": OP},
                 "why": sc.obj({"covered_pct": sc.part("report", "why", "covered_pct"),
                                "by_op_code": sc.part("report", "why", "by_op_code")},
                               description="the report's `why` for the op codes of this page: "
                               "the window's covered_pct and their by_op_code entries")}),
         trace_tools.top_ops),
    Tool("explain_op",
         "Everything about one op (by its ID, the CSV's line number as in tt-perf-report): "
         "every figure, its rank by device time, its advice, why it is slow (performance "
         "model, bound, core skew, grid use, gap), its op code's performance-model line and "
         "the row's own columns.",
         _trace_inputs({"id": integer("the op's ID", minimum=0),
                        "device": integer("the device, when per_device rows give an ID "
                                          "several rows", minimum=0)}, ("path", "id")),
         sc.obj({"schema_version": sc.part("report", "schema_version"),
                 "file": {"type": "string"}, "window": {"type": "string"}, "op": OP,
                 "rank_by_device_time": {"type": ["integer", "null"]},
                 "ops_in_window": COUNT,
                 "advice": sc.part("report", "advice"),
                 "why_slow": {"type": "array", "items": {"type": "string"}},
                 "op_code_model": {"anyOf": [
                     sc.part("report", "performance_model", "by_op_code", "items"),
                     {"type": "null"}]},
                 "op_code_why": sc.obj({
                     key: {"anyOf": [sc.part("report", section, items, "items"),
                                     {"type": "null"}]}
                     for key, (section, items) in trace_tools.WHY_LISTS.items()},
                     description="the op code's line in the report's core_balance (skewed, "
                     "small_grid) and ccl_bandwidth (by_op_code) lists"),
                 "reason": {"anyOf": [REASON, {"type": "null"}]},
                 "op_code_reason": {"anyOf": [sc.part("report", "why", "by_op_code", "items"),
                                              {"type": "null"}]},
                 "columns_total": COUNT,
                 "columns": {"type": "object", "additionalProperties": {
                     "type": ["string", "number", "boolean"]}}}),
         trace_tools.explain_op),
    Tool("group_summary",
         "Device time grouped by op, by op and input-0 memory, or by category, with FLOPs % "
         "statistics: `ttdash report --summary --group-by BY --format json` (its first "
         "`limit` groups, largest first).",
         _trace_inputs({"by": string("group by", enum=["op", "memory", "category"],
                                     default="memory"),
                        "limit": integer("groups returned", 1, trace_tools.MAX_GROUPS, 50)}),
         sc.output("report-summary", add={"groups_total": COUNT}),
         trace_tools.group_summary),
    Tool("diff",
         "Compare a baseline and a candidate trace: verdict, totals and their change per "
         "metric, noise, the top regressions and improvements with their causes (what "
         "changed in the op: cores, fidelity, tensors, attributes, cache), by op code and "
         "region. `ttdash diff --format json` less its per-op pair list.",
         sc.inputs({**DIFF_INPUTS, **WINDOW}, ("baseline", "candidate")),
         sc.output("diff", drop=("ops",), add={"pairs_total": COUNT, "by_op_code_total": COUNT,
                                               "by_region_total": COUNT}),
         run_tools.diff),
    Tool("gate",
         "The CI gate of `ttdash diff --fail-above PCT`: fail when the candidate is slower "
         "than the baseline by more than PCT percent on the metric (noise- and "
         "floor-aware: min_delta_us), or faster than fail_below; fails closed (a tool error) "
         "when the comparison cannot be trusted.",
         sc.inputs({**DIFF_INPUTS,
                    "fail_above": number("fail when slower by more than this many percent",
                                         minimum=0),
                    "fail_below": number("fail when faster by more than this many percent",
                                         minimum=0),
                    "min_delta_us": number("a change under this many us never fails",
                                           minimum=0), **WINDOW}, ("baseline", "candidate")),
         _gate_output(), run_tools.gate),
    Tool("history_list",
         "The runs in the run history store (newest first): file, window, ops, device time, "
         "steady time, labels, change against the run before. `ttdash history list "
         "--format json`.",
         sc.inputs({"where": WHERE, "last": LAST}),
         sc.output("history-list"), run_tools.history_list),
    Tool("history_trend",
         "A trend over the stored runs (oldest first): whole runs, one op code or one signpost "
         "region. `ttdash history trend --format json`.",
         sc.inputs({"op": string("one op code"), "region": string("one signpost region"),
                    "where": WHERE, "last": LAST}),
         sc.output("history-trend"), run_tools.history_trend),
    Tool("history_check",
         "Gate a trace against the last N comparable stored runs (median, noise-aware, "
         "other programs left out): `ttdash history check PATH --fail-above PCT --format "
         "json`; `regression` is true when it fails.",
         sc.inputs({"path": sc.PATH,
                    "fail_above": number("fail when slower than the runs' median by more "
                                         "than this many percent", minimum=0),
                    "where": WHERE, "last": integer("compare with the last N runs of this "
                                                    "program", 1, run_tools.MAX_RUNS),
                    **WINDOW}, ("path", "fail_above")),
         sc.output("history-check"), run_tools.history_check),
    Tool("doctor",
         "Read-only host checks the Tenstorrent tuning guides ask for (PCIe link, HugePages, "
         "driver, temperature, power, AICLK, environment): `ttdash doctor --format json`.",
         sc.inputs({"smi_snapshot": string("also check the boards in a `tt-smi -s` JSON "
                                           "snapshot")}),
         sc.output("doctor"), run_tools.doctor),
    Tool("watch_status",
         "A live profiler directory now: the live rows so far, their rate since the previous "
         "call, the newest report and the reports found (newest first). `ttdash watch DIR "
         "--once --format json`.",
         sc.inputs({"dir": string("the profiler directory (default $TT_METAL_PROFILER_DIR, "
                                  "else $TT_METAL_HOME/generated/profiler)"),
                    "arch": string("override the detected arch"),
                    "runs": integer("reports listed (newest first)", 1, 1000, 20)}),
         sc.output("watch", add={"newest_report": {"anyOf": [
             sc.part("watch", "runs", "items"), {"type": "null"}]},
             "runs_total": COUNT, "rate": RATE}),
         run_tools.watch_status),
)
BY_NAME = {t.name: t for t in TOOLS}


def checked(name: str, args: dict[str, Any] | None) -> tuple[Tool, dict[str, Any]]:
    """The tool `name` and its arguments, checked against its input schema (whole floats of
    integer arguments made ints); ToolError (one line naming the argument) when they do not
    fit. Cheap: the server checks a call with it before handing the call to its worker."""
    tool = BY_NAME.get(name)
    if tool is None:
        raise ToolError(f"ttdash: unknown tool {sc.shown(name)} (known: {', '.join(BY_NAME)})")
    if args is not None and not isinstance(args, dict):
        raise ToolError(f"ttdash {name}: the arguments are not an object")
    args = dict(args or {})
    bad = sc.check_arguments(tool.input_schema, args)
    if bad:
        raise ToolError(f"ttdash {name}: {bad}")
    return tool, sc.normalized(tool.input_schema, args)


def call(session: Session, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """Run tool `name`; ToolError (one line, as the CLI prints it) for any failure."""
    tool, args = checked(name, args)
    with session.lock:
        try:
            return tool.run(session, args)
        except ToolError:
            raise
        except SystemExit as exc:  # an argparse-style exit deep inside: never the server's
            raise ToolError(f"ttdash {name}: exited with status {exc.code}") from None
        except Exception as exc:  # noqa: BLE001 (every failure is one line, never a traceback)
            raise ToolError(cli_line(exc)) from None
