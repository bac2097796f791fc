"""The facts a trace's header states, listed once: the TUI header's second line, `report`'s
`Time:` line, `watch`'s plain lines and `watch --once`'s JSON all render `timing_facts`. Each
fact has a priority: a narrow screen drops the least important whole facts, never the window,
the device time or a host-op share, and never cuts a number. Also the report's iterations and
replay-session lines."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..format import fmt_share, fmt_us
from ..model import View
from ..model.iterations import iterations_of

#: iterations listed one by one in the report's line (the JSON has every one)
SHOWN_ITERATIONS = 8


@dataclass(frozen=True)
class Fact:
    key: str
    label: str  # plain words before the value ("device ")
    value: str  # the number (shown bold)
    priority: int = 0  # 0: always kept; larger numbers are dropped first at narrow widths
    raw: object = None  # the value for machines (us, %, text)

    @property
    def text(self) -> str:
        return f"{self.label}{self.value}"


def timing_facts(view: View) -> list[Fact]:
    """The header's second line: device time, dispatch, pauses, device time by bound, window."""
    sm = view.summary()
    device = "device (rt window) " if sm.timing == "dispatch" else "device "
    facts = [Fact("device", device, fmt_us(sm.device_time_us), raw=sm.device_time_us),
             Fact("dispatch", "dispatch ", fmt_us(sm.dispatch_us), 4, sm.dispatch_us),
             Fact("pauses", "pauses ", fmt_us(sm.pauses_us), 3, sm.pauses_us)]
    largest = sorted(sm.bound_shares, key=lambda b: -sm.bound_shares[b])
    for name, share in sm.bound_shares.items():
        # a host op is a problem to see: its share stays; the largest share goes after the
        # times (a cut line still says where most device time is), the others smallest first
        rank = largest.index(name)
        facts.append(Fact(f"bound:{name}", f"{name} ", fmt_share(share),
                          0 if name == "HOST" else 2 if rank == 0 else 5 + rank, share))
    n = len(view.trace.devices)
    if not view.merged and n > 1:  # per-device rows: the times add every device's
        facts.append(Fact("summed", "times summed over ", f"{n} devices", 0, n))
    facts.append(Fact("window", "", sm.window, 1, sm.window))
    return facts


def iterations_line(view: View) -> str | None:
    """The report's "Iterations:" line: the warm-up verdict (model.iterations) and the first
    iterations' wall times; None when nothing repeats or the window is neither the whole trace
    nor the steady state (no second pass over the file for a header line)."""
    found = iterations_of(view)
    if found is None or not found.found:
        return None
    if found.count == 1:  # one replay session: the verdict says its time
        return f"Iterations: {found.verdict()}"
    wall = found.table["wall_us"].to_numpy(dtype="float64")
    shown = ", ".join(fmt_us(v) for v in wall[:SHOWN_ITERATIONS])
    more = f", +{len(wall) - SHOWN_ITERATIONS:,} more" if len(wall) > SHOWN_ITERATIONS else ""
    hint = "; --steady-state for the steady state only" if found.warmup and \
        view.window.mode != "steady" else ""
    return f"Iterations: {found.verdict()}; wall time per iteration: {shown}{more}{hint}"


def iterations_dict(view: View) -> dict[str, object] | None:
    """The report JSON's "iterations" key (None as for iterations_line)."""
    found = iterations_of(view)
    return found.as_dict() if found is not None and found.found else None


def facts_line(facts: list[Fact], sep: str = " · ") -> str:
    """The facts as one plain line (no width limit: a report line wraps between words)."""
    return sep.join(f.text for f in facts)


def facts_dict(facts: list[Fact]) -> dict[str, object]:
    """The facts for JSON: key -> raw value (times in us, shares in % of device time)."""
    return {f.key: f.raw for f in facts}


def fit_facts(facts: list[Fact], width: int, sep: str = " · ") -> list[Fact]:
    """The facts that fit `width` joined by `sep`: the highest priority numbers dropped first
    (ties: the later one), priority 0 never."""
    kept = list(facts)

    def length() -> int:
        return sum(len(f.label) + len(f.value) for f in kept) + len(sep) * (len(kept) - 1)

    while length() > width:
        droppable = [f for f in kept if f.priority > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda f: (f.priority, kept.index(f))))
    return kept


def replay_line(sessions: list[dict]) -> str:
    """The replay sessions as iterations: steady time per session, its spread, the extremes
    (a session with fewer ops than most is said to be partial). One session: its time."""
    if len(sessions) == 1:
        s = sessions[0]
        return (f"Replay session: 1 (#{s['session']}, {s['ops']:,} ops), steady time "
                f"{fmt_us(s['steady_us'])}: the steady state (--steady-state)")
    steady = np.array([s["steady_us"] for s in sessions])
    ops = np.array([s["ops"] for s in sessions])
    full = ops == np.bincount(ops).argmax()
    lo, hi = int(np.argmin(np.where(full, steady, np.inf))), int(np.argmax(np.where(full, steady,
                                                                                  -np.inf)))
    med = float(np.median(steady[full]))
    partial = [str(s["session"]) for s, f in zip(sessions, full) if not f]
    return (f"Replay sessions ({len(sessions)}, --replay N for one): steady time per session "
            f"median {fmt_us(med)}, fastest #{sessions[lo]['session']} "
            f"{fmt_us(steady[lo])}, slowest #{sessions[hi]['session']} {fmt_us(steady[hi])} "
            f"({(steady[hi] - steady[lo]) / med * 100 if med else 0:.1f}% apart)"
            + (f"; partial (fewer ops): {', '.join(partial)}" if partial else ""))
