"""The views of the trace screen (keys `1`-`6`), one declaration each: `TraceScreen` (tui.app)
mounts, binds, lists in the palette and in `?`, shows and handles `enter` from `VIEWS`, and the
keys page (scripts/gen_docs.py) documents it. Adding a view is one `TraceView` here (or appended
by a caller before the screen is made) and its widget's module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from textual.binding import Binding
from textual.widget import Widget

from .optable import OpTable
from .rooflineview import RooflineView
from .timelineview import TimelineView
from .whyview import WhyList, WhyView
from .widgets import AdviceView, GroupedView

#: a view's handler: called with the trace screen and the view's widget
Handler = Callable[[Any, Any], None]


@dataclass(frozen=True)
class TraceView:
    """One view of the trace screen.

    `id`: the widget's id in the screen's ContentSwitcher and the binding id `ttdash.view_<id>`
    (users remap keys by it); `key`: its key; `title`: the binding's description (footer, `?`);
    `palette`: its command-palette entry; `help`: what the keys page says of its own keys;
    `widget`: makes the widget (called with `id=`); `show(screen, widget)`: fills it from the
    screen's view and table rows (None: nothing to fill); `focus`: the selector (in the widget)
    that takes the focus, or the widget itself; `details(screen, widget)`: `enter` on it (None:
    the widget handles `enter` itself); `follows`: shown again when the table's rows change;
    `footer`: its key in the footer; `keys`: the class whose bindings `?` and the keys page list
    (None: no keys of its own); `keys_title`: that section's title on the keys page."""

    id: str
    key: str
    title: str
    palette: str
    widget: Callable[..., Widget]
    show: Handler | None = None
    details: Handler | None = None
    focus: str | type[Widget] | None = None
    follows: bool = True
    footer: bool = False
    keys: type | None = None
    help: str = ""
    keys_title: str = ""

    @property
    def binding_id(self) -> str:
        return f"ttdash.view_{self.id}"

    def binding(self) -> Binding:
        return Binding(self.key, f"show('{self.id}')", self.title, show=self.footer,
                       id=self.binding_id)

    def doc_title(self) -> str:
        return f"{self.keys_title or self.title} (`{self.key}`)"


# ------------------------------------------------------------------ the handlers
def _op_details(screen, table: OpTable) -> None:
    op = table.current_row()
    if op is None:
        return
    if op["is_signpost"]:
        screen.narrow(int(op["region"]))
        return
    screen.push_details(op)


def _cursor_details(screen, widget) -> None:
    """enter on the timeline or roofline: the details of the op under the table's cursor."""
    pos = screen.table.current_pos()
    if pos is not None:
        screen.push_details(screen.view.ops.iloc[pos])


def _show_groups(screen, widget: GroupedView) -> None:
    """In file order: its plot is device time over the run, whatever the table's sort."""
    widget.show(screen.view.ops, np.sort(screen.table.rows))


def _show_at_cursor(screen, widget) -> None:
    widget.show(screen.view, screen.table.rows, screen.table.current_pos())


def _show_view(screen, widget) -> None:
    widget.show(screen.view)


#: the trace screen's views, in key order (the first is the one shown at the start)
VIEWS: list[TraceView] = [
    TraceView("ops", "1", "Ops", "view: ops table", OpTable, details=_op_details),
    TraceView("grouped", "2", "Group", "view: grouped by op code / category", GroupedView,
              show=_show_groups, focus="#groups",
              details=lambda screen, widget: screen.narrow_to_group(), footer=True),
    TraceView("advice", "3", "Advice", "view: advice", AdviceView, show=_show_view,
              follows=False, keys=AdviceView, keys_title="Advice list",
              help="Grouped as `report` prints it; `f` lists every entry; `enter` on an "
              "entry shows its op."),
    TraceView("timeline", "4", "Timeline", "view: timeline (when ops ran, per device)",
              TimelineView, show=_show_at_cursor, details=_cursor_details, keys=TimelineView,
              help="When it has the focus (after `4`)."),
    TraceView("roofline", "5", "Roofline", "view: roofline (FLOP/byte vs TFLOP/s)",
              RooflineView, show=_show_at_cursor, details=_cursor_details, keys=RooflineView,
              help="When it has the focus (after `5`)."),
    TraceView("why", "6", "Why slow", "view: why slow (time above the performance model)",
              WhyView, show=_show_view, focus=WhyList, keys=WhyList,
              help="When it has the focus (after `6`): op codes by the time above the "
              "performance model; enter lists an op code's ops, esc goes back."),
]
