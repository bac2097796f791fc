"""The op table: a Line-API widget that renders only the visible rows of a (possibly 100k+ row)
ops frame. Columns are dropped by priority to fit the width; op text is never parsed as markup.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..format import bar, fmt_pct, is_missing
from ..model.analysis.metrics import column_values
from ..model.columns import NEVER_CUT, SCREEN_FIELDS, Severity
from ..present.screen import on_screen
from ..present.table import OPS, SCREEN, Column, TableSpec, cells

#: A column of a TUI table: present.table's Column, its head as its title (on_screen).
Col = Column
#: The op table's columns: present.table.OPS's, in model.columns.SCREEN_FIELDS's order.
COLUMNS = tuple(on_screen(OPS.by_key[k]) for k in SCREEN_FIELDS)
#: The performance model's per-op figures (model.perfmodel): not default columns (at 80 columns
#: they would push the DRAM/FLOP bars off), but sortable from the sort picker (`S e`, `S r`)
#: and shown, like the counters, when picked with `a` (priority 1: after the device time).
MODEL_COLUMNS = tuple(replace(on_screen(OPS.by_key[k]), priority=1)
                      for k in ("pm_eff_pct", "recoverable_us"))
#: Per-op figures picked with `a` and sorted by without being shown: the model's and the core
#: skew (the slowest core / the average, files with per-core times; yellow from SKEW_FLAG).
PICKABLE_COLUMNS = (*MODEL_COLUMNS, replace(on_screen(OPS.by_key["core_skew"]), priority=1))
BLOCK = 128  # rows whose cells are made at once (present.table.cells), as they come on screen
SEVERITY_CLASS = {Severity.GOOD: "optable--good", Severity.WARN: "optable--warn",
                  Severity.BAD: "optable--bad"}
OP_MAX = 72
BAR_CELLS = 5


def fit(text: str, width: int, left: bool) -> str:
    """`text` in exactly `width` cells: padded, or cut with a visible "…" (never silently)."""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else "…"[:width]
    return set_cell_size(text, width) if left else text.rjust(width)


class TextColumn:
    """A categorical text column as the table reads its values: by position (a str, None where
    missing), from its codes, without an object array of every row (8 bytes a row: a million
    ops' ~16 text columns held ~128 MB of pointers the screen never walks)."""

    dtype = np.dtype(object)

    def __init__(self, s: pd.Series) -> None:
        self.codes = s.cat.codes.to_numpy()
        self.values = np.array([*s.cat.categories, None], dtype=object)  # code -1: None

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at):  # a position, a slice or positions, as an array's
        return self.values[self.codes[at]]

    def blank(self) -> bool:
        """No row has a text other than ""."""
        used = self.values[np.unique(self.codes)]
        return all(v is None or v == "" for v in used)


def column_data(s: pd.Series) -> np.ndarray | TextColumn:
    """A column's values as the table reads them (model's column_values; a categorical's
    through its codes)."""
    return TextColumn(s) if isinstance(s.dtype, pd.CategoricalDtype) else column_values(s)


def int_widths(data: dict[str, np.ndarray], keys=NEVER_CUT) -> dict[str, int]:
    """The cells the widest value of each never-cut whole-number column takes (vectorised)."""
    out = {}
    for k in keys:
        v = data.get(k)
        if v is None or not len(v) or v.dtype.kind not in "iuf":
            continue
        if v.dtype.kind == "f" and np.isnan(v).all():
            continue
        lo, hi = np.nanmin(v), np.nanmax(v)
        if np.isfinite(lo) and np.isfinite(hi):
            out[k] = max(len(str(int(lo))), len(str(int(hi))))
    return out


def candidates(columns: tuple[Col, ...], multi_device: bool,
               empty: frozenset[str] = frozenset()) -> list[Col]:
    """The columns a table can show: the device only when there are several, and none without
    data (those of priority 0 always)."""
    return [c for c in columns if (multi_device or c.key != "device")
            and (c.priority == 0 or c.key not in empty)]


def layout(width: int, multi_device: bool, columns: tuple[Col, ...] = COLUMNS,
           empty: frozenset[str] = frozenset(),
           need: dict[str, int] | None = None) -> list[tuple[Col, int]]:
    """Columns that fit `width` (1-cell gaps): drop the columns with no data, then by priority
    until the minimum widths fit, then give the spare cells to the op code (up to its
    preferred width), then to the other columns' preferred widths (bars appear), then to the
    op code again. `need`: the widths never-cut columns (ids, calls) need for their values."""
    need = need or {}
    columns = tuple(replace(c, width=max(c.width, need.get(c.key, 0)),
                            pref=max(c.pref, need.get(c.key, 0)) if c.pref else 0)
                    if c.key in need else c for c in columns)
    cols = candidates(columns, multi_device, empty)
    while len(cols) > 2:
        need = sum(c.width for c in cols) + len(cols) - 1
        if need <= width:
            break
        drop = max(cols, key=lambda c: (c.priority, cols.index(c)))
        if drop.priority == 0:
            break
        cols.remove(drop)
    widths = {c.key: c.width for c in cols}
    spare = max(0, width - (sum(widths.values()) + len(cols) - 1))

    def grow(col: Col, upto: int) -> None:
        nonlocal spare
        add = max(0, min(spare, upto - widths[col.key]))
        widths[col.key] += add
        spare -= add

    op = next(c for c in cols if c.kind == "op")
    grow(op, op.pref)
    for c in cols:
        if c.pref and c.kind != "op" and spare >= c.pref - widths[c.key]:
            grow(c, c.pref)
    grow(op, OP_MAX)
    return [(c, widths[c.key]) for c in cols]


class OpTable(ScrollView, can_focus=True):
    """Ops of a View, in the order given by `rows` (positions into the ops frame)."""

    COLUMNS: tuple[Col, ...] = COLUMNS
    #: Columns with data the table sorts by without showing them (until picked as an extra).
    SORT_ONLY: tuple[Col, ...] = PICKABLE_COLUMNS

    BINDINGS = [
        Binding("down,j", "cursor(1)", "Down", show=False, id="ttdash.down"),
        Binding("up,k", "cursor(-1)", "Up", show=False, id="ttdash.up"),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, id="ttdash.page_down"),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, id="ttdash.page_up"),
        Binding("home,g", "first", "Top", show=False, id="ttdash.top"),
        Binding("end,G", "last", "Bottom", show=False, id="ttdash.bottom"),
    ]

    COMPONENT_CLASSES = {"optable--header", "optable--cursor", "optable--good", "optable--warn",
                         "optable--bad", "optable--signpost", "optable--dim", "optable--bar",
                         "optable--sorted"}

    DEFAULT_CSS = """
    OpTable { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    OpTable > .optable--header { text-style: bold; background: $panel; }
    OpTable > .optable--sorted { text-style: bold underline; background: $panel; }
    OpTable > .optable--cursor { background: $block-cursor-blurred-background;
                                 color: $block-cursor-blurred-foreground; }
    OpTable:focus > .optable--cursor { background: $block-cursor-background;
                                       color: $block-cursor-foreground; }
    OpTable > .optable--good { color: $success; }
    OpTable > .optable--warn { color: $warning; }
    OpTable > .optable--bad { color: $error; }
    OpTable > .optable--signpost { color: $accent; text-style: bold; }
    OpTable > .optable--dim { color: $text-muted; }
    OpTable > .optable--bar { color: $primary; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class CursorMoved(Message):
        def __init__(self, table: OpTable, position: int) -> None:
            super().__init__()
            self.table = table
            self.position = position

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ops: pd.DataFrame = pd.DataFrame()
        self.rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self.multi_device = False
        self.sort_key: str | None = None
        self.sort_desc = True
        self._cache: dict[tuple, Strip] = {}
        self._generation = 0
        self._columns: list[tuple[Col, int]] = []
        self._cols_width = -1
        self._paint: tuple[int, Style] | None = None  # (width, base style) during a paint
        self._data: dict[str, np.ndarray | TextColumn] = {}
        self._empty: frozenset[str] = frozenset()
        self._hidden: frozenset[str] = frozenset()
        self._extra: tuple[Col, ...] = ()
        self._need: dict[str, int] = {}
        self._signposts: tuple[tuple[int, int, int], int] = ((-1, -1, -1), 0)
        #: the table's columns (present.table): OPS; the diff table's DIFF_PAIRS
        self.spec: TableSpec = OPS
        self._blocks: dict[int, tuple[dict[str, list[str]], dict[str, np.ndarray]]] = {}

    @property
    def all_columns(self) -> tuple[Col, ...]:
        """The table's columns with the chosen optional ones after the device time, then the
        sort-only ones not chosen (never laid out: `_sort_only`)."""
        keys = [c.key for c in self.COLUMNS]
        at = keys.index("device_time_us") + 1 if "device_time_us" in keys else len(keys)
        cols = (*self.COLUMNS[:at], *self._extra, *self.COLUMNS[at:])
        return (*cols, *(c for c in self.SORT_ONLY if c.key in self._sort_only))

    @property
    def _sort_only(self) -> frozenset[str]:
        shown = {c.key for c in (*self.COLUMNS, *self._extra)}
        return frozenset(c.key for c in self.SORT_ONLY if c.key not in shown)

    @property
    def extra_columns(self) -> tuple[Col, ...]:
        """Optional columns the user added (counters, per-RISC times: tui.columns)."""
        return self._extra

    @extra_columns.setter
    def extra_columns(self, cols: tuple[Col, ...]) -> None:
        if tuple(cols) != self._extra:
            self._extra = tuple(cols)
            self._columns = []
            self._note_empty_columns()
            self._cache.clear()
            self.refresh()

    @property
    def hidden_columns(self) -> frozenset[str]:
        """Columns the screen hides (e.g. the report ID in live mode, where rows have none)."""
        return self._hidden

    @hidden_columns.setter
    def hidden_columns(self, keys: frozenset[str]) -> None:
        if keys != self._hidden:
            self._hidden = frozenset(keys)
            self._columns = []
            self._cache.clear()
            self.refresh()

    # ------------------------------------------------------------ data
    def set_data(self, ops: pd.DataFrame, rows: np.ndarray, *, multi_device: bool = False,
                 keep_cursor_id: bool = True) -> None:
        """New rows (positions into `ops`); keeps the cursor on the same op id when possible."""
        current = self.current_id() if keep_cursor_id else None
        old_len = len(self.rows)
        if ops is not self.ops:
            # Column arrays once per frame: rendering a line is then index lookups only, and a
            # re-sort or re-filter of the same frame costs nothing here.
            self._data = {c: column_data(ops[c]) for c in ops.columns}
            self._note_empty_columns()
            self._note_widths()
        self.ops = ops
        self.rows = rows
        self.multi_device = multi_device
        self._generation += 1
        self._cache.clear()
        self._blocks = {}
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        if current is not None:
            hit = np.flatnonzero(self._data["id"][rows] == current) if len(rows) else []
            self.cursor = int(hit[0]) if len(hit) else min(self.cursor, max(len(rows) - 1, 0))
        else:
            self.cursor = min(self.cursor, max(len(rows) - 1, 0))
        if len(rows) != old_len:
            self._refresh_scrollbars()
        self.refresh()

    def append_rows(self, ops: pd.DataFrame, rows: np.ndarray, follow: bool) -> None:
        """Live growth: only the newly visible lines are repainted (or the tail when following)."""
        old = len(self.rows)
        self.ops, self.rows = ops, rows
        # a block that was short of rows is made again with the new ones
        self._blocks = {b: v for b, v in self._blocks.items() if (b + 1) * BLOCK <= old}
        self._data = {c: column_data(ops[c]) for c in ops.columns}
        self._note_empty_columns(since=old)
        self._note_widths(since=old)
        # The table's size on screen stays: its scroll range and scrollbar are updated without
        # a layout of the screen (virtual_size's own setter asks for one, and a layout repaints
        # every widget: most of a live refresh's paint). A scrollbar that appears still does.
        size = Size(self.size.width, len(rows) + 1)
        self.set_reactive(OpTable.virtual_size, size)
        self._scroll_update(size)
        if follow and len(rows):
            self.cursor = len(rows) - 1
            return
        top = int(self.scroll_offset.y)
        first_line = old - top + 1  # screen line of the first new row
        if 0 < first_line < self.size.height:
            self.refresh_lines(first_line, self.size.height - first_line)

    def _note_widths(self, since: int = 0) -> None:
        """Never-cut columns widen to their widest value (a 1,000,011-op trace's ID).
        `since`: rows before it were measured already (live growth: only the new rows)."""
        if since:
            need = dict(self._need)
            for k, w in int_widths({k: v[since:] for k, v in self._data.items()}).items():
                need[k] = max(need.get(k, 0), w)
        else:
            need = int_widths(self._data)
        if need != self._need:
            self._need = need
            self._columns = []  # re-layout
            self._cache.clear()

    def _note_empty_columns(self, since: int = 0) -> None:
        """Columns with no value at all (e.g. DRAM % in a live log without shapes) are hidden.
        `since`: rows before it were checked already (live growth: a column with a value keeps
        it, so only the empty ones are looked at again, in the new rows only; the cost of an
        update does not grow with the table)."""
        empty = set()
        for c in self.all_columns:
            v = self._data.get(c.key)
            if v is None:  # not in these ops at all (a one-host trace has no rank)
                empty.add(c.key)
                continue
            if not len(v):
                continue
            if since:
                if c.key not in self._empty:
                    continue  # had a value before: still has
                v = v[since:]
                if not len(v):
                    empty.add(c.key)
                    continue
            if isinstance(v, TextColumn):
                if v.blank():
                    empty.add(c.key)
            elif v.dtype == object:
                if (pd.isna(v) | (v == "")).all():
                    empty.add(c.key)
            elif v.dtype.kind == "f" and np.isnan(v).all():
                empty.add(c.key)
        if frozenset(empty) != self._empty:
            self._empty = frozenset(empty)
            self._columns = []  # re-layout

    def signpost_rows(self) -> int:
        """How many of the table's rows are signpost rows (not ops: the header counts ops);
        counted once per set of rows."""
        key = (self._generation, len(self.rows), id(self.rows))
        if self._signposts[0] != key:
            sp = self._data.get("is_signpost")
            n = int(sp[self.rows].astype(bool).sum()) if sp is not None and len(self.rows) else 0
            self._signposts = (key, n)
        return self._signposts[1]

    def current_pos(self) -> int | None:
        """The cursor's row in the frame (None: no row under the cursor)."""
        if not len(self.rows) or not 0 <= self.cursor < len(self.rows):
            return None
        return int(self.rows[self.cursor])

    def current_id(self) -> int | None:
        pos = self.current_pos()
        return None if pos is None else int(self._data["id"][pos])

    def current_row(self) -> dict | None:
        pos = self.current_pos()
        return None if pos is None else {c: v[pos] for c, v in self._data.items()}

    # ------------------------------------------------------------ cursor and scrolling
    @property
    def body_height(self) -> int:
        return max(1, self.size.height - 1)

    def watch_cursor(self, old: int, new: int) -> None:
        n = len(self.rows)
        if n and not 0 <= new < n:
            self.cursor = max(0, min(new, n - 1))
            return
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + self.body_height:
            self.scroll_to(y=new - self.body_height + 1, animate=False)
        for pos in (old, new):
            line = pos - int(self.scroll_offset.y) + 1
            if 0 < line < self.size.height:
                self.refresh_lines(line, 1)
        self.post_message(self.CursorMoved(self, new))

    def action_cursor(self, delta: int) -> None:
        if len(self.rows):
            self.cursor = max(0, min(self.cursor + delta, len(self.rows) - 1))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * self.body_height)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        if len(self.rows):
            self.cursor = len(self.rows) - 1

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.cursor = int(self.scroll_offset.y) + event.y - 1

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.rows) + 1)
        self._cache.clear()

    # ------------------------------------------------------------ rendering
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def visible_columns(self) -> list[Col]:
        return [c for c, _ in self._layout()]

    def data_columns(self) -> list[Col]:
        """Every column this table could show (with data), on screen or dropped at this
        width."""
        return candidates(self.all_columns, self.multi_device, self._empty | self._hidden)

    def _layout(self) -> list[tuple[Col, int]]:
        width = self._width_and_style()[0]
        if width != self._cols_width or not self._columns:
            columns = layout(width, self.multi_device, self.all_columns,
                             self._empty | self._hidden | self._sort_only, self._need)
            if [c.key for c, _ in columns] != [c.key for c, _ in self._columns]:
                self._blocks = {}  # other columns: their cells are made again
            self._columns = columns
            self._cols_width = width
        return self._columns

    def render_lines(self, crop):
        # The width and the base style once a paint, not once a line: Textual works each out
        # through the styles of every ancestor (a third of a live refresh's table paint).
        self._paint = (self.scrollable_content_region.width, self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def _width_and_style(self) -> tuple[int, Style]:
        return self._paint or (self.scrollable_content_region.width, self.rich_style)

    def render_line(self, y: int) -> Strip:
        width, base = self._width_and_style()
        cols = self._layout()
        if y == 0:
            return self._header(cols, width)
        pos = int(self.scroll_offset.y) + y - 1
        if pos >= len(self.rows):
            return Strip.blank(width, base)
        key = (pos, pos == self.cursor, width, self._generation, self.has_focus)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._row(pos, cols, width)
            if len(self._cache) > 2000:
                self._cache.clear()
            self._cache[key] = strip
        return strip

    def _header(self, cols: list[tuple[Col, int]], width: int) -> Strip:
        base, sorted_style = self._style("optable--header"), self._style("optable--sorted")
        segs = []
        for i, (c, w) in enumerate(cols):
            title = c.title
            if c.key == self.sort_key:
                title += "↓" if self.sort_desc else "↑"
            segs.append(Segment(fit(title, w, c.left),
                                sorted_style if c.key == self.sort_key else base))
            if i < len(cols) - 1:
                segs.append(Segment(" ", base))
        used = sum(w for _, w in cols) + len(cols) - 1
        if used < width:
            segs.append(Segment(" " * (width - used), base))
        return Strip(segs, width)

    def _row(self, pos: int, cols: list[tuple[Col, int]], width: int) -> Strip:
        r = int(self.rows[pos])
        d = self._data
        base = self._width_and_style()[1]
        # the cursor row's style wins over cell colours (a bar's colour on the cursor's
        # background was unreadable): cell styles go under it
        cursor = self._style("optable--cursor") if pos == self.cursor else None
        if cursor is not None:
            base = base + cursor
        if "is_signpost" in d and d["is_signpost"][r]:
            label = f"── ◆ {d['signpost'][r] or d['op_code'][r]} "
            text = set_cell_size(label + "─" * max(0, width - cell_len(label)), width)
            sp = base + self._style("optable--signpost")
            return Strip([Segment(text, sp + cursor if cursor else sp)], width)
        # cells of one style (the plain ones and the gaps between) are one segment: the
        # compositor's work on a line grows with its segments
        texts: list[str] = []
        styles: list[Style] = []

        def put(text: str, style: Style) -> None:
            if styles and styles[-1] == style:
                texts[-1] += text
            else:
                texts.append(text)
                styles.append(style)

        for i, (c, w) in enumerate(cols):
            text, style = self._cell(c, w, pos)
            if style:
                style = base + style + cursor if cursor else base + style
            put(fit(text, w, c.left), style or base)
            if i < len(cols) - 1:
                put(" ", base)
        used = sum(w for _, w in cols) + len(cols) - 1
        if used < width:
            put(" " * (width - used), base)
        return Strip([Segment(t, st) for t, st in zip(texts, styles)], width)

    def _block(self, pos: int) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
        """The cells of the BLOCK rows around display row `pos`: present.table.cells of the laid
        out columns, a column at a time (only blocks that come on screen are made)."""
        b = pos // BLOCK
        got = self._blocks.get(b)
        if got is None:
            spec = TableSpec(self.spec.name, tuple(c for c, _ in self._layout()))
            part = self.ops.take(self.rows[b * BLOCK:(b + 1) * BLOCK])
            got = self._blocks[b] = cells(part, spec, where=SCREEN)
        return got

    def _cell(self, c: Col, w: int, pos: int) -> tuple[str, Style | None]:
        """A cell of display row `pos`: its text and colour from present.table.cells (the
        column's kind, digits and colour rule); a bar drawn from its value."""
        kind = c.screen_kind or c.kind
        if kind == "bar":
            v = self._data[c.key][int(self.rows[pos])] if c.key in self._data else None
            if is_missing(v):
                return "", None
            if w < BAR_CELLS + 5:  # narrow: the number alone
                return fmt_pct(v, 0), self._style("optable--bar")
            return f"{bar(v, BAR_CELLS)}{fmt_pct(v, 0).rjust(w - BAR_CELLS)}", \
                self._style("optable--bar")
        texts, sev = self._block(pos)
        i = pos % BLOCK
        col = texts.get(c.key)
        text = col[i] if col is not None else ""
        s = sev[c.key][i] if c.key in sev else None
        if s is not None:
            return text, self._style(SEVERITY_CLASS[s])
        return text, self._style("optable--dim") if c.key == "signpost" else None
