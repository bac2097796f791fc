"""A reason for every device op (issue #47): why it takes the time it takes, from what the file
has, and what it would save, labelled with what the estimate assumes.

Each device op gets one reason class, the first of these that the file supports (the TT-Lang
profiling guide's order: all the cores first, then DRAM traffic, then fusion and dispatch):

1. ``under-gridded``: CORE COUNT under ``columns.LOW_GRID_PCT`` of the grid available to it
   (AVAILABLE WORKER CORE COUNT, else the arch's worker cores but no more than the most any op
   used: `grid_cores`). DRAM-sharded matmuls are left
   out (they compute on one core per DRAM bank pair by design, docs/numbers.md) and so are
   collectives (their time is the Ethernet links'). Saving: the device time above
   max(time x cores / grid, the op's roofline time): the work split evenly over the whole grid.
2. ``skewed``: the slowest core ran ``columns.SKEW_FLAG`` x the average or more (per-core times,
   model.imbalance). Saving: time x (1 - 1/skew), the work spread evenly over its cores.
3. ``link-bound``: a collective with a bus bandwidth against its Ethernet links (model.ccl).
   Saving: the time above the links' peak.
4. ``dram-bound`` / ``compute-bound`` against the profiler's model (PM IDEAL, model.perfmodel:
   whichever of PM BANDWIDTH and PM COMPUTE is larger), at pm_eff_pct of it. Saving: the time
   above the model (recoverable_us).
5. Against the op's roofline on the whole grid: its DRAM tensors' bytes (io_dram_pct: ttdash's
   estimate of every DRAM tensor read and written; not when the estimate was capped at the peak,
   io_dram_capped: then it over-counts) at the arch's peak DRAM bandwidth, and its
   FLOPs (matmuls and convs) at its fidelity's peak on every worker core of the grid (a
   DRAM-sharded matmul: on its DRAM-reader cores, one per DRAM bank, as tt-perf-report).
   ``dram-bound`` or ``compute-bound`` at the nearer roof's % when it is at
   ``columns.BOUND_THRESHOLD_PCT`` or more, else ``slow`` (below both). Saving: the time above
   the roofline time.
6. ``dispatch-bound``: none of the above, and the op-to-op gap before it (host and dispatch)
   is longer than its kernel. Saving: none of its device time; the gap (wall time) is counted
   apart (gap_us), what a metal trace would shorten.
7. ``no data``: the file says nothing more (the whole grid, no per-core times, no model, no DRAM
   tensor nor FLOPs, a gap shorter than its kernel).

Everything is computed on arrays over the ops (no Python per op); `by_op_code` groups them per
op code (its first word, as tt-perf-report's summary) and `contract` is the one dict every front
end renders (JSON `why`, the report's section, view 6, MCP).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...format import fmt_us
from ..arch import ArchSpec
from ..columns import BOUND_THRESHOLD_PCT, LOW_GRID_PCT, SKEW_FLAG
from ..query import summary_key
from .ccl import kinds_of
from .reason_classes import DISPATCH as DISPATCH  # (and below: still importable from here)
from .reason_classes import LINK as LINK
from .reason_classes import NO_DATA as NO_DATA
from .reason_classes import PM_COMPUTE as PM_COMPUTE
from .reason_classes import PM_DRAM as PM_DRAM
from .reason_classes import PM_OTHER as PM_OTHER
from .reason_classes import ROOF_COMPUTE as ROOF_COMPUTE
from .reason_classes import ROOF_DRAM as ROOF_DRAM
from .reason_classes import SKEW as SKEW
from .reason_classes import SLOW as SLOW
from .reason_classes import UNDER as UNDER
from .reasons_try import try_lines

#: Reason classes (the per-op `why_class` codes index these).
CLASS_NAMES = ("under-gridded", "skewed", "link-bound", "dram-bound", "compute-bound",
               "below model", "dram-bound", "compute-bound", "slow", "dispatch-bound", "no data")
#: What each class's figure is measured against.
BASIS = ("cores", "per-core times", "ethernet links", "performance model", "performance model",
         "performance model", "roofline", "roofline", "roofline", "op-to-op gap", "none")
#: What each class's saving estimate assumes.
ASSUMES = (
    "the work split evenly over every core of the grid (no faster than its roofline)",
    "the work spread evenly over the cores it uses",
    "the collective at its Ethernet links' peak",
    "the op reaching the profiler's model (PM IDEAL)",
    "the op reaching the profiler's model (PM IDEAL)",
    "the op reaching the profiler's model (PM IDEAL)",
    "the op's DRAM bytes at the arch's peak DRAM bandwidth",
    "the op's FLOPs at its fidelity's peak on every core of the grid",
    "the op at its roofline (DRAM bytes at peak bandwidth, FLOPs at peak on the whole grid)",
    "no device time saved: the gap before it (wall time) is what a metal trace would shorten",
    "nothing: no estimate",
)
#: Columns of the per-op frame `op_reasons` returns.
OP_COLUMNS = ("why_class", "why_pct", "why_saving_us", "why_gap_us", "why_grid")


def _num(ops: pd.DataFrame, name: str) -> np.ndarray:
    if name not in ops:
        return np.full(len(ops), np.nan)
    return ops[name].to_numpy(dtype="float64", na_value=np.nan)


def _flag(ops: pd.DataFrame, name: str) -> np.ndarray:
    if name not in ops:
        return np.zeros(len(ops), dtype=bool)
    return ops[name].fillna(False).to_numpy(dtype=bool)


def device_mask(ops: pd.DataFrame) -> np.ndarray:
    """The ops with a device time (no signpost, host op or corrupt timing)."""
    dur = _num(ops, "device_time_us")
    return ~_flag(ops, "is_signpost") & ~_flag(ops, "is_host") & np.isfinite(dur) & (dur > 0)


def math_pct_whole_grid(ops: pd.DataFrame, arch: ArchSpec, grid: np.ndarray) -> np.ndarray:
    """Achieved FLOP/s against the fidelity's peak on every core of the grid (`grid`: per op;
    not the op's CORE COUNT, as tt-perf-report's FLOPs %): NaN without FLOPs or a peak for the
    fidelity."""
    per_core = np.full(len(ops), np.nan)
    if "math_fidelity" in ops:  # (by distinct fidelity: no object per op)
        codes, names = pd.factorize(ops["math_fidelity"])
        peaks = arch.tflops_per_core
        per_core = np.array([peaks.get(f, np.nan) for f in names] + [np.nan],
                            dtype="float64")[codes]
    with np.errstate(all="ignore"):
        return _num(ops, "flops") / (per_core * grid) * 100.0


def grid_cores(ops: pd.DataFrame, arch: ArchSpec, grid_in_file: bool) -> np.ndarray:
    """The cores available to each op: the file's AVAILABLE WORKER CORE COUNT when it has the
    column (`grid_in_file`); otherwise the arch's worker cores, but no more than the most any
    device op of `ops` ran on (a harvested or smaller board, e.g. a 20-core Blackhole, writes
    no grid size in older files: an op is never called under-gridded against cores the file
    gives no evidence of)."""
    grid = _num(ops, "available_cores")
    whole = float(arch.worker_cores)
    if not grid_in_file:
        used = _num(ops, "cores")[device_mask(ops)]
        used = used[np.isfinite(used)]
        whole = min(whole, float(used.max())) if len(used) else whole
        return np.full(len(ops), whole)
    return np.where(np.isfinite(grid) & (grid > 0), grid, whole)


def op_reasons(ops: pd.DataFrame, arch: ArchSpec, grid_in_file: bool = True) -> pd.DataFrame:
    """Per op (the index of `ops`): why_class (an index into CLASS_NAMES; -1 for rows without
    device time), why_pct (the figure of the class: % of the grid, skew, % of the links' peak,
    % of the model or of the nearer roof, the gap in us), why_saving_us (device time; 0 for a
    dispatch-bound op: its gap is wall time), why_gap_us (the gap of a dispatch-bound op),
    why_grid (the cores available: grid_cores)."""
    n = len(ops)
    dev = device_mask(ops)
    dur = _num(ops, "device_time_us")
    grid = grid_cores(ops, arch, grid_in_file)
    skew, gap = _num(ops, "core_skew"), _num(ops, "op_to_op_us")
    eff, link = _num(ops, "pm_eff_pct"), _num(ops, "ccl_link_pct")
    # DRAM bytes over the time, % of the arch's peak; an estimate capped at the peak (the
    # bytes over-counted, e.g. a KV cache read only up to the position) is no roof
    io_pct = np.where(_flag(ops, "io_dram_capped"), np.nan, _num(ops, "io_dram_pct"))
    sharded = _flag(ops, "dram_sharded")
    # a DRAM-sharded matmul computes on one core per DRAM bank whatever its CORE COUNT (its
    # program factory; docs/numbers.md): its math roof is theirs (tt-perf-report's FLOPs %)
    math_pct = np.where(sharded, _num(ops, "flops_pct"), math_pct_whole_grid(ops, arch, grid))
    # Arrays over the ops, a few at a time (a million ops: 8 MB each): each class's condition
    # is made, marked and let go; the class is the first that holds, so they are marked from
    # the last to the first.
    cls = np.full(n, -1, dtype=np.int64)
    with np.errstate(all="ignore"):
        roof_pct = np.fmax(io_pct, math_pct)  # the nearer roof (NaN: neither known)
        share = _num(ops, "cores") / grid
        cls[dev] = NO_DATA
        cls[dev & np.isfinite(gap) & (gap > dur)] = DISPATCH
        roofed = dev & np.isfinite(roof_pct) & (roof_pct > 0)
        cls[roofed] = SLOW
        roofed &= roof_pct >= BOUND_THRESHOLD_PCT
        cls[roofed] = ROOF_COMPUTE
        cls[roofed & (io_pct >= np.nan_to_num(math_pct, nan=-1.0))] = ROOF_DRAM
        del roofed
        modelled = dev & np.isfinite(eff)
        cls[modelled] = PM_OTHER
        if "pm_bound" in ops:
            # numpy's comparison of the objects: pandas 2.2's own fails on a read-only array
            # (a live view's column: "buffer source array is read-only")
            pm_bound = ops["pm_bound"].to_numpy(dtype=object)
            for c, bound in ((PM_COMPUTE, "compute"), (PM_DRAM, "bandwidth")):
                cls[modelled & (pm_bound == bound)] = c
            del pm_bound
        del modelled
        cls[dev & np.isfinite(link) & (link > 0)] = LINK
        cls[dev & (skew >= SKEW_FLAG)] = SKEW
        code = ops["op_code"] if "op_code" in ops else pd.Series(np.full(n, "", dtype=object))
        ccl = kinds_of(code) > 0 if n else np.zeros(0, dtype=bool)
        cls[dev & (share * 100.0 < LOW_GRID_PCT) & ~ccl & ~sharded] = UNDER
        del ccl, sharded

        def roof_us(at: np.ndarray) -> np.ndarray:
            return dur[at] * roof_pct[at] / 100.0

        def figures(c: int, at: np.ndarray) -> tuple[Any, Any]:
            """The class's figure and saving at the positions `at` of its ops."""
            d = dur[at]
            if c == UNDER:
                return share[at] * 100.0, d - np.fmax(d * share[at],
                                                       np.nan_to_num(roof_us(at), nan=0.0))
            if c == SKEW:
                return skew[at], d * (1.0 - 1.0 / skew[at])
            if c == LINK:
                return link[at], d * (1.0 - np.minimum(link[at], 100.0) / 100.0)
            if c in (PM_DRAM, PM_COMPUTE, PM_OTHER):
                return eff[at], _num(ops, "recoverable_us")[at]
            if c in (ROOF_DRAM, ROOF_COMPUTE, SLOW):
                return {ROOF_DRAM: io_pct, ROOF_COMPUTE: math_pct, SLOW: roof_pct}[c][at], \
                    d - roof_us(at)
            if c == DISPATCH:
                return gap[at], 0.0
            return np.nan, 0.0

        pct = np.full(n, np.nan)
        saving = np.full(n, np.nan)
        for c in range(NO_DATA + 1):
            at = np.flatnonzero(cls == c)
            if len(at):
                pct[at], saving[at] = figures(c, at)
        saving = np.where(np.isfinite(saving), np.maximum(saving, 0.0), np.where(dev, 0.0,
                                                                                 np.nan))
    return pd.DataFrame({"why_class": cls, "why_pct": pct, "why_saving_us": saving,
                         "why_gap_us": np.where(cls == DISPATCH, gap, 0.0),
                         "why_grid": grid}, index=ops.index)


# ------------------------------------------------------------------ sentences and per op code

def _pct(v: float) -> str:
    return "<1%" if 0 <= v < 0.5 else f"{v:.0f}%"


def reason_text(cls: int, pct: float, cores: float, grid: float, dur_us: float,
                fidelity: object = None, dram_gbps: float | None = None,
                of: tuple[int, int] | None = None, cores_max: float | None = None,
                sharded_cores: int = 0) -> str:
    """The sentence for one reason class and its figure (`pct`: why_pct, a median over a
    group); `of`: (ops of this class, ops) when they are a group's; `cores` to `cores_max`:
    the range of the group's core counts; `sharded_cores`: a DRAM-sharded matmul's
    DRAM-reader cores (its math's)."""
    def ok(v: float) -> bool:
        return bool(np.isfinite(v))

    part = f" ({of[0]:,} of {of[1]:,} ops)" if of is not None and of[0] < of[1] else ""
    if cls == UNDER:
        span = f"-{cores_max:,.0f}" if cores_max is not None and cores_max > cores else ""
        return (f"under-gridded: {cores:,.0f}{span} of {grid:,.0f} cores" if ok(cores) else
                "under-gridded") + part
    if cls == SKEW:
        return f"skewed: slowest core {pct:.2f}x the average" + part
    if cls == LINK:
        return f"link-bound: Ethernet links at {_pct(pct)} of their peak" + part
    if cls in (PM_DRAM, PM_COMPUTE, PM_OTHER):
        what = {PM_DRAM: "DRAM-bound at ", PM_COMPUTE: "compute-bound at "}.get(cls, "at ")
        return f"{what}{_pct(pct)} of its model (PM IDEAL)" + part
    if cls == ROOF_DRAM:
        peak = f" ({dram_gbps:g} GB/s)" if dram_gbps else ""
        return f"DRAM-bound at {_pct(pct)} of peak{peak}" + part
    if cls == ROOF_COMPUTE:
        fid = f"{fidelity} " if isinstance(fidelity, str) and fidelity else ""
        if sharded_cores:
            return (f"compute-bound at {_pct(pct)} of {fid}peak on its {sharded_cores} "
                    "DRAM-reader cores (DRAM-sharded: CORE COUNT also counts the cores that "
                    "only hold the activation)") + part
        return f"compute-bound at {_pct(pct)} of {fid}peak on all {grid:,.0f} cores" + part
    if cls == SLOW:
        return (f"slow: at {_pct(pct)} of its nearer roof (DRAM bandwidth, or math on all "
                f"{grid:,.0f} cores)") + part
    if cls == DISPATCH:
        return (f"dispatch-bound: {fmt_us(pct)} gap before a {fmt_us(dur_us)} kernel"
                + (" (medians)" if of is not None else "") + part)
    return ("no data: whole grid, no per-core times, no model, no DRAM tensor or FLOPs"
            + part)


def _codes(values: pd.Series | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """pd.factorize of a text column (codes, names; -1 for missing); all -1 without one."""
    if values is None:
        return np.full(n, -1, dtype=np.int64), np.zeros(0, dtype=object)
    codes, names = pd.factorize(values.astype(object).to_numpy())
    return codes.astype(np.int64), np.asarray(names, dtype=object)


def _mode_per_group(group: np.ndarray, codes: np.ndarray, names: np.ndarray,
                    groups: int) -> np.ndarray:
    """The most frequent name of each group (None when it has none), on integer codes."""
    out = np.full(groups, None, dtype=object)
    ok = codes >= 0
    if ok.any():
        pair = pd.DataFrame({"g": group[ok], "c": codes[ok]}).value_counts(sort=True)
        first = pair.reset_index().drop_duplicates("g")
        out[first["g"].to_numpy()] = names[first["c"].to_numpy()]
    return out


def _op_groups(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """summary_key(ops, "op") as (a group number per row, -1 for no group; the group names):
    of a categorical op code, worked out per category and taken by code (no object per row)."""
    s = ops["op_code"]
    if isinstance(s.dtype, pd.CategoricalDtype):
        keys = summary_key(pd.DataFrame({"op_code": s.cat.categories.astype(object)}), "op")
        per_cat, names = pd.factorize(keys.to_numpy(dtype=object))
        return np.append(per_cat, -1)[s.cat.codes.to_numpy()], np.asarray(names, dtype=object)
    codes, names = pd.factorize(summary_key(ops, "op").to_numpy(dtype=object))
    return codes, np.asarray(names, dtype=object)


def by_op_code(ops: pd.DataFrame, why: pd.DataFrame, arch: ArchSpec) -> pd.DataFrame:
    """Per op code (its first word): ops, device_us, share_pct, saving_us, gap_us, cls (the
    class holding most of its device time), cls_ops, pct/grid/dur (medians over that class's
    ops), cores/cores_max (their least and most cores), fidelity and in1_dtype (the most
    frequent), sharded (any DRAM-sharded op), has_dram (any op with DRAM tensors); heaviest
    first. Grouped on integer codes (no string per op), a column at a time (a million ops:
    no frame of their figures beside the view)."""
    row, names = _op_groups(ops)
    # the device ops with an op code (one with none is in no group, as in the summary's)
    sel = np.flatnonzero(device_mask(ops) & (row >= 0))
    if not len(sel):
        return pd.DataFrame(columns=["group", "ops", "device_us", "share_pct", "saving_us",
                                     "gap_us", "cls", "cls_ops", "pct", "cores", "cores_max",
                                     "grid", "dur", "fidelity", "in1_dtype", "sharded",
                                     "has_dram"])
    gcode, first = pd.factorize(row[sel])  # numbered by first appearance
    del row
    gnames = names[first]
    n = len(gnames)
    dur = _num(ops, "device_time_us")[sel]
    cls = why["why_class"].to_numpy()[sel].astype(np.int64)

    def sums(values: np.ndarray, keys: Any = None) -> pd.Series:
        return pd.Series(values).groupby(gcode if keys is None else keys).sum()
    out = pd.DataFrame({"ops": pd.Series(dur).groupby(gcode).size(), "device_us": sums(dur)})
    out.index.name = "g"
    for name, col in (("saving_us", "why_saving_us"), ("gap_us", "why_gap_us")):
        out[name] = sums(why[col].to_numpy()[sel])
    out["sharded"] = pd.Series(_flag(ops, "dram_sharded")[sel]).groupby(gcode).any()
    out["has_dram"] = pd.Series(np.isfinite(_num(ops, "io_dram_pct")[sel])).groupby(gcode).any()
    per = pd.DataFrame({"t": sums(dur, [gcode, cls]),
                        "k": pd.Series(dur).groupby([gcode, cls]).size()})
    per.index.names = ["g", "cls"]
    top = per.reset_index().sort_values(["t", "cls"], ascending=[False, True], kind="stable") \
        .drop_duplicates("g").set_index("g")
    out["cls"], out["cls_ops"] = top["cls"], top["k"]
    keep = cls == out["cls"].to_numpy()[gcode]  # (out's index is 0..n-1: every code has rows)
    del cls
    kept, at = gcode[keep], sel[keep]
    for name, values in (("pct", why["why_pct"].to_numpy()[at]),
                         ("grid", why["why_grid"].to_numpy()[at]), ("dur", dur[keep])):
        out[name] = pd.Series(values).groupby(kept).median()
    cores = pd.Series(_num(ops, "cores")[at]).groupby(kept)
    out["cores"], out["cores_max"] = cores.min(), cores.max()
    del cores
    for name in ("fidelity", "in1_dtype"):
        col = "math_fidelity" if name == "fidelity" else name
        codes, values = _codes(ops[col].iloc[sel] if col in ops else None, len(sel))
        out[name] = _mode_per_group(kept, codes[keep], values, n)
    total = float(dur.sum())
    out["share_pct"] = out["device_us"] / total * 100.0 if total > 0 else 0.0
    out.insert(0, "group", gnames[out.index.to_numpy()])
    return out.sort_values("device_us", ascending=False, kind="stable").reset_index(drop=True)


def contract(ops: pd.DataFrame, arch: ArchSpec, grid_in_file: bool = True,
             why: pd.DataFrame | None = None, groups: pd.DataFrame | None = None
             ) -> dict[str, Any]:
    """The one answer every front end renders (JSON `why`): covered_pct (the share of device
    time with a reason other than "no data"), device_us, device_ops, saving_us (device time),
    dispatch_gap_us, grid (cores, source), classes[] (per reason class: class, basis, ops,
    device_us, share_pct) and by_op_code[] (heaviest first: op_code, ops, device_us,
    share_pct, class, basis, reason, saving_us, dispatch_gap_us, assumes, try)."""

    why = op_reasons(ops, arch, grid_in_file) if why is None else why
    g = by_op_code(ops, why, arch) if groups is None else groups
    dev = device_mask(ops)
    dur = _num(ops, "device_time_us")[dev]
    cls = why["why_class"].to_numpy()[dev]
    total = float(dur.sum())
    covered = float(dur[cls != NO_DATA].sum())
    classes = []
    for c in range(len(CLASS_NAMES)):
        at = cls == c
        if at.any():
            t = float(dur[at].sum())
            classes.append({"class": CLASS_NAMES[c], "basis": BASIS[c], "ops": int(at.sum()),
                            "device_us": round(t, 6),
                            "share_pct": round(t / total * 100.0, 6) if total > 0 else 0.0})
    rows = []
    if len(g):
        for r in g.itertuples(index=False):
            c = int(r.cls)
            rows.append({
                "op_code": str(r.group), "ops": int(r.ops),
                "device_us": round(float(r.device_us), 6),
                "share_pct": round(float(r.share_pct), 6),
                "class": CLASS_NAMES[c], "basis": BASIS[c],
                "reason": reason_text(c, float(r.pct), float(r.cores), float(r.grid),
                                      float(r.dur), r.fidelity, float(arch.dram_gbps),
                                      (int(r.cls_ops), int(r.ops)), float(r.cores_max),
                                      arch.dram_sharded_matmul_cores if r.sharded else 0),
                "saving_us": round(float(r.saving_us), 6),
                "dispatch_gap_us": round(float(r.gap_us), 6), "assumes": ASSUMES[c],
                "try": try_lines(str(r.group), c, r.fidelity, r.in1_dtype, bool(r.sharded),
                                 bool(r.has_dram))})
    grid = why["why_grid"].to_numpy()[dev]
    return {"covered_pct": round(covered / total * 100.0, 6) if total > 0 else None,
            "device_us": round(total, 6), "device_ops": int(dev.sum()),
            "saving_us": round(float(why["why_saving_us"].to_numpy()[dev].sum()), 6),
            "dispatch_gap_us": round(float(why["why_gap_us"].to_numpy()[dev].sum()), 6),
            "grid": {"cores": float(np.median(grid)) if len(grid) else None,
                     "source": ("AVAILABLE WORKER CORE COUNT" if grid_in_file else
                                "the arch's worker cores, at most the largest CORE COUNT")},
            "classes": classes, "by_op_code": rows}


def one_reason(ops: pd.DataFrame, why: pd.DataFrame, arch: ArchSpec, at: Any
               ) -> dict[str, Any] | None:
    """The reason of the op at index `at` of `ops` (`why`: op_reasons of `ops`), worded as
    contract's by_op_code entries (class, basis, reason, saving_us, assumes); None for a row
    without device time."""
    cls = int(why.at[at, "why_class"])
    if cls < 0:
        return None
    row = ops.loc[[at]]
    fidelity = row["math_fidelity"].iloc[0] if "math_fidelity" in row else None
    return {"class": CLASS_NAMES[cls], "basis": BASIS[cls],
            "reason": reason_text(cls, float(why.at[at, "why_pct"]), float(_num(row, "cores")[0]),
                                  float(why.at[at, "why_grid"]),
                                  float(_num(row, "device_time_us")[0]), fidelity,
                                  float(arch.dram_gbps),
                                  sharded_cores=(arch.dram_sharded_matmul_cores
                                                 if _flag(row, "dram_sharded")[0] else 0)),
            "saving_us": round(float(why.at[at, "why_saving_us"]), 6),
            "assumes": ASSUMES[cls]}


def short_reason(cls: int, pct: float, cores: float, grid: float) -> str:
    """A few words for one op's reason (a table cell: view 6's list of an op code's ops)."""
    def p(v: float) -> str:
        return _pct(v) if np.isfinite(v) else "?"
    if cls < 0:
        return ""
    if cls == UNDER:
        return f"under-gridded {cores:,.0f}/{grid:,.0f} cores"
    if cls == SKEW:
        return f"skewed {pct:.2f}x"
    if cls == LINK:
        return f"link-bound {p(pct)} of links"
    if cls in (PM_DRAM, PM_COMPUTE, PM_OTHER):
        what = {PM_DRAM: "DRAM-bound ", PM_COMPUTE: "compute-bound "}.get(cls, "")
        return f"{what}{p(pct)} of model"
    if cls in (ROOF_DRAM, ROOF_COMPUTE, SLOW):
        return f"{CLASS_NAMES[cls]} {p(pct)} of roof"
    if cls == DISPATCH:
        return f"dispatch-bound, gap {fmt_us(pct)}"
    return "no data"
