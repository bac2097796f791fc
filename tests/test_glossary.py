"""The glossary (model.glossary): generated from the column spec, the categories file and the
legend; shown by `?` in every view (HelpScreen) and on the docs' glossary page."""

from __future__ import annotations

import inspect
import io

from conftest import real_dir
from rich.console import Console

from ttdash.model import Trace, Window
from ttdash.model import columns as C
from ttdash.model.glossary import (
    CATEGORY_MEANING,
    EXTRA_CATEGORIES,
    categories,
    glossary,
    glossary_rows,
)


def section(title: str) -> dict[str, str]:
    return dict(next(s for s in glossary() if s.title.startswith(title)).rows)


def test_every_column_is_defined_with_its_unit_basis_and_filter():
    cols = section("Columns")
    assert list(cols) == [c.short for c in C.COLUMNS]
    for c in C.COLUMNS:
        meaning = cols[c.short]
        assert c.meaning in meaning
        assert not c.unit or f"unit {c.unit}" in meaning
        assert not c.basis or c.basis in meaning
        for a in c.aliases:
            assert f"{a}:" in meaning or f"{a}<N" in meaning, (c.key, a)
    # the words the issue found undefined
    assert "wall time" in cols["Wall%"] and "GLOBAL CALL COUNT" in cols["Call"]
    assert "LoFi" in cols["Fid"] and "device id" in cols["Dev"]
    assert "INPUT_0_MEMORY" in cols["in0"] and "mem:" in cols["in0"]
    assert "device<N (with a unit)" in cols["Device"] and "dev<N, device:N" in cols["Dev"]


def test_every_category_is_explained_and_real_traces_use_no_other():
    cats = section("Categories")
    assert set(CATEGORY_MEANING) == set(categories()), "a category without a meaning"
    assert set(cats) == set(categories()) | set(EXTRA_CATEGORIES)
    assert all(cats[k] for k in cats)
    seen = set()
    for name in ("tt-perf-report__bh20_oft.csv", "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
                 "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"):
        ops = Trace.load(real_dir() / name).view(Window("all")).ops
        seen |= set(ops["category"].dropna())
    assert {"TM", "DM", "Compute", "Host"} <= seen <= set(cats)


def test_the_legend_is_folded_in_once():
    rows = glossary_rows()
    for row in C.legend():
        assert rows.count(row) == 1, row
    bounds = section("Bound classes")
    assert set(bounds) == {b.value for b in C.Bound} | {"blank bound"}
    assert C.UNMODELLED in bounds["blank bound"]


def test_terms_are_unique_within_a_section():
    for s in glossary():
        terms = [t for t, _ in s.rows]
        assert len(terms) == len(set(terms)), s.title


def test_timeline_marks_are_the_ones_it_draws():
    from ttdash.tui import timelineview

    marks = section("Timeline")
    source = inspect.getsource(timelineview)
    assert timelineview.LEVELS[1:] in marks
    for term in marks:
        symbol = term.split(" (")[0]
        if not symbol.isascii():
            assert all(ch in source for ch in symbol), term
    assert '"▼"' in source and '"≈", dim, "cut"' in source
    assert "▼ (sp row)" in marks and "≈ (cut row)" in marks and "cut / real time" in marks


def statics_text(screen) -> str:
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    for s in screen.query("Static"):
        console.print(s.content)
    return console.export_text()


async def test_question_mark_shows_the_glossary():
    from ttdash.tui.app import open_app
    from ttdash.tui.widgets import HelpScreen

    view = Trace.load(real_dir() / "tt-perf-report__bh20_oft.csv").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = statics_text(app.screen)
        for words in ("Categories (Cat)", "Cat ", "TM ", "tensor manipulation", "unmodelled",
                      "≈ (cut row)", "▼ (sp row)", "Global call count", "device>1ms",
                      "Filter (/)", "a share of the window's wall time"):
            assert words in text, words
        # the legend the caller passes is in the glossary: shown once, not twice
        assert text.count("fewer than 10 cores") == 1
        await pilot.press("escape")
        await pilot.pause()
        # a help screen built with no legend (history, trend) has the glossary too
        app.push_screen(HelpScreen("keys", [], []))
        await pilot.pause()
        assert "tensor manipulation" in statics_text(app.screen)
        app.pop_screen()
        app.push_screen(HelpScreen("keys", [], [], legend=[("zz term", "zz meaning")],
                                   glossary=False))
        await pilot.pause()
        text = statics_text(app.screen)
        assert "zz meaning" in text and "tensor manipulation" not in text
