"""View-state computations over a View's ops frame: filter, sort, group, navigate.

The TUI keeps only the resulting index arrays; every computation is vectorised here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

# Filter keys a user can type: `bound:DRAM cat:TM dev:1 sp:decode` plus free text (op code).
FILTER_KEYS = {"bound": "bound", "cat": "category", "category": "category", "dev": "device",
               "device": "device", "sp": "signpost", "signpost": "signpost", "op": "op_code",
               "fid": "math_fidelity"}


@dataclass(frozen=True)
class Filter:
    text: str = ""

    def mask(self, ops: pd.DataFrame) -> np.ndarray:
        """Rows matching every term (case-insensitive); signpost rows are kept only when the
        filter is empty, so a filtered table lists ops alone."""
        terms = self.text.split()
        if not terms:
            return np.ones(len(ops), dtype=bool)
        keep = ~ops["is_signpost"].to_numpy(dtype=bool)
        for term in terms:
            key, sep, value = term.partition(":")
            field = FILTER_KEYS.get(key.lower()) if sep else None
            if field is None:
                field, value = "op_code", term
            col = ops[field]
            if field == "device":
                try:
                    keep &= (col.to_numpy(dtype="float64") == float(value))
                except ValueError:
                    keep &= False
                continue
            s = col.astype("string").fillna("")
            keep &= s.str.contains(re.escape(value), case=False, regex=True).to_numpy(dtype=bool)
        return keep


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


def group_ops(ops: pd.DataFrame, by: str) -> pd.DataFrame:
    """Device time by op code or category: count, total, mean, share; largest first."""
    o = ops[~ops["is_signpost"].to_numpy(dtype=bool)]
    keys = o[by].astype("string").fillna("(none)")
    t = o["device_time_us"]
    g = t.groupby(keys, sort=False)
    out = pd.DataFrame({"count": g.size(), "total_us": g.sum(min_count=1), "mean_us": g.mean(),
                        "max_us": g.max()})
    total = float(np.nansum(t))
    out["share_pct"] = out["total_us"] / total * 100 if total > 0 else np.nan
    out.index.name = by
    return out.sort_values("total_us", ascending=False, na_position="last").reset_index()


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
