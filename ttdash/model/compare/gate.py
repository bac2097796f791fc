"""What a performance gate compares, and when it refuses to: one set of rules for
`diff --fail-above` and `history check`.

A gate compares two sides (a baseline and a candidate) whose ops were aligned (see
:mod:`model.compare.diff`). :class:`Basis` holds what the rules need: each side's totals, how many
ops matched, the sums of the *ops both sides ran*, the ops only one side ran, and each side's
*missing tail*.

Rules (:meth:`Basis.problems`, fail closed: exit 2 rather than a verdict):

* other archs (unless allowed), other device-time bases (realtime dispatch window vs kernel time);
* under ``MIN_MATCH_RATE`` of the longer side's ops matched: the op sequences differ (unless
  one side is a cut copy of the other: see "stops early");
* gaps on one side only (unless the metric is device time);
* no valid device time on one side, or more corrupt timings on one side;
* **timings missing on one side**: a matched pair is compared only where both sides have a valid
  timing (a device time that is finite and at least ``MIN_DEVICE_US``: a blank, ``nan``, ``inf``,
  ``0`` or ``0.0001`` is not a measurement; an op-to-op gap that is known). The time of the pairs
  timed on one side only (that side's time) over the baseline's total on the gated metric is
  *uncompared*; above ``MAX_UNCOMPARED_SHARE`` the gate refuses (a device log that lacks the
  heaviest ops would otherwise read as a speed-up);
* a side that **stops early**: at least ``TAIL_MIN_OPS`` and ``TAIL_SHARE`` of the other side's
  ops come after that side's last op with nothing after them on it. When its ops are the other
  side's first ops (same op codes, input shapes and dtypes up to where it stops) that is what a
  full profiler buffer leaves, and the problem says so; otherwise it says where the two op
  sequences part (other programs, not a cut run);
* a zero baseline total.

The verdict of a gate (:meth:`Basis.gate_pct`) is the larger of the change of the whole runs'
totals and the change over the ops both ran: ops only in the candidate add time to the first, a
slower common part shows in the second even when the candidate ran fewer ops. Both leave out
the uncompared pairs' time on both sides (:meth:`Basis.whole_pct`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.metrics import split_gaps
from ..columns import METRIC_NAMES, MIN_MATCH_RATE

#: A side "stops early" when at least this many ops, and this share of the other side's ops,
#: come after its last op (see the module docstring).
TAIL_MIN_OPS = 3
TAIL_SHARE = 0.01
#: The shortest device time (us) a device op can take: under it (0, 0.0001 ns) a duration is
#: not a measurement. 100 ns is about 100 cycles, less than a kernel's start; the shortest op of
#: the real profiler files in ../shared is 373 ns.
MIN_DEVICE_US = 0.1
#: The gate refuses when the matched pairs timed on one side only hold more than this share of
#: the baseline's total on the gated metric (see the module docstring).
MAX_UNCOMPARED_SHARE = 0.01

METRICS = ("steady", "device", "dispatch", "pauses", "op_to_op", "wall")


@dataclass(frozen=True)
class SideTotals:
    """Totals of one side (device time and gaps in microseconds)."""

    file: str
    window: str
    arch: str
    ops: int
    device_time_us: float
    op_to_op_us: float  # every gap
    dispatch_us: float  # gaps up to the pause threshold
    pauses_us: float  # longer gaps
    pauses: int
    steady_us: float  # device + dispatch
    wall_us: float  # device + every gap
    gaps_known: int  # ops with an op-to-op gap
    corrupt_rows: int
    host_ops: int
    timing: str = "kernel"  # Trace.timing

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "window": self.window, "arch": self.arch, "ops": self.ops,
                "device_time_us": self.device_time_us, "dispatch_us": self.dispatch_us,
                "pauses_us": self.pauses_us, "pauses": self.pauses, "steady_us": self.steady_us,
                "op_to_op_us": self.op_to_op_us, "wall_us": self.wall_us,
                "corrupt_rows": self.corrupt_rows, "host_ops": self.host_ops,
                "device_time_basis": self.timing}

    def metric(self, metric: str) -> float:
        return {"steady": self.steady_us, "device": self.device_time_us,
                "dispatch": self.dispatch_us, "pauses": self.pauses_us,
                "op_to_op": self.op_to_op_us, "wall": self.wall_us}[metric]


def side_totals(view: Any) -> SideTotals:
    """The totals of a `model.View`."""
    t = view.totals()
    return SideTotals(file=str(view.trace.path), window=view.description,
                      arch=view.trace.arch.name, ops=t["ops"],
                      device_time_us=t["device_time_us"], op_to_op_us=t["op_to_op_us"],
                      dispatch_us=t["dispatch_us"], pauses_us=t["pauses_us"],
                      pauses=t["pauses"], steady_us=t["steady_us"], wall_us=t["wall_us"],
                      gaps_known=t["gaps_known"], corrupt_rows=t["corrupt_rows"],
                      host_ops=t["host_ops"], timing=view.trace.timing)


def pct(base: float, cand: float) -> float | None:
    """(cand - base) / base in percent (None when the baseline is zero or a value is not
    finite)."""
    if not np.isfinite(base) or base == 0 or not np.isfinite(cand):
        return None
    return (cand - base) / base * 100.0


def joint_pauses(pairs: pd.DataFrame, bt: SideTotals, ct: SideTotals, pause_above_us: float
                 ) -> tuple[SideTotals, SideTotals]:
    """Split both sides' gaps on the same ops: a matched pair's gap is a host pause on both
    sides when it is one on either (so a pause that shrinks under the threshold, or grows over
    it, moves nothing between steady state and pauses); an unmatched op's gap by its own.
    Sets ``pairs["host_pause"]``."""
    bg = pairs["baseline_gap_us"].to_numpy(dtype="float64")
    cg = pairs["candidate_gap_us"].to_numpy(dtype="float64")
    pause = split_gaps(bg, pause_above_us)[2] | split_gaps(cg, pause_above_us)[2]
    pairs["host_pause"] = pause

    def split(t: SideTotals, g: np.ndarray) -> SideTotals:
        dispatch_gaps, pause_gaps, _ = split_gaps(g, pause)
        dispatch, paused = float(np.nansum(dispatch_gaps)), float(np.nansum(pause_gaps))
        return replace(t, dispatch_us=dispatch, pauses_us=paused,
                       pauses=int((pause & ~np.isnan(g)).sum()),
                       steady_us=t.device_time_us + dispatch)

    return split(bt, bg), split(ct, cg)


def missing_tail(n_a: int, n_b: int, ma: np.ndarray, mb: np.ndarray) -> tuple[int, int]:
    """(baseline ops after the candidate's end, candidate ops after the baseline's end) of one
    aligned sequence: the ops after a side's last matched op when the other side has none after
    its own (both sides ending in ops of their own is a change at the end, not a cut)."""
    if not len(ma):
        return 0, 0  # nothing matched: the match rate speaks
    tail_a = n_a - 1 - int(np.max(ma))
    tail_b = n_b - 1 - int(np.max(mb))
    return (tail_a if tail_b == 0 else 0), (tail_b if tail_a == 0 else 0)


def missing_head(ma: np.ndarray, mb: np.ndarray) -> tuple[int, int]:
    """(baseline ops before the candidate's start, candidate ops before the baseline's start)
    of one aligned sequence, as :func:`missing_tail` at the other end."""
    if not len(ma):
        return 0, 0
    head_a, head_b = int(np.min(ma)), int(np.min(mb))
    return (head_a if head_b == 0 else 0), (head_b if head_a == 0 else 0)


def common_start(a: np.ndarray, b: np.ndarray) -> int:
    """How many first ops of `a` and `b` (signature ids: op code, input shapes and dtypes) are
    the same."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if len(differ) else n


def valid_device(us: np.ndarray) -> np.ndarray:
    """Device times that are measurements: finite and at least MIN_DEVICE_US."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(us) & (us >= MIN_DEVICE_US)


def _sums(device: np.ndarray, gap: np.ndarray, pause: np.ndarray) -> dict[str, float]:
    dev = float(np.nansum(device))
    dispatch, paused, _ = split_gaps(gap, pause)
    d, p = float(np.nansum(dispatch)), float(np.nansum(paused))
    return {"steady": dev + d, "device": dev, "dispatch": d, "pauses": p, "op_to_op": d + p,
            "wall": dev + d + p}


@dataclass(frozen=True)
class Basis:
    """What a gate decides on (see the module docstring)."""

    baseline: SideTotals
    candidate: SideTotals
    matched: int
    #: metric -> (baseline, candidate) sums over the matched pairs
    common: dict[str, tuple[float, float]]
    #: side -> (ops, device us) of the ops only that side ran
    only: dict[str, tuple[int, float]]
    #: side -> ops after the other side's end (see missing_tail)
    tail: dict[str, int]
    #: side -> ops before the other side's start (see missing_head)
    head: dict[str, int] = field(default_factory=lambda: {"baseline": 0, "candidate": 0})
    #: how many first ops (signatures) the two sides share (common_start; None: unknown)
    start: int | None = None
    #: metric -> (baseline, candidate) sums over the matched pairs timed on one side only, each
    #: side's own time (left out of the comparison; see the module docstring)
    out: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: metric -> [pairs without a valid device time in the baseline, in the candidate; without a
    #: gap in the baseline, in the candidate] that the metric compares (counted on the side
    #: that lacks it)
    lacking: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    #: metric -> matched pairs the comparison keeps: not timed on one side only (valid on both
    #: sides, or on neither: host fallbacks, corrupt on both, which add nothing to either)
    comparable: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: pd.DataFrame, bt: SideTotals, ct: SideTotals,
           tail: tuple[int, int], head: tuple[int, int] = (0, 0),
           start: int | None = None) -> Basis:
        """From a pairs table (``status``, ``baseline_us``, ``candidate_us``, both gaps and
        ``host_pause`` as set by :func:`joint_pauses`)."""
        status = pairs["status"].to_numpy(dtype=object)
        m = status == "matched"
        pm = pairs["host_pause"].to_numpy(dtype=bool)[m]
        bd, cd, bg, cg = (pairs[k].to_numpy(dtype="float64")[m] for k in (
            "baseline_us", "candidate_us", "baseline_gap_us", "candidate_gap_us"))
        vb, vc, gb, gc = valid_device(bd), valid_device(cd), np.isfinite(bg), np.isfinite(cg)
        dev_ok, gap_ok = vb & vc, gb & gc
        nan = np.nan
        b = _sums(np.where(dev_ok, bd, nan), np.where(gap_ok, bg, nan), pm)
        c = _sums(np.where(dev_ok, cd, nan), np.where(gap_ok, cg, nan), pm)
        with np.errstate(invalid="ignore"):  # each side's own time on the pairs left out
            ob = _sums(np.where(~dev_ok & np.isfinite(bd), bd, nan),
                       np.where(~gap_ok & np.isfinite(bg), bg, nan), pm)
            oc = _sums(np.where(~dev_ok & np.isfinite(cd), cd, nan),
                       np.where(~gap_ok & np.isfinite(cg), cg, nan), pm)
        one_d, one_g = vb ^ vc, gb ^ gc
        none, every = np.zeros_like(one_d), np.ones_like(one_d)
        lacking, comparable = {}, {}
        for k, (dev, gaps) in {"device": (True, none), "dispatch": (False, ~pm),
                               "pauses": (False, pm), "steady": (True, ~pm),
                               "op_to_op": (False, every), "wall": (True, every)}.items():
            d_sel, g_sel = one_d & dev, one_g & gaps
            lacking[k] = (int((d_sel & vc).sum()), int((d_sel & vb).sum()),
                          int((g_sel & gc).sum()), int((g_sel & gb).sum()))
            comparable[k] = int(m.sum()) - int((d_sel | g_sel).sum())
        only = {}
        for side, st in (("baseline", "removed"), ("candidate", "added")):
            sel = status == st
            only[side] = (int(sel.sum()),
                          float(np.nansum(pairs[f"{side}_us"].to_numpy(dtype="float64")[sel])))
        return cls(baseline=bt, candidate=ct, matched=int(m.sum()),
                   common={k: (b[k], c[k]) for k in METRICS}, only=only,
                   tail={"baseline": tail[0], "candidate": tail[1]},
                   head={"baseline": head[0], "candidate": head[1]},
                   start=start,
                   out={k: (ob[k], oc[k]) for k in METRICS}, lacking=lacking,
                   comparable=comparable)

    @property
    def match_rate(self) -> float:
        """Matched ops / ops of the longer side (1.0 for a trace against itself)."""
        longest = max(self.baseline.ops, self.candidate.ops)
        return self.matched / longest if longest else 1.0

    def whole(self, metric: str) -> tuple[float, float]:
        """Both sides' totals of `metric` less the matched pairs timed on one side only."""
        ob, oc = self.out.get(metric, (0.0, 0.0))
        return self.baseline.metric(metric) - ob, self.candidate.metric(metric) - oc

    def whole_pct(self, metric: str) -> float | None:
        """The change of the whole runs' totals, over the pairs with comparable timings."""
        return pct(*self.whole(metric))

    def whole_us(self, metric: str) -> float:
        b, c = self.whole(metric)
        return c - b

    def uncompared_ops(self, metric: str) -> int:
        """Matched pairs whose `metric` timings are valid on one side only."""
        return self.matched - self.comparable.get(metric, self.matched)

    def uncompared_share(self, metric: str) -> float:
        """The time of the pairs timed on one side only (each its own side's) over the
        baseline's total of `metric` (0 without any; inf with a zero baseline)."""
        ob, oc = self.out.get(metric, (0.0, 0.0))
        lost = ob + oc
        if not self.uncompared_ops(metric) or lost <= 0:
            return 0.0
        total = self.baseline.metric(metric)
        return lost / total if total > 0 else float("inf")

    def uncompared_text(self, metric: str) -> str | None:
        """"the candidate lacks a valid device time (...) on 267 of the 1,872 matched ops: 45.6%
        of the baseline's steady state is not compared (...)" (None when every pair compares)."""
        n = self.uncompared_ops(metric)
        if not n:
            return None
        nb_d, nc_d, nb_g, nc_g = self.lacking[metric]
        bits = []
        for side, nd, ng in (("candidate", nc_d, nc_g), ("baseline", nb_d, nb_g)):
            what = [x for x in (f"a valid device time (blank, not finite or under "
                                f"{MIN_DEVICE_US * 1000:g} ns) on {nd:,}" if nd else "",
                                f"an op-to-op gap on {ng:,}" if ng else "") if x]
            if what:
                bits.append(f"the {side} lacks " + " and ".join(what))
        share = self.uncompared_share(metric)
        shown = f"{share:.1%}" if share >= 0.0005 else "under 0.1%"
        return (" and ".join(bits) + f" of the {self.matched:,} matched ops: {shown} of the "
                f"baseline's {METRIC_NAMES[metric].split(' (')[0]} is not compared "
                f"({self.comparable[metric]:,} matched ops compare)")

    def common_pct(self, metric: str) -> float | None:
        """The change of `metric` over the ops both sides ran."""
        b, c = self.common[metric]
        return pct(b, c)

    @property
    def partial(self) -> bool:
        """Some ops ran on one side only (the whole and the common change can differ)."""
        return bool(self.only["baseline"][0] or self.only["candidate"][0])

    def gate_pct(self, metric: str, whole: float | None = None) -> float | None:
        """What a gate holds against its limit: the larger of the whole runs' change (`whole`,
        default this pair's) and the common ops' change."""
        whole = self.whole_pct(metric) if whole is None else whole
        common = self.common_pct(metric) if self.partial else None
        vals = [v for v in (whole, common) if v is not None]
        return max(vals) if vals else None

    def common_text(self, metric: str) -> str | None:
        """"the 1,684 ops both ran: +5.00% on steady state; 188 only in the baseline
        (1,234.5 us), ..." when some ops ran on one side only."""
        if not self.partial:
            return None
        p = self.common_pct(metric)
        n = self.comparable.get(metric, self.matched)
        text = (f"the {n:,} ops both ran" + (", timed on both sides" if n < self.matched else "")
                + ": "
                + (f"{p:+.2f}%" if p is not None else "no comparison")
                + f" on {METRIC_NAMES[metric].split(' (')[0]}")
        for side in ("baseline", "candidate"):
            n, us = self.only[side]
            if n:
                text += f"; {n:,} op{'s' * (n != 1)} only in the {side} ({us:,.1f} us device)"
        return text

    def missing_text(self) -> str:
        """Where the ops only one side ran are: "the candidate lacks the baseline's first 187
        ops" (a missing head or tail), else their counts."""
        bits = []
        for side, other in (("candidate", "baseline"), ("baseline", "candidate")):
            head, tail = self.head[other], self.tail[other]
            n = self.only[other][0]
            if head:
                bits.append(f"the {side} lacks the {other}'s first {head:,} ops")
            if tail:
                bits.append(f"the {side} lacks the {other}'s last {tail:,} ops")
            if n > head + tail:
                bits.append(f"{n - head - tail:,} other ops ran only in the {other}")
        return "; ".join(bits)

    def is_cut(self, side: str) -> bool:
        """`side`'s ops are the other side's first ops (nothing else differs up to its end)."""
        t = self.baseline if side == "baseline" else self.candidate
        return self.start is not None and self.start == t.ops

    @property
    def cut_short(self) -> bool:
        """One side stops early and its ops are the other side's first ops (a run cut short,
        not another program, whatever the match rate)."""
        return any(self.tail[o] and self.is_cut(s) for s, o in (("candidate", "baseline"),
                                                                ("baseline", "candidate")))

    def tail_problems(self) -> list[str]:
        out = []
        for side, other, t in (("candidate", self.baseline, self.tail["baseline"]),
                               ("baseline", self.candidate, self.tail["candidate"])):
            if t >= TAIL_MIN_OPS and other.ops and t / other.ops >= TAIL_SHARE:
                head = (f"the {side} stops early: its last {t:,} ops ({t / other.ops:.0%} of "
                        "the other side's) are missing")
                if self.is_cut(side):
                    out.append(head + f"; its ops are the {other_name(side)}'s first ops, as a "
                               "full profiler buffer leaves a run (compare complete runs)")
                elif self.start is not None:
                    k = self.start
                    out.append(head + f", and its ops part from the {other_name(side)}'s at op "
                               f"{k + 1:,} (op code, input shapes or dtypes differ): the two "
                               "sides run different programs, not one cut short")
                else:
                    out.append(head)
        return out

    def problems(self, metric: str, slower_pct: float | None,
                 allow_arch_mismatch: bool = False) -> list[str]:
        """Why a gate on `metric` cannot trust this comparison (empty when it can).
        `slower_pct`: the change the gate would judge (None: no percentage)."""
        b, c = self.baseline, self.candidate
        out = []
        if b.arch != c.arch and not allow_arch_mismatch:
            out.append(f"the baseline ran on {b.arch} and the candidate on {c.arch} "
                       "(--allow-arch-mismatch to compare anyway)")
        if b.timing != c.timing:
            rt = "baseline" if b.timing == "dispatch" else "candidate"
            out.append(f"the {rt}'s device times are the realtime profiler's dispatch window, "
                       "the other's the classic kernel time: every op differs by a few us of "
                       "dispatch (compare two realtime logs or two classic reports)")
        if self.match_rate < MIN_MATCH_RATE:
            out.append(f"only {self.match_rate:.0%} of ops matched (under {MIN_MATCH_RATE:.0%})"
                       + ("" if self.cut_short else ": the two sides' op sequences differ"))
        out += self.tail_problems()
        share = self.uncompared_share(metric)
        if share > MAX_UNCOMPARED_SHARE:
            out.append(f"{self.uncompared_text(metric)}: over {MAX_UNCOMPARED_SHARE:.0%}, so "
                       "the totals cannot be trusted (compare runs with complete device data)")
        if metric != "device" and bool(b.gaps_known) != bool(c.gaps_known):
            side = "candidate" if not c.gaps_known else "baseline"
            out.append(f"the {side} has no op-to-op gaps: {METRIC_NAMES[metric]} cannot be "
                       "compared (--metric device can)")
        for side, t, other in (("candidate", c, b), ("baseline", b, c)):
            if t.ops and not t.device_time_us > 0 and other.device_time_us > 0:
                out.append(f"the {side} has no valid device time in its {t.ops} ops (blank or "
                           "corrupt durations, or host fallbacks only)")
            if t.corrupt_rows > other.corrupt_rows:
                out.append(f"the {side} has {t.corrupt_rows - other.corrupt_rows} more ops "
                           "with corrupt timings, left out of its totals")
        if slower_pct is None:
            out.append(f"the baseline's {METRIC_NAMES[metric]} total is zero: no percentage "
                       "can be computed")
        return out


# ==================================================================== the decision

EXIT_OK, EXIT_REGRESSION, EXIT_FASTER = 0, 1, 3  # 2: bad input (a TraceError)


@dataclass(frozen=True)
class Limits:
    """What a gate holds a change to (percent of the baseline; microseconds).

    ``fail_above``: slower by more than this fails (exit 1). ``fail_below``: faster by more than
    this fails too (exit 3): the target is out of date, as tt-metal's ``check_device_perf``
    fails a run that beats its expected time by more than the margin. ``min_delta_us``: a change
    smaller than this in absolute time never fails, whatever its percentage (a floor, as
    tt-metal's kernel-perf gate proposes a minimum number of cycles)."""

    fail_above: float | None = None
    fail_below: float | None = None
    min_delta_us: float | None = None

    @property
    def active(self) -> bool:
        return self.fail_above is not None or self.fail_below is not None

    def as_dict(self) -> dict[str, float | None]:
        return {"fail_above": self.fail_above, "fail_below": self.fail_below,
                "min_delta_us": self.min_delta_us}


@dataclass(frozen=True)
class Change:
    """The change a gate judges: percentages and absolute sizes (us) on its metric."""

    metric: str
    verdict: str  # the diff's sentence
    slower_pct: float | None  # (candidate - baseline) / baseline of the totals (runs: means)
    gate_pct: float | None  # the larger of that and the common ops' change
    slower_us: float  # candidate - baseline of the totals (runs: of the means)
    gate_us: float  # the absolute change behind gate_pct
    within_noise: bool = False  # several runs: the bootstrap interval holds 0
    noise_text: str = ""
    median_pct: float | None = None  # several runs: median vs median
    common_ops: int = 0  # the matched ops compared (Basis.comparable; behind gate_pct)
    missing: str = ""  # where the ops only one side ran are (Basis.missing_text)


@dataclass(frozen=True)
class Outcome:
    """What a gate decided: ``kind`` (pass, regression, faster, floor, noise, median), the exit
    code, one line saying it with the verdict (``line``) and a short one for a report that
    already prints the verdict (``short``)."""

    kind: str
    exit_code: int
    line: str
    short: str

    def as_dict(self) -> dict[str, object]:
        return {"outcome": self.kind, "exit_code": self.exit_code, "line": self.line}


def other_name(side: str) -> str:
    return "baseline" if side == "candidate" else "candidate"


def decide(limits: Limits, c: Change) -> Outcome:
    """The gate's outcome (the rules are the Limits docstring's; several runs: a regression
    needs the mean's change above the limit with its interval clear of 0, and the median's
    change above the limit too: one slow run moves the mean, not the median)."""
    what = METRIC_NAMES[c.metric].split(" (")[0]
    pct = c.gate_pct
    if limits.fail_above is not None and pct is not None and pct > limits.fail_above:
        tag = f"{pct:+.2f}% on {what}"
        floor = limits.min_delta_us
        if floor is not None and abs(c.gate_us) < floor:
            msg = (f"{tag} ({c.gate_us:+,.1f} us) is under --min-delta-us {floor:g}: not a "
                   "regression")
            return Outcome("floor", EXIT_OK, msg, "pass: " + msg)
        if c.within_noise and pct == c.slower_pct:
            msg = f"{pct:+.2f}% is within the run-to-run noise ({c.noise_text}): not a regression"
            return Outcome("noise", EXIT_OK, msg, "pass: " + msg)
        if c.median_pct is not None and c.median_pct <= limits.fail_above \
                and pct == c.slower_pct:
            msg = (f"the mean is {pct:+.2f}% on {what} but the median run only "
                   f"{c.median_pct:+.2f}% (--fail-above {limits.fail_above:g}%): one run is "
                   "an outlier, not a regression")
            return Outcome("median", EXIT_OK, msg, "pass: " + msg)
        limit = f"above --fail-above {limits.fail_above:g}%"
        if pct != c.slower_pct:  # the ops both ran failed, not the whole runs' totals
            whole = f"{c.slower_pct:+.2f}%" if c.slower_pct is not None else "no change"
            missing = c.missing or "some ops ran on one side only"
            over = (f"over the {c.common_ops:,} ops both sides ran ({missing}; the whole "
                    f"runs' totals: {whole}, not like for like)")
            return Outcome("regression", EXIT_REGRESSION,
                           f"REGRESSION: the candidate is {pct:.2f}% slower on {what} {over}, "
                           f"{limit}",
                           f"REGRESSION (exit {EXIT_REGRESSION}): {tag} {over}, {limit}")
        return Outcome("regression", EXIT_REGRESSION, f"REGRESSION: {c.verdict}, {limit}",
                       f"REGRESSION (exit {EXIT_REGRESSION}): {tag}, {limit}")
    faster = -c.slower_pct if c.slower_pct is not None else None
    if limits.fail_below is not None and faster is not None and faster > limits.fail_below:
        tag = f"{-faster:+.2f}% on {what}"
        floor = limits.min_delta_us
        if floor is not None and abs(c.slower_us) < floor:
            msg = (f"{tag} ({c.slower_us:+,.1f} us) is under --min-delta-us {floor:g}: "
                   "not faster than expected")
            return Outcome("floor", EXIT_OK, msg, "pass: " + msg)
        if c.within_noise:
            msg = f"{tag} is within the run-to-run noise ({c.noise_text})"
            return Outcome("noise", EXIT_OK, msg, "pass: " + msg)
        if c.median_pct is not None and -c.median_pct <= limits.fail_below:
            msg = (f"the mean is {tag} but the median run only {c.median_pct:+.2f}%: one run "
                   "is an outlier")
            return Outcome("median", EXIT_OK, msg, "pass: " + msg)
        limit = (f"beyond --fail-below {limits.fail_below:g}%: update the baseline or the "
                 "target")
        return Outcome("faster", EXIT_FASTER, f"FASTER THAN EXPECTED: {c.verdict}, {limit}",
                       f"FASTER THAN EXPECTED (exit {EXIT_FASTER}): {tag}, {limit}")
    bits = []
    if limits.fail_above is not None:
        bits.append(f"--fail-above {limits.fail_above:g}%")
    if limits.fail_below is not None:
        bits.append(f"--fail-below {limits.fail_below:g}%")
    shown = f"{pct:+.2f}% on {what}" if pct is not None else f"no change on {what}"
    msg = f"{shown} is within {' and '.join(bits)}"
    return Outcome("pass", EXIT_OK, msg, "pass: " + msg)


def median_pct(baseline: list[dict[str, Any]], candidate: list[dict[str, Any]], key: str
               ) -> float | None:
    """Median vs median of per-run totals (`key` of View.totals()), percent; None without
    several runs on a side or with a zero baseline median."""
    if len(baseline) < 2 and len(candidate) < 2:
        return None
    a = float(np.median([t[key] for t in baseline]))
    b = float(np.median([t[key] for t in candidate]))
    return pct(a, b)
