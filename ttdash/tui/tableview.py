"""The table view shared by the trace screen and the diff screen: one OpTable, one TableState
(filter, signpost region, sort) and the actions on them, with the same keys and behaviour in both.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from textual.binding import Binding

from ..model.query import Filter, FilterError, TableState, signpost_positions
from .optable import OpTable
from .sortmenu import SortChoice, SortEntry, SortMenu, sort_entries, sort_key_of
from .widgets import PromptScreen

#: The keys of every table view (ids are what keymap.toml remaps).
TABLE_BINDINGS = [
    Binding("slash", "filter", "Filter", id="ttdash.filter"),
    Binding("S", "sort_menu", "Sort", id="ttdash.sort_menu"),
    Binding("less_than_sign", "sort(-1)", "Sort by the previous column", show=False,
            id="ttdash.sort_prev"),
    Binding("greater_than_sign", "sort(1)", "Sort by the next column", show=False,
            id="ttdash.sort_next"),
    Binding("r", "reverse", "Reverse", show=False, id="ttdash.reverse"),
    Binding("o", "original_order", "Orig order", show=False, id="ttdash.original_order"),
    Binding("left_square_bracket", "signpost(-1)", "◆prev", show=False,
            id="ttdash.signpost_prev"),
    Binding("right_square_bracket", "signpost(1)", "◆next", show=False,
            id="ttdash.signpost_next"),
    Binding("escape", "widen", "Clear", show=False, id="ttdash.widen"),
]


class TableViewMixin:
    """For a Screen with one OpTable (``table_type``) showing ``self.state.frame``.

    The screen sets ``filter_keys`` / ``filter_hint`` / ``default_reverse_key`` /
    ``default_sort`` and implements ``table_changed()`` (header and status line)."""

    table_type: type[OpTable] = OpTable
    filter_keys: dict[str, str] = {}
    filter_hint: str = ""
    default_reverse_key: str = "id"
    #: the sort a new table starts with (None: the frame's own order, "file order"); numbers
    #: largest first
    default_sort: str | None = None
    state: TableState

    # ------------------------------------------------------------ state shortcuts
    @property
    def table(self) -> OpTable:
        return self.query_one(self.table_type)  # type: ignore[attr-defined]

    @property
    def rows(self) -> np.ndarray:
        return self.table.rows

    @property
    def sort_key(self) -> str | None:
        return self.state.sort_key

    @property
    def sort_desc(self) -> bool:
        return self.state.sort_desc

    @property
    def narrowed(self) -> int:
        return self.state.narrowed

    @property
    def op_filter(self) -> Filter:
        return self.state.filter

    @op_filter.setter
    def op_filter(self, value: Filter) -> None:
        self.state.filter = Filter.for_keys(value.text, self.filter_keys)

    def new_state(self, frame: pd.DataFrame) -> TableState:
        state = TableState(frame, Filter.for_keys("", self.filter_keys))
        state.sort_by(self.default_sort)
        return state

    # ------------------------------------------------------------ redraw
    def refresh_table(self, *, top: bool = False, multi_device: bool = False) -> None:
        """Recompute the rows; `top`: the cursor to the first row (after a sort or filter the
        view starts at the top, not wherever the old cursor's op landed)."""
        table = self.table
        self._add_counter_columns()
        try:
            rows = self.state.rows()
        except FilterError as exc:  # cannot happen for a filter checked on entry; be safe
            self.notify(str(exc), severity="error", markup=False)  # type: ignore[attr-defined]
            self.state.filter = Filter.for_keys("", self.filter_keys)
            rows = self.state.rows()
        table.sort_key, table.sort_desc = self.state.sort_key, self.state.sort_desc
        table.set_data(self.state.frame, rows, multi_device=multi_device,
                       keep_cursor_id=not top)
        if top:
            table.cursor = 0
            table.scroll_to(y=0, animate=False)
        self.table_changed()

    def _add_counter_columns(self) -> None:
        """The counters and slowest RISC, into the table's frame when a picked column, the sort
        or the filter (`risc:`) needs them (a view carries none until asked:
        model.counters.with_counters)."""
        frame, view = self.state.frame, getattr(self, "view", None)
        if view is None or not view.counter_names:
            return
        try:
            fields = {t.field for t in self.state.filter.terms()}
        except FilterError:
            fields = set()
        needed = fields | {c.key for c in self.table.extra_columns} | {self.state.sort_key}
        if needed & ({"slowest_risc", *view.counter_names} - set(frame.columns)):
            self.state.frame = view.with_counters(frame)

    def table_changed(self) -> None:  # pragma: no cover - every screen overrides it
        pass

    def recompute(self) -> None:
        self.refresh_table()

    # ------------------------------------------------------------ actions
    def action_columns(self) -> None:
        """Add or remove the optional columns (slowest RISC, per-RISC times, counters, the
        model's efficiency and recoverable time)."""
        from .columns import optional_columns, pick_columns

        view = getattr(self, "view", None)
        pick_columns(self, optional_columns(view.counter_names if view is not None else [],
                                            view.ops if view is not None else None))

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is None:
                return
            f = Filter.for_keys(value.strip(), self.filter_keys)
            try:
                f.terms()
            except FilterError as exc:
                self.notify(str(exc), title="Filter not applied", severity="error",  # type: ignore[attr-defined]
                            timeout=8, markup=False)
                return
            self.state.filter = f
            self.filter_applied(f)
            self.refresh_table(top=True)

        self.app.push_screen(PromptScreen("Filter ops:", self.state.filter.text,  # type: ignore[attr-defined]
                                          self.filter_hint), done)

    def filter_applied(self, f: Filter) -> None:
        """Hook: a screen may explain a filter (e.g. dev: on a merged view)."""

    def action_sort(self, step: int) -> None:
        """Sort by the next/previous column on screen."""
        keys = list(dict.fromkeys(sort_key_of(c.key) for c in self.table.visible_columns()))
        self.state.sort_step(keys, step)
        self.refresh_table(top=True)

    def sort_entries(self) -> list[SortEntry]:
        """What the sort picker lists: file order, the columns on screen, then the table's
        other columns with data (dropped at this width)."""
        table = self.table
        shown = table.visible_columns()
        keys = {c.key for c in shown}
        return sort_entries(shown, [c for c in table.data_columns() if c.key not in keys])

    def palette_commands(self) -> list[tuple[str, Callable[[], Any]]]:
        """The sorts, for the palette (tui.palette): the picker's entries, names and letters."""
        cmds: list[tuple[str, Callable[[], Any]]] = [
            ("sort: pick a column…", self.action_sort_menu),
            ("sort: reverse", self.action_reverse)]
        for e in self.sort_entries():
            keys = f" (S {e.hotkey})" if e.hotkey else ""
            cmds.append((f"sort: by {e.name}{keys}", partial(self.sort_by, e.key)))
        return cmds

    def action_sort_menu(self) -> None:
        """The sort picker: a letter per column (tui.sortmenu)."""
        def done(choice: SortChoice | None) -> None:
            if choice is not None:
                self.sort_by(choice.key, choice.descending)

        self.app.push_screen(SortMenu(self.sort_entries(), self.state.sort_key,  # type: ignore[attr-defined]
                                      self.state.sort_desc), done)

    def sort_by(self, key: str | None, descending: bool | None = None) -> None:
        self.state.sort_by(key, descending)
        self.refresh_table(top=True)

    def action_reverse(self) -> None:
        self.state.reverse(self.default_reverse_key)
        self.refresh_table(top=True)

    def action_original_order(self) -> None:
        self.sort_by(None)

    def action_widen(self) -> None:
        if self.state.clear():
            self.refresh_table()

    def action_signpost(self, direction: int) -> None:
        table = self.table
        if self.state.sort_key is not None:
            # signposts mark places in the file: jump in file order (from the op under the
            # cursor), not between scattered rows of a sorted table
            self.state.sort_by(None)
            self.refresh_table()
            self.notify("Signposts follow the file: now in file order (S to sort again)",  # type: ignore[attr-defined]
                        markup=False)
        starts = signpost_positions(self.state.frame, table.rows)
        if not len(starts):
            self.notify("No signposts in this view", severity="warning")  # type: ignore[attr-defined]
            return
        cur = table.cursor
        later, earlier = starts[starts > cur], starts[starts < cur]
        if direction > 0:
            target = later[0] if len(later) else starts[0]
        else:
            target = earlier[-1] if len(earlier) else starts[-1]
        table.cursor = int(target)
        table.scroll_to(y=max(0, int(target)), animate=False)

    def sort_text(self) -> str:
        """The order: "sort: Device ↓" (the column's title in the table's header, where the
        arrow is too; short, so that the filter after it still shows at 80 columns), or
        "sort: file order"."""
        key = self.state.sort_key
        if key is None:
            return "sort: file order"
        col = next((c for c in self.table.all_columns if sort_key_of(c.key) == key), None)
        title = (col.head if col is not None else "") or key
        return f"sort: {title} {'↓' if self.state.sort_desc else '↑'}"

    def status_parts(self, order: bool = False) -> list[str]:
        """"row i/n" (and how many of the n are signposts: the header counts ops), the filter
        and (`order`: for a screen whose header does not say it) the order second: the common
        part of every status line."""
        table = self.table
        parts = [f"row {table.cursor + 1 if len(table.rows) else 0:,}/{len(table.rows):,}"]
        sp = table.signpost_rows()
        if sp:  # the rows are ops and signposts; the header counts the ops
            parts[0] += f" ({sp:,} signpost{'' if sp == 1 else 's'})"
        if order:
            parts.append(self.sort_text())
        if self.state.filter.text:
            parts.append(f"filter: {self.state.filter.text}")
        return parts
