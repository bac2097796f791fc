"""The timeline view: when ops ran, one lane per device, keyboard zoom and pan.

Each lane is drawn one cell per column: the cell's height is the share of that stretch of time
the device was busy, its colour the bound class with the most time in it (model.timeline.binned),
so a million ops cost what the screen's width costs. The selected op is the op table's cursor
row: moving here moves it there, and back.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from ..format import fmt_us, is_missing
from ..model.analysis.timeline import BOUNDS, CUMULATIVE, CYCLES, Timeline, binned, for_view, op_at
from ..model.columns import PAUSE_ABOVE_US
from .widgets import OpPicked, plain, rows_key

LEVELS = " ▁▂▃▄▅▆▇█"
#: component class per bound code (index), then "not modelled"
BOUND_CLASSES = tuple(f"timeline--{b.lower()}" for b in BOUNDS) + ("timeline--other",)
LEGEND_NAMES = (*BOUNDS, "other")
SOURCE_SHORT = {CYCLES: "FW cycles", CUMULATIVE: "time from durations + gaps"}


def nice_step(span: float, ticks: int) -> float:
    """A 1/2/5 x 10^k step giving about `ticks` ticks over `span`."""
    raw = span / max(ticks, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def tick_label(t: float) -> str:
    return "0" if t == 0 else fmt_us(t)


class TimelineView(Widget, can_focus=True):
    """Lanes of ops over time. Keys: left/right previous/next op, up/down lane, +/- zoom around
    the selected op, shift+left/right (or , and .) pan, 0 fit, t pauses cut or real time,
    enter the op's details (the screen does that)."""

    DEFAULT_CSS = """
    TimelineView { height: 1fr; padding: 0 1; }
    TimelineView > .timeline--dram { color: $primary; }
    TimelineView > .timeline--flop { color: $success; }
    TimelineView > .timeline--both { color: $secondary; }
    TimelineView > .timeline--slow { color: $warning; }
    TimelineView > .timeline--host { color: $error; }
    TimelineView > .timeline--other { color: $foreground-muted; }
    TimelineView > .timeline--selected { background: $accent; color: $background; }
    TimelineView > .timeline--dim { color: $foreground-muted; }
    TimelineView > .timeline--signpost { color: $accent; }
    """
    COMPONENT_CLASSES = {*BOUND_CLASSES, "timeline--selected", "timeline--dim",
                         "timeline--signpost"}
    BINDINGS = [
        Binding("left", "step(-1)", "Timeline: previous op", show=False, id="ttdash.timeline_prev"),
        Binding("right", "step(1)", "Timeline: next op", show=False, id="ttdash.timeline_next"),
        Binding("up", "lane(-1)", "Timeline: lane up", show=False, id="ttdash.timeline_lane_up"),
        Binding("down", "lane(1)", "Timeline: lane down", show=False,
                id="ttdash.timeline_lane_down"),
        Binding("plus,equals_sign", "zoom(0.5)", "Timeline: zoom in", show=False,
                id="ttdash.timeline_zoom_in"),
        Binding("minus", "zoom(2)", "Timeline: zoom out", show=False,
                id="ttdash.timeline_zoom_out"),
        Binding("shift+left,comma", "pan(-0.5)", "Timeline: pan left", show=False,
                id="ttdash.timeline_pan_left"),
        Binding("shift+right,full_stop", "pan(0.5)", "Timeline: pan right", show=False,
                id="ttdash.timeline_pan_right"),
        Binding("0", "fit", "Timeline: fit all", show=False, id="ttdash.timeline_fit"),
        Binding("home", "edge(0)", "Timeline: first op", show=False, id="ttdash.timeline_first"),
        Binding("end", "edge(-1)", "Timeline: last op", show=False, id="ttdash.timeline_last"),
        Binding("t", "pauses", "Timeline: cut pauses / real time", show=False,
                id="ttdash.timeline_pauses"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.cut = True
        self.tl: Timeline | None = None
        self._for: tuple | None = None
        self._rows_key: tuple | None = None
        self.ops: pd.DataFrame | None = None
        self._last: tuple | None = None  # (view, rows) of the last show()
        self._by_pos = np.zeros(0, dtype=np.int64)
        self.shown: np.ndarray | None = None  # mask over the timeline's ops
        self.sel: int | None = None  # index into the timeline's arrays
        self.lane = 0
        self.t0, self.t1 = 0.0, 1.0
        self.zoomed = False  # zoomed or panned by the user: kept until 0 (fit)

    # ------------------------------------------------------------ data
    def show(self, view, rows: np.ndarray, cursor_pos: int | None) -> None:
        """The view's timeline (rebuilt for a new view or pause mode), the ops in `rows` (the
        table's filter and region) drawn, the op at `cursor_pos` selected."""
        self._last = (view, rows)
        key = (id(view.ops), self.cut)
        if key != self._for:
            self._for = key
            self.ops = view.ops
            self.tl = for_view(view, cut_pauses_above=PAUSE_ABOVE_US if self.cut else None)
            self._by_pos = np.argsort(self.tl.pos, kind="stable")  # for select_pos
            self._rows_key = None
            self.sel = None  # an index into the old arrays
        tl = self.tl
        key = rows_key(rows)
        if key != self._rows_key:
            self._rows_key = key
            mask = np.zeros(len(view.ops), dtype=bool)
            mask[rows] = True
            self.shown = mask[tl.pos]
            if not self.zoomed:  # (a live refresh keeps the user's zoom and pan)
                self.action_fit()
        self.select_pos(cursor_pos)
        self.refresh()

    def select_pos(self, pos: int | None) -> None:
        """Select the op at row `pos` of the view's ops (a signpost or host op: the next op that
        is on the timeline)."""
        tl = self.tl
        if tl is None or not len(tl) or pos is None:
            self.sel = None
            return
        by_pos = self._by_pos
        i = min(int(np.searchsorted(tl.pos[by_pos], pos)), len(by_pos) - 1)
        self.sel = int(by_pos[i])
        self.lane = int(tl.lane[self.sel])
        self._keep_visible()

    def selected_pos(self) -> int | None:
        return None if self.sel is None or self.tl is None else int(self.tl.pos[self.sel])

    def _set_sel(self, k: int) -> None:
        self.sel = k
        self.lane = int(self.tl.lane[k])
        self._keep_visible()
        self.refresh()
        self.post_message(OpPicked(int(self.tl.pos[k])))

    def _keep_visible(self) -> None:
        tl, k = self.tl, self.sel
        if k is None:
            return
        s = float(tl.start_us[k])
        w = self.t1 - self.t0
        if s < self.t0 or s > self.t1 - w * 0.02:  # off screen or at its right edge
            self.t0 = max(0.0, s - w * 0.25)
            self.t1 = self.t0 + w

    # ------------------------------------------------------------ actions
    def _lane_ops(self) -> np.ndarray:
        return self.tl.lane_ops(self.lane, self.shown)

    def action_step(self, d: int) -> None:
        if self.tl is None or not len(self.tl):
            return
        on = self._lane_ops()
        if not len(on):
            return
        if self.sel is None:
            k = int(on[0])
        elif self.sel not in on:  # on another lane or hidden: the shown op nearest in time
            near = op_at(self.tl, self.lane, float(self.tl.start_us[self.sel]), self.shown)
            k = int(on[0]) if near is None else near
        else:
            i = int(np.searchsorted(on, self.sel)) + d
            k = int(on[min(max(i, 0), len(on) - 1)])
        self._set_sel(k)

    def action_edge(self, which: int) -> None:
        on = self._lane_ops() if self.tl is not None else []
        if len(on):
            self._set_sel(int(on[which]))

    def action_lane(self, d: int) -> None:
        tl = self.tl
        if tl is None or len(tl.lanes) < 2:
            return
        self.lane = min(max(self.lane + d, 0), len(tl.lanes) - 1)
        mid = self.t0 if self.sel is None else float(tl.start_us[self.sel])
        k = op_at(tl, self.lane, mid, self.shown)
        if k is not None:
            self._set_sel(k)

    def action_zoom(self, factor: float) -> None:
        if self.tl is None:
            return
        w = (self.t1 - self.t0) * factor
        w = min(max(w, 0.05), max(self.tl.span_us, 1.0) * 1.02)
        centre = (self.t0 + self.t1) / 2
        if self.sel is not None:
            centre = (float(self.tl.start_us[self.sel]) + float(self.tl.end_us[self.sel])) / 2
        self.t0 = max(0.0, centre - w / 2)
        self.t1 = self.t0 + w
        self.zoomed = True
        self.refresh()

    def action_pan(self, frac: float) -> None:
        if self.tl is None:
            return
        w = self.t1 - self.t0
        self.t0 = min(max(0.0, self.t0 + w * frac), max(self.tl.span_us - w * 0.5, 0.0))
        self.t1 = self.t0 + w
        self.zoomed = True
        self.refresh()

    def action_fit(self) -> None:
        tl = self.tl
        self.zoomed = False
        if tl is None:
            return
        on = np.flatnonzero(self.shown) if self.shown is not None else np.arange(len(tl))
        ends = tl.end_us[on]
        ends = ends[np.isfinite(ends)]  # absurd cells (1e300 us) can sum to inf
        if len(ends):
            self.t0 = float(np.nanmin(tl.start_us[on]))
            self.t1 = float(ends.max())
        else:
            self.t0, self.t1 = 0.0, max(tl.span_us, 1.0)
        if self.t1 <= self.t0:
            self.t1 = self.t0 + 1.0
        self.t1 += (self.t1 - self.t0) * 0.01
        self.refresh()

    def action_pauses(self) -> None:
        pos = self.selected_pos()
        self.cut = not self.cut
        if self._last is not None:
            self.show(*self._last, pos)
        self.notify("Host pauses cut to " + fmt_us(PAUSE_ABOVE_US) if self.cut
                    else "Real time: host pauses shown at full length", markup=False)

    # ------------------------------------------------------------ drawing
    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def render(self) -> Group:
        tl = self.tl
        width = max(self.size.width - 2, 20)
        height = max(self.size.height, 6)
        if tl is None or not len(tl):
            return Group(plain("No op with a device time in this view: nothing to place on a "
                               "timeline."))
        label_w = max(len(x) for x in tl.lanes) + 2  # the selection mark, the name, a space
        cols = max(width - label_w, 10)
        dim = self._style("timeline--dim")
        lines: list[Text] = [self._title(cols)]
        lines.append(self._axis(label_w, cols, dim))
        if len(tl.signpost_us):
            lines.append(self._marks(label_w, cols, tl.signpost_us, "▼",
                                     self._style("timeline--signpost"), "sp"))
        if len(tl.breaks_us):
            lines.append(self._marks(label_w, cols, tl.breaks_us, "≈", dim, "cut"))
        room = max(height - len(lines) - 3, 1)
        first = min(max(self.lane - room // 2, 0), max(len(tl.lanes) - room, 0))
        shown = min(room, len(tl.lanes))
        rows_each = min(max(room // shown, 1), 8)  # taller lanes when few: finer busy heights
        for lane in range(first, first + shown):
            lines.extend(self._lane(lane, label_w, cols, dim, rows_each))
        if len(tl.lanes) > room:
            lines.append(Text(f"lanes {first + 1}-{min(first + room, len(tl.lanes))} of "
                              f"{len(tl.lanes)} (up/down)", style=dim))
        lines.append(self._selected_line())
        lines.append(self._legend())
        for line in lines:
            line.no_wrap, line.overflow = True, "ellipsis"
        return Group(*lines)

    def _title(self, cols: int) -> Text:
        tl = self.tl
        span = self.t1 - self.t0
        t = Text.assemble(("Timeline", "bold"), f" {tick_label(self.t0)}–{fmt_us(self.t1)} · "
                          f"{fmt_us(span / cols)}/cell · {SOURCE_SHORT.get(tl.source, tl.source)}")
        if self.cut and tl.cut_us:
            t.append(f" · pauses cut to {fmt_us(PAUSE_ABOVE_US)} "
                     f"({fmt_us(tl.cut_us)} idle out; t: real time)")
        elif not self.cut:
            t.append(" · real time (t: cut pauses)")
        if tl.unplaced:
            t.append(f" · {tl.unplaced} ops not placed (absurd times)")
        return t

    def _axis(self, label_w: int, cols: int, dim: Style) -> Text:
        span = self.t1 - self.t0
        cells = [" "] * cols
        if not (math.isfinite(span) and span > 0):
            return Text(" " * label_w, style=dim)
        step = nice_step(span, max(cols // 14, 1))
        tick = math.ceil(self.t0 / step) * step
        for _ in range(cols):  # a tick per column at most, whatever the numbers
            if tick > self.t1:
                break
            c = int((tick - self.t0) / span * cols)
            label = "┊" + tick_label(tick)
            if 0 <= c and c + len(label) <= cols and all(x == " " for x in
                                                          cells[max(c - 1, 0):c + len(label)]):
                cells[c:c + len(label)] = label
            tick += step
        return Text(" " * label_w + "".join(cells), style=dim)

    def _marks(self, label_w: int, cols: int, at: np.ndarray, char: str, style: Style,
               name: str) -> Text:
        span = self.t1 - self.t0
        vis = at[(at >= self.t0) & (at < self.t1)]
        cells = [" "] * cols
        for c in ((vis - self.t0) / span * cols).astype(int):
            cells[min(c, cols - 1)] = char
        t = Text(name[:label_w - 1].ljust(label_w), style=Style(dim=True))
        t.append("".join(cells), style=style)
        return t

    def _lane(self, lane: int, label_w: int, cols: int, dim: Style, height: int) -> list[Text]:
        """`height` rows; a column's bar is as tall as the share of its time the device was
        busy (in eighths of a row)."""
        tl = self.tl
        busy, code = binned(tl, lane, self.t0, self.t1, cols, self.shown)
        eighths = np.where(busy > 0, np.maximum(np.ceil(busy * height * 8), 1), 0).astype(int)
        sel_c0 = sel_c1 = -1
        span = self.t1 - self.t0
        if self.sel is not None and int(tl.lane[self.sel]) == lane:
            a = (tl.start_us[self.sel] - self.t0) / span * cols
            z = (tl.end_us[self.sel] - self.t0) / span * cols
            if np.isfinite(a) and np.isfinite(z):  # else: an absurd cell, no highlight
                sel_c0 = int(min(max(a, -1), cols))
                sel_c1 = max(int(min(max(z, -1), cols)), sel_c0)
        styles = [self._style(c) for c in BOUND_CLASSES]
        selected = self._style("timeline--selected")
        out = []
        for r in range(height):  # top row first
            name = tl.lanes[lane] if r == height - 1 else ""
            mark = "▶" if lane == self.lane and r == height - 1 else " "
            t = Text(mark + name[:label_w - 2].ljust(label_w - 1),
                     style="bold" if lane == self.lane else "")
            below = (height - 1 - r) * 8
            for c in range(cols):
                level = min(max(eighths[c] - below, 0), 8)
                if sel_c0 <= c <= sel_c1:
                    t.append("█" if level or r == height - 1 else " ", style=selected)
                elif code[c] == -1:
                    t.append("·" if r == height - 1 else " ", style=dim)
                else:
                    t.append(LEVELS[level], style=styles[int(code[c])])
            out.append(t)
        return out

    def _selected_line(self) -> Text:
        tl, k = self.tl, self.sel
        if k is None or self.ops is None:
            return Text("no op selected (left/right)")
        op = self.ops.iloc[int(tl.pos[k])]
        parts = [f"at {fmt_us(tl.start_us[k])}", fmt_us(op["device_time_us"])]
        if not is_missing(op["op_to_op_us"]):
            parts.append(f"gap {fmt_us(op['op_to_op_us'])}")
        if isinstance(op["bound"], str) and op["bound"]:
            parts.append(op["bound"])
        parts.append(tl.lanes[int(tl.lane[k])])
        size = op.get("size")
        name = f"{op['op_code']}" + (f" {size}" if isinstance(size, str) and size else "")
        t = Text.assemble(("▶ ", "bold"), (f"#{op['id']} ", "bold"))
        t.append_text(plain(name))
        t.append(" · " + " · ".join(parts))
        return t

    def _legend(self) -> Text:
        t = Text()
        for name, cls in zip(LEGEND_NAMES, BOUND_CLASSES):
            t.append("█", style=self._style(cls))
            t.append(f"{name} ")
        t.append("· ←→ op ↑↓ lane +/- zoom ,. pan 0 fit t pauses ⏎ details",
                 style=self._style("timeline--dim"))
        return t
