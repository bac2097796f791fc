"""The facts a trace's header states, listed once: the TUI header's second line, `report`'s
`Time:` line, `watch`'s plain lines and `watch --once`'s JSON all render `timing_facts`. Each
fact has a priority: a narrow screen drops the least important whole facts, never the window,
the device time or a host-op share, and never cuts a number. Also the report's iterations and
replay-session lines, and the report's header sections (present.sections: the summary and
what of the ops is shown) with their JSON keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from ..format import fmt_mhz, fmt_share, fmt_us
from ..model import View
from ..model.analysis.iterations import iterations_of
from ..model.compare.runs import replay_sessions
from ..model.read.discover import DISPATCH_TIMING
from ..model.read.text import clean_text
from ..present.sections import Labelled
from .choices import RANK_FIELDS, RANK_WORDS
from .layout import wrap
from .safe import md_cell

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
    """The report's "Iterations:" line (iterations_fact)."""
    fact = iterations_fact(view)
    return None if fact is None else fact.line


def iterations_fact(view: View) -> Labelled | None:
    """The report's "Iterations" fact: the warm-up verdict (model.iterations) and the first
    iterations' wall times; None when nothing repeats or the window is neither the whole trace
    nor the steady state (no second pass over the file for a header line)."""
    found = iterations_of(view)
    if found is None or not found.found:
        return None
    if found.count == 1:  # one replay session: the verdict says its time
        return Labelled("Iterations", found.verdict())
    wall = found.table["wall_us"].to_numpy(dtype="float64")
    shown = ", ".join(fmt_us(v) for v in wall[:SHOWN_ITERATIONS])
    more = f", +{len(wall) - SHOWN_ITERATIONS:,} more" if len(wall) > SHOWN_ITERATIONS else ""
    hint = "; --steady-state for the steady state only" if found.warmup and \
        view.window.mode != "steady" else ""
    return Labelled("Iterations",
                    f"{found.verdict()}; wall time per iteration: {shown}{more}{hint}")


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
    """The replay sessions' line (replay_fact)."""
    return replay_fact(sessions).line


def replay_fact(sessions: list[dict]) -> Labelled:
    """The replay sessions as iterations: steady time per session, its spread, the extremes
    (a session with fewer ops than most is said to be partial). One session: its time."""
    if len(sessions) == 1:
        s = sessions[0]
        return Labelled("Replay session", f"1 (#{s['session']}, {s['ops']:,} ops), steady time "
                        f"{fmt_us(s['steady_us'])}: the steady state (--steady-state)")
    steady = np.array([s["steady_us"] for s in sessions])
    ops = np.array([s["ops"] for s in sessions])
    full = ops == np.bincount(ops).argmax()
    lo, hi = int(np.argmin(np.where(full, steady, np.inf))), int(np.argmax(np.where(full, steady,
                                                                                  -np.inf)))
    med = float(np.median(steady[full]))
    partial = [str(s["session"]) for s, f in zip(sessions, full) if not f]
    return Labelled(f"Replay sessions ({len(sessions)}, --replay N for one)",
                    f"steady time per session median {fmt_us(med)}, fastest "
                    f"#{sessions[lo]['session']} {fmt_us(steady[lo])}, slowest "
                    f"#{sessions[hi]['session']} {fmt_us(steady[hi])} "
                    f"({(steady[hi] - steady[lo]) / med * 100 if med else 0:.1f}% apart)"
                    + (f"; partial (fewer ops): {', '.join(partial)}" if partial else ""))


# ------------------------------------------------------------------ the report's header
def shown_line(view: View, shown: Any) -> str | None:
    """The "Shown:" line (shown_facts), None when every op is shown."""
    return next((f.line for f in shown_facts(view, shown)), None)


def shown_facts(view: View, shown: Any) -> list[Labelled]:
    """The "shown" section's fact (present.sections): what of the ops the table holds, when
    not every one: the top N and what ranks them, the share floor."""
    parts = []
    if shown.top:
        parts.append(f"the top {shown.top:,} of {len(view.op_rows):,} ops by "
                     f"{RANK_WORDS[shown.rank_by]}, largest first (--rank-by)")
    if shown.min_pct:
        parts.append(f"ops at or above {shown.min_pct:g}% of wall time")
    return [Labelled("Shown", "; ".join(parts))] if parts else []


def summary_dict(view: View) -> dict:
    t = view.trace
    return {
        "file": str(t.path),
        "arch": t.arch.name if t.arch_detected else None,  # never one nothing said
        "peaks_arch": t.arch.name,  # whose peaks the DRAM and FLOP shares use
        "arch_source": t.arch_source,
        "arch_detected": t.arch_detected,
        "clock_mhz": t.clock_mhz,
        "device_time_basis": t.timing,
        "devices": len(t.devices) or None,
        "ranks": t.ranks or None,  # a multi-host run's tt-run ranks
        "window": view.description,
        "window_note": view.window_note() or None,
        "merged_devices": view.merged,
        "signposts": [
            {"index": int(r.index), "name": r.name, "occurrence": int(r.occurrence),
             "label": r.label, "id": int(r.id), "ops": int(r.ops),
             "device_time_us": round(float(r.device_time_us), 6)}
            for r in t.signposts.itertuples(index=False)
        ],
        "totals": view.totals(),
        "bound_share_pct": {k: round(v, 3) for k, v in view.bound_shares().items()},
        "warnings": [w.as_dict() for w in view.warnings()],
        # metal-trace replay sessions compared with each other (iterations of one run)
        "replay_sessions": replay_sessions(view) or None,
        # repeated iterations and the warm-up verdict (model.iterations)
        "iterations": iterations_dict(view),
    }


def file_line(trace, width: int | None = None) -> str:  # (model.Trace)
    """The table's first line, "File: PATH" (wrapped at `width`), as soon as the trace is read:
    `report` writes it before the analysis."""
    return "\n".join(wrap(file_fact(trace).line, width))


def file_fact(trace) -> Labelled:  # (model.Trace)
    return Labelled("File", str(clean_text(str(trace.path))))


def summary_facts(view: View, shown: Any) -> Iterator[Labelled]:
    """The summary section's facts (present.sections): the file (unless `shown.file_line` is
    off: the caller wrote it), arch, window, the time facts (report.header, as the TUI's header
    states them) and what else the data says; the first as soon as it is made."""
    sm = view.summary()
    if shown.file_line:
        yield file_fact(view.trace)
    facts = timing_facts(view)

    def bound(f: Fact) -> bool:
        return f.key.startswith("bound:")

    dev = f"{len(sm.devices)} ({', '.join(str(d) for d in sm.devices)})" if sm.devices else "none"
    clock = fmt_mhz(sm.clock_mhz) if sm.clock_mhz else "unknown clock"
    arch = sm.arch or f"not detected, Wormhole peaks assumed: {view.trace.arch.name}"
    said = [
        Labelled("Arch", f"{arch} ({sm.arch_source}), {clock}; devices: {dev}"
                 + (" (per device)" if sm.per_device else "")
                 + (f"; ranks: {len(view.trace.ranks)} "
                    f"({', '.join(map(str, view.trace.ranks))}), device ids offset per rank"
                    if view.trace.ranks else "")),
        Labelled("Window", f"{sm.window}; {sm.ops:,} ops"),
        Labelled("Time", f"{facts_line([f for f in facts if f.key != 'window' and not bound(f)])}"
                 f" (pauses: {sm.pauses:,} op-to-op gaps above {fmt_us(sm.pause_above_us)}; "
                 "dispatch: the shorter ones)"),
    ]
    if sm.timing == "dispatch":
        said.append(Labelled("Timing", DISPATCH_TIMING))
    if sm.window_note:
        said.append(Labelled("Note", sm.window_note))
    if sm.bound_shares:
        said.append(Labelled("Device time by bound",
                             ", ".join(f.text for f in facts if bound(f))))
    said.extend(Labelled("Warning", w.message) for w in sm.warnings)
    if sm.host_ops:
        said.append(Labelled("Host fallback ops", f"{sm.host_ops}"))
    sessions = replay_sessions(view)
    if sessions:
        said.append(replay_fact(sessions))
    it = iterations_fact(view)
    if it:
        said.append(it)
    if sm.signposts:
        show = sm.signposts if shown.all_signposts else sm.signposts[:6]
        more = len(sm.signposts) - len(show)
        said.append(Labelled(f"Signposts ({len(sm.signposts)})", ", ".join(show)
                             + (f", +{more} more (--print-signposts lists them)" if more > 0
                                else "")))
    yield from (Labelled(str(clean_text(f.label)), str(clean_text(f.text))) for f in said)


def summary_keys(view: View, shown: Any) -> dict:
    """The summary section's JSON keys (schemas/report.schema.json), with the telemetry."""
    doc = summary_dict(view)
    if shown.telemetry:
        doc["telemetry"] = shown.telemetry
    return doc


def shown_keys(view: View, shown: Any) -> dict:
    """The "shown" section's JSON key: what ranks the ops with --top."""
    return {"ranked_by": {"top": shown.top, "by": RANK_FIELDS[shown.rank_by]}} if shown.top \
        else {}


def write_md_facts(out: TextIO, facts: Iterable[Labelled]) -> None:
    """Facts as a markdown list, each label bold."""
    for f in facts:
        out.write(f"- **{md_cell(f.label)}**: {md_cell(f.text)}\n")
