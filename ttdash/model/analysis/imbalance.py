"""How an op uses its cores and how long dispatch took: the per-core spread of its kernel time,
the share of the grid it ran on, and the dispatch core's times (files that have them).

* ``core_skew`` = DEVICE KERNEL DURATION PER CORE MAX / PER CORE AVG: how much longer the slowest
  core ran than the average core (1.0: even). The op's kernel time is its slowest core's (the
  per-core maximum is the kernel duration within 1.5% on the median op of every real file with
  per-core times), so with its work spread evenly it would take about the average: the time
  lost to the spread is estimated as device time x (1 - 1/skew). An op is *skewed* from
  ``columns.SKEW_FLAG`` (1.5: a third or more of its time is the grid waiting for its slowest
  cores).
* ``grid_pct`` = CORE COUNT / AVAILABLE WORKER CORE COUNT x 100 (blank when the file has no such
  column: a harvested or sub-device grid is not the arch's): ops under ``columns.LOW_GRID_PCT``
  ran on a fraction of the chip.
* ``dispatch_cq_us`` / ``go_wait_us``: DISPATCH TOTAL CQ CMD OP TIME and DISPATCH GO SEND WAIT
  TIME, written only when the capture profiled the dispatch cores (tracy
  ``--profile-dispatch-cores``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..columns import LOW_GRID_PCT, SKEW_FLAG, aggregated
from ..query import summary_key

PER_CORE_MAX = "DEVICE KERNEL DURATION PER CORE MAX [ns]"
PER_CORE_AVG = "DEVICE KERNEL DURATION PER CORE AVG [ns]"
DISPATCH_CQ = "DISPATCH TOTAL CQ CMD OP TIME [ns]"
GO_WAIT = "DISPATCH GO SEND WAIT TIME [ns]"


def imbalance_columns(per_core_max: np.ndarray, per_core_avg: np.ndarray, cores: np.ndarray,
                      available: np.ndarray, cq_ns: np.ndarray, go_ns: np.ndarray,
                      skip: np.ndarray) -> dict[str, np.ndarray]:
    """core_skew, grid_pct, dispatch_cq_us and go_wait_us of each row; `skip`: rows with no
    device timing to use (signposts, host ops, corrupt rows)."""
    with np.errstate(all="ignore"):
        ok = ~skip & (per_core_avg > 0) & (per_core_max > 0)
        skew = np.where(ok, per_core_max / per_core_avg, np.nan)
        grid = np.where(~skip & (available > 0), cores / available * 100.0, np.nan)
        cq = np.where(skip | ~(cq_ns >= 0), np.nan, cq_ns / 1000.0)
        go = np.where(skip | ~(go_ns >= 0), np.nan, go_ns / 1000.0)
    return {"core_skew": skew, "grid_pct": grid, "dispatch_cq_us": cq, "go_wait_us": go}


@dataclass(frozen=True)
class BalanceSummary:
    """Core spread, grid use and dispatch over a view's ops: the report's section and JSON's
    `core_balance`. Each frame is per op code, largest device time first."""
    device_ops: int
    device_us: float
    per_core_ops: int  # ops with per-core times
    skewed: pd.DataFrame  # op_code, ops, device_us, lost_us, median_skew, max_skew, first_id
    #                       (most time lost first)
    grid_ops: int  # ops with a core count and a grid size
    available_cores: float | None  # the median grid size
    small_grid: pd.DataFrame  # op_code, ops, device_us, median_cores, median_grid_pct
    dispatch: pd.DataFrame  # op_code, ops, cq_us, go_wait_us (files with dispatch times)

    @property
    def skewed_ops(self) -> int:
        return int(self.skewed["ops"].sum()) if len(self.skewed) else 0

    @property
    def lost_us(self) -> float:
        return float(self.skewed["lost_us"].sum()) if len(self.skewed) else 0.0

    @property
    def skewed_us(self) -> float:
        return float(self.skewed["device_us"].sum()) if len(self.skewed) else 0.0

    @property
    def small_ops(self) -> int:
        return int(self.small_grid["ops"].sum()) if len(self.small_grid) else 0

    @property
    def small_us(self) -> float:
        return float(self.small_grid["device_us"].sum()) if len(self.small_grid) else 0.0

    def as_dict(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            out = []
            for row in frame.to_dict("records"):
                out.append({k: (str(v) if k == "op_code" else int(v) if k in ("ops", "first_id")
                                else None if v != v else round(float(v), 6))
                            for k, v in row.items()})
            return out
        return {"skew_flag": SKEW_FLAG, "low_grid_pct": LOW_GRID_PCT,
                "device_ops": self.device_ops, "device_us": round(self.device_us, 6),
                "per_core_ops": self.per_core_ops, "skewed_ops": self.skewed_ops,
                "skewed_device_us": round(self.skewed_us, 6), "lost_us": round(self.lost_us, 6),
                "skewed": records(self.skewed), "grid_ops": self.grid_ops,
                "available_cores": self.available_cores, "small_grid_ops": self.small_ops,
                "small_grid_device_us": round(self.small_us, 6),
                "small_grid": records(self.small_grid), "dispatch": records(self.dispatch)}


def _by_op_code(frame: pd.DataFrame, by: str, **agg: tuple[str, str]) -> pd.DataFrame:
    out = aggregated(frame.groupby("op_code", sort=False, observed=True), **agg)
    return out.sort_values(by, ascending=False, kind="stable").reset_index()


def summarise(ops: pd.DataFrame) -> BalanceSummary:
    """Over the op rows of a view (no signposts)."""
    device = ops["device_time_us"].to_numpy(dtype="float64")
    dev = ~np.isnan(device)
    skew = ops["core_skew"].to_numpy(dtype="float64")
    grid = ops["grid_pct"].to_numpy(dtype="float64")
    cq = ops["dispatch_cq_us"].to_numpy(dtype="float64")
    go = ops["go_wait_us"].to_numpy(dtype="float64")
    ids = ops["id"].to_numpy()
    flagged = dev & (skew >= SKEW_FLAG)
    gridded = dev & ~np.isnan(grid)
    small = gridded & (grid < LOW_GRID_PCT)
    timed = ~np.isnan(cq) | ~np.isnan(go)
    named = flagged | small | timed  # the op code's group, only where one is reported
    key = np.full(len(ops), None, dtype=object)
    key[named] = summary_key(ops[named], "op").to_numpy(dtype=object)
    with np.errstate(all="ignore"):
        lost = device * (1.0 - 1.0 / skew)
    skewed = _by_op_code(
        pd.DataFrame({"op_code": key[flagged], "device_us": device[flagged],
                      "lost_us": lost[flagged], "skew": skew[flagged], "id": ids[flagged]}),
        "lost_us", ops=("skew", "size"), device_us=("device_us", "sum"),
        lost_us=("lost_us", "sum"),
        median_skew=("skew", "median"), max_skew=("skew", "max"), first_id=("id", "min"))
    avail = ops["available_cores"].to_numpy(dtype="float64")  # the file's where grid_pct is set
    cores = grid / 100.0 * avail  # CORE COUNT as written (`cores`: tt-perf-report's count)
    small_grid = _by_op_code(
        pd.DataFrame({"op_code": key[small], "device_us": device[small], "cores": cores[small],
                      "grid": grid[small]}),
        "device_us", ops=("grid", "size"), device_us=("device_us", "sum"),
        median_cores=("cores", "median"), median_grid_pct=("grid", "median"))
    dispatch = pd.DataFrame({"op_code": key[timed], "cq_us": cq[timed], "go_wait_us": go[timed]})
    dispatch = aggregated(dispatch.groupby("op_code", sort=False, observed=True),
                          ops=("cq_us", "size"), cq_us=("cq_us", "sum"),
                          go_wait_us=("go_wait_us", "sum"))
    dispatch = dispatch.assign(total=dispatch["cq_us"] + dispatch["go_wait_us"].fillna(0)) \
        .sort_values("total", ascending=False, kind="stable").drop(columns="total").reset_index()
    return BalanceSummary(
        device_ops=int(dev.sum()), device_us=float(np.nansum(device)),
        per_core_ops=int((dev & ~np.isnan(skew)).sum()), skewed=skewed,
        grid_ops=int(gridded.sum()),
        available_cores=float(np.median(avail[gridded])) if gridded.any() else None,
        small_grid=small_grid, dispatch=dispatch)
