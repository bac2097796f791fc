"""The trace screen's views as one list (tui.views.VIEWS) and its status line drawn once per
change (Pilot): a view added the documented way (one `TraceView`) has its key, its binding id,
its palette entry, its line in `?`, its content, its `enter` and its section on the keys page;
a live refresh computes the status line once (it was three times: the header, the feed's
handler, the cursor the new rows moved)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, wait_until
from test_tui_open import view_of
from test_tui_watch import SIZE, live_log
from textual.binding import Binding
from textual.command import CommandPalette
from textual.widgets import Static

from ttdash.sim import generate_ops
from ttdash.tui import views
from ttdash.tui.app import open_app
from ttdash.tui.palette import TTDashCommands
from ttdash.tui.watch import WatchScreen, watch_app
from ttdash.tui.widgets import HelpScreen

TRACE = "tt-perf-report__bh_p100_dlv3.csv"  # 387 ops


class CountView(Static, can_focus=True):
    """The test's view: how many rows the table shows, and one key of its own."""

    BINDINGS = [Binding("x", "mark", "Mark the count", id="ttdash.count_mark")]

    def action_mark(self) -> None:
        self.update(f"{self.content} (marked)")

    @property
    def content(self) -> str:
        return str(self.render())


@pytest.fixture
def count_view():
    """A seventh view, declared as a contributor would (docs/contributing.md, Add a view)."""
    entered: list[int] = []
    view = views.TraceView(
        "count", "7", "Count", "view: op count (rows shown)", CountView,
        show=lambda screen, widget: widget.update(f"{len(screen.table.rows):,} rows shown"),
        details=lambda screen, widget: entered.append(len(screen.table.rows)),
        keys=CountView, help="When it has the focus (after `7`).")
    views.VIEWS.append(view)
    try:
        yield view, entered
    finally:
        views.VIEWS.remove(view)


async def test_a_view_added_to_the_list_works_everywhere(count_view):
    view, entered = count_view
    app = open_app(view_of(TRACE))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        widget = screen.query_one("#count", CountView)
        assert not widget.display  # mounted in the switcher, hidden until its key
        # its key, under its binding id (what keymap.toml remaps)
        ids = {b.id: key for key, bs in screen._bindings.key_to_bindings.items() for b in bs}
        assert ids["ttdash.view_count"] == "7"
        await pilot.press("slash", *"Matmul", "enter")
        shown = len(screen.table.rows)
        assert 0 < shown < 387
        await pilot.press("7")
        assert screen.query_one("#switcher").current == "count"
        assert screen.focused is widget
        assert widget.content == f"{shown:,} rows shown"
        await pilot.press("enter")  # its details handler
        assert entered == [shown]
        await pilot.press("x")  # its own key
        assert widget.content.endswith("(marked)")
        # `?`: the view's key and its own key, with their binding ids
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = {bid: (key, desc) for key, desc, bid in app.screen.rows}
        assert rows["ttdash.view_count"] == ("7", "Count")
        assert rows["ttdash.count_mark"] == ("x", "Mark the count")
        assert rows["ttdash.advice_full"][1] == "Every entry"  # the advice list's key too
        await pilot.press("escape")
        # the palette: its entry, typed and chosen, shows it
        await pilot.press("1")
        assert screen.query_one("#switcher").current == "ops"
        assert view.palette in dict(TTDashCommands(screen)._commands())
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"op count")
        hits = app.screen.query_one("CommandList")
        await wait_until(pilot, lambda: hits.option_count > 0 and "op count" in str(
            hits.get_option_at_index(0).prompt))
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.query_one("#switcher").current == "count")
        # the view follows the table: a filter cleared while it is shown re-fills it
        await pilot.press("escape")
        assert widget.content == "387 rows shown"


def test_the_keys_page_documents_a_view_added_to_the_list(count_view):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    page = gen_docs.keys_page()
    assert "## Count (`7`)\n\nWhen it has the focus (after `7`)." in page
    assert "| `x` | Mark the count | `ttdash.count_mark` | `mark` |" in page
    assert "| `7` | Count | `ttdash.view_count` | `show('count')` |" in page
    assert "the views `1`-`7`." in page


async def test_a_live_refresh_draws_the_status_line_once(tmp_path, monkeypatch):
    """Each live refresh (the feed's update: rows appended, the header, the cursor following the
    new rows) computes the status line once; before the state was reactive it was 3 times."""
    refreshes: list[int] = []
    handler = WatchScreen.on_feed_updated

    def counted(self, message) -> None:
        refreshes.append(self.status_draws)
        handler(self, message)

    monkeypatch.setattr(WatchScreen, "on_feed_updated", counted)
    root = tmp_path / "p"
    root.mkdir()
    ops = generate_ops(200, seed=5)
    live_log(root, ops, 0, 100)
    app = watch_app(root, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 100)
        await pilot.pause()
        refreshes.clear()
        before = screen.status_draws
        live_log(root, ops, 100, 130)
        await wait_until(pilot, lambda: len(table.rows) == 130)
        await pilot.pause()
        await pilot.pause()
        assert refreshes  # the rows came through the feed's refresh
        assert screen.status_draws - before == len(refreshes)
        assert "row 130/130" in str(screen.query_one("#status").render())
        # a change of the screen's state alone (a reactive) redraws the status line, once
        before = screen.status_draws
        screen.paused = True
        screen.pending_new = 5
        await pilot.pause()
        assert screen.status_draws - before == 1
        status = str(screen.query_one("#status").render())
        assert "PAUSED (p resumes)" in status and "5 new ops" in status
