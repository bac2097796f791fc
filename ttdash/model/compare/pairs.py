"""The pairs table of a diff: one row per aligned pair or unmatched op, with both sides'
figures, how the pair matched, noise labels; and the per-group sums. Built by
:func:`ttdash.model.compare.diff.diff_traces` (the rules are in that module's docstring)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.metrics import text_column
from ..trace import View
from .signature import NOISE_K, region_labels

STATUS_MATCHED, STATUS_ADDED, STATUS_REMOVED = "matched", "added", "removed"
#: What a matched pair was matched on (the ``match`` column): the same signature (op code, input
#: shapes and dtypes), else the same op code + normalised ATTRIBUTES + shape bucket
#: (signature.attribute_keys), else the op code alone.
MATCH_SIGNATURE, MATCH_ATTRIBUTES, MATCH_OP_CODE = "exact", "attributes", "op_code"
MATCH_KINDS = (MATCH_SIGNATURE, MATCH_ATTRIBUTES, MATCH_OP_CODE)

PAIR_COLUMNS = (
    "baseline_id", "candidate_id", "op_code", "size", "status", "baseline_us", "candidate_us",
    "delta_us", "delta_pct", "baseline_gap_us", "candidate_gap_us", "gap_delta_us",
    "baseline_bound", "candidate_bound", "region", "device", "match", "moved", "within_noise",
    "noise_pct", "baseline_pos", "candidate_pos", "host_pause", "change", "cause",
)
GROUP_COLUMNS = ("baseline_count", "candidate_count", "baseline_us", "candidate_us", "delta_us",
                 "delta_pct", "share_pct", "baseline_gap_us", "candidate_gap_us")


def pairs_frame(a: View, b: View, a_ops: pd.DataFrame, b_ops: pd.DataFrame, ma: np.ndarray,
                 mb: np.ndarray, moved: np.ndarray, a_sig: np.ndarray, b_sig: np.ndarray,
                 sig_a: np.ndarray, sig_b: np.ndarray, per_device: bool,
                 a_attr: np.ndarray | None = None, b_attr: np.ndarray | None = None
                 ) -> pd.DataFrame:
    na, nb = len(a_ops), len(b_ops)
    rem = np.setdiff1d(np.arange(na), ma, assume_unique=True)
    add = np.setdiff1d(np.arange(nb), mb, assume_unique=True)
    # Order: matched and removed ops at their baseline position; an added op just before the
    # next (unmoved) matched pair after it, so a gap reads "removed ..., added ...".
    order_a = ma[~moved]
    order_b = mb[~moved]
    nxt = np.searchsorted(order_b, add)
    anchor = np.where(nxt < len(order_a), order_a[np.minimum(nxt, len(order_a) - 1)]
                      if len(order_a) else na, na).astype("float64") - 0.5
    key = np.concatenate([ma.astype("float64"), rem.astype("float64"), anchor])
    sub = np.concatenate([np.zeros(len(ma)), np.zeros(len(rem)), add.astype("float64")])
    apos = np.concatenate([ma, rem, np.full(len(add), -1)]).astype(np.int64)
    bpos = np.concatenate([mb, np.full(len(rem), -1), add]).astype(np.int64)
    status = np.repeat(np.array([STATUS_MATCHED, STATUS_REMOVED, STATUS_ADDED], dtype=object),
                       [len(ma), len(rem), len(add)])
    mv = np.concatenate([moved, np.zeros(len(rem) + len(add), bool)])
    order = np.lexsort((sub, key))
    del key, sub, anchor, nxt
    apos, bpos, status, mv = apos[order], bpos[order], status[order], mv[order]
    del order
    ha, hb = apos >= 0, bpos >= 0
    sa, sb = np.maximum(apos, 0), np.maximum(bpos, 0)

    def take(ops: pd.DataFrame, col: str, pos: np.ndarray, has: np.ndarray,
             numeric: bool) -> np.ndarray:
        if numeric:
            v = ops[col].to_numpy(dtype="float64") if len(ops) else np.zeros(0)
            out = v[pos] if len(v) else np.full(len(pos), np.nan)
            return np.where(has, out, np.nan)
        v = ops[col].to_numpy(dtype=object) if len(ops) else np.zeros(0, object)
        out = v[pos] if len(v) else np.full(len(pos), None, dtype=object)  # a new array
        out[~has] = None
        return out

    b_us = take(a_ops, "device_time_us", sa, ha, True)
    c_us = take(b_ops, "device_time_us", sb, hb, True)
    b_gap = take(a_ops, "op_to_op_us", sa, ha, True)
    c_gap = take(b_ops, "op_to_op_us", sb, hb, True)
    matched = ha & hb
    delta = np.where(matched, c_us - b_us, np.where(ha, -b_us, c_us))
    gap_delta = np.where(matched, c_gap - b_gap, np.where(ha, -b_gap, c_gap))
    with np.errstate(invalid="ignore", divide="ignore"):
        delta_pct = np.where(matched & (b_us > 0), (c_us - b_us) / b_us * 100.0, np.nan)

    code = np.where(ha, take(a_ops, "op_code", sa, ha, False), take(b_ops, "op_code", sb, hb,
                                                                    False))
    region_a = region_labels(a, a_ops)
    region_b = region_labels(b, b_ops)
    region = np.where(ha, region_a[sa] if na else None, region_b[sb] if nb else None)
    match = np.full(len(apos), "", dtype=object)
    if na and nb:
        same_sig = matched & (a_sig[sa] == b_sig[sb])
        match[matched] = MATCH_OP_CODE
        if a_attr is not None and b_attr is not None:
            match[matched & (a_attr[sa] == b_attr[sb])] = MATCH_ATTRIBUTES
        match[same_sig] = MATCH_SIGNATURE

    # Noise: sigmas of both sides, one side standing in for a missing other.
    s_a = np.where(ha, sig_a[sa] if na else np.nan, np.nan)
    s_b = np.where(hb, sig_b[sb] if nb else np.nan, np.nan)
    s_a2 = np.where(np.isnan(s_a), s_b, s_a)
    s_b2 = np.where(np.isnan(s_b), s_a, s_b)
    noise_pct = np.where(matched, NOISE_K * 100.0 * np.sqrt(s_a2 ** 2 + s_b2 ** 2), np.nan)
    known = matched & ~np.isnan(noise_pct) & ~np.isnan(delta_pct)
    within = pd.array(np.abs(np.nan_to_num(delta_pct)) <= np.nan_to_num(noise_pct),
                      dtype="boolean")
    within[~known] = pd.NA

    dev = take(a_ops, "device", sa, ha, True) if na else np.full(len(apos), np.nan)
    if nb:
        dev = np.where(ha, dev, take(b_ops, "device", sb, hb, True))
    frame = pd.DataFrame({
        "baseline_id": _nullable_int(take(a_ops, "id", sa, ha, True), ha),
        "candidate_id": _nullable_int(take(b_ops, "id", sb, hb, True), hb),
        "op_code": text_column(code),
        "size": text_column(_pair_sizes(take(a_ops, "size", sa, ha, False),
                                  take(b_ops, "size", sb, hb, False), ha, match)),
        "status": text_column(status),
        "baseline_us": b_us,
        "candidate_us": c_us,
        "delta_us": delta,
        "delta_pct": delta_pct,
        "baseline_gap_us": b_gap,
        "candidate_gap_us": c_gap,
        "gap_delta_us": gap_delta,
        "baseline_bound": text_column(_blank_none(take(a_ops, "bound", sa, ha, False))),
        "candidate_bound": text_column(_blank_none(take(b_ops, "bound", sb, hb, False))),
        "region": text_column(region),
        "device": _nullable_int(dev, np.ones(len(apos), bool)) if per_device
        else pd.array([pd.NA] * len(apos), dtype="Int64"),
        "match": text_column(match),
        "moved": mv,
        "within_noise": within,
        "noise_pct": noise_pct,
        "baseline_pos": _nullable_int(apos.astype("float64"), ha),
        "candidate_pos": _nullable_int(bpos.astype("float64"), hb),
    }, copy=False)  # the columns as they are: a consolidating copy doubled the peak
    return frame


def _pair_sizes(size_a: np.ndarray, size_b: np.ndarray, ha: np.ndarray,
                match: np.ndarray) -> np.ndarray:
    """The op's size; "baseline → candidate" for a pair not matched by signature (another
    shape on each side)."""
    a, b = _blank_none(size_a), _blank_none(size_b)
    out = np.where(ha, a, b).astype(object)
    both = ((match == MATCH_OP_CODE) | (match == MATCH_ATTRIBUTES)) & (a != b)
    if both.any():
        out[both] = [f"{x or '?'} → {y or '?'}" for x, y in zip(a[both], b[both])]
    return out


def _nullable_int(vals: np.ndarray, has: np.ndarray) -> pd.arrays.IntegerArray:
    ok = has & ~np.isnan(vals)
    arr = pd.array(np.where(ok, np.round(np.nan_to_num(vals)), 0).astype(np.int64), dtype="Int64")
    arr[~ok] = pd.NA
    return arr


def _blank_none(v: np.ndarray) -> np.ndarray:
    out = v.copy()
    out[pd.isna(out) | (out == "")] = None
    return out


def group(pairs: pd.DataFrame, by: str, total_delta: float) -> pd.DataFrame:
    """Counts and times per op code / region; `share_pct` of the total device-time delta."""
    key = pairs[by].astype(object).where(pairs[by].notna(), "")
    g = pairs.groupby(key.to_numpy(), sort=False, dropna=False, observed=True)
    out = pd.DataFrame({
        "baseline_count": g["baseline_pos"].count(),
        "candidate_count": g["candidate_pos"].count(),
        "baseline_us": g["baseline_us"].sum(),
        "candidate_us": g["candidate_us"].sum(),
        "baseline_gap_us": g["baseline_gap_us"].sum(),
        "candidate_gap_us": g["candidate_gap_us"].sum(),
    })
    out["delta_us"] = out["candidate_us"] - out["baseline_us"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["delta_pct"] = np.where(out["baseline_us"] > 0,
                                    out["delta_us"] / out["baseline_us"] * 100.0, np.nan)
        out["share_pct"] = (out["delta_us"] / total_delta * 100.0) if total_delta != 0 \
            else np.nan
    out.index.name = by
    out = out.reset_index()
    return out[[by, *GROUP_COLUMNS]]
