"""View-state computations over a View's ops frame: filter, sort, group, navigate.

The TUI keeps only the resulting index arrays; every computation is vectorised here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..format import distinct
from .columns import aggregated

# The filter language lives in model.filters (its keys come from the column spec); the names are
# kept here for the callers that import them from query.
from .filters import (  # noqa: F401  (re-exported)
    DIFF_FILTER_KEYS,
    FILTER_KEYS,
    Filter,
    FilterError,
    Term,
    filter_hint,
)


def sort_order(ops: pd.DataFrame, rows: np.ndarray, key: str | None,
               descending: bool) -> np.ndarray:
    """`rows` (positions) ordered by column `key`; missing values last; stable."""
    if key is None:
        return rows
    values = ops[key].to_numpy()[rows]
    if values.dtype == object:
        s = pd.Series(values).astype("string").fillna("")
        ranks = s.rank(method="first").to_numpy()
        missing = (s == "").to_numpy()
    else:
        ranks = values.astype("float64")
        missing = np.isnan(ranks)
    ranks = np.where(missing, np.inf, -ranks if descending else ranks)
    return rows[np.argsort(ranks, kind="stable")]


#: The op columns group_ops reads (summary_key's and its own).
SUMMARY_INPUTS = ("op_code", "in0_memory", "category", "device", "device_time_us",
                  "flops_pct", "is_host", "is_signpost")


def summary_inputs(ops: pd.DataFrame, keep: np.ndarray | None = None,
                   also: tuple[str, ...] = ()) -> pd.DataFrame:
    """The SUMMARY_INPUTS (and `also`) columns of `ops`, of the rows `keep` (bool; None: every
    row): what a group-by copies of a million-op frame, not its other 50 columns (a row mask on
    the whole frame copied ~200 MB for a table of a few hundred groups)."""
    cols = [c for c in dict.fromkeys((*SUMMARY_INPUTS, *also)) if c in ops.columns]
    return ops[cols] if keep is None else ops.loc[keep, cols]


def group_ops(ops: pd.DataFrame, by: str) -> pd.DataFrame:
    """Device time by op code, category or "memory" (op code and input 0 memory, as
    tt-perf-report's summary groups): count, total, mean, share; largest first."""
    o = summary_inputs(ops, ~ops["is_signpost"].to_numpy(dtype=bool), (by,))
    keys = (summary_key(o, "memory") if by == "memory" else o[by]).astype("string") \
        .fillna("(none)")
    t = o["device_time_us"]
    g = t.groupby(keys, sort=False, observed=True)
    out = pd.DataFrame({"count": g.size(), "total_us": g.sum(min_count=1), "mean_us": g.mean(),
                        "max_us": g.max()})
    total = float(np.nansum(t))
    out["share_pct"] = out["total_us"] / total * 100 if total > 0 else np.nan
    out.index.name = by
    return out.sort_values("total_us", ascending=False, na_position="last").reset_index()


def summary_key(ops: pd.DataFrame, by: str) -> pd.Series:
    """tt-perf-report's stacked-report group of each op: the op code's first word ("op"), that
    plus input 0's memory ("memory": "MatmulDeviceOperation (in0:dram_interleaved)", from the
    last two "_"-separated words of INPUT_0_MEMORY; no group when it has fewer) or the op
    category ("category"). Worked out once per distinct (op code, memory) and spread back: a
    trace has a few hundred of them in 100,000s of rows (string splits per row cost seconds)."""
    if by == "category":
        return ops["category"].astype(object)
    keys, inverse = _distinct_keys(ops, by)
    return pd.Series(keys[inverse], index=ops.index, dtype=object)


def summary_codes(ops: pd.DataFrame, by: str, rows: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """summary_key of the rows `rows` (bool; None: every row) as numbers: (a group number per
    row, -1 for no group; the group names, one per number). No object per row: a group-by on
    them costs integers, not a million strings hashed."""
    if by == "category":
        key = ops["category"].astype(object).to_numpy()
        codes, names = pd.factorize(key if rows is None else key[rows])
        return codes.astype(np.int64), np.asarray(names, dtype=object)
    keys, inverse = _distinct_keys(ops, by, rows)
    per_key, names = pd.factorize(keys)  # (keys are distinct combinations: names may repeat)
    return per_key.astype(np.int64)[inverse], np.asarray(names, dtype=object)


def _distinct_keys(ops: pd.DataFrame, by: str, rows: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """summary_key's "op" or "memory" key of each distinct (op code, memory) of the rows `rows`
    (bool; None: every row), and the position of each row's in them."""
    cols = ["op_code"] + (["in0_memory"] if by == "memory" else [])
    codes = [distinct(ops[c] if rows is None else ops[c][rows]) for c in cols]
    combined = codes[0][0]
    width = len(codes[1][1]) if len(codes) > 1 else 1
    if len(codes) > 1:
        combined = combined * width + codes[1][0]
    inverse, uniq = pd.factorize(combined)
    small = pd.DataFrame({"op_code": np.asarray(codes[0][1], dtype=object)[uniq // width]})
    if len(codes) > 1:
        small["in0_memory"] = np.asarray(codes[1][1], dtype=object)[uniq % width]
    return _summary_key_rows(small, by).to_numpy(dtype=object), inverse


def _summary_key_rows(ops: pd.DataFrame, by: str) -> pd.Series:
    """summary_key, row by row (on the distinct rows)."""
    code = ops["op_code"].astype("string").fillna("")
    name = code.str.split().str[0]
    if by == "op":
        return name.astype(object)
    mem = ops["in0_memory"].astype("string")
    parts = mem.str.split("_")
    layout = " (in0:" + parts.str[-2].str.lower() + "_" + parts.str[-1].str.lower() + ")"
    return name.where(mem.isna(), name + layout).astype(object)


def summary_groups(ops: pd.DataFrame, by: str = "memory", per_device: bool = False,
                   keep: np.ndarray | None = None) -> pd.DataFrame:
    """tt-perf-report's summary ("stacked report", its --summary-file CSV): per group (and
    device, `per_device`) the ops, their device time (host ops count 0) and its share, the
    category, and FLOPs % min / max / mean / std / mean weighted by device time; largest
    first. Signposts are left out, and the rows `keep` (bool) leaves out."""
    rows = ~ops["is_signpost"].to_numpy(dtype=bool)
    if keep is not None:
        rows &= keep
    # the columns read, of these rows, one at a time (no copy of the others); the groups by
    # number (summary_codes), named once grouped
    t = ops["device_time_us"].to_numpy(dtype="float64")[rows]
    t[ops["is_host"].to_numpy(dtype=bool)[rows]] = 0.0
    f = ops["flops_pct"].to_numpy(dtype="float64")[rows]
    code, names = summary_codes(ops, by, rows)
    frame = pd.DataFrame({"name": np.where(code >= 0, code, np.nan),
                          "device": ops["device"].to_numpy()[rows], "t": t, "f": f},
                         copy=False)
    del code
    with np.errstate(invalid="ignore"):
        frame["ft"] = np.where(np.isnan(f), np.nan, f * t)
        frame["tf"] = np.where(np.isnan(f), np.nan, t)
    del t, f
    frame["category"] = ops["category"].astype(object).to_numpy()[rows]
    keys = ["name", "device"] if per_device else ["name"]
    g = frame.groupby(keys, sort=False, dropna=True, observed=True)
    out = aggregated(g, op_count=("t", "size"), device_time_us=("t", "sum"),
                     category=("category", "first"), flops_pct_min=("f", "min"),
                     flops_pct_max=("f", "max"), flops_pct_mean=("f", "mean"),
                     flops_pct_std=("f", "std"), _ft=("ft", "sum"), _tf=("tf", "sum"),
                     _nf=("f", "count")).reset_index()
    del frame, g
    out["name"] = names[out["name"].to_numpy(dtype=np.int64)]
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = out["_ft"] / out["_tf"]
    out["flops_pct_weighted_mean"] = weighted.where((out["_nf"] > 0) & (out["_tf"] != 0))
    if by == "category":  # FLOPs across op types mean nothing (tt-perf-report leaves them out)
        for c in ("category", "flops_pct_min", "flops_pct_max", "flops_pct_mean",
                  "flops_pct_std", "flops_pct_weighted_mean"):
            out[c] = np.nan if c != "category" else out["name"]
    if per_device:
        total = out.groupby("device", observed=True)["device_time_us"].transform("sum")
    else:
        total = out["device_time_us"].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["total_pct"] = (out["device_time_us"] / total * 100).fillna(0.0)
    out = out.drop(columns=["_ft", "_tf", "_nf"])
    order = ["name", *(["device"] if per_device else []), "op_count", "device_time_us",
             "total_pct", "category", "flops_pct_min", "flops_pct_max", "flops_pct_mean",
             "flops_pct_std", "flops_pct_weighted_mean"]
    return out[order].sort_values("device_time_us", ascending=False, kind="stable") \
        .reset_index(drop=True)


def signpost_positions(ops: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Positions within `rows` where a new signpost region begins (signpost rows or, when they are
    filtered out, the first op of each region)."""
    region = ops["region"].to_numpy()[rows]
    if not len(region):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.diff(region, prepend=-1) != 0)
    return starts[region[starts] > 0]


def downsample_sum(values: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, int]:
    """At most `points` buckets of consecutive ops: (first op index, summed value, ops per
    bucket). Sums keep the area honest: the plot shows where the run's time goes."""
    v = np.nan_to_num(np.asarray(values, dtype="float64"), nan=0.0)
    n = len(v)
    if n <= points or points <= 0:
        return np.arange(n), v, 1
    size = int(np.ceil(n / points))
    starts = np.arange(0, n, size)
    return starts, np.add.reduceat(v, starts), size


#: Columns sorted ascending when first chosen (text and ids); numbers sort largest first.
ASCENDING_KEYS = frozenset({"id", "op_code", "signpost", "category", "math_fidelity", "bound",
                            "baseline_id", "candidate_id", "region_label", "status", "bounds"})


@dataclass
class TableState:
    """What a table shows of a frame: filter, signpost region, sort. Pure: the TUI keeps one per
    table and draws `rows()`."""

    frame: pd.DataFrame
    filter: Filter = Filter("")
    sort_key: str | None = None
    sort_desc: bool = True
    narrowed: int = 0  # 0 = every region, k = signpost region k

    def rows(self) -> np.ndarray:
        f = self.frame
        mask = self.filter.mask(f)
        if self.narrowed:
            mask &= f["region"].to_numpy() == self.narrowed
            mask &= ~f["is_signpost"].to_numpy(dtype=bool)
        return sort_order(f, np.flatnonzero(mask), self.sort_key, self.sort_desc)

    def sort_step(self, keys: list[str], step: int) -> None:
        """The previous/next of `keys` (the columns on screen)."""
        i = keys.index(self.sort_key) if self.sort_key in keys else (-1 if step > 0 else 0)
        self.sort_key = keys[(i + step) % len(keys)]
        self.sort_desc = self.sort_key not in ASCENDING_KEYS

    def sort_by(self, key: str | None, descending: bool | None = None) -> None:
        self.sort_key = key
        self.sort_desc = (key not in ASCENDING_KEYS) if descending is None else descending

    def reverse(self, default_key: str = "id") -> None:
        if self.sort_key is None:
            self.sort_key, self.sort_desc = default_key, True
        else:
            self.sort_desc = not self.sort_desc

    def clear(self) -> bool:
        """Drop the filter and the region; True when something was cleared."""
        if not (self.narrowed or self.filter.text):
            return False
        self.narrowed, self.filter = 0, Filter("", self.filter.keys)
        return True
