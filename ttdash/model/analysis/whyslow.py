"""Why it is slow beyond the performance model, per view: core balance and grid use
(model.imbalance), collectives against the Ethernet links (model.ccl) and the program cache
(model.progcache). Each is computed once per view and kept with it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..query import summary_key
from ..read.readback import LaterValue
from . import ccl, imbalance, perfmodel, progcache, reasons

if TYPE_CHECKING:
    from ..trace import View


def _once(view: View, name: str, make: Any) -> Any:
    """`make()` once per view and ops frame (a subset or a live refresh makes a new one). A
    callable kept is what the analysis cache read back without its frame (read when first
    used: model.read.analysis_cache)."""
    cached = view.__dict__.get(f"_why_{name}")
    if callable(cached):
        cached = view.__dict__[f"_why_{name}"] = cached()
    if cached is None or cached[0] is not view.ops:
        cached = (view.ops, make())
        view.__dict__[f"_why_{name}"] = cached
    return cached[1]


#: The columns the per-device figures read (a window of a wide table is not copied whole).
_READ = ("ID", "OP CODE", "OP TYPE", "DEVICE ID", "GLOBAL CALL COUNT",
         "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]", "ATTRIBUTES", "_region",
         "METAL TRACE REPLAY SESSION ID", progcache.HASH, progcache.HIT)


def _table(view: View) -> pd.DataFrame:
    """The trace table's columns the figures here read, the columns themselves, not a copy
    (pandas 2's o[columns] copies: ~110 MB of a million ops kept with the view when the window
    is the whole file); of a table the analysis cache has not read back, these read alone."""
    trace = view.trace
    return _once(view, "table", lambda: trace.ordered_columns(
        [c for c in trace.ordered_labels
         if c in _READ or c.startswith(("INPUT_0_", "OUTPUT_", "_ATTR_"))]))


def window_rows(view: View) -> pd.DataFrame:
    """The view's window of the trace, every device's rows (the device merge keeps one row of
    each op) and the columns the per-device figures read; the index is the trace table's."""
    def make() -> pd.DataFrame:
        narrow = _table(view)
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
    return _once(view, "cache", lambda: progcache.cache_summary(_table(view),
                                                                window_rows(view)))


def collectives(view: View) -> ccl.CclSummary | None:
    def make() -> ccl.CclSummary | None:
        rows = window_rows(view)
        table = _table(view)
        p = progcache.programs(table)
        at = table.index.get_indexer(rows.index)
        first = np.where(at >= 0, p.first[np.maximum(at, 0)], False) if p is not None else None
        return ccl.summarise(rows, view.trace.arch, first)
    return _once(view, "ccl", make)


def model_summary(view: View) -> perfmodel.ModelSummary | None:
    """The view against the performance model (None: a frame without the model's columns)."""
    if "pm_eff_pct" not in view.ops:
        return None
    return _once(view, "model", lambda: perfmodel.summarise(view.op_rows))


def model_ranking(view: View) -> pd.DataFrame:
    """perfmodel.ranking of the view's ops by op code (its first word), most recoverable
    first: the report's section, JSON's by_op_code and the TUI's why view."""
    return _once(view, "ranking", lambda: perfmodel.ranking(view.op_rows))


def op_reasons(view: View) -> pd.DataFrame:
    """model.reasons.op_reasons of the view's ops (why_class, why_pct, why_saving_us,
    why_grid; the index of view.ops)."""
    return _once(view, "reasons", lambda: reasons.op_reasons(view.ops, view.trace.arch,
                                                              grid_in_file(view)))


def reasons_kept(view: View) -> bool:
    """Whether op_reasons of the view's ops are made and kept with it (or stored apart)."""
    cached = view.__dict__.get("_why_reasons")
    if isinstance(cached, LaterValue):
        cached = cached.items
    return cached is not None and cached[0] is view.ops


def release_reasons(view: View, keep: Any = None) -> None:
    """Drop the per-op reasons kept with the view (op_reasons makes them again when asked;
    what was worked out from them, why_contract's groups, stays); `keep`: instead, give their
    frame to it (the analysis cache's Entry.spilled), read back when asked for again."""
    cached = view.__dict__.pop("_why_reasons", None)
    if keep is not None and isinstance(cached, tuple):
        view.__dict__["_why_reasons"] = LaterValue((cached[0], keep(cached[1])))


def grid_in_file(view: View) -> bool:
    """Whether the file says how many worker cores were available (model.reasons.grid_cores)."""
    return reasons_grid_column in view.trace.ordered_labels


reasons_grid_column = "AVAILABLE WORKER CORE COUNT"


def reason_groups(view: View) -> pd.DataFrame:
    """model.reasons.by_op_code of the view's ops (heaviest op code first)."""
    return _once(view, "reason_groups",
                 lambda: reasons.by_op_code(view.ops, op_reasons(view), view.trace.arch))


def why_contract(view: View) -> dict[str, Any]:
    """The reason of every device op, per op code: JSON `why`, the report's section, view 6
    and MCP render this one dict (model.reasons.contract)."""
    return _once(view, "contract", lambda: reasons.contract(
        view.ops, view.trace.arch, grid_in_file(view), op_reasons(view), reason_groups(view)))


def op_reason(view: View, at: Any) -> dict[str, Any] | None:
    """The reason of one op (`at`: its index in view.ops), worded as why_contract's entries."""
    return reasons.one_reason(view.ops, op_reasons(view), view.trace.arch, at)


def reason_ops(view: View, group: str) -> pd.DataFrame:
    """The device ops of op code `group` (its first word, as why_contract's op_code), heaviest
    first: pos (row in view.ops), id, op_code, size, device_us, saving_us, pm_eff_pct,
    why_class, why_pct, cores, why_grid."""
    ops = view.ops
    key = _once(view, "group_key", lambda: summary_key(ops, "op").to_numpy(dtype=object))
    pos = np.flatnonzero(reasons.device_mask(ops) & (key == group))
    w = op_reasons(view)
    dur = ops["device_time_us"].to_numpy(dtype="float64")[pos]
    out = pd.DataFrame({
        "pos": pos, "id": ops["id"].to_numpy()[pos],
        "op_code": ops["op_code"].to_numpy(dtype=object)[pos],
        "size": (ops["size"].to_numpy(dtype=object)[pos] if "size" in ops
                 else np.full(len(pos), "", dtype=object)),
        "device_us": dur, "saving_us": w["why_saving_us"].to_numpy()[pos],
        "pm_eff_pct": ops["pm_eff_pct"].to_numpy(dtype="float64")[pos],
        "why_class": w["why_class"].to_numpy()[pos], "why_pct": w["why_pct"].to_numpy()[pos],
        "cores": (ops["cores"].to_numpy(dtype="float64")[pos] if "cores" in ops
                  else np.full(len(pos), np.nan)),
        "why_grid": w["why_grid"].to_numpy()[pos]})
    return out.iloc[np.argsort(-dur, kind="stable")].reset_index(drop=True)
