"""Run-to-run spread for `diff` with several runs per side (`--baseline A1 A2 ... --candidate B1
B2 ...`): each run's totals, and a bootstrap confidence interval of the change of the mean total.

Rule: for the gate's metric, ``delta_pct = (mean(candidate) / mean(baseline) - 1) * 100``. Its 95%
interval comes from ``BOOTSTRAP_RESAMPLES`` resamplings of the runs of each side, with
replacement (numpy, a fixed seed: the same input prints the same interval). The change is
*within noise* when the interval contains 0. With one run on a side there is no spread (the
per-op noise labels of repeated signposts still apply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.metrics import split_gaps
from ..columns import METRIC_NAMES
from ..trace import REPLAY_COLUMN
from .signature import repeated_regions

BOOTSTRAP_RESAMPLES = 4000
CONFIDENCE = 0.95
#: metric -> key of View.totals()
METRIC_TOTALS = {"steady": "steady_us", "device": "device_time_us", "wall": "wall_us",
                 "pauses": "pauses_us"}


@dataclass(frozen=True)
class Spread:
    metric: str
    baseline: tuple[float, ...]  # the metric's total of each run (us)
    candidate: tuple[float, ...]
    delta_pct: float  # change of the mean
    ci_pct: tuple[float, float]  # bootstrap interval of delta_pct
    cv_pct: tuple[float, float]  # run-to-run spread of each side: std / mean (percent)

    @property
    def within_noise(self) -> bool:
        return self.ci_pct[0] <= 0.0 <= self.ci_pct[1]

    def text(self) -> str:
        lo, hi = self.ci_pct
        return (f"mean of {len(self.baseline)} vs {len(self.candidate)} runs: "
                f"{self.delta_pct:+.2f}% on {METRIC_NAMES[self.metric]}, "
                f"{CONFIDENCE:.0%} CI {lo:+.2f}% .. {hi:+.2f}%, run-to-run spread "
                f"±{self.cv_pct[0]:.2f}% / ±{self.cv_pct[1]:.2f}%"
                + ("; within run-to-run noise" if self.within_noise else ""))

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "baseline_us": list(self.baseline),
                "candidate_us": list(self.candidate), "delta_pct": self.delta_pct,
                "ci_pct": list(self.ci_pct), "cv_pct": list(self.cv_pct),
                "within_noise": self.within_noise}


def spread(baseline: list[dict[str, Any]], candidate: list[dict[str, Any]], metric: str
           ) -> Spread | None:
    """The spread of `metric` over per-run totals (View.totals() dicts); None with fewer than
    two runs on a side or a zero baseline mean."""
    if len(baseline) < 2 and len(candidate) < 2:
        return None
    key = METRIC_TOTALS[metric]
    a = np.array([t[key] for t in baseline], dtype="float64")
    b = np.array([t[key] for t in candidate], dtype="float64")
    if not a.mean() > 0 or not np.isfinite(b).all():
        return None
    rng = np.random.default_rng(0)
    ra = a[rng.integers(0, len(a), (BOOTSTRAP_RESAMPLES, len(a)))].mean(axis=1)
    rb = b[rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (rb / ra - 1.0) * 100.0
    ratios = ratios[np.isfinite(ratios)]
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])

    def cv(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / x.mean() * 100) if len(x) > 1 and x.mean() else 0.0

    return Spread(metric=metric, baseline=tuple(float(x) for x in a),
                  candidate=tuple(float(x) for x in b),
                  delta_pct=float((b.mean() / a.mean() - 1.0) * 100.0),
                  ci_pct=(float(lo), float(hi)), cv_pct=(cv(a), cv(b)))


# ------------------------------------------------------------------ iterations inside one run


def iteration_totals(view: Any, min_keys: int = 2) -> tuple[str, list[dict[str, Any]]] | None:
    """The repeated unit of a trace and each repetition's totals, or None when nothing repeats:
    metal-trace replay sessions (``METAL TRACE REPLAY SESSION ID``), else the signpost name
    repeated most often (its regions doing the most common work, as the noise rule does).
    Totals as View.totals() names them (``steady_us``, ``device_time_us``, ``wall_us``,
    ``pauses_us``), gaps split at the view's pause threshold. `min_keys`: the repetitions
    needed (1: one replay session is listed too)."""
    import pandas as pd

    ops = view.op_rows
    if not len(ops):
        return None
    unit, keys = "", None
    ordered = view.trace.ordered_columns(["ID", REPLAY_COLUMN])  # (alone from the cache)
    if REPLAY_COLUMN in ordered.columns:
        pos = pd.Index(ordered["ID"].to_numpy()).get_indexer(ops["id"].to_numpy())
        session = pd.to_numeric(ordered[REPLAY_COLUMN], errors="coerce").to_numpy()
        sess = np.where(pos >= 0, session[np.maximum(pos, 0)], np.nan)
        if np.unique(sess[~np.isnan(sess)]).size >= min_keys:
            unit, keys = "trace replay", pd.Series(sess, index=ops.index)
    if keys is None:
        repeated = repeated_regions(view, ops)
        if not repeated:
            return None
        # the name repeated most often (then with the most ops per iteration)
        unit = max(repeated, key=lambda nm: (len(repeated[nm][1]), repeated[nm][0]))
        region = ops["region"]
        keys = region.where(region.isin(repeated[unit][1]))
        unit = str(unit)
    frame = pd.DataFrame({
        "key": keys.to_numpy(),
        "device": ops["device_time_us"].to_numpy(dtype="float64"),
        "gap": ops["op_to_op_us"].to_numpy(dtype="float64"),
    }).dropna(subset=["key"])
    frame["dispatch"], frame["pauses"], _ = split_gaps(frame["gap"].to_numpy(),
                                                       view.pause_above_us)
    g = frame.groupby("key", sort=True, observed=True)
    sums = g[["device", "dispatch", "pauses"]].sum(min_count=0)
    if len(sums) < min_keys:
        return None
    sums["ops"] = g.size()
    out = [{"key": r.Index, "ops": int(r.ops), "device_time_us": float(r.device),
            "pauses_us": float(r.pauses), "steady_us": float(r.device + r.dispatch),
            "wall_us": float(r.device + r.dispatch + r.pauses)}
           for r in sums.itertuples()]
    return unit, out


def replay_sessions(view: Any) -> list[dict[str, Any]]:
    """Each metal-trace replay session of the view with its totals (`session`, `ops`, and
    iteration_totals' times), in session order, one session too (it is the steady state); []
    without sessions or in a one-session window (--replay N: the window names it). A cheap
    check first: this is on every report's summary."""
    if not view.trace.replay_sessions or view.window.mode == "replay":
        return []
    it = iteration_totals(view, min_keys=1)
    if it is None or it[0] != "trace replay":
        return []
    return [{"session": int(t.pop("key")), **t} for t in it[1]]
