"""Why it is slow beyond the performance model, per view: core balance and grid use
(model.imbalance), collectives against the Ethernet links (model.ccl) and the program cache
(model.progcache). Each is computed once per view and kept with it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import ccl, imbalance, progcache

if TYPE_CHECKING:
    from .trace import View


def _once(view: View, name: str, make: Any) -> Any:
    """`make()` once per view and ops frame (a subset or a live refresh makes a new one)."""
    cached = view.__dict__.get(f"_why_{name}")
    if cached is None or cached[0] is not view.ops:
        cached = (view.ops, make())
        view.__dict__[f"_why_{name}"] = cached
    return cached[1]


#: The columns the per-device figures read (a window of a wide table is not copied whole).
_READ = ("ID", "OP CODE", "OP TYPE", "DEVICE ID", "GLOBAL CALL COUNT",
         "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]", "ATTRIBUTES", "_region",
         "METAL TRACE REPLAY SESSION ID", progcache.HASH, progcache.HIT)


def window_rows(view: View) -> pd.DataFrame:
    """The view's window of the trace, every device's rows (the device merge keeps one row of
    each op) and the columns the per-device figures read; the index is the trace table's."""
    def make() -> pd.DataFrame:
        o = view.trace.ordered
        narrow = o[[c for c in o.columns if c in _READ
                    or c.startswith(("INPUT_0_", "OUTPUT_", "_ATTR_"))]]
        try:
            return replace(view.trace, ordered=narrow).window_rows(view.window)[0]
        except Exception:  # a view made without a window of its trace (a live table)
            return narrow
    return _once(view, "window", make)


def balance(view: View) -> imbalance.BalanceSummary | None:
    """Core spread, grid use and dispatch over the view's ops (None: no device op)."""
    def make() -> imbalance.BalanceSummary | None:
        if "core_skew" not in view.ops:
            return None
        s = imbalance.summarise(view.op_rows)
        return s if s.device_ops else None
    return _once(view, "balance", make)


def program_cache(view: View) -> progcache.CacheSummary | None:
    return _once(view, "cache", lambda: progcache.cache_summary(view.trace.ordered,
                                                                window_rows(view)))


def collectives(view: View) -> ccl.CclSummary | None:
    def make() -> ccl.CclSummary | None:
        rows = window_rows(view)
        p = progcache.programs(view.trace.ordered)
        at = view.trace.ordered.index.get_indexer(rows.index)
        first = np.where(at >= 0, p.first[np.maximum(at, 0)], False) if p is not None else None
        return ccl.summarise(rows, view.trace.arch, first)
    return _once(view, "ccl", make)
