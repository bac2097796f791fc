"""A report's sections as data: what each says in the header (facts), after the op table
(blocks) and in JSON (keys). `report`'s table, markdown and JSON iterate SECTIONS; a new section
is one `Section` entry and the functions it names.

The functions are named ("module:function"), imported when used, as the format registry's
writers are: this module imports neither pandas nor the report layer."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..memory import settle


@dataclass(frozen=True)
class Labelled:
    """One fact of the header, one line: `label: text` in the table, the label in bold and
    the text in markdown."""
    label: str
    text: str

    @property
    def line(self) -> str:
        return f"{self.label}: {self.text}"


@dataclass(frozen=True)
class Block:
    """A section after the op table: a lead sentence and its items (rows of text, aligned for
    the table; markdown makes each a bullet). `titled`: the table's lead line starts with the
    title ("Where the time goes: ..."); else the lead says it in its own words."""
    title: str
    lead: str
    items: tuple[str, ...] = ()
    titled: bool = False

    def lines(self) -> list[str]:
        """The table's lines (a blank line before, as every section after the table has)."""
        return ["", f"{self.title}: {self.lead}" if self.titled else self.lead, *self.items]


def _named(name: str) -> Callable[..., Any]:
    module, _, func = name.partition(":")
    return getattr(importlib.import_module(module), func)


@dataclass(frozen=True)
class Section:
    """`key`: its name; `title`: what it is about. Each of the others names a function
    ("module:function"), "" when the section has no such part:
    facts (view, shown) -> Iterable[Labelled]: its header lines, made lazily (the table writes the
    first ones while the rest are worked out);
    table (view) -> Iterable[Block]: what it says after the op table;
    json (view, shown) -> dict: its keys of `report --format json`."""
    key: str
    title: str
    facts: str = ""
    table: str = ""
    json: str = ""

    def facts_of(self, view: Any, shown: Any) -> Iterable[Labelled]:
        return _named(self.facts)(view, shown) if self.facts else ()

    def blocks_of(self, view: Any) -> Iterable[Block]:
        return _named(self.table)(view) if self.table else ()

    def json_of(self, view: Any, shown: Any) -> dict[str, Any]:
        return _named(self.json)(view, shown) if self.json else {}


_H = "ttdash.report.header"
#: The report's sections, in the order every format writes them: the header's facts first (in
#: this order), then the op table, then the blocks (in this order), then the advice.
SECTIONS: tuple[Section, ...] = (
    Section("summary", "The trace and its window", facts=f"{_H}:summary_facts",
            json=f"{_H}:summary_keys"),
    Section("shown", "What of the ops the table holds", facts=f"{_H}:shown_facts",
            json=f"{_H}:shown_keys"),
    Section("headline", "The performance model's headline", facts="ttdash.report.why:model_facts"),
    Section("heaviest", "The heaviest ops, with their reasons",
            facts="ttdash.report.why:heaviest_facts"),
    Section("where", "Where the time goes", table="ttdash.report.where:blocks",
            json="ttdash.report.where:keys"),
    Section("why", "Why: every op's reason, the model, balance, links, cache",
            table="ttdash.report.why:blocks", json="ttdash.report.why:keys"),
    Section("advice", "Advice", json="ttdash.report.advice:summary_keys"),
)
BY_KEY: dict[str, Section] = {s.key: s for s in SECTIONS}


def facts(view: Any, shown: Any, sections: Iterable[Section] | None = None) -> Iterable[Labelled]:
    """Every section's header facts, in order, each as it is made."""
    for s in SECTIONS if sections is None else sections:
        if s.facts:
            yield from s.facts_of(view, shown)
            _settle(view)


def blocks(view: Any, sections: Iterable[Section] | None = None) -> Iterable[Block]:
    """Every section's blocks after the op table, in order."""
    for s in SECTIONS if sections is None else sections:
        if s.table:
            yield from s.blocks_of(view)
            _settle(view)


def json_keys(view: Any, shown: Any, sections: Iterable[Section] | None = None,
              last: str | None = None, before_last: Callable[[], object] | None = None
              ) -> dict[str, Any]:
    """Every section's JSON keys, in order; the section keyed `last` worked out after the
    others, `before_last()` run first (what it makes is then not held through the others)."""
    chosen = list(SECTIONS if sections is None else sections)
    made = {s.key: _json_settled(s, view, shown) for s in chosen if s.key != last}
    if before_last is not None:
        before_last()
        _settle(view)
    made.update({s.key: _json_settled(s, view, shown) for s in chosen if s.key == last})
    return {k: v for s in chosen for k, v in made[s.key].items()}


def _settle(view: Any) -> None:
    """What a section's analysis freed given back before the next one's (memory.settle: a
    large view's; each section's working memory otherwise stayed mapped under the next's
    peak)."""
    ops = getattr(view, "ops", None)
    settle(len(ops) if ops is not None else 0)


def _json_settled(s: Section, view: Any, shown: Any) -> dict[str, Any]:
    """A section's JSON keys, what working them out freed given back (_settle) when it has
    any to work out."""
    made = s.json_of(view, shown)
    if s.json:
        _settle(view)
    return made
