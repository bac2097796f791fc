"""The why-slow view (`6`): every device op's reason per op code (model.whyslow.why_contract:
the report's "Every op explained"), heaviest first, under its lead sentence and the performance
model's headline; the footer says what to try for the op code under the cursor; enter lists
its ops, heaviest first, each with its reason (enter on one: its details; esc: back).

Every number is model.whyslow's and every sentence report.why's or model.reasons'; this file
lays them out and renders only the visible lines. An op code whose time has no reason ("no
data") is drawn in the warning colour: not known to be fine."""

from __future__ import annotations

import numpy as np
import pandas as pd
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from ..format import fmt_int, fmt_saving, fmt_share, fmt_us, is_missing, plural
from ..model.analysis import reasons, whyslow
from ..model.read.text import clean_text
from ..present.table import SCREEN, WHY_GROUPS, WHY_OPS, Column, TableSpec, cells
from ..present.values import NO_MODEL  # noqa: F401  (the tests' name)
from ..report import why
from .optable import fit
from .widgets import OpPicked

#: From this width the footer lists every line of what to try (narrower: the first).
WIDE = 160
#: The op codes' table (the report section's columns) and one op code's ops: present.table's
#: WHY_GROUPS and WHY_OPS.
GROUP_COLS, OP_COLS = WHY_GROUPS.columns, WHY_OPS.columns
BLOCK = 128  # rows formatted at once
WhyCol = Column
_BY_KEY = {**WHY_OPS.by_key, **WHY_GROUPS.by_key}


def cell(key: str, v: object) -> str:
    """One cell's text: times as the report writes them, a missing efficiency as no model."""
    col = _BY_KEY.get(key)
    if col is None or col.texts is not None:
        return "" if is_missing(v) else str(clean_text(str(v)))
    return col.format_one(v)


def inert(text: str) -> Text:
    """Sentences naming op codes (the file's text), one a line: never markup, no control
    character."""
    return Text("\n".join(str(clean_text(line)) for line in text.split("\n")))


class WhyList(ScrollView, can_focus=True):
    """The rows of the why view's current level (op codes, or one op code's ops), rendered a
    visible line at a time (an op code of a million-row trace has 100,000s of ops)."""

    BINDINGS = [
        Binding("down,j", "cursor(1)", "Down", show=False, id="ttdash.why_down"),
        Binding("up,k", "cursor(-1)", "Up", show=False, id="ttdash.why_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="ttdash.why_page_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="ttdash.why_page_up"),
        Binding("home,g", "edge(0)", "Top", show=False, id="ttdash.why_top"),
        Binding("end,G", "edge(-1)", "Bottom", show=False, id="ttdash.why_bottom"),
        Binding("enter", "open", "Drill in", id="ttdash.why_open"),
        Binding("escape", "back", "Why: back to the op codes", show=False,
                id="ttdash.why_back"),
    ]
    COMPONENT_CLASSES = {"whylist--header", "whylist--cursor", "whylist--unmodelled"}
    #: (the unmodelled class styles the rows whose reason is "no data")
    DEFAULT_CSS = """
    WhyList { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    WhyList > .whylist--header { text-style: bold; background: $panel; }
    WhyList > .whylist--cursor { background: $block-cursor-blurred-background;
                                 color: $block-cursor-blurred-foreground; }
    WhyList:focus > .whylist--cursor { background: $block-cursor-background;
                                       color: $block-cursor-foreground; }
    WhyList > .whylist--unmodelled { color: $warning; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class Open(Message):
        """Enter on a row: `row` is its index in the list's frame."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    class Back(Message):
        pass

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.frame = pd.DataFrame()
        self.cols: tuple[WhyCol, ...] = GROUP_COLS
        self._data: dict[str, np.ndarray] = {}
        self._blocks: dict[int, dict[str, list[str]]] = {}
        self._unmodelled = np.zeros(0, dtype=bool)

    def set_rows(self, frame: pd.DataFrame, cols: tuple[WhyCol, ...], cursor: int = 0) -> None:
        self.frame, self.cols = frame, cols
        self._data = {c: frame[c].to_numpy() for c in frame.columns}
        self._blocks = {}  # cell texts, BLOCK rows at a time as they come on screen
        if "why_class" in frame:
            self._unmodelled = frame["why_class"].to_numpy() == reasons.NO_DATA
        elif "class" in frame:
            self._unmodelled = frame["class"].to_numpy(dtype=object) == "no data"
        else:
            self._unmodelled = np.zeros(len(frame), dtype=bool)
        self.virtual_size = Size(self.size.width, len(frame) + 1)
        self.cursor = max(0, min(cursor, len(frame) - 1))
        self.scroll_to(y=max(0, self.cursor - self.body_height + 1), animate=False)
        self.refresh()

    @property
    def body_height(self) -> int:
        return max(1, self.size.height - 1)

    def watch_cursor(self, old: int, new: int) -> None:
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + self.body_height:
            self.scroll_to(y=new - self.body_height + 1, animate=False)
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        if len(self.frame):
            self.cursor = max(0, min(self.cursor + delta, len(self.frame) - 1))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * self.body_height)

    def action_edge(self, end: int) -> None:
        self.cursor = max(0, len(self.frame) - 1) if end else 0

    def action_open(self) -> None:
        if len(self.frame):
            self.post_message(self.Open(self.cursor))

    def action_back(self) -> None:
        self.post_message(self.Back())

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1 and int(self.scroll_offset.y) + event.y - 1 < len(self.frame):
            self.cursor = int(self.scroll_offset.y) + event.y - 1

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.frame) + 1)

    def _widths(self, width: int) -> list[int]:
        """The last (text) column takes what the others leave."""
        fixed = [max(c.width, self._need(c)) for c in self.cols[:-1]]
        rest = width - sum(fixed) - (len(self.cols) - 1)
        return [*fixed, max(rest, 4)]

    def _need(self, c: WhyCol) -> int:
        """Ids are never cut: the column widens to the widest (a million-op trace's)."""
        v = self._data.get(c.key)
        if c.key != "id" or v is None or not len(v):
            return 0
        return len(fmt_int(int(np.nanmax(v))))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        widths = self._widths(width)
        if y == 0:
            style = self.get_component_rich_style("whylist--header", partial=True)
            return self._strip([c.title for c in self.cols], widths, width, style)
        r = int(self.scroll_offset.y) + y - 1
        if r >= len(self.frame):
            return Strip.blank(width, self.rich_style)
        style: Style = self.rich_style
        if self._unmodelled[r]:
            style = style + self.get_component_rich_style("whylist--unmodelled", partial=True)
        if r == self.cursor:
            style = style + self.get_component_rich_style("whylist--cursor", partial=True)
        return self._strip([self._text(c.key, r) for c in self.cols], widths, width, style)

    def _text(self, key: str, r: int) -> str:
        """A cell's text: present.table.cells of the rows' block (a column at a time; an op
        code's 25,000 ops are not all formatted to show a screenful); a column the frame lacks
        is blank."""
        b = r // BLOCK
        block = self._blocks.get(b)
        if block is None:
            part = self.frame.iloc[b * BLOCK:(b + 1) * BLOCK]
            block = self._blocks[b] = cells(part, TableSpec("why", self.cols), where=SCREEN,
                                            severity=False)[0]
        texts = block.get(key)
        return texts[r - b * BLOCK] if texts is not None else ""

    def _strip(self, texts: list[str], widths: list[int], width: int, style: Style) -> Strip:
        cells = [fit(t, w, c.left) for t, w, c in zip(texts, widths, self.cols)]
        line = " ".join(cells)
        line = fit(line, width, True) if cell_len(line) > width else line.ljust(width)
        return Strip([Segment(line, style)], width)


class WhyView(Vertical):
    """The headline, the ranking (or one op code's ops) and the footer of one view."""

    DEFAULT_CSS = """
    WhyView { height: 1fr; }
    WhyView #why-head { height: auto; padding: 0 1; }
    WhyView #why-foot { height: auto; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.view = None
        self.group: str | None = None  # the op code drilled into (None: the op codes)
        self.drilled = False
        self._ranking_cursor = 0
        self._key: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="why-head")
        yield WhyList(id="why-list")
        yield Static(id="why-foot")

    def on_mount(self) -> None:
        self.watch(self.list, "cursor", lambda _: self.picked(), init=False)

    def on_resize(self, event: events.Resize) -> None:
        if self.view is not None and not self.drilled:
            self.show_footer()

    @property
    def list(self) -> WhyList:
        return self.query_one(WhyList)

    def show(self, view) -> None:
        """The view's ranking, or the op code drilled into (a live refresh keeps the level and
        the cursor's row; a new trace or window starts at the top of the op codes)."""
        key = (id(view), id(view.ops))
        if key == self._key:
            return
        same_trace = self.view is not None and \
            getattr(view.trace, "path", None) == getattr(self.view.trace, "path", None)
        self._key, self.view = key, view
        if same_trace and self.drilled:
            self.drill_group(self.group, self.list.cursor)
            return
        if not same_trace:
            self._ranking_cursor = 0
        else:
            self._ranking_cursor = self.list.cursor
        self.show_ranking()

    def ranking_rows(self) -> pd.DataFrame:
        """model.whyslow.why_contract's op codes, heaviest first (`group`: the op code)."""
        rows = whyslow.why_contract(self.view)["by_op_code"]
        frame = pd.DataFrame(rows, columns=["op_code", "ops", "device_us", "share_pct",
                                            "class", "reason", "saving_us", "assumes", "try"])
        return frame.rename(columns={"op_code": "group"})

    def show_ranking(self) -> None:
        view = self.view
        s = whyslow.model_summary(view)
        lead = why.reason_lead(view, short=True)
        head = why.headline(view, s) if s is not None else None
        self.query_one("#why-head", Static).update(inert(
            (lead or "No device op in this view: nothing to explain")
            + (f"\nModel: {head}" if head else "")))
        self.drilled, self.group = False, None
        self.list.set_rows(self.ranking_rows(), GROUP_COLS, self._ranking_cursor)
        self.show_footer()

    def show_footer(self) -> None:
        """What to try for the op code under the cursor and what its saving assumes."""
        lst, lines = self.list, []
        if len(lst.frame):
            g = lst.frame.iloc[min(lst.cursor, len(lst.frame) - 1)]
            tries = list(g["try"])
            # a narrow screen keeps room for the rows: the first line and how many more
            # (before its first layout the view has no size yet: the screen's width then)
            width = self.size.width or self.app.size.width
            keep = tries if width >= WIDE else tries[:1]
            lines += [f"Try: {t}" for t in keep] or [f"{g['group']}: no guide line for "
                                                     "this reason"]
            more = f" ({plural(len(tries) - len(keep), 'more line')}: wider, or the " \
                "report's section)" if len(tries) > len(keep) else ""
            lines.append(f"Saving assumes {g['assumes']} · enter: its ops{more}")
        self.query_one("#why-foot", Static).update(inert("\n".join(lines)))

    def drill(self, row: int) -> None:
        """One op code's ops, heaviest first."""
        g = self.list.frame.iloc[row]
        self._ranking_cursor = row
        self.drill_group(str(g["group"]))

    def drill_group(self, group: str | None, cursor: int = 0) -> None:
        """The device ops of op code `group`, heaviest first, each with its reason."""
        self.group = group
        ops = whyslow.reason_ops(self.view, str(group))
        rows = whyslow.why_contract(self.view)["by_op_code"]
        g = next((r for r in rows if r["op_code"] == group), None)
        if g is not None:
            head = (f"{g['op_code']}: {plural(g['ops'], 'op')}, {fmt_us(g['device_us'])} "
                    f"({fmt_share(g['share_pct'])} of device time); {g['reason']}; saving "
                    f"{fmt_saving(g['saving_us'])} (assumes {g['assumes']})")
        else:  # (a live refresh: no device op of it any more)
            head = f"{group}: no device op in this view"
        self.query_one("#why-head", Static).update(inert(head))
        self.query_one("#why-foot", Static).update(inert(
            "enter: the op's details · esc: back to the op codes · Saving: what its reason's "
            "estimate takes off its device time"))
        self.drilled = True
        self.list.set_rows(ops, OP_COLS, cursor)
        self.picked()

    def picked(self) -> None:
        """The op under the cursor becomes the op table's (OpPicked): 1 lands on it; on the op
        codes, the footer follows the cursor."""
        if not self.drilled and self.view is not None:
            self.show_footer()
        if self.drilled and len(self.list.frame):
            self.post_message(OpPicked(int(self.list.frame["pos"].iloc[self.list.cursor])))

    def current_pos(self) -> int | None:
        """The op under the cursor (its row in the view's ops), when a list of ops is shown."""
        lst = self.list
        if not self.drilled or not len(lst.frame):
            return None
        return int(lst.frame["pos"].iloc[lst.cursor])

    def on_why_list_open(self, message: WhyList.Open) -> None:
        message.stop()
        if not self.drilled:
            self.drill(message.row)
        else:  # the op's details, as enter on the op table's row
            pos = int(self.list.frame["pos"].iloc[message.row])
            self.screen.push_details(self.view.ops.iloc[pos])

    def on_why_list_back(self, message: WhyList.Back) -> None:
        message.stop()
        if self.drilled:
            self.show_ranking()
