"""Why it is slow: every device op's reason per op code (model.reasons, the first section, and
the heaviest ops the report lists before its table); against the profiler's performance model
(model.perfmodel), the headline a report leads with; then core balance and grid use,
collectives against the Ethernet links and the program cache (model.whyslow), a few lines each,
per op code. JSON: `why`, `performance_model`, `core_balance`, `ccl_bandwidth`,
`program_cache`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..format import fmt_saving, fmt_share, fmt_us, plural
from ..model import View
from ..model.analysis import whyslow
from ..model.analysis.perfmodel import ModelSummary
from ..model.columns import LOW_GRID_PCT, SKEW_FLAG
from ..model.read.text import clean_text
from ..present.sections import Block, Labelled
from ..present.table import WHY_GROUPS, cells

#: Groups named in the section (the rest counted); JSON has them all.
TOP_GROUPS = 8
#: Op codes named in each of the other sections.
TOP_CODES = 4


def model_summary(view: View) -> ModelSummary | None:
    return whyslow.model_summary(view)


def headline(view: View, s: ModelSummary | None = None) -> str | None:
    """One sentence: how much device time is above the model and which op code holds most of
    it (None when no op is modelled)."""
    s = s or model_summary(view)
    if s is None or not s.modelled_ops:
        return None
    top = whyslow.model_ranking(view).iloc[0]
    return (f"{fmt_us(s.recoverable_us)} of {fmt_us(s.device_us)} device time "
            f"({s.recoverable_share_pct:.0f}%) is above the profiler's performance model; "
            f"{top['group']} holds {fmt_us(top['recoverable_us'])} of it, at "
            f"{top['median_eff_pct']:.0f}% of its model "
            f"(median over {plural(int(top['ops']), 'op')})")


def model_lines(view: View) -> list[str]:
    """The performance-model section: its lead sentence, the ranking, the footer."""
    s = model_summary(view)
    if s is None or not s.modelled_ops:
        return []
    r = whyslow.model_ranking(view)
    eff = s.ideal_us / s.modelled_us * 100 if s.modelled_us > 0 else 0.0
    out = [f"Against the performance model (PM IDEAL): {s.modelled_ops:,} of "
           f"{s.device_ops:,} device ops are modelled ({fmt_us(s.modelled_us)} of "
           f"{fmt_us(s.device_us)} device time) and run at {eff:.0f}% of their model "
           f"overall; {fmt_us(s.recoverable_us)} is above it "
           f"({s.recoverable_share_pct:.1f}% of device time)"]
    out.append(f"  {'Recoverable':>11}  {'Share':>6}  {'Median eff':>10}  {'Ops':>6}  Op code")
    for g in r.head(TOP_GROUPS).itertuples(index=False):
        out.append(f"  {fmt_us(g.recoverable_us):>11}  {g.recoverable_share_pct:5.1f}%  "
                   f"{g.median_eff_pct:9.1f}%  {int(g.ops):>6,}  {g.group}")
    if len(r) > TOP_GROUPS:
        rest = r.iloc[TOP_GROUPS:]
        out.append(f"  {fmt_us(rest['recoverable_us'].sum()):>11}  "
                   f"{rest['recoverable_share_pct'].sum():5.1f}%  {'':>10}  "
                   f"{int(rest['ops'].sum()):>6,}  in {len(rest):,} more op codes")
    out.append(footer(s))
    return out


def footer(s: ModelSummary) -> str:
    """What reaching the target would save, and the ops with no model (the section's last
    line; the why view's footer)."""
    unmodelled, faster = s.device_ops - s.modelled_ops, s.faster_than_model
    share = s.target_saving_us / s.device_us * 100 if s.device_us > 0 else 0.0
    at = s.at_target_ops
    return (f"If every modelled op under {s.target_pct:g}% of its model reached it: "
            f"{fmt_us(s.target_saving_us)} less device time ({share:.1f}%; "
            f"{plural(at, 'op')} already at or above {s.target_pct:g}% "
            f"save{'s' if at == 1 else ''} nothing, never counted below zero). "
            f"{plural(unmodelled, 'device op')} "
            f"{'has' if unmodelled == 1 else 'have'} no model (unmodelled: not known to be fine)"
            + ("; 1 runs faster than its model" if faster == 1 else
               f"; {faster:,} run faster than their model" if faster else ""))


def balance_lines(view: View) -> list[str]:
    """Core spread, grid use and dispatch: a lead sentence and a line or two each."""
    b = whyslow.balance(view)
    if b is None or not (b.per_core_ops or b.grid_ops or len(b.dispatch)):
        return []
    if b.per_core_ops:
        lead = (f"Core balance and grid use: {b.per_core_ops:,} ops have per-core times; "
                f"{plural(b.skewed_ops, 'op')} run their slowest core at {SKEW_FLAG:g}x the "
                "average or more" + (f" ({fmt_us(b.skewed_us)} device time, about "
                                     f"{fmt_us(b.lost_us)} of it lost to the spread)"
                                     if b.skewed_ops else ""))
    else:
        lead = ("Core balance and grid use: no per-core times in this file (DEVICE KERNEL "
                "DURATION PER CORE MAX/AVG)")
    out = [lead]
    for g in b.skewed.head(TOP_CODES).itertuples(index=False):
        out.append(f"  {fmt_us(g.lost_us):>9} lost  {plural(int(g.ops), 'op'):>9}  skew "
                   f"{g.median_skew:.2f} median, {g.max_skew:.2f} max  {g.op_code} "
                   f"(first at op {int(g.first_id)})")
    if b.grid_ops and b.available_cores:
        line = (f"Grid: {b.small_ops:,} of {b.grid_ops:,} ops ({fmt_us(b.small_us)}, "
                f"{fmt_share(b.small_us / b.device_us * 100 if b.device_us else 0)} of device "
                f"time) ran on under {LOW_GRID_PCT:g}% of the {b.available_cores:,.0f} available "
                "worker cores")
        if len(b.small_grid):
            g = b.small_grid.iloc[0]
            line += (f"; most: {g['op_code']} ({plural(int(g['ops']), 'op')}, "
                     f"{fmt_us(g['device_us'])}, {g['median_cores']:,.0f} cores median)")
        out.append(line)
    if len(b.dispatch):
        g = b.dispatch.iloc[0]
        out.append(f"Dispatch (dispatch-core profiling): command-queue time "
                   f"{fmt_us(b.dispatch['cq_us'].sum())}, go-signal wait "
                   f"{fmt_us(b.dispatch['go_wait_us'].sum())} over "
                   f"{plural(int(b.dispatch['ops'].sum()), 'op')}; most: {g['op_code']} "
                   f"({fmt_us(g['cq_us'])} + {fmt_us(g['go_wait_us'])})")
    return out


def ccl_lines(view: View) -> list[str]:
    """Collectives: per op code, bus bandwidth over its device runs against its links."""
    c = whyslow.collectives(view)
    if c is None:
        return []
    peak = (f"{c.link_peak_gbps:g} GB/s per link and direction ({view.trace.arch.name})"
            if c.link_peak_gbps else f"no Ethernet link peak for {view.trace.arch.name}")
    out = [f"Collectives (CCL) against the Ethernet links: bus bandwidth (NCCL's ring rule: "
           f"each device's bytes S (n-1)/n, x2 for all-reduce, over its kernel time); {peak}"]
    groups = c.by_op_code()
    unlinked = False
    for g in groups[:TOP_CODES]:
        s = g["gbps_over_devices"]
        if s["median"] is None:
            out.append(f"  {g['op_code']} x{g['runs']}: no bandwidth (group size or duration "
                       "unknown)")
            continue
        if g["links"] and g["link_pct_median"] is not None:
            links = (f"{'/'.join(map(str, g['links']))} links at {g['link_pct_median']:.0f}% of "
                     "their peak")
        else:
            links, unlinked = "links unknown", True
        n = "/".join(map(str, g["n"])) or "?"
        line = (f"  {s['median']:6.1f} GB/s  {g['op_code']} x{g['runs']} on {g['devices']} "
                f"devices (n={n}, {links}): {s['min']:.1f}-{s['max']:.1f} over "
                f"{g['device_rows']} device runs")
        if g["max_skew"] is not None and g["devices"] > 1:
            line += f"; slowest device {g['max_skew']:.2f}x the fastest"
        if g["first_runs"]:
            line += (f"; first runs of their programs: {g['first_runs']} of {g['runs']} (their "
                     "times include waiting for the other devices' compile)")
        out.append(line)
    if len(groups) > TOP_CODES:
        out.append(f"  and {plural(len(groups) - TOP_CODES, 'more op code')} (JSON "
                   "ccl_bandwidth has every run)")
    if unlinked:
        out.append("Links unknown: the ops' ATTRIBUTES do not say num_links; the share of "
                   "the links' peak needs it")
    return out


def cache_lines(view: View) -> list[str]:
    """The program cache: recompiles, programs first run inside the steady state."""
    p = whyslow.program_cache(view)
    if p is None:
        return []
    head = (f"Program cache: {plural(p.programs, 'program')} (PROGRAM HASH) on "
            f"{plural(p.devices, 'device')}")
    flag = {"live": "", "absent": "; no PROGRAM CACHE HIT column",
            "stale": "; PROGRAM CACHE HIT repeats each program's first flag (see the warning): "
                     "no miss is counted from it",
            "no_repeats": "; every program ran once on its device (each run a compile)"}[p.flag]
    out = [head + flag]
    if p.flag == "live":
        recompiles = int(p.recompiles["ops"].sum()) if len(p.recompiles) else 0
        out.append(f"  {p.misses:,} ops missed the cache inside the window: "
                   f"{p.misses - recompiles:,} first runs (compiles), {recompiles:,} "
                   "recompiles of a program already run on their device"
                   + (" (a cleared or evicted cache)" if recompiles else ""))
        for g in p.recompiles.head(TOP_CODES).itertuples(index=False):
            out.append(f"    {g.op_code}: {plural(int(g.ops), 'recompile')} (program cache "
                       f"missed at op {int(g.first_id)}: a recompile)")
    if p.steady_from_id is not None:
        n = int(p.new_programs["ops"].sum()) if len(p.new_programs) else 0
        out.append(f"  Steady state (the window, from op {p.steady_from_id}): "
                   f"{plural(n, 'op')} ran a new program (compiled inside it)"
                   + ("" if n else ": every program was compiled before it"))
        for g in p.new_programs.head(TOP_CODES).itertuples(index=False):
            out.append(f"    {g.op_code}: {plural(int(g.ops), 'new program')} (first at op "
                       f"{int(g.first_id)})")
    elif p.repeats and p.last_new_id is not None and p.last_new_at_pct is not None:
        out.append(f"  The window is the whole file (mark the steady state with a signpost to "
                   f"check it): the last new program ran at op {p.last_new_id}, "
                   f"{p.last_new_at_pct:.0f}% into its device ops")
    return out


def reason_lead(view: View, short: bool = False) -> str | None:
    """The share of device time with a reason and the reason classes, largest first (None:
    no device op); `short`: without the grid's source and the bases but where two classes share
    a name (view 6 at 80 columns)."""
    c = whyslow.why_contract(view)
    if not c["device_ops"]:
        return None
    names = [k["class"] for k in c["classes"]]

    def basis(k: dict[str, Any]) -> str:
        # short: a class's basis only where its name is shared (dram-bound on the model and on
        # the roofline), in its last word ("model", "roofline")
        if not short:
            return f" ({k['basis']})"
        return f" ({k['basis'].split()[-1]})" if names.count(k["class"]) > 1 else ""

    classes = ", ".join(f"{k['class']}{basis(k)} {fmt_share(k['share_pct'])}"
                        for k in sorted(c["classes"], key=lambda k: -k["share_pct"]))
    grid = c["grid"]
    where = "" if short else f", from {grid['source']}"
    return (f"Every op explained: a reason for {c['covered_pct']:.1f}% of device time "
            f"({plural(c['device_ops'], 'device op')}, {fmt_us(c['device_us'])}; grid "
            f"{grid['cores']:,.0f} cores{where}): {classes}")


def reason_lines(view: View) -> list[str]:
    """Every device op's reason, per op code (model.whyslow.why_contract): the lead sentence,
    the heaviest op codes with their reason and saving, then what to try for the first few."""
    c = whyslow.why_contract(view)
    lead = reason_lead(view)
    if lead is None:
        return []
    out = [lead]
    rows = c["by_op_code"]
    # present.table.WHY_GROUPS, the TUI's ranking too (here the file's text as it is: the
    # outputs make it inert)
    spec = WHY_GROUPS.select(("device_us", "share_pct", "saving_us", "reason")).replace(
        "reason", texts=lambda f: [f"{g}: {r}" for g, r in zip(f["group"], f["reason"])])
    frame = pd.DataFrame(rows[:TOP_GROUPS], columns=["op_code", "device_us", "share_pct",
                                                     "saving_us", "reason"])
    texts, _ = cells(frame.rename(columns={"op_code": "group"}), spec, severity=False)
    dev, share, saving, reason = (spec.by_key[k] for k in spec.keys())
    out.append(f"  {dev.title:>9}  {share.title:>6}  {saving.title:>9}  {reason.title}")
    for d, sh, sv, r in zip(*texts.values()):
        out.append(f"  {d:>9}  {sh:>6}  {sv:>9}  {r}")
    if len(rows) > TOP_GROUPS:
        rest = rows[TOP_GROUPS:]
        out.append(f"  {fmt_us(sum(g['device_us'] for g in rest)):>9}  "
                   f"{fmt_share(sum(g['share_pct'] for g in rest)):>6}  "
                   f"{fmt_saving(sum(g['saving_us'] for g in rest)):>9}  in "
                   f"{plural(len(rest), 'more op code')} (JSON why has every one)")
    for g in [g for g in rows[:TOP_CODES] if g["try"]]:
        out += [f"  {g['op_code']}, try: {t}" for t in g["try"]]
        out.append(f"  {g['op_code']}: its saving assumes {g['assumes']}")
    return out


#: The heaviest ops the report lists after its header, before the table in file order.
HEAVIEST = 5


def heaviest_lines(view: View, n: int = HEAVIEST) -> list[str]:
    """The `n` ops with the most device time, each with its reason (model.reasons)."""
    return [f.line for f in heaviest_facts(view, n=n)]


def heaviest_facts(view: View, shown: object = None, n: int = HEAVIEST) -> list[Labelled]:
    """The header's "Heaviest K" facts: the `n` ops with the most device time, each with its
    reason (model.reasons)."""
    from ..model.analysis import reasons

    ops = view.ops
    if not n or "device_time_us" not in ops:
        return []
    dev = np.flatnonzero(reasons.device_mask(ops))
    dur = ops["device_time_us"].to_numpy(dtype="float64")
    top = dev[np.argsort(-dur[dev], kind="stable")[:n]]
    why = whyslow.op_reasons(view)
    total = float(dur[dev].sum())
    out = []
    for k, pos in enumerate(top, 1):
        o, w = ops.iloc[pos], why.iloc[pos]
        text = reasons.reason_text(int(w["why_class"]), float(w["why_pct"]),
                                   float(o.get("cores", np.nan)), float(w["why_grid"]),
                                   float(dur[pos]), o.get("math_fidelity"),
                                   float(view.trace.arch.dram_gbps))
        out.append(Labelled(f"Heaviest {k}", str(clean_text(
            f"op {int(o['id'])} {o['op_code']}, {fmt_us(dur[pos])} "
            f"({fmt_share(dur[pos] / total * 100 if total else 0)} of device time): {text}"))))
    return out


def sections(view: View) -> list[tuple[str, list[str]]]:
    """(title, lines) of each section with something to say: lines[0] leads, the rest are
    its items."""
    parts = (("Every op explained", reason_lines),
             ("Against the performance model", model_lines),
             ("Core balance and grid use", balance_lines),
             ("Collectives against the Ethernet links", ccl_lines),
             ("Program cache", cache_lines))
    out = []
    for title, make in parts:
        lines = make(view)
        if lines:
            out.append((title, lines))
    return out


def why_lines(view: View) -> list[str]:
    """Every section for the text table, each after a blank line."""
    return [line for b in blocks(view) for line in b.lines()]


def blocks(view: View) -> list[Block]:
    """The sections after the op table (present.sections): each lead, then its items."""
    return [Block(title, lines[0], tuple(lines[1:])) for title, lines in sections(view)]


def model_facts(view: View, shown: object = None) -> list[Labelled]:
    """The header's "Model" fact: the performance model's headline (none without a model)."""
    m = headline(view)
    return [Labelled("Model", m)] if m else []


def keys(view: View, shown: object = None) -> dict[str, Any]:
    """The sections' JSON keys (as_dict). The per-op reasons made for them are let go once
    the keys are made (whyslow.release_reasons: ~38 MB of a million ops, held through the
    guide rules and the advice JSON writes next), unless a caller made them before (the
    TUI's); those of a view to be kept in the analysis cache are spilled to its folder."""
    made = not whyslow.reasons_kept(view)
    found = as_dict(view)
    if made:  # (those of a view to be kept in the cache: in its folder until stored)
        entry = view.__dict__.get("_acache")
        whyslow.release_reasons(view, None if entry is None else entry.spilled)
    return found


def model_dict(view: View) -> dict[str, Any] | None:
    s = model_summary(view)
    if s is None:
        return None
    r = whyslow.model_ranking(view)
    return {**s.as_dict(), "headline": headline(view, s),
            "by_op_code": [{k: (round(float(v), 6) if k != "group" and k != "ops" else
                                (int(v) if k == "ops" else str(v)))
                            for k, v in row.items()} for row in r.to_dict("records")]}


def as_dict(view: View) -> dict[str, Any]:
    """JSON's keys: why (every device op's reason per op code), performance_model,
    core_balance, ccl_bandwidth, program_cache (null when the file has nothing for one)."""
    b, c, p = whyslow.balance(view), whyslow.collectives(view), whyslow.program_cache(view)
    return {"why": whyslow.why_contract(view),
            "performance_model": model_dict(view),
            "core_balance": b.as_dict() if b is not None else None,
            "ccl_bandwidth": c.as_dict() if c is not None else None,
            "program_cache": p.as_dict() if p is not None else None}
