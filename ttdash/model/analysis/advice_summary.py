"""The advice, aggregated: what a person reads first.

model.advice lists tt-perf-report's advice one entry per op and bullet (bh20_oft: 1,449 lines, 1,311
of them gaps). This groups the same entries so they fit a screen: host fallbacks counted per op
code, the largest op-to-op gaps with a count and total of the rest, the tracing saving split into
host pauses (which tracing does not remove) and dispatch gaps (which it can), and the matmul rules
grouped by rule with their ops and the device time at stake. tt-perf-report's matmul rules give no
estimate of a saving: the speed rules are ranked by their ops' device time; the accuracy rules
(model.advice.ACCURACY_KINDS: a higher fidelity, which makes the ops slower) are kept apart
(`accuracy`) and never ranked with them. The flat list stays in JSON and one
flag or key away. Computed from arrays and group-bys, never one Python object per op.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..columns import PAUSE_ABOVE_US, without_signposts
from .advice import ACCURACY_KINDS, GAP_LIMIT_US, Saving, gap_saving, matmul_rule_chunks
from .guides import GuideInput, GuideSummary, summarise_guides

#: Op codes of host fallbacks named one by one (the rest are counted).
HOST_CODES = 8
#: Largest gaps named one by one.
TOP_GAPS = 5
#: Op IDs named per matmul rule (its heaviest ops).
EXAMPLES = 3
#: Matmul rule kinds that say nothing is wrong: counted on one line after the rules that apply.
OK_KINDS = ("matmul_ok", "matmul_config_ok")


@dataclass(frozen=True)
class HostGroup:
    op_code: str
    count: int
    first_id: int


@dataclass(frozen=True)
class Gap:
    id: int
    gap_us: float


@dataclass(frozen=True)
class Rule:
    """One matmul rule (kind and words) with the ops it names."""
    kind: str
    message: str
    count: int
    device_us: float
    share_pct: float  # of the window's device time
    ids: tuple[int, ...]  # the heaviest ops (by device time), at most EXAMPLES


@dataclass(frozen=True)
class AdviceSummary:
    host_ops: int = 0
    host: tuple[HostGroup, ...] = ()
    gap_ops: int = 0
    gap_us: float = 0.0
    top_gaps: tuple[Gap, ...] = ()
    saving: Saving | None = None
    matmuls: int = 0
    rules: tuple[Rule, ...] = ()  # speed rules that apply, most device time first
    ok: tuple[Rule, ...] = ()  # "no rule applies" groups
    accuracy: tuple[Rule, ...] = ()  # accuracy rules (slower if followed): no time to save
    entries: int = 0  # lines of the flat list (model.advice.iter_advice)
    guides: GuideSummary = GuideSummary()  # the tuning guides' rules (model.guides)

    @property
    def empty(self) -> bool:
        """No tt-perf-report advice (the guides' rules are counted apart)."""
        return not (self.host_ops or self.gap_ops or self.matmuls)

    def as_dict(self) -> dict[str, Any]:
        s = self.saving
        return {
            "entries": self.entries,
            "host": {"ops": self.host_ops,
                     "by_op_code": [{"op_code": h.op_code, "ops": h.count,
                                     "first_id": h.first_id} for h in self.host]},
            "gaps": {"ops": self.gap_ops, "limit_us": GAP_LIMIT_US,
                     "total_us": round(self.gap_us, 6),
                     "largest": [{"id": g.id, "gap_us": round(g.gap_us, 6)}
                                 for g in self.top_gaps]},
            "tracing_saving": None if s is None else {
                "saving_us": round(s.saving_us, 6), "saving_pct": round(s.saving_pct, 6),
                "host_pauses_us": round(s.pauses_us, 6),
                "dispatch_us": round(s.dispatch_us, 6), "ops": s.ops,
                "pause_ops": s.pause_ops, "pause_above_us": s.pause_above_us,
                "dispatch_steady_pct": round(s.steady_pct, 6)},
            "matmul": {"ops": self.matmuls,
                       "rules": [_rule_dict(r) for r in self.rules + self.accuracy + self.ok]},
            "guides": self.guides.as_dict(),
        }


def _rule_dict(r: Rule) -> dict[str, Any]:
    return {"kind": r.kind, "message": r.message, "ops": r.count,
            "device_time_us": round(r.device_us, 6), "device_share_pct": round(r.share_pct, 6),
            "ids": list(r.ids)}


def summarise(ops: pd.DataFrame, pause_above_us: float = PAUSE_ABOVE_US,
              guides: GuideInput | None = None) -> AdviceSummary:
    """The advice of these ops (a View's op rows), aggregated; with `guides` (the same ops'
    guide input, model.guides.guide_input), the tuning guides' rules too."""
    ops = without_signposts(ops)
    ids = ops["id"].to_numpy()
    host = ops["is_host"].to_numpy(dtype=bool)
    groups: list[HostGroup] = []
    if host.any():
        h = pd.DataFrame({"code": ops["op_code"].astype("string").fillna("").to_numpy()[host],
                          "id": ids[host]})
        g = h.groupby("code", sort=False, observed=True)["id"].agg(["size", "min"])
        g = g.sort_values(["size", "min"], ascending=[False, True])
        groups = [HostGroup(str(c), int(n), int(i)) for c, n, i in
                  zip(g.index, g["size"], g["min"])]
    gap = ops["op_to_op_us"].to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore"):
        high = np.flatnonzero(gap > GAP_LIMIT_US)
    top = high[np.argsort(-gap[high], kind="stable")[:TOP_GAPS]]
    rules, ok, matmuls, bullets = _matmul_rules(ops)
    accuracy = tuple(r for r in rules if r.kind in ACCURACY_KINDS)
    return AdviceSummary(
        host_ops=int(host.sum()), host=tuple(groups), gap_ops=len(high),
        gap_us=float(gap[high].sum()), top_gaps=tuple(Gap(int(ids[i]), float(gap[i]))
                                                     for i in top),
        saving=gap_saving(ops, pause_above_us), matmuls=matmuls,
        rules=tuple(r for r in rules if r.kind not in ACCURACY_KINDS), ok=ok, accuracy=accuracy,
        entries=int(host.sum()) + len(high) + (1 if len(high) else 0) + bullets,
        guides=summarise_guides(guides) if guides is not None else GuideSummary())


def _matmul_rules(ops: pd.DataFrame) -> tuple[tuple[Rule, ...], tuple[Rule, ...], int, int]:
    """(rules that apply, "no rule applies" groups, matmul ops, bullets of the flat list)."""
    ids = ops["id"].to_numpy()
    t = ops["device_time_us"].to_numpy(dtype="float64", na_value=np.nan)
    total = float(np.nansum(t))
    acc: dict[tuple[str, str], list[Any]] = {}  # (kind, message) -> [count, time, [(t, id)]]
    matmuls = bullets = 0
    for pos, group, by_group in matmul_rule_chunks(ops):
        matmuls += len(pos)
        tt = np.nan_to_num(t[pos])
        counts = np.bincount(group)
        time = np.bincount(group, weights=tt)
        order = np.lexsort((-tt, group))  # each group's heaviest ops first
        starts = np.searchsorted(group[order], np.arange(len(counts)))
        for g, rules in by_group.items():
            heavy = order[starts[g]:starts[g] + min(EXAMPLES, int(counts[g]))]
            for kind, message in rules:
                a = acc.setdefault((kind, message), [0, 0.0, []])
                a[0] += int(counts[g])
                a[1] += float(time[g])
                a[2].extend(zip(tt[heavy].tolist(), ids[pos[heavy]].tolist()))
                bullets += int(counts[g])
    out = []
    for (kind, message), (n, us, ex) in acc.items():
        heavy_ids = tuple(int(i) for _, i in sorted(ex, key=lambda e: -e[0])[:EXAMPLES])
        out.append(Rule(kind, message, n, us, us / total * 100 if total > 0 else 0.0,
                        heavy_ids))
    out.sort(key=lambda r: (-r.device_us, r.kind, r.message))
    return (tuple(r for r in out if r.kind not in OK_KINDS),
            tuple(r for r in out if r.kind in OK_KINDS), matmuls, bullets)


def rule_examples(rules: tuple[Rule, ...]) -> Iterator[int]:
    """Every op ID the rules name (for looking their labels up at once)."""
    for r in rules:
        yield from r.ids
