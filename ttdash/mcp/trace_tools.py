"""The tools on one trace: open_trace, top_ops, explain_op, group_summary. Each reads a cached
view (Session.view) and builds its answer with the functions `ttdash report --format json`
writes with (report.single: to_json, the op records' export, render_summary; report.advice,
report.why), so its numbers are the report's."""

from __future__ import annotations

import io
import json
from typing import Any

from ..model.columns import GAP_LIMIT_US, LOW_GRID_PCT, SKEW_FLAG
from ..schemas import SCHEMA_VERSION
from .session import Session, ToolError, as_json, window_options

#: top_ops' `by` -> the op field it ranks by (report.choices.RANK_FIELDS and the recoverable time)
RANK = {"device": "device_time_us", "recoverable": "recoverable_us", "gap": "op_to_op_us",
        "share": "total_pct"}
MAX_OPS = 500  # top_ops' page
MAX_GROUPS = 500
MAX_COLUMNS = 400  # explain_op: the row's raw columns


def op_records(view, ops) -> list[dict[str, Any]]:
    """`ops` as the report's JSON op records (report.single.to_json's fields and export)."""
    from ..model.columns import export_frame, op_fields
    from ..report.safe import records_json
    from ..report.single import JSON_OP_FIELDS

    if not len(ops):
        return []
    fields = op_fields(JSON_OP_FIELDS, ops, view.counter_names)
    records: list[dict[str, Any]] = json.loads(
        records_json(export_frame(view.with_counters(ops), fields)))
    return records


def open_trace(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`report --format json` less its op list and its entry-by-entry advice (the grouped
    advice_summary stays): summary, warnings, window, where the time goes, why it is slow."""
    import numpy as np

    from ..health.telemetry import readings_for_report, summarize
    from ..report.advice import summary_of
    from ..report.single import Shown, to_json

    view = s.view(args["path"], window_options(args))
    shown = Shown(advice="none", telemetry=summarize(readings_for_report(view.trace.path,
                                                                         view.trace.devices)))
    buf = io.StringIO()
    to_json(view, buf, shown, rows=np.empty(0, dtype=np.int64))
    doc: dict[str, Any] = json.loads(buf.getvalue())
    doc.pop("ops", None)
    doc["advice_summary"] = as_json(summary_of(view).as_dict())
    return doc


def top_ops(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """The window's ops matching `filter` (the TUI's filter language), ranked by `by`, largest
    first (missing values last, file order among equals: `report --top`'s order); a page."""
    from ..model.filters import Filter

    view = s.view(args["path"], window_options(args))
    by = args.get("by") or "device"
    field = RANK[by]
    ops = view.op_rows
    if field not in ops.columns:
        raise ToolError(f"ttdash: {view.trace.path}: no op has a performance model (PM IDEAL "
                        "columns): nothing to rank by recoverable time")
    text = args.get("filter") or ""
    if text.strip():
        ops = ops[Filter(text).mask(ops)]
    ranked = ops.sort_values(field, ascending=False, na_position="last", kind="stable")
    offset, limit = int(args.get("offset") or 0), int(args.get("limit") or 20)
    page = ranked.iloc[offset:offset + limit]
    return {"schema_version": SCHEMA_VERSION, "file": str(view.trace.path),
            "window": view.description, "by": by, "field": field,
            "filter": text or None, "ops_in_window": len(view.op_rows), "matched": len(ops),
            "offset": offset, "shown": len(page), "ops": op_records(view, page),
            "why": page_why(view, page)}


def page_why(view, page) -> dict[str, Any]:
    """The report's `why` (model.whyslow.why_contract) for the op codes of `page`: the
    window's covered_pct and those op codes' by_op_code entries (reason, saving, what to try),
    heaviest first."""
    from ..model.analysis.whyslow import why_contract
    from ..model.query import summary_key

    why = as_json(why_contract(view))  # rounded as the report writes it
    codes = set(summary_key(page, "op").astype(str)) if len(page) else set()
    return {"covered_pct": why["covered_pct"],
            "by_op_code": [e for e in why["by_op_code"] if e["op_code"] in codes]}


def explain_op(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """One op: its report record (every field), its rank by device time, its advice entries
    (the report's), what the numbers say about why it is slow, its op code's line of the
    performance model and the row's own columns."""
    from ..model.analysis.advice import advice_frames
    from ..model.analysis.whyslow import op_reason, why_contract
    from ..model.query import summary_key
    from ..report.safe import records_json
    from ..report.why import as_dict as why_dict
    from ..report.why import model_dict

    view = s.view(args["path"], window_options(args))
    op_id = int(args["id"])
    ops = view.op_rows
    hit = ops[ops["id"].to_numpy() == op_id]
    if args.get("device") is not None:
        hit = hit[hit["device"].to_numpy() == int(args["device"])]
    where = f"{view.trace.path}: " if view.trace.path else ""
    if not len(hit):
        raise ToolError(f"ttdash: {where}no op with ID {op_id}"
                        + (f" on device {args['device']}" if args.get("device") is not None
                           else "") + f" in the window ({view.description})")
    if len(hit) > 1:
        devices = ", ".join(str(d) for d in hit["device"].tolist())
        raise ToolError(f"ttdash: {where}ID {op_id} has a row on each of devices {devices}: "
                        "give `device`")
    op = op_records(view, hit)[0]
    dt = op.get("device_time_us")
    times = ops["device_time_us"].to_numpy(dtype="float64")
    rank = None if dt is None else int((times > dt).sum()) + 1
    advice: list[dict[str, Any]] = []
    for frame in advice_frames(view.ops, view.pause_above_us):
        mine = frame[frame["id"].eq(op_id).fillna(False).to_numpy(dtype=bool)]
        if len(mine):
            advice += json.loads(records_json(mine))
    model = model_dict(view)
    group = str(summary_key(hit, "op").iloc[0])
    line = next((g for g in (model or {}).get("by_op_code", []) if g["group"] == group), None)
    reason = op_reason(view, hit.index[0])
    raw = _raw_columns(view, op_id, int(hit["device"].iloc[0])
                       if "device" in hit and hit["device"].notna().iloc[0] else None)
    return {"schema_version": SCHEMA_VERSION, "file": str(view.trace.path),
            "window": view.description, "op": op,
            "rank_by_device_time": rank, "ops_in_window": len(ops),
            "advice": advice, "why_slow": why_slow(op),
            "op_code_model": as_json(line) if line is not None else None,
            "op_code_why": op_code_why(as_json(why_dict(view)), str(op["op_code"])),
            "reason": as_json(reason),
            "op_code_reason": next((e for e in as_json(why_contract(view))["by_op_code"]
                                    if e["op_code"] == group), None),
            "columns_total": raw[1], "columns": raw[0]}


#: explain_op's op_code_why: key -> (the report's section, its list of op codes)
WHY_LISTS = {"core_skew": ("core_balance", "skewed"), "small_grid": ("core_balance", "small_grid"),
             "collective": ("ccl_bandwidth", "by_op_code")}


def op_code_why(why: dict[str, Any], op_code: str) -> dict[str, Any]:
    """The op code's entry in each why-slow list of the report (core skew, small grid,
    collectives against the links); null where it has none."""
    out: dict[str, Any] = {}
    for key, (section, items) in WHY_LISTS.items():
        entries = (why.get(section) or {}).get(items) or []
        out[key] = next((e for e in entries if e.get("op_code") == op_code), None)
    return out


def why_slow(op: dict[str, Any]) -> list[str]:
    """What the op's own figures say, each against the threshold the TUI colours it by
    (model.columns); no figure is computed here."""
    out = []
    if op.get("bound") == "HOST" or op.get("op_type") in ("python_fallback", "tt_dnn_cpu"):
        out.append("it ran on the host (a fallback op): no device time; move it to the device")
    eff, rec = op.get("pm_eff_pct"), op.get("recoverable_us")
    if eff is not None:
        out.append(f"it runs at {eff:g}% of the profiler's performance model "
                   f"({op.get('pm_bound') or 'unknown'}-bound model); {rec:g} us of its "
                   "kernel time is above the model" if rec is not None else
                   f"it runs at {eff:g}% of the profiler's performance model")
    if op.get("bound"):
        out.append(f"bound: {op['bound']} (DRAM {_pct(op.get('dram_pct'))} of peak, FLOPs "
                   f"{_pct(op.get('flops_pct'))} of peak)")
    skew = op.get("core_skew")
    if skew is not None and skew >= SKEW_FLAG:
        out.append(f"its slowest core ran {skew:g}x its average core (uneven work per core; "
                   f"flagged from {SKEW_FLAG:g}x)")
    grid = op.get("grid_pct")
    if grid is not None and grid < LOW_GRID_PCT:
        out.append(f"it ran on {op.get('cores')} cores, {grid:g}% of the grid (under "
                   f"{LOW_GRID_PCT:g}%: a fraction of the chip)")
    gap = op.get("op_to_op_us")
    if gap is not None and gap > GAP_LIMIT_US:
        out.append(f"{gap:g} us passed between the previous op and this one (op-to-op gap "
                   f"above {GAP_LIMIT_US:g} us: dispatch or host time)")
    link = op.get("ccl_link_pct")
    if link is not None:
        out.append(f"collective at {link:g}% of its Ethernet links' peak")
    return out


def _pct(v: object) -> str:
    return "?" if v is None else f"{v:g}%"


def _raw_columns(view, op_id: int, device: int | None) -> tuple[dict[str, Any], int]:
    """The op's row as the file has it (the details pane's "All columns"): non-empty cells,
    text or numbers, at most MAX_COLUMNS; and how many there are. A whole number is an integer
    (the loaded frame holds a column with an empty cell anywhere as floats): an ID, a count, a
    PROGRAM HASH past 2**53 read again from the file as its text, exact."""
    import math

    from ..model.read.text import clean_text

    try:
        row = view.trace.row(op_id)
    except KeyError:
        return {}, 0
    out: dict[str, Any] = {}
    inexact: list[str] = []
    n = 0
    for k, v in row.items():
        k = str(k)
        if k.startswith("_") or v is None:
            continue
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            continue
        if isinstance(v, str) and not v:
            continue
        if not isinstance(v, (int, float, str, bool)):
            v = str(v)
        if isinstance(v, float) and v.is_integer():
            if abs(v) > EXACT_FLOAT:
                inexact.append(k)
            v = int(v)
        n += 1
        if len(out) < MAX_COLUMNS:
            out[k] = str(clean_text(v)) if isinstance(v, str) else v
    out.update(_exact_cells(view, op_id, [k for k in inexact if k in out],
                            str(row.get("OP CODE", ""))))
    return out, n


#: Whole numbers up to this are exact in a float64
EXACT_FLOAT = 2 ** 53


def _exact_cells(view, op_id: int, names: list[str], op_code: str) -> dict[str, int]:
    """The cells `names` of the row with ID `op_id` as whole numbers from the file's text (a
    one-file trace; {} when it cannot say: then the loaded value stands, nearest float)."""
    if not names:
        return {}
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = view.trace.path
    try:
        table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
            include_columns=[*names, "OP CODE"],
            column_types={c: pa.string() for c in (*names, "OP CODE")}))
        at = op_id - 2  # tt-perf-report's ID: the data row's index + 2
        if not 0 <= at < table.num_rows or \
                str(table.column("OP CODE")[at].as_py()).strip() != op_code.strip():
            return {}
        out = {}
        for name in names:
            text = str(table.column(name)[at].as_py() or "").strip()
            if text.lstrip("-").isdigit():
                out[name] = int(text)
        return out
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return {}


def group_summary(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """`report --summary --group-by BY --format json` with its first `limit` groups (largest
    first) and how many there are."""
    from ..report.single import Shown, render_summary

    view = s.view(args["path"], window_options(args))
    buf = io.StringIO()
    render_summary(view, "json", buf, Shown(summary=args.get("by") or "memory"))
    doc: dict[str, Any] = json.loads(buf.getvalue())
    groups = doc["groups"]
    doc["groups_total"] = len(groups)
    doc["groups"] = groups[:int(args.get("limit") or 50)]
    return doc
