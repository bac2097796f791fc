"""The TUI's advice view (`3`) grouped as `report` prints it, `f` for every entry (#33 item 4)."""

from __future__ import annotations

import io

from conftest import real_dir
from rich.console import Console

from ttdash.model import Trace, Window
from ttdash.tui.app import open_app
from ttdash.tui.optable import OpTable
from ttdash.tui.widgets import AdviceView

SIZE = (120, 36)


def _texts(adv: AdviceView) -> list[str]:
    out = []
    for i in range(adv.option_count):
        console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
        console.print(adv.get_option_at_index(i).prompt)
        out.append(console.export_text())
    return out


async def test_advice_view_is_grouped_and_f_lists_every_entry():
    """bh20_oft: 1,400 entries of tt-perf-report's (1,311 gaps) and 272 of the guides fit one
    screen grouped, the tuning guides' rules first; `f` lists each one; enter on the largest
    gap shows that op in the table."""
    view = Trace.load(real_dir() / "tt-perf-report__bh20_oft.csv").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        adv = app.screen.query_one(AdviceView)
        assert app.screen.focused is adv
        grouped = _texts(adv)
        # the lead counts every entry listed, tt-perf-report's and the guides' (156 + 30 + 85
        # + 1: below)
        assert grouped[0].startswith("Grouped: 1,672 entries (tt-perf-report 1,400, guides "
                                     "272); f lists each")
        assert adv.option_count < 30
        assert any(t.startswith("Op-to-op gaps over 6.5 us: 1,311 ops") for t in grouped)
        assert any("and 1,306 more" in t for t in grouped)
        # the tuning guides' rules first, as report prints them: the rule with the largest
        # estimated saving (bh20_oft: fusion_eltwise, 19.8 ms; padding_tile has more time at
        # stake, 81.8 ms, but saves 4,648 us) on its heaviest op; then tt-perf-report's
        from ttdash.model.analysis.guides import summarise_guides
        from ttdash.report.advice import guides_of

        top_rule = summarise_guides(guides_of(view)).rules[0]
        assert top_rule.kind.kind == "fusion_eltwise"
        first = adv.get_option_at_index(adv.highlighted)
        assert adv.op_id(first) == top_rule.ids[0]
        guide_at = next(i for i, t in enumerate(grouped) if t.startswith("Tuning guides:"))
        gaps_at = next(i for i, t in enumerate(grouped) if t.startswith("Op-to-op gaps over"))
        assert guide_at < gaps_at
        largest = int(view.op_rows.loc[view.op_rows["op_to_op_us"].idxmax(), "id"])
        assert any(adv.op_id(adv.get_option_at_index(i)) == largest
                   for i in range(adv.option_count))
        await pilot.press("f")
        await pilot.pause()
        full = _texts(adv)
        assert full[0].startswith("Every entry (1,672: tt-perf-report 1,400, guides 272); f "
                                  "groups them")
        # gaps, matmuls, then the guides' (156 padding_tile, 30 padding_tilize, 85
        # fusion_eltwise, 1 format_fidelity: tests/test_guides.py checks each)
        assert sum(t.startswith("ID ") for t in full) == 1311 + 44 + 156 + 30 + 85 + 1
        await pilot.press("f")
        await pilot.pause()
        assert adv.option_count == len(grouped)
        adv.highlighted = next(i for i in range(adv.option_count)
                               if adv.op_id(adv.get_option_at_index(i)) == largest)
        await pilot.press("enter")
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        assert app.screen.focused is t and t.current_id() == largest
