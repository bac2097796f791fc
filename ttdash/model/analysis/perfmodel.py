"""Ops against the profiler's performance model: how close each op runs to what the model says
it could, and how much time is recoverable.

The profiler writes, per op, `PM IDEAL [ns]` (the model's time: the larger of `PM COMPUTE [ns]`
and `PM BANDWIDTH [ns]`, so it is compute- or bandwidth-bound by the model). ttdash derives:

* ``pm_eff_pct``: PM IDEAL / DEVICE KERNEL DURATION x 100 (100% = as fast as the model);
* ``pm_bound``: "compute" or "bandwidth", whichever of the two model times is larger;
* ``recoverable_us``: device kernel time above the model, max(0, duration - ideal) (0 for an op
  faster than its model: the model is then pessimistic, and nothing is recoverable by it).

An op without a model (PM IDEAL blank, 0, or the 1 ns placeholder the profiler writes for ops it
does not model; signposts, host ops, corrupt timings) has NaN in all three and is *unmodelled*:
never shown as efficient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..columns import aggregated
from ..query import summary_key

#: PM IDEAL at or under this (ns) is no model: the profiler writes 1 for ops it does not model.
PM_PLACEHOLDER_NS = 1.0
#: The target of the "if every modelled op reached X% of its model" line.
TARGET_EFF_PCT = 70.0
PM_BOUNDS = np.array(["compute", "bandwidth", None], dtype=object)


def pm_columns(dur_ns: np.ndarray, ideal_ns: np.ndarray, compute_ns: np.ndarray,
               bandwidth_ns: np.ndarray, skip: np.ndarray) -> dict[str, np.ndarray]:
    """The three per-op columns (see the module docstring); `skip`: rows with no device
    timing to compare (signposts, host ops, corrupt rows)."""
    with np.errstate(all="ignore"):  # absurd cells (1e-300 ns) overflow to inf: shown as is
        modelled = ~skip & (ideal_ns > PM_PLACEHOLDER_NS) & (dur_ns > 0)
        eff = np.where(modelled, ideal_ns / dur_ns * 100.0, np.nan)
        recoverable = np.where(modelled, np.maximum(dur_ns - ideal_ns, 0.0) / 1000.0, np.nan)
        which = np.where(np.fmax(compute_ns, 0) >= np.fmax(bandwidth_ns, 0), 0, 1)
        known = modelled & ~(np.isnan(compute_ns) & np.isnan(bandwidth_ns))
    return {"pm_eff_pct": eff, "recoverable_us": recoverable,
            "pm_bound": PM_BOUNDS[np.where(known, which, 2)]}


@dataclass(frozen=True)
class ModelSummary:
    """The whole view against the model: the report's headline and JSON's `performance_model`."""
    device_ops: int
    modelled_ops: int
    device_us: float  # every device op's
    modelled_us: float  # the modelled ops' device time
    ideal_us: float  # their model time
    recoverable_us: float
    faster_than_model: int  # modelled ops above 100% (the model is pessimistic there)
    target_pct: float
    #: if every modelled op under the target reached it: each op's saving clamped at zero (an
    #: op at or above the target saves nothing; it never counts against the others)
    target_saving_us: float
    at_target_ops: int = 0  # modelled ops already at or above the target (not in JSON)

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v)
                for k, v in self.__dict__.items() if k != "at_target_ops"}

    @property
    def recoverable_share_pct(self) -> float:
        return self.recoverable_us / self.device_us * 100 if self.device_us > 0 else 0.0


def summarise(ops: pd.DataFrame, target_pct: float = TARGET_EFF_PCT) -> ModelSummary:
    device = ops["device_time_us"].to_numpy(dtype="float64")
    eff = ops["pm_eff_pct"].to_numpy(dtype="float64")
    rec = ops["recoverable_us"].to_numpy(dtype="float64")
    m = ~np.isnan(eff)
    dur = ops["raw_kernel_ns"].to_numpy(dtype="float64") / 1000.0
    with np.errstate(all="ignore"):  # absurd cells: inf x 0 is NaN, not a warning on stderr
        ideal = dur * eff / 100.0
        at_target = ideal / (target_pct / 100.0)
        below = m & (dur > at_target)
        saving = np.where(below, dur - at_target, 0.0)
    return ModelSummary(
        device_ops=int((~np.isnan(device)).sum()), modelled_ops=int(m.sum()),
        device_us=float(np.nansum(device)), modelled_us=float(np.nansum(dur[m])),
        ideal_us=float(np.nansum(ideal[m])), recoverable_us=float(np.nansum(rec)),
        faster_than_model=int((eff[m] > 100.0).sum()), target_pct=target_pct,
        target_saving_us=float(saving.sum()), at_target_ops=int((m & ~below).sum()))


def ranking(ops: pd.DataFrame, by: str = "op") -> pd.DataFrame:
    """Recoverable time per group (`by`: "op", the op code's first word as tt-perf-report's
    summary groups; or any column): ops, device time, model time, recoverable us, its share of
    the recoverable total, and the median efficiency; most recoverable first. Modelled ops only."""
    eff = ops["pm_eff_pct"].to_numpy(dtype="float64")
    m = ~np.isnan(eff)
    # the modelled rows of the columns read below only (all of them: ~230 MB at a million ops)
    need = ["op_code", "raw_kernel_ns", "recoverable_us"] + ([] if by == "op" else [by])
    o = ops.loc[m, list(dict.fromkeys(need))]
    dur = o["raw_kernel_ns"].to_numpy(dtype="float64") / 1000.0
    key = summary_key(o, "op") if by == "op" else o[by].astype(object)
    with np.errstate(all="ignore"):  # absurd cells: inf x 0 is NaN, not a warning on stderr
        ideal = dur * eff[m] / 100.0
    frame = pd.DataFrame({"group": key.to_numpy(), "device_us": dur, "ideal_us": ideal,
                          "recoverable_us": o["recoverable_us"].to_numpy(dtype="float64"),
                          "eff": eff[m]})
    g = frame.groupby("group", sort=False, dropna=False, observed=True)
    out = aggregated(g, ops=("eff", "size"), device_us=("device_us", "sum"),
                     ideal_us=("ideal_us", "sum"), recoverable_us=("recoverable_us", "sum"),
                     median_eff_pct=("eff", "median"))
    total = float(out["recoverable_us"].sum())
    out["recoverable_share_pct"] = out["recoverable_us"] / total * 100 if total > 0 else 0.0
    return out.sort_values("recoverable_us", ascending=False, kind="stable").reset_index()
