"""Per-device rules, before the analysis: tt-perf-report's device merge (one row per op from
each device's row) and, from its main branch, sub-device overlap (ops on disjoint core ranges of
one device running concurrently)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..read.loader import add_column
from .metrics import MAX_DEVICE_ID, invalid_duration, num, text, whole

CCL_MERGE_NAMES = ("AllGather", "ReduceScatter", "AllReduce")


# ---------------------------------------------------------------- sub-device overlap

#: Below a cycle at any clock: intervals rebuilt from cycles and rounded ns may touch by less.
MIN_OVERLAP_NS = 1.0


def annotate_overlap(rows: pd.DataFrame) -> pd.DataFrame:
    """Per device op, the part of its kernel time that ran while an earlier op on the same
    device was still running (`_OVERLAP_NS`) and the rest (`_BUSY_NS`): ops on disjoint
    sub-devices run concurrently, and summed durations then overcount busy time. Rows before
    the device merge (cycle counters are per device and not synchronised across devices).

    tt-perf-report main's rule (ahead of its next release): each op is the interval
    [FW end - kernel duration, FW end] in ns, FW end converted with the device's median
    (FW cycles / FW duration ns); walking the intervals by start, an op's overlap is how far
    the furthest end so far reaches into it, at most its kernel time, 0 under 1 ns. NaN for
    signposts, host ops, corrupt timings and rows without cycle data.

    Also `_END_NS`: the converted FW end itself (ns on the device's own counter, which is not
    synchronised with other devices'), where the timeline places the op."""
    n = len(rows)
    overlap, busy, end_ns = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    need = ("DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]")
    if n and all(c in rows.columns for c in need):
        dev = num(rows, "DEVICE ID")
        start_c, end_c = num(rows, need[0]), num(rows, need[1])
        fw_ns = num(rows, need[2])
        kernel = num(rows, "DEVICE KERNEL DURATION [ns]")
        bad = invalid_duration(kernel, num(rows, "OP TO OP LATENCY [ns]"))
        device_op = (text(rows, "OP TYPE") == "tt_dnn_device").fillna(False).to_numpy(bool)
        usable = device_op & ~bad & ~np.isnan(dev) & ~np.isnan(start_c) & ~np.isnan(end_c) \
            & ~np.isnan(kernel)
        with np.errstate(all="ignore"):  # absurd cells (1e300) give inf/NaN, handled below
            for d in np.unique(dev[usable]):
                on = np.flatnonzero(usable & (dev == d))
                ratio = (end_c[on] - start_c[on]) / fw_ns[on]
                ok = (end_c[on] > start_c[on]) & (fw_ns[on] > 0) & np.isfinite(ratio)
                if not ok.any():
                    continue
                per_ns = float(np.median(ratio[ok]))
                if not (np.isfinite(per_ns) and per_ns > 0):
                    continue
                ends = end_c[on] / per_ns
                starts = ends - kernel[on]
                order = np.argsort(starts, kind="stable")
                e, st, k = ends[order], starts[order], kernel[on][order]
                reach = np.concatenate([[-np.inf], np.maximum.accumulate(e)[:-1]])
                ov = np.minimum(k, np.maximum(0.0, reach - st))
                ov[~(ov >= MIN_OVERLAP_NS)] = 0.0
                overlap[on[order]] = ov
                busy[on[order]] = k - ov
                end_ns[on] = ends
    out = rows.copy(deep=False)  # the window may be the trace's own table: not modified
    add_column(out, "_OVERLAP_NS", overlap)
    add_column(out, "_BUSY_NS", busy)
    add_column(out, "_END_NS", end_ns)
    return out


# ---------------------------------------------------------------- device merge

def merge_devices(rows: pd.DataFrame) -> pd.DataFrame:
    """Merge the per-device rows of each op (tt-perf-report's rule).

    Device ops of each device are queued in report order and taken in lockstep; a block is the
    head of every device whose head has the same op code as the first device's. CCL ops get the
    mean valid duration (on the lowest device's row), others the slowest device's row.
    """
    op_type = text(rows, "OP TYPE")
    dev = whole(num(rows, "DEVICE ID"), 0, MAX_DEVICE_ID)
    is_dev = (op_type == "tt_dnn_device").fillna(False).to_numpy(dtype=bool) & ~np.isnan(dev)
    if len(np.unique(dev[is_dev])) <= 1:
        return rows
    pos = np.arange(len(rows))
    dur = num(rows, "DEVICE KERNEL DURATION [ns]")
    bad = invalid_duration(dur, num(rows, "OP TO OP LATENCY [ns]"))
    key = np.where(bad, -1.0, dur)
    names = text(rows, "OP CODE").fillna("").to_numpy(dtype=object)

    d_pos = pos[is_dev]
    d_dev = dev[is_dev]
    devices = np.unique(d_dev)
    per_dev = [d_pos[d_dev == d] for d in devices]
    same = all(len(p) == len(per_dev[0]) for p in per_dev) and all(
        np.array_equal(names[p], names[per_dev[0]]) for p in per_dev[1:])
    if same:
        blocks = np.stack(per_dev, axis=1)  # [op, device] -> row position
    else:
        blocks = _lockstep_blocks(per_dev, names)
    chosen, new_dur, is_ccl = _pick(blocks, names, key, dur, bad)
    spread = _spread(blocks, dur, bad)

    keep_pos = np.concatenate([chosen, pos[~is_dev]])
    order_key = np.concatenate([np.nanmin(np.where(blocks >= 0, blocks, np.iinfo(np.int64).max),
                                          axis=1), pos[~is_dev]])
    out = rows.iloc[keep_pos].copy()
    if "DEVICE KERNEL DURATION [ns]" in out.columns:
        d = np.array(pd.to_numeric(out["DEVICE KERNEL DURATION [ns]"], errors="coerce")
                     .to_numpy(dtype="float64", na_value=np.nan))  # a writable copy
        d[: len(chosen)] = new_dur
        out["DEVICE KERNEL DURATION [ns]"] = d
    if "_OVERLAP_NS" in out.columns:  # a CCL's averaged duration bounds its overlap
        m = len(chosen)  # the merged rows come first in `out`
        ov = out["_OVERLAP_NS"].to_numpy(dtype="float64").copy()
        busy = out["_BUSY_NS"].to_numpy(dtype="float64").copy()
        known = ~np.isnan(ov[:m])  # NaN (no cycle data) stays NaN; fmin ignores a NaN mean
        ov[:m][known] = np.fmin(ov[:m][known], new_dur[known])
        busy[:m][known] = new_dur[known] - ov[:m][known]
        out["_OVERLAP_NS"], out["_BUSY_NS"] = ov, busy
    rest = len(out) - len(chosen)  # the merged rows come first, then the others (NaN)
    for k, v in {**spread, "_DEV_MEAN": is_ccl.astype("float64")}.items():
        out[k] = np.concatenate([v, np.full(rest, np.nan)])
    out["_order"] = order_key
    out = out.sort_values("_order", kind="stable").drop(columns="_order")
    return out


def _lockstep_blocks(per_dev: list[np.ndarray], names: np.ndarray) -> np.ndarray:
    """Slow path for devices whose op sequences differ: the exact lockstep walk (rare)."""
    heads = [0] * len(per_dev)
    out: list[list[int]] = []
    while any(h < len(p) for h, p in zip(heads, per_dev)):
        block = [-1] * len(per_dev)
        name = None
        for i, p in enumerate(per_dev):
            if heads[i] >= len(p):
                continue
            n = names[p[heads[i]]]
            if name is None:
                name = n
            elif n != name:
                continue
            block[i] = int(p[heads[i]])
            heads[i] += 1
        out.append(block)
    return np.array(out, dtype=np.int64).reshape(-1, len(per_dev))


def _pick(blocks: np.ndarray, names: np.ndarray, key: np.ndarray, dur: np.ndarray,
          bad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    present = blocks >= 0
    safe = np.where(present, blocks, 0)
    k = np.where(present, key[safe], -np.inf)
    slowest = safe[np.arange(len(blocks)), np.argmax(k, axis=1)]  # first max, lowest device
    first = safe[np.arange(len(blocks)), np.argmax(present, axis=1)]
    first_names = names[first].astype(str)
    is_ccl = np.zeros(len(blocks), dtype=bool)
    for n in CCL_MERGE_NAMES:
        is_ccl |= np.char.find(first_names.astype("U"), n) >= 0
    valid = present & ~bad[safe]
    vsum = np.where(valid, dur[safe], 0.0).sum(axis=1)
    vcnt = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(vcnt > 0, vsum / np.maximum(vcnt, 1), np.nan)
    chosen = np.where(is_ccl, first, slowest)
    new_dur = np.where(is_ccl, mean, dur[chosen])
    return chosen, new_dur, is_ccl


def _spread(blocks: np.ndarray, dur: np.ndarray, bad: np.ndarray) -> dict[str, np.ndarray]:
    """Per merged op, its valid kernel times over devices: count, min, median, max (ns; NaN
    without any)."""
    present = blocks >= 0
    safe = np.where(present, blocks, 0)
    vals = np.where(present & ~bad[safe], dur[safe], np.nan)
    n = (~np.isnan(vals)).sum(axis=1)
    s = np.sort(vals, axis=1)  # NaN last
    i = np.arange(len(blocks))
    none = n == 0
    top = np.maximum(n - 1, 0)
    med = (s[i, top // 2] + s[i, np.minimum(n // 2, top)]) / 2  # the middle one, or two
    return {"_DEV_N": n.astype("float64"), "_DEV_MIN_NS": np.where(none, np.nan, s[:, 0]),
            "_DEV_MEDIAN_NS": np.where(none, np.nan, med),
            "_DEV_MAX_NS": np.where(none, np.nan, s[i, top])}
