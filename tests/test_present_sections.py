"""A report's sections as data (ttdash.present.sections): the table, markdown and JSON outputs
of `report` iterate SECTIONS, so a new section is one entry and its functions (done here once,
as docs/contributing.md's "Add a report section" says), and markdown states each fact from its
label and text (it no longer splits the text report's lines at ": ")."""

from __future__ import annotations

import io
import json

import pytest
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.present import sections
from ttdash.present.sections import Block, Labelled, Section

TRACE = "tt-perf-report__bh20_oft_integral_image_trace.csv"


def said(view, shown):
    return [Labelled("Odd: label", f"{len(view.op_rows)} ops: counted")]


def told(view):
    return [Block("Test section", "its lead", ("  first item", "second item"))]


def keyed(view, shown):
    return {"test_section": {"ops": len(view.op_rows)}}


@pytest.fixture(scope="module")
def view():
    return Trace.load(real_dir() / TRACE).view(Window("all"))


def render(view, fmt: str) -> str:
    from ttdash.report.single import render_to_string

    return render_to_string(view, fmt)


def test_a_new_section_is_one_entry(monkeypatch, view):
    extra = Section("test", "A test section", facts="test_present_sections:said",
                    table="test_present_sections:told", json="test_present_sections:keyed")
    at = [s.key for s in sections.SECTIONS].index("where")
    monkeypatch.setattr(sections, "SECTIONS", (*sections.SECTIONS[:at], extra,
                                               *sections.SECTIONS[at:]))
    n = len(view.op_rows)
    table = render(view, "table")
    head, _, rest = table.partition("\nID ")
    assert f"Odd: label: {n} ops: counted" in head.splitlines()
    assert "\n\nits lead\n  first item\nsecond item\n" in rest
    assert rest.index("its lead") < rest.index("Where the time goes")  # in SECTIONS' order
    md = render(view, "markdown")
    assert f"- **Odd: label**: {n} ops: counted\n" in md
    assert "\n### Test section\n\nits lead\n\n- first item\n- second item\n" in md
    doc = json.loads(render(view, "json"))
    assert doc["test_section"] == {"ops": n}
    keys = list(doc)
    assert keys.index("test_section") < keys.index("where_the_time_goes")
    monkeypatch.undo()  # without the entry, none of it is there
    assert "Odd: label" not in render(view, "table") and "test_section" not in render(view,
                                                                                     "json")


def test_every_format_states_the_same_facts(view):
    """The table's header lines are the facts; markdown has each, label and text apart."""
    from ttdash.report.single import ALL

    facts = list(sections.facts(view, ALL))
    assert [f.label for f in facts][:4] == ["File", "Arch", "Window", "Time"]
    table, md = render(view, "table"), render(view, "markdown")
    for f in facts:
        assert f.line in table
        assert f"- **{f.label}**: " in md
    blocks = list(sections.blocks(view))
    assert blocks and blocks[0].title == "Where the time goes"
    for b in blocks:
        assert f"\n### {b.title}\n" in md


def test_sections_name_functions_that_exist():
    for s in sections.SECTIONS:
        for name in (s.facts, s.table, s.json):
            if name:
                assert callable(sections._named(name)), name
    assert len({s.key for s in sections.SECTIONS}) == len(sections.SECTIONS)


def test_block_lines():
    b = Block("Where", "lead", ("  a",), titled=True)
    assert b.lines() == ["", "Where: lead", "  a"]
    assert Block("T", "lead").lines() == ["", "lead"]
    assert Labelled("A", "b: c").line == "A: b: c"
    out = io.StringIO()
    from ttdash.report.header import write_md_facts

    write_md_facts(out, [Labelled("A|B", "c")])
    assert out.getvalue() == "- **A\\|B**: c\n"
