"""The advice as a report prints it: aggregated by default (model.advice_summary: what fits a
screen), every entry on request (--advice full, the TUI's full list, tt-perf-report's layout).
The tuning guides' rules (model.guides) come with it: one line per rule in the grouped advice,
a section per rule in the full list, their entries as frames for JSON (guide_frames_of)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..format import fmt_us
from ..memory import settle
from ..model import View
from ..model.analysis.advice import GAP_LIMIT_US, Advice, iter_advice
from ..model.analysis.advice_summary import (
    HOST_CODES,
    AdviceSummary,
    Rule,
    rule_examples,
    summarise,
)
from ..model.analysis.guides import (
    EXTRA_FIGURES,
    KINDS,
    GuideInput,
    GuideRule,
    GuideSummary,
    guide_columns,
    guide_frames,
    guide_input,
    rule_frames,
)
from .layout import op_labels

ADVICE_SECTIONS = {
    "host": "Host fallback ops: move them to the device",
    "gap": f"High op-to-op gap (over {GAP_LIMIT_US:g} us): the device waited for the host",
    "matmul": "Matmuls",
}


AdviceEntry = tuple[int | None, str, list[str]]  # op ID (None: whole trace), line, bullets


def advice_sections(view: View, items: list[Advice] | None = None
                    ) -> list[tuple[str, list[AdviceEntry]]]:
    """The advice as (section title, [(op ID, op line, [bullets])]) in tt-perf-report's order,
    then the guides' rules (a section per kind; not with `items`); a whole-trace entry has no
    ID and no bullets."""
    out = [(title, list(group)) for title, group in _advice_groups(view, items)]
    if items is None:
        out += [(title, list(group)) for title, group in guide_groups(view)]
    return out


def _advice_groups(view: View, items: Iterable[Advice] | None = None
                   ) -> Iterator[tuple[str, Iterator[AdviceEntry]]]:
    """advice_sections, streamed: each section title with its entries as they are made."""
    for title, group in itertools.groupby(advice_entries(view, items), key=lambda e: e[0]):
        yield title, (entry for _, entry in group)


def advice_entries(view: View, items: Iterable[Advice] | None = None,
                   batch: int = 20_000) -> Iterator[tuple[str, AdviceEntry]]:
    """advice_sections' entries one at a time, each with its section title: made as they are
    written (a million-op trace has hundreds of thousands), op lines looked up a batch of
    entries at a time."""
    stream = iter(iter_advice(view.ops, view.pause_above_us) if items is None else items)
    ops = view.op_rows
    all_ids = ops["id"].to_numpy()
    pending: tuple[str, AdviceEntry] | None = None
    last: tuple[str, int | None] | None = None
    title = None
    while chunk := list(itertools.islice(stream, batch)):
        wanted = np.fromiter((a.id for a in chunk if a.id is not None), dtype=np.int64)
        sub = ops[np.isin(all_ids, wanted)]
        labels = dict(zip(sub["id"].tolist(), op_labels(sub)))
        gaps = dict(zip(sub["id"].tolist(), sub["op_to_op_us"].tolist()))
        for a in chunk:
            section = a.kind.split("_")[0]
            if ADVICE_SECTIONS[section] != title:
                title, last = ADVICE_SECTIONS[section], None
            if a.id is None:
                if pending is not None:
                    yield pending
                pending = (title, (None, a.message[:1].upper() + a.message[1:], []))
                continue
            if section == "matmul" and last == (section, a.id) and pending is not None:
                pending[1][2].append(a.message)
                continue
            if pending is not None:
                yield pending
            head = f"ID {a.id}  {labels.get(a.id, '')}"
            if section == "gap":
                head += f"  gap {fmt_us(gaps.get(a.id))}"
            pending = (title, (a.id, head, [a.message] if section == "matmul" else []))
            last = (section, a.id)
    if pending is not None:
        yield pending


def full_advice_lines(view: View) -> Iterator[str]:
    """The advice as text lines, every entry (nothing when there is none), made as they are
    written: tt-perf-report's rules, then the tuning guides'."""
    for heading, groups in (
            ("Advice, every entry (tt-perf-report's rules; --advice summary groups them, "
             "--advice none leaves it out)", _advice_groups(view)),
            ("Advice from the tuning guides, every entry (time at stake: device time + "
             "dispatch gap; estimates labelled)", guide_groups(view))):
        for k, (title, group) in enumerate(groups):
            if not k:
                yield ""
                yield heading
            yield from _section_lines(title, group, "    - ")


def _section_lines(title: str, rows: Iterable[tuple[int | None, str, list[str]]],
                   bullet: str) -> Iterator[str]:
    """One advice section as text: a blank line, its title, each row and its sub-lines."""
    yield ""
    yield title
    for _, head, subs in rows:
        yield "  " + head
        for sub in subs:
            yield bullet + sub


# ------------------------------------------------------------------ the tuning guides' rules
def guides_of(view: View) -> GuideInput:
    """The guide rules' input for this view (made once per view and ops frame)."""
    cached = view.__dict__.get("_guides")
    if cached is None or cached[0] is not view.ops or cached[1] != view.pause_above_us:
        trace = view.trace  # (only the columns the rules read: alone, from the analysis cache)
        rows = trace.ordered_columns(guide_columns(trace.ordered_labels))
        g = guide_input(view.op_rows, rows, view.merged, trace.arch.dram_gbps,
                        view.pause_above_us, source=view)
        kept = _entries_kept(view)
        if kept is not None:  # (from the analysis cache) the rules are not run again
            g.cache["frames"] = kept
        elif "_acache" in view.__dict__:  # (each rule's entries in its folder until stored)
            g.cache["keep"] = view.__dict__["_acache"].spilled
        cached = (view.ops, view.pause_above_us, g)
        view.__dict__["_guides"] = cached
    return cached[2]


def _entries_kept(view: View) -> Sequence[pd.DataFrame] | None:
    """The guide entries kept with this view (guide_entries), for its ops and pause threshold."""
    kept = view.__dict__.get("_guide_entries")
    if kept is not None and kept[0] is view.ops and kept[1] == view.pause_above_us:
        frames: Sequence[pd.DataFrame] = kept[2]
        return frames
    return None


def guide_entries(view: View) -> Sequence[pd.DataFrame]:
    """The guide rules' entries of this view, a frame per rule (model.guides.rule_frames), made
    once; when the view is to be kept in the analysis cache (a command that stores it once its
    output is written), kept with it, as the grouped advice is: a second run of `report -f json`
    on the same file writes them without running the rules; meanwhile each rule's are in a
    file of the cache's folder, read back when used (guides_of: analysis_cache.Entry.spilled).
    (A run that keeps no cache drops them once written: release_guides.)"""
    kept = _entries_kept(view)
    if kept is not None:
        return kept
    frames = rule_frames(guides_of(view))
    if "_acache" in view.__dict__:
        view.__dict__["_guide_entries"] = (view.ops, view.pause_above_us, frames)
    return frames


#: A view of more ops than this whose guide entries are kept nowhere (not with the view, not
#: for the analysis cache) has them made again each time they are read, a rule at a time
#: (entries_streamed): a million ops' 1.5 million entries, held from the grouped advice's sums
#: to the last one written, were ~46 MiB of `report -f json --no-cache`'s peak; the rules run
#: twice instead of once (~1 s of a million ops' ~16 s). Smaller views make them once.
HOLD_ENTRIES_UP_TO = 1 << 18


def entries_streamed(view: View) -> bool:
    """Whether this view's guide entries are made a rule at a time each time they are read
    (HOLD_ENTRIES_UP_TO), rather than once and held until written."""
    if len(view.ops) <= HOLD_ENTRIES_UP_TO or _entries_kept(view) is not None:
        return False
    made = guides_of(view).cache
    return "frames" not in made and "keep" not in made


def _entry_frames(view: View) -> Iterable[pd.DataFrame]:
    """The guide rules' entries, a frame per rule: guide_entries', or each rule's made as it
    is taken when they are streamed (entries_streamed; one rule's alive at a time)."""
    return guide_frames(guides_of(view)) if entries_streamed(view) else guide_entries(view)


def release_guides(view: View) -> None:
    """Drop the guide rules' entries kept for this view (made again when asked for; those kept
    for the analysis cache stay, guide_entries, read back when used). Either way, what writing
    them freed goes back before what comes next allocates its own (settle; no change in a
    million ops' first json run's peak was measured from it: 828 MiB with and without)."""
    cached = view.__dict__.get("_guides")
    if cached is not None and cached[2].cache.get("frames") is not _entries_kept(view):
        cached[2].cache.pop("frames", None)
    settle(len(view.ops))


def _kind_parts(view: View) -> Iterator[tuple[str, pd.DataFrame, np.ndarray | None]]:
    """Each guide kind, first seen first, with its rule frame and the positions of the kind's
    rows in it (None: every row). A kind is one rule's: its rows are in one frame. No copy of
    a kind's rows is made (a million ops' padding entries are ~100 MB): callers take them a
    chunk at a time (_chunks). Each rule's frame is let go before the next is taken (those
    kept with a view read back from the analysis cache are read as they are taken)."""
    for e in _entry_frames(view):
        codes, kinds = pd.factorize(e["kind"].to_numpy(dtype=object))
        for code, kind in enumerate(kinds):
            yield str(kind), e, (np.flatnonzero(codes == code) if len(kinds) > 1 else None)
        del e, codes


def _chunks(frame: pd.DataFrame, at: np.ndarray | None, size: int) -> Iterator[pd.DataFrame]:
    """The rows of `frame` at positions `at` (None: all), in order, `size` rows at a time."""
    n = len(frame) if at is None else len(at)
    for start in range(0, n, size):
        yield frame.iloc[start:start + size] if at is None else frame.iloc[at[start:start + size]]


def _missing(frame: pd.DataFrame, column: str, at: np.ndarray | None) -> bool:
    """No row of `frame` at positions `at` (None: all) has a value in `column`."""
    known = frame[column].notna().to_numpy()
    return not (known if at is None else known[at]).any()


def guides_cached(view: View) -> bool:
    """Whether this view's guide entries are made and kept (release_guides drops them)."""
    cached = view.__dict__.get("_guides")
    return _entries_kept(view) is not None or (cached is not None and "frames" in cached[2].cache)


def guide_frames_of(view: View, chunk: int = 1 << 16) -> Iterator[pd.DataFrame]:
    """Every guide entry as frames of at most `chunk` rows, a kind at a time without the
    figures its rule does not give (what JSON's "guide_advice" writes: no Python object per
    entry)."""
    for _, e, at in _kind_parts(view):
        drop = [c for c in EXTRA_FIGURES if c in e.columns and _missing(e, c, at)]
        for part in _chunks(e, at, chunk):
            yield part.drop(columns=drop) if drop else part
        e = part = None  # (neither held while the next rule's frame is read)


def guide_title(kind: str) -> str:
    k = KINDS[kind]
    return f"{kind}: {k.advice} (guide: {k.guide.title}, {k.guide.section}: {k.guide.url})"


def guide_groups(view: View, batch: int = 20_000
                 ) -> Iterator[tuple[str, Iterator[AdviceEntry]]]:
    """Each guide kind's section title with its entries (op line, [message]), op labels looked
    up a batch of entries at a time."""
    ops = view.op_rows
    all_ids = ops["id"].to_numpy()
    for kind, e, at in _kind_parts(view):
        yield guide_title(kind), _guide_entries(_chunks(e, at, batch), ops, all_ids)
        del e


def _guide_entries(parts: Iterator[pd.DataFrame], ops: pd.DataFrame, all_ids: np.ndarray
                   ) -> Iterator[AdviceEntry]:
    for part in parts:
        ids = part["id"].to_numpy(dtype=np.int64)
        rows = ops[np.isin(all_ids, ids)]
        labels = dict(zip(rows["id"].tolist(), op_labels(rows)))
        for i, msg, stake in zip(ids.tolist(), part["message"].tolist(),
                                 part["at_stake_us"].tolist()):
            yield i, f"ID {i}  {labels.get(i, '')}  at stake {fmt_us(stake)}", [msg]


def guide_summary_rows(view: View, g: GuideSummary
                       ) -> list[tuple[int | None, str, list[str]]]:
    """One line per guide rule (its ops, time at stake, what to do) and a line of its heaviest
    ops, its estimate and its guide."""
    ops = view.op_rows
    wanted = {i for r in g.rules for i in r.ids}
    sub = ops[np.isin(ops["id"].to_numpy(), np.fromiter(wanted, dtype=np.int64,
                                                         count=len(wanted)))]
    labels = dict(zip(sub["id"].tolist(), op_labels(sub, limit=32)))
    rows: list[tuple[int | None, str, list[str]]] = []
    for r in g.rules:
        if r.detail:  # the warm-up: what it is, then what to do
            est = "" if r.saving_us is None else f" ({fmt_us(r.saving_us)} above steady)"
            rows.append((r.ids[0] if r.ids else None, f"{'':>6}  {r.kind.kind}{est}: "
                         f"{r.detail}", [f"guide: {r.kind.guide.title}"]))
            continue
        names = ", ".join(f"ID {i} {labels.get(i, '')}".rstrip() for i in r.ids)
        more = f" and {r.ops - len(r.ids):,} more" if r.ops > len(r.ids) else ""
        est = saving_text(r)
        rows.append((r.ids[0] if r.ids else None,
                     f"{r.ops:>6,} op{'' if r.ops == 1 else 's'}  {fmt_us(r.at_stake_us)} at "
                     f"stake ({r.share_pct:.1f}%): {r.kind.kind}: {r.kind.advice}",
                     [f"{names}{more}{est}; guide: {r.kind.guide.title}"]))
    return rows


def saving_text(r: GuideRule) -> str:
    """A guide rule's estimate as its summary line says it: the time to save; nothing when the
    rule gives no estimate; when its estimate comes to nothing (under 0.01 us: its basis is
    zero on these ops), why there is no figure (never "0.00 us to save")."""
    if r.saving_us is None:
        return ""
    if r.saving_us < 0.005:
        return "; no saving estimated (its basis, " + (r.kind.estimate or "") + ", is 0 here)"
    return f"; estimate: {fmt_us(r.saving_us)} to save"


def guide_section(view: View, s: AdviceSummary) -> list[tuple[str, list[AdviceEntry]]]:
    g = s.guides
    if not g.entries:
        return []
    return [(f"Tuning guides: {g.entries:,} entr{'y' if g.entries == 1 else 'ies'} in "
             f"{len(g.rules)} rule{'' if len(g.rules) == 1 else 's'}; each with its ops "
             "and the time at stake (device time + dispatch gaps, % of the steady state); "
             "ranked by the estimated saving, rules without an estimate last",
             guide_summary_rows(view, g))]


def summary_of(view: View) -> AdviceSummary:
    """The grouped advice of this view (made once per view, ops frame and pause threshold, and
    kept with the view in the analysis cache: a second run does not run the rules again)."""
    cached = view.__dict__.get("_advice_summary")
    if cached is None or cached[0] is not view.ops or cached[1] != view.pause_above_us:
        s = summarise(view.op_rows, view.pause_above_us, guides_of(view))
        cached = (view.ops, view.pause_above_us, s)
        view.__dict__["_advice_summary"] = cached
    return cached[2]


def summary_sections(view: View, s: AdviceSummary | None = None, guides_first: bool = False
                     ) -> list[tuple[str, list[tuple[int | None, str, list[str]]]]]:
    """The aggregated advice as (section title, [(op ID or None, line, [sub-lines])]):
    tt-perf-report's rules (rule_sections), then (or, `guides_first`, before them) the tuning
    guides' (guide_section)."""
    s = s or summary_of(view)
    rules, guides = rule_sections(view, s), guide_section(view, s)
    return guides + rules if guides_first else rules + guides


def rule_sections(view: View, s: AdviceSummary
                  ) -> list[tuple[str, list[tuple[int | None, str, list[str]]]]]:
    """tt-perf-report's rules aggregated: host fallbacks per op code, the largest gaps and the
    rest counted, the tracing saving and its split, matmul rules with their ops and the device
    time at stake."""
    ops = view.op_rows
    wanted = {g.id for g in s.top_gaps} | set(rule_examples(s.rules + s.ok + s.accuracy))
    sub = ops[np.isin(ops["id"].to_numpy(), np.fromiter(wanted, dtype=np.int64,
                                                         count=len(wanted)))]
    labels = dict(zip(sub["id"].tolist(), op_labels(sub, limit=48)))
    out: list[tuple[str, list[tuple[int | None, str, list[str]]]]] = []
    if s.host_ops:
        rows: list[tuple[int | None, str, list[str]]] = [
            (h.first_id, f"{h.count:>6,}  {h.op_code}  (first: ID {h.first_id})", [])
            for h in s.host[:HOST_CODES]]
        rest = s.host[HOST_CODES:]
        if rest:
            rows.append((None, f"{sum(h.count for h in rest):>6,}  in {len(rest):,} more op "
                         "codes", []))
        out.append((f"Host fallback ops: {s.host_ops:,} ran on the host; move them to the "
                    "device", rows))
    if s.gap_ops:
        rows = [(g.id, f"ID {g.id}  {labels.get(g.id, '')}  gap {fmt_us(g.gap_us)}", [])
                for g in s.top_gaps]
        rest_n = s.gap_ops - len(s.top_gaps)
        if rest_n > 0:
            rest_us = s.gap_us - sum(g.gap_us for g in s.top_gaps)
            rows.append((None, f"and {rest_n:,} more ({fmt_us(rest_us)})", []))
        if s.saving is not None:
            rows.append((None, s.saving.message()[:1].upper() + s.saving.message()[1:], []))
        out.append((f"Op-to-op gaps over {GAP_LIMIT_US:g} us: {s.gap_ops:,} ops waited for "
                    f"the host, {fmt_us(s.gap_us)} in all; the largest", rows))
    def names(r: Rule) -> list[str]:
        more = f" and {r.count - len(r.ids):,} more" if r.count > len(r.ids) else ""
        return [", ".join(f"ID {i} {labels.get(i, '')}".rstrip() for i in r.ids) + more]

    if s.rules or s.ok:
        rows = [(r.ids[0] if r.ids else None,
                 f"{r.count:>6,} ops  {fmt_us(r.device_us)} ({r.share_pct:.1f}% of "
                 f"device time): {r.message}", names(r)) for r in s.rules + s.ok]
        out.append((f"Matmuls: {s.matmuls:,} ops; each rule with its ops and their device time "
                    "(no estimate of a saving: most device time first)", rows))
    if s.accuracy:
        out.append((f"Matmul accuracy, not speed: {sum(r.count for r in s.accuracy):,} ops at a "
                    "fidelity tt-perf-report calls too low; a higher fidelity makes them slower, "
                    "so nothing is saved",
                    [(r.ids[0] if r.ids else None,
                      f"{r.count:>6,} ops  ({fmt_us(r.device_us)} of device time): {r.message}",
                      names(r)) for r in s.accuracy]))
    return out


def listed_sections(view: View, full: bool, key: str
                    ) -> tuple[str, list[tuple[str, list[AdviceEntry]]]]:
    """What an advice list shows: a lead line (how many entries, and `key` to switch) and the
    sections, grouped (the tuning guides' rules first, as `report` prints them) or (`full`)
    every entry."""
    s = summary_of(view)
    # an entry: one piece of advice on one op (an op line of tt-perf-report's lists each of
    # its pieces as a bullet), tt-perf-report's rules and the guides' together
    n, g = s.entries + s.guides.entries, s.guides.entries
    whose = f"tt-perf-report {s.entries:,}, guides {g:,}"
    if full:
        return (f"Every entry ({n:,}{': ' + whose if g else ''}); {key} groups them",
                advice_sections(view))
    # the tuning guides' rules first (the warm-up leads them), as `report` prints them
    return (f"Grouped: {n:,} entries{f' ({whose})' if g else ''}; {key} lists each",
            summary_sections(view, s, guides_first=True))


def summary_lines(view: View) -> Iterator[str]:
    """The aggregated advice as text lines (nothing when there is none): the tuning guides'
    rules, then tt-perf-report's."""
    s = summary_of(view)
    for title, rows in guide_section(view, s):
        yield from _section_lines(title, rows, "          ")
    if s.empty:
        return
    yield ""
    yield (f"Advice (tt-perf-report's rules, grouped: {s.entries:,} entries; --advice full "
           "lists each, JSON has them all)")
    for title, rows in rule_sections(view, s):
        yield from _section_lines(title, rows, "          ")


def advice_text(view: View, mode: str) -> Iterator[str]:
    """The advice lines `report`'s table prints for --advice `mode`."""
    if mode == "full":
        return full_advice_lines(view)
    if mode == "summary":
        return summary_lines(view)
    return iter(())


def summary_keys(view: View, shown) -> dict:  # shown: report.single.Shown
    """The advice section's JSON key (present.sections): the grouped summary (the entries
    themselves are streamed after it), none with `--advice none`."""
    return {"advice_summary": summary_of(view).as_dict()} if shown.advice != "none" else {}
