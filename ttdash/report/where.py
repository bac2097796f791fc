"""Where the time goes: the lines a report ends on (and JSON's `where_the_time_goes`).

tt-perf-report's default output ends with its stacked summary ("80.47 % TilizeWithValPadding
(in0:dram_interleaved)"); this is that, with the time around the device time (dispatch gaps, host
pauses) and the data-trust warnings, so the end of a long table answers the first question.
"""

from __future__ import annotations

from typing import Any

from ..format import fmt_us
from ..model import View
from ..model.query import summary_groups
from ..present.sections import Block

#: Groups named one by one (the rest are counted).
TOP_GROUPS = 8
TITLE = "Where the time goes"
GROUP_BASIS = ("shares of device time; groups: op code and input 0 memory, as "
               "tt-perf-report's summary")


def top_groups(view: View, n: int = TOP_GROUPS) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The `n` groups with the most device time, and the rest (groups, ops, time, share); host
    fallback ops have no device time and are counted on the next line instead. Made once per
    view and ops frame (kept with the view in the analysis cache)."""
    cached = view.__dict__.get("_where")
    if cached is not None and cached[0] is view.ops and cached[1] == n:
        return cached[2]
    found = _top_groups(view.op_rows, n)
    view.__dict__["_where"] = (view.ops, n, found)
    return found


def _top_groups(ops, n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    g = summary_groups(ops, "memory", keep=~ops["is_host"].to_numpy(dtype=bool))
    head, rest = g.iloc[:n], g.iloc[n:]
    rows = [{"group": str(r.name), "ops": int(r.op_count),
             "device_time_us": round(float(r.device_time_us), 6),
             "device_share_pct": round(float(r.total_pct), 6)}
            for r in head.itertuples(index=False)]
    return rows, {"groups": len(rest), "ops": int(rest["op_count"].sum()),
                  "device_time_us": round(float(rest["device_time_us"].sum()), 6),
                  "device_share_pct": round(float(rest["total_pct"].sum()), 6)}


def as_dict(view: View) -> dict[str, Any]:
    rows, rest = top_groups(view)
    return {"basis": GROUP_BASIS, "groups": rows, "rest": rest}


def keys(view: View, shown: object = None) -> dict[str, Any]:
    """The section's JSON key (present.sections)."""
    return {"where_the_time_goes": as_dict(view)}


def where_lines(view: View) -> list[str]:
    """The section as the table's text lines."""
    return [line for b in blocks(view) for line in b.lines()]


def blocks(view: View) -> list[Block]:
    """The section (present.sections): the device time and its groups, the time around it, the
    data-trust warnings; none without device ops."""
    tot = view.totals()
    if not tot["device_ops"]:
        return []
    rows, rest = top_groups(view)
    lead = (f"{fmt_us(tot['device_time_us'])} of device time in {tot['device_ops']:,} device "
            f"ops ({GROUP_BASIS})")
    out = []
    ops_w = max(len(f"{n:,}") for n in [rest["ops"], *(r["ops"] for r in rows)])
    for r in rows:
        out.append(f"  {r['device_share_pct']:6.2f}%  {fmt_us(r['device_time_us']):>9}  "
                   f"{r['ops']:>{ops_w},} ops  {r['group']}")
    if rest["groups"]:
        out.append(f"  {rest['device_share_pct']:6.2f}%  {fmt_us(rest['device_time_us']):>9}  "
                   f"{rest['ops']:>{ops_w},} ops  in {rest['groups']:,} more groups "
                   "(--summary lists them)")
    steady = tot["device_time_us"] + tot["dispatch_us"]
    around = (f"Around it: dispatch gaps {fmt_us(tot['dispatch_us'])} (steady state "
              f"{fmt_us(steady)} = device time + dispatch gaps)")
    if tot["pauses"]:
        around += (f"; host pauses {fmt_us(tot['pauses_us'])} in {tot['pauses']:,} gaps over "
                   f"{fmt_us(view.pause_above_us)} (compile, warm-up, Python: outside the "
                   "steady state)")
    if tot["host_ops"]:
        around += f"; {tot['host_ops']:,} host fallback ops"
    out.append(around)
    out.extend(f"Warning: {w.message}" for w in view.warnings())
    return [Block(TITLE, lead, tuple(out), titled=True)]
