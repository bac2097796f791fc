"""Compare two traces: ops aligned, per-op, per-op-code and per-region deltas, noise labels.

Pure pandas/numpy (never imports Textual). Entry point: :func:`diff_traces`.

Alignment
---------
The op sequences (signposts excluded) are aligned as sequences, never by row index, so added,
removed, fused and locally reordered ops and traces of different lengths are handled. The
engine is :func:`model.compare.align.align_sequences` (numpy only; its docstring has the steps:
regions, prefix/suffix trimming, exact weighted LCS for small segments, anchors for large ones,
polish, moves). This module turns the two op tables into its integer inputs:

* *signature* ids: op code + each input's W/Z/Y/X + each input's dtype, factorised by pandas
  over both traces;
* *attribute* ids, the first fallback when shapes or dtypes changed: op code + the ATTRIBUTES
  normalised as tt-metal's ``tools/tracy/compare_ops_perf_bar_chart.py`` pairs ops + a shape
  bucket (:func:`model.compare.signature.attribute_keys`; only when both files' ATTRIBUTES can be
  read); *op code* ids for the last fallback;
* *region* ids, when both views have signposts: the runs of ops between signposts keyed by
  (signpost name, occurrence), so a paired region is aligned on its own.

Every pair says what it was matched on (``match``): ``exact`` (the signature), ``attributes``
or ``op_code``.

What changed
------------
For every matched pair, the fields that differ between its two ops (math fidelity, core count,
each tensor's memory, dtype, layout and shape, every ATTRIBUTES field, program cache hit) are
named: ``change`` numbers the pair's change set (``DiffResult.compared.sets``, -1: none),
``cause`` says it ("fidelity HiFi2 -> HiFi4; cores 64 -> 32"); ``by_op_code`` has a ``cause``
too. The rules: :mod:`ttdash.model.compare.changes`. What changed *around* the run (arch, clock,
devices, versions, recorded AICLK and temperature): :mod:`model.compare.context`, named in the
verdict when the sides differ.

Multi-device: the given views are compared as they are. When a view is per-device (not merged)
and holds several devices, each device's ops are aligned separately (devices paired by id).

Deltas
------
``delta_us`` is the change of device time: candidate - baseline for matched ops, +candidate for
added ops, -baseline for removed ops, so that the per-op deltas add up to the total device-time
delta. ``delta_pct`` is relative to the baseline op (matched ops only). ``by_op_code`` and
``by_region`` add them up; their ``share_pct`` is the group's delta as a percentage of the total
device-time delta (signed; groups moving against the total make others exceed 100%).

Steady state and host pauses
----------------------------
An op-to-op gap above ``View.pause_above_us`` (``--pause-above``, default
``columns.PAUSE_ABOVE_US`` = 1000 us) is a *host pause* (compile, warm-up, Python between
iterations); the others are *dispatch*. In a diff the split is joint: a matched pair's gap is a
pause on both sides when it is one on either, so a pause that shrinks under the threshold does
not move time into the steady state. ``steady`` = device + dispatch is the default gate metric
(``--metric``): untraced traces spend over 99% of wall time in host pauses, which would hide a
device regression of several percent. The gate's rules (when it refuses, what it judges:
only pairs with valid timings on both sides) are :mod:`ttdash.model.compare.gate`'s, shared with
``history check``; :meth:`DiffResult.problems` applies them.

Noise rule
----------
A side has *iterations* when a signpost name repeats (``decode`` x N). For each such name, the
iterations doing its most common work (op codes, input shapes and dtypes) are stacked, and for
each op position inside the iteration (whose op code must agree across iterations) with at
least ``NOISE_MIN_SAMPLES`` iterations, the robust relative spread is

    sigma = IQR(device time) / 1.349 / median(device time)

(1.349 * sigma is the IQR of a normal distribution). Every op at that position gets this sigma,
unless it exceeds ``NOISE_MAX_SIGMA`` (25%): then the iterations do different work (growing
inputs, say) rather than repeat the same one, and the position gets no estimate.
A matched op's change is labelled ``within_noise = True`` when

    |delta_pct| <= NOISE_K * 100 * sqrt(sigma_baseline**2 + sigma_candidate**2)

(``noise_pct`` holds the right-hand side). When only one side has a sigma for the op, the other
side is assumed as noisy (sigma used twice). When neither has one, ``within_noise`` is missing
(unknown). Example: 5% relative spread on both sides gives a threshold of about 2 * 7.1% = 14%,
so a 2% change is noise and a 30% change is not. Caveat: a steady drift across iterations (a
growing KV cache) counts as spread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...memory import trim
from ..columns import DEFAULT_METRIC, METRIC_NAMES, MIN_MATCH_RATE
from ..errors import TraceError
from ..read.attributes import ATTRIBUTES, CACHE_HIT, extra_columns
from ..read.loader import version_columns
from ..trace import View

# The aligner lived here before model.compare.align; its public names stay importable from here.
from .align import Alignment, align_sequences, kgram_ids, weighted_lcs  # noqa: F401
from .changes import Change, Compared, FieldRow, cause_text, group_causes
from .context import RunContext, clock_note, differences, run_context
from .gate import (
    METRICS,
    Basis,
    Limits,
    Outcome,
    SideTotals,
    common_start,
    decide,
    joint_pauses,
    median_pct,
    missing_head,
    missing_tail,
    side_totals,
)
from .gate import Change as GateChange
from .pairs import (  # noqa: F401  (the pair vocabulary is part of this module's interface)
    GROUP_COLUMNS,
    MATCH_ATTRIBUTES,
    MATCH_OP_CODE,
    MATCH_SIGNATURE,
    PAIR_COLUMNS,
    STATUS_ADDED,
    STATUS_MATCHED,
    STATUS_REMOVED,
    group,
    pairs_frame,
)
from .runs import METRIC_TOTALS, Spread, iteration_totals, spread
from .signature import (  # noqa: F401  (the noise constants are documented above)
    IQR_TO_SIGMA,
    NO_SIGNPOST_LABEL,
    NOISE_K,
    NOISE_MAX_SIGMA,
    NOISE_MIN_SAMPLES,
    attribute_keys,
    noise_sigma,
    region_keys,
    region_labels,
    signatures,
)

#: Host pauses above this share of wall time "dominate" it (the verdict says so).
PAUSES_DOMINATE = 0.5


# ==================================================================== result

def _ratio(base: float, cand: float) -> float | None:
    if not np.isfinite(base) or not np.isfinite(cand) or cand == 0:
        return None
    return base / cand


@dataclass
class DiffResult:
    """The diff of a baseline and a candidate view. See the module docstring for the rules.

    ``pairs``: one row per aligned pair or unmatched op, in alignment order (removed ops of a
    gap before the added ones). Columns: see ``PAIR_COLUMNS``; ``*_pos`` are positions in the
    side's ``View.op_rows`` (for drilling down), ``*_id`` tt-perf-report IDs (CSV lines).
    """

    baseline: View
    candidate: View
    pairs: pd.DataFrame
    baseline_totals: SideTotals
    candidate_totals: SideTotals
    delta_pct: dict[str, float | None]  # steady, device, dispatch, pauses, op_to_op, wall
    speedup: dict[str, float | None]  # baseline / candidate: steady, device, wall
    by_op_code: pd.DataFrame
    by_region: pd.DataFrame
    counts: dict[str, int]  # matched, added, removed, moved, op_code_only, within_noise
    noise: dict[str, Any] = field(default_factory=dict)
    per_device: bool = False
    seconds: dict[str, float] = field(default_factory=dict)  # signatures, align, frame
    top: int = 10
    #: per-run View.totals() of each side when several runs were given (the first run of each
    #: side is the one aligned op by op); see ttdash.model.compare.runs
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: device telemetry recorded while each side ran (health.telemetry.summarize), when known
    telemetry: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    #: (unit, per-iteration totals) of each side that repeats a unit (see runs.iteration_totals)
    iterations: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: what a gate decides on (ttdash.model.compare.gate); set by diff_traces
    basis: Basis = field(default=None)  # type: ignore[assignment]
    #: the compared fields of both sides' ops and the pairs' change sets (model.changes)
    compared: Compared = field(default_factory=Compared)
    #: each side's facts around the run (model.context): "baseline", "candidate"
    context: dict[str, RunContext] = field(default_factory=dict)

    def spread(self, metric: str = DEFAULT_METRIC) -> Spread | None:
        """Run-to-run spread of `metric` (None without several runs on a side)."""
        return spread(self.runs.get("baseline", []), self.runs.get("candidate", []), metric)

    def iteration_spread(self, metric: str = DEFAULT_METRIC) -> tuple[str, Spread] | None:
        """The change of the mean iteration when both sides repeat the same unit (replay
        sessions or a signpost name) at least twice. Informative: it covers the iterations
        only, so the gate does not pass a change on it (a slower prefill would not show)."""
        a, b = self.iterations.get("baseline"), self.iterations.get("candidate")
        if a is None or b is None or a[0] != b[0] or len(a[1]) < 2 or len(b[1]) < 2:
            return None
        s = spread(a[1], b[1], metric)
        return (a[0], s) if s is not None else None

    # ------------------------------------------------------------ regressions and top lists
    def _matched_mask(self, include_noise: bool = False) -> np.ndarray:
        """Per row of ``pairs``: a pair of the same op (matched by signature or by attributes:
        the same op code, normalised ATTRIBUTES and shape bucket, whose ``cause`` names the
        shape or dtype that changed; moved ones included; op-code-only pairs may compare two
        different ops and are left out), and, unless ``include_noise``, not labelled within
        noise (an unknown label counts as not within)."""
        p = self.pairs
        mask = ((p["status"] == STATUS_MATCHED) & p["match"].isin(
            (MATCH_SIGNATURE, MATCH_ATTRIBUTES))).to_numpy(dtype=bool)
        if not include_noise:
            mask = mask & ~p["within_noise"].fillna(False).to_numpy(dtype=bool)
        return mask

    def regression_mask(self, threshold_pct: float) -> np.ndarray:
        """The definition of "a regression above a threshold": a bool array over ``pairs`` rows.

        True for
          * matched pairs (moved ones included) with ``delta_pct >= threshold_pct`` that are not
            within noise (``within_noise`` False or unknown), and
          * added ops (only in the candidate: new device time), whatever the threshold.

        Removed ops and matched pairs without a ``delta_pct`` (baseline time 0 or missing) are
        never regressions. This is what the diff screen's next/previous-regression keys step
        through.
        """
        with np.errstate(invalid="ignore"):
            slower = self.pairs["delta_pct"].to_numpy(dtype="float64") >= threshold_pct
        added = (self.pairs["status"] == STATUS_ADDED).to_numpy(dtype=bool)
        return (self._matched_mask() & slower) | added

    def regressions(self, n: int | None = None, include_noise: bool = False) -> pd.DataFrame:
        """The top regressions: matched ops that got slower (``delta_us > 0``), not within noise
        (unless ``include_noise``), largest ``delta_us`` first; ``n`` rows (default ``top``).

        Relative to :meth:`regression_mask`: the same matched, not-within-noise pairs, with no
        percentage threshold (any slowdown counts; every matched row of ``regression_mask(t)``
        for a ``t > 0`` is in the full list), ranked by absolute time, and without added ops
        (see :meth:`added`).
        """
        p = self.pairs
        p = p[self._matched_mask(include_noise) & (p["delta_us"] > 0).to_numpy(dtype=bool)]
        return p.sort_values("delta_us", ascending=False, kind="stable").head(n or self.top)

    def improvements(self, n: int | None = None, include_noise: bool = False) -> pd.DataFrame:
        """Matched ops that got faster, largest gain first (ops within noise left out)."""
        p = self.pairs
        p = p[self._matched_mask(include_noise) & (p["delta_us"] < 0).to_numpy(dtype=bool)]
        return p.sort_values("delta_us", ascending=True, kind="stable").head(n or self.top)

    def added(self, n: int | None = None) -> pd.DataFrame:
        """Ops only in the candidate, most device time first."""
        p = self.pairs[self.pairs["status"] == STATUS_ADDED]
        return p.sort_values("candidate_us", ascending=False, kind="stable",
                             na_position="last").head(n or self.top)

    def removed(self, n: int | None = None) -> pd.DataFrame:
        """Ops only in the baseline, most device time first."""
        p = self.pairs[self.pairs["status"] == STATUS_REMOVED]
        return p.sort_values("baseline_us", ascending=False, kind="stable",
                             na_position="last").head(n or self.top)

    @property
    def top_regressions(self) -> pd.DataFrame:
        return self.regressions()

    @property
    def top_improvements(self) -> pd.DataFrame:
        return self.improvements()

    # ------------------------------------------------------------ display
    def display_frame(self) -> pd.DataFrame:
        """The pairs as the diff table shows them, with the columns the shared op-table widgets
        expect: ``id`` (candidate id, else baseline id), ``status`` ("moved" for moved matched
        pairs), ``bounds`` ("A→B" when the bound changed), ``delta_bar``, ``within_noise``
        (unknown = False), ``region`` (1-based region number, 0 for none), ``region_label``,
        ``signpost``, ``is_signpost`` (all False) and the pair columns; ids and positions as
        float64 (NaN = none).
        """
        p = self.pairs.reset_index(drop=True)
        codes, _ = pd.factorize(p["region"].astype(object).where(p["region"].notna(), None),
                                use_na_sentinel=True)
        region = np.where(codes >= 0, codes + 1, 0)
        ba = p["baseline_bound"].astype(object).where(p["baseline_bound"].notna(), "")
        bb = p["candidate_bound"].astype(object).where(p["candidate_bound"].notna(), "")
        bounds = np.where((ba == "") & (bb == ""), "",
                          np.where(ba == bb, ba, ba.astype(str) + "→" + bb.astype(str)))
        status = p["status"].astype(object).to_numpy()
        status = np.where(p["moved"].to_numpy(dtype=bool) & (status == STATUS_MATCHED), "moved",
                          status)
        return pd.DataFrame({
            "id": p["candidate_id"].fillna(p["baseline_id"]).astype("float64").to_numpy(),
            "baseline_id": p["baseline_id"].astype("float64").to_numpy(),
            "candidate_id": p["candidate_id"].astype("float64").to_numpy(),
            "status": pd.Series(status, dtype=object),
            "op_code": pd.Series(p["op_code"].astype(object).to_numpy(), dtype=object),
            "size": pd.Series(p["size"].astype(object).where(p["size"].notna(), "").to_numpy(),
                              dtype=object),
            "baseline_us": p["baseline_us"].to_numpy(dtype="float64"),
            "candidate_us": p["candidate_us"].to_numpy(dtype="float64"),
            "delta_us": p["delta_us"].to_numpy(dtype="float64"),
            "delta_pct": p["delta_pct"].to_numpy(dtype="float64"),
            "delta_bar": p["delta_pct"].to_numpy(dtype="float64"),
            "within_noise": p["within_noise"].fillna(False).to_numpy(dtype=bool),
            "bounds": pd.Series(bounds, dtype=object),
            "baseline_gap_us": p["baseline_gap_us"].to_numpy(dtype="float64"),
            "candidate_gap_us": p["candidate_gap_us"].to_numpy(dtype="float64"),
            "region": region,
            "region_label": pd.Series(p["region"].astype(object).where(p["region"].notna(), "")
                                      .to_numpy(), dtype=object),
            "signpost": pd.Series(p["region"].astype(object).to_numpy(), dtype=object),
            "baseline_pos": p["baseline_pos"].astype("float64").to_numpy(),
            "candidate_pos": p["candidate_pos"].astype("float64").to_numpy(),
            "is_signpost": np.zeros(len(p), dtype=bool),
        })

    # ------------------------------------------------------------ what changed
    def changed(self, row: int) -> tuple[Change, ...]:
        """What changed between the two ops of ``pairs`` row `row` (by position)."""
        k = _column(self.pairs, "change", -1)[row]
        return self.compared.sets[int(k)] if k is not None and int(k) >= 0 else ()

    def pair_fields(self, row: int) -> list[FieldRow]:
        """Every compared field of ``pairs`` row `row` (by position) on both sides, the changed
        ones marked: the diff details' side-by-side view."""
        r = self.pairs.iloc[row]
        a = None if pd.isna(r["baseline_pos"]) else int(r["baseline_pos"])
        b = None if pd.isna(r["candidate_pos"]) else int(r["candidate_pos"])
        return self.compared.side_by_side(a, b)

    def context_changes(self) -> list[Any]:
        """What differs around the run (model.context.differences), [] when unknown."""
        a, b = self.context.get("baseline"), self.context.get("candidate")
        return differences(a, b) if a is not None and b is not None else []

    def context_text(self, metric: str = DEFAULT_METRIC) -> str | None:
        """"around the run: clock 1000 -> 800 MHz; the clock change ... explains ..." (None when
        nothing differs)."""
        diffs = self.context_changes()
        if not diffs:
            return None
        text = "around the run: " + "; ".join(d.text() for d in diffs)
        note = clock_note(self.context["baseline"], self.context["candidate"],
                          self.delta_pct.get("device"))
        return text + (f" ({note})" if note else "")

    # ------------------------------------------------------------ verdict
    def slower_pct(self, metric: str = DEFAULT_METRIC) -> float | None:
        """How much slower the candidate is than the baseline on `metric` (percent): the change
        of the mean over the runs when several were given, else of the two traces' totals."""
        s = self.spread(metric)
        return s.delta_pct if s is not None else self.delta_pct.get(metric)

    def verdict(self, metric: str = DEFAULT_METRIC) -> str:
        """One sentence on `metric`, shared by every front end and the CI gate, with the
        caveats that change how to read it (low match rate, host pauses dominating wall)."""
        pct = self.slower_pct(metric)
        what = METRIC_NAMES[metric]
        if pct is None:
            text = f"no comparison on {what} (the baseline total is zero)"
        elif pct > 0:
            text = f"candidate is {pct:.2f}% slower than baseline on {what}"
        elif pct < 0:
            text = f"candidate is {-pct:.2f}% faster than baseline on {what}"
        else:
            text = f"no change on {what}"
        return "; ".join([text, *self.caveats(metric)])

    def caveats(self, metric: str = DEFAULT_METRIC) -> list[str]:
        """What changes how to read a verdict on `metric`."""
        out = []
        s = self.spread(metric)
        if s is not None:
            out.append(s.text())
        it = self.iteration_spread(metric) if s is None else None
        if it is not None:
            unit, si = it
            lo, hi = si.ci_pct
            out.append(f"per {unit} iteration ({len(si.baseline)} vs {len(si.candidate)}): "
                       f"{si.delta_pct:+.2f}%, 95% CI {lo:+.2f}% .. {hi:+.2f}%"
                       + (", within the iteration-to-iteration noise" if si.within_noise
                          else ""))
        if self.match_rate < MIN_MATCH_RATE:
            out.append(f"low match rate: {self.match_rate:.0%} of ops matched; the totals "
                       "compare different op sequences")
        out += [t for t in (self.basis.uncompared_text(metric),
                            self.basis.common_text(metric)) if t is not None]
        around = self.context_text(metric)
        if around is not None:
            out.append(around)
        if metric in ("wall", "pauses"):
            for side, t in (("baseline", self.baseline_totals),
                            ("candidate", self.candidate_totals)):
                if t.wall_us > 0 and t.pauses_us / t.wall_us > PAUSES_DOMINATE:
                    out.append(f"host pauses are {t.pauses_us / t.wall_us:.0%} of the {side}'s "
                               "wall time (--metric steady leaves them out)")
                    break
        return out

    def problems(self, metric: str = DEFAULT_METRIC, allow_arch_mismatch: bool = False
                 ) -> list[str]:
        """Why a gate on `metric` cannot trust these totals (empty when it can): the rules of
        :meth:`ttdash.model.compare.gate.Basis.problems` (other archs, a low match rate, a side that
        stops early, gaps or valid timings missing on one side only, a zero baseline)."""
        return self.basis.problems(metric, self.slower_pct(metric), allow_arch_mismatch)

    def gate_pct(self, metric: str = DEFAULT_METRIC) -> float | None:
        """What `--fail-above` holds against its limit: the larger of the change of the totals
        (of the runs' mean with several runs) and the change over the ops both sides ran."""
        return self.basis.gate_pct(metric, self.slower_pct(metric))

    @property
    def match_rate(self) -> float:
        """Matched ops / ops of the longer side (1.0 for a trace against itself)."""
        return self.basis.match_rate

    def median_pct(self, metric: str = DEFAULT_METRIC) -> float | None:
        """Median vs median of the runs' totals on `metric` (None without several runs)."""
        key = METRIC_TOTALS.get(metric)
        if key is None or not self.runs:
            return None
        return median_pct(self.runs.get("baseline", []), self.runs.get("candidate", []), key)

    def gate_change(self, metric: str = DEFAULT_METRIC) -> GateChange:
        """What a gate on `metric` judges (model.gate.Change)."""
        slower = self.slower_pct(metric)
        gate = self.gate_pct(metric)
        s = self.spread(metric)
        if s is not None:
            whole_us = float(np.mean(s.candidate) - np.mean(s.baseline))
        else:
            whole_us = self.basis.whole_us(metric)
        b, c = self.basis.common[metric]
        gate_us = whole_us if gate == slower else c - b
        return GateChange(metric=metric, verdict=self.verdict(metric), slower_pct=slower,
                          gate_pct=gate, slower_us=whole_us, gate_us=gate_us,
                          within_noise=bool(s is not None and s.within_noise),
                          noise_text=s.text() if s is not None else "",
                          median_pct=self.median_pct(metric),
                          common_ops=self.basis.comparable.get(metric, self.basis.matched),
                          missing=self.basis.missing_text())

    def gate(self, limits: Limits, metric: str = DEFAULT_METRIC) -> Outcome:
        """The gate's outcome (model.gate.decide); check :meth:`problems` first."""
        return decide(limits, self.gate_change(metric))


# ==================================================================== the diff

def device_groups(a_ops: pd.DataFrame, b_ops: pd.DataFrame, per_device: bool
                   ) -> list[tuple[int | None, np.ndarray, np.ndarray]]:
    if not per_device:
        return [(None, np.arange(len(a_ops)), np.arange(len(b_ops)))]
    da = a_ops["device"].to_numpy(dtype="float64")
    db = b_ops["device"].to_numpy(dtype="float64")
    da = np.where(np.isnan(da), -1.0, da)
    db = np.where(np.isnan(db), -1.0, db)
    out: list[tuple[int | None, np.ndarray, np.ndarray]] = []
    for d in np.union1d(np.unique(da), np.unique(db)):
        out.append((None if d < 0 else int(d), np.flatnonzero(da == d), np.flatnonzero(db == d)))
    return out


def diff_traces(a: View, b: View, *, noise: bool = True, top: int = 10) -> DiffResult:
    """Align the ops of baseline ``a`` and candidate ``b`` and compute all deltas.

    Raises TraceError when both windows have no ops.
    """
    a_ops = a.op_rows.reset_index(drop=True)
    b_ops = b.op_rows.reset_index(drop=True)
    if not len(a_ops) and not len(b_ops):
        raise TraceError(None, "no ops to compare: both windows are empty")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    a_sig, b_sig, a_code, b_code = signatures(a, a_ops, b, b_ops)
    a_extra = extra_columns(a, a_ops, (ATTRIBUTES, CACHE_HIT, *version_columns(a.trace.header)))
    b_extra = extra_columns(b, b_ops, (ATTRIBUTES, CACHE_HIT, *version_columns(b.trace.header)))
    a_attr = b_attr = None
    if ATTRIBUTES in a_extra and ATTRIBUTES in b_extra:
        a_attr, b_attr = attribute_keys(a, a_ops, a_extra[ATTRIBUTES], b, b_ops,
                                        b_extra[ATTRIBUTES])
    use_regions = bool(len(a.trace.signposts)) and bool(len(b.trace.signposts))
    if use_regions:
        keys = pd.concat([region_keys(a, a_ops), region_keys(b, b_ops)], ignore_index=True)
        rid = pd.factorize(keys)[0].astype(np.int64)
        a_reg, b_reg = rid[:len(a_ops)], rid[len(a_ops):]
    trim()  # the columns read again (ATTRIBUTES, versions): their parse's buffers, ~90 MB a side
    seconds["signatures"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    per_device = (not a.merged or not b.merged) and (
        a_ops["device"].nunique() > 1 or b_ops["device"].nunique() > 1)
    parts_a, parts_b, parts_moved, parts_dev = [], [], [], []
    tail, head, start = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64), 0
    for dev, ia, ib in device_groups(a_ops, b_ops, per_device):
        al = align_sequences(a_sig[ia], b_sig[ib], a_code[ia], b_code[ib],
                             a_reg[ia] if use_regions else None,
                             b_reg[ib] if use_regions else None,
                             a_attr=a_attr[ia] if a_attr is not None else None,
                             b_attr=b_attr[ib] if b_attr is not None else None)
        tail += missing_tail(len(ia), len(ib), al.a, al.b)
        head += missing_head(al.a, al.b)
        start += common_start(a_sig[ia], b_sig[ib])
        parts_a.append(ia[al.a])
        parts_b.append(ib[al.b])
        parts_moved.append(al.moved)
        parts_dev.append(dev)
    seconds["align"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    ma = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    mb = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    moved = np.concatenate(parts_moved) if parts_moved else np.zeros(0, bool)

    sig_a, sig_b = np.full(len(a_ops), np.nan), np.full(len(b_ops), np.nan)
    iterations: dict[str, dict[str, int]] = {"baseline": {}, "candidate": {}}
    if noise:
        sig_a, iterations["baseline"] = noise_sigma(a, a_ops)
        sig_b, iterations["candidate"] = noise_sigma(b, b_ops)

    pairs = pairs_frame(a, b, a_ops, b_ops, ma, mb, moved, a_sig, b_sig, sig_a, sig_b,
                         per_device, a_attr, b_attr)
    seconds["frame"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    compared = Compared.of(a, a_ops, a_extra, b, b_ops, b_extra)
    status = pairs["status"].to_numpy(dtype=object)
    m = status == STATUS_MATCHED
    change = np.full(len(pairs), -1, dtype=np.int64)
    change[m] = compared.compare(pairs["baseline_pos"].astype("float64").to_numpy()[m]
                                 .astype(np.int64),
                                 pairs["candidate_pos"].astype("float64").to_numpy()[m]
                                 .astype(np.int64))
    texts = np.array([cause_text(cs) or None for cs in compared.sets] + [None], dtype=object)
    pairs["change"] = change
    pairs["cause"] = texts[change]  # -1: the trailing None
    seconds["changes"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    bt, ct = joint_pauses(pairs, side_totals(a), side_totals(b), a.pause_above_us)
    basis = Basis.of(pairs, bt, ct, (int(tail[0]), int(tail[1])), (int(head[0]), int(head[1])),
                     start)
    delta = {m: basis.whole_pct(m) for m in METRICS}
    speed = {m: _ratio(*basis.whole(m)) for m in ("steady", "device", "wall")}
    total_delta = float(np.nansum(pairs["delta_us"].to_numpy(dtype="float64")))
    by_code = group(pairs, "op_code", total_delta)
    by_code = by_code.reindex(by_code["delta_us"].abs().sort_values(
        ascending=False, kind="stable").index).reset_index(drop=True)
    causes = group_causes(pairs["op_code"].astype(object).fillna("").to_numpy(dtype=object),
                          change, pairs["delta_us"].to_numpy(dtype="float64"), compared.sets)
    by_code["cause"] = by_code["op_code"].map(causes).astype(object)
    by_region = (group(pairs, "region", total_delta).reset_index(drop=True)
                 if (len(a.trace.signposts) or len(b.trace.signposts)) else
                 pd.DataFrame(columns=["region", *GROUP_COLUMNS]))
    wn = pairs["within_noise"]
    counts = {
        "matched": int((status == STATUS_MATCHED).sum()),
        "added": int((status == STATUS_ADDED).sum()),
        "removed": int((status == STATUS_REMOVED).sum()),
        "moved": int(moved.sum()),
        "op_code_only": int((pairs["match"] == MATCH_OP_CODE).sum()),
        "by_attributes": int((pairs["match"] == MATCH_ATTRIBUTES).sum()),
        "changed": int((change >= 0).sum()),
        "within_noise": int(wn.fillna(False).astype(bool).sum()),
        "noise_known": int(wn.notna().sum()),
    }
    noise_info = {"enabled": noise, "rule": f"|delta_pct| <= {NOISE_K:g} * 100 * "
                  "sqrt(sigma_a^2 + sigma_b^2), sigma = IQR / 1.349 / median across iterations",
                  "iterations": iterations}
    seconds["frame"] += time.perf_counter() - t0
    its = {side: it for side, v in (("baseline", a), ("candidate", b))
           if (it := iteration_totals(v)) is not None}
    return DiffResult(baseline=a, candidate=b, pairs=pairs, baseline_totals=bt,
                      candidate_totals=ct, delta_pct=delta, speedup=speed, by_op_code=by_code,
                      by_region=by_region, counts=counts, noise=noise_info,
                      per_device=per_device, seconds=seconds, top=top, iterations=its,
                      basis=basis, compared=compared,
                      context={"baseline": run_context(a, a_extra),
                               "candidate": run_context(b, b_extra)})


def _column(frame: pd.DataFrame, name: str, default: Any = None) -> np.ndarray:
    """A column of `frame` as objects (`default` everywhere when it has none: a hand-made
    pairs table)."""
    if name in frame.columns:
        return frame[name].astype(object).to_numpy()
    return np.full(len(frame), default, dtype=object)
