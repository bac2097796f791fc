"""The diff screen: baseline | candidate | delta, one synced table, regressions, regions."""

from __future__ import annotations

import io
import math
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import ContentSwitcher, DataTable, Static

from ..format import fmt_us, is_missing, signed_pct
from ..model import Trace, Window
from ..model.columns import legend
from ..model.compare.diff import DiffResult, diff_traces
from ..model.query import DIFF_FILTER_KEYS, Filter
from ..model.read.text import clean_text
from ..present import table as tables
from ..present.screen import screen_spec
from ..present.table import SCREEN, TableSpec
from ..report import formats
from ..report.diff import fmt_speedup, render_diff, signed_us
from .app import TTDashApp, run_guarded
from .export import export_format, suffix_list
from .optable import Col, OpTable
from .tableview import TABLE_BINDINGS, TableViewMixin
from .widgets import (
    HelpScreen,
    PromptScreen,
    SteadyFooter,
    ask_and_export,
    bar_chart,
    detail_body,
    help_rows,
    plain,
)


def screen_columns(spec: TableSpec) -> tuple[Col, ...]:
    """The TUI table's columns: a spec's SCREEN columns (present.table.screen_spec)."""
    return screen_spec(spec).columns


#: The diff table's columns: present.table.DIFF_PAIRS's (the text outputs' lists share it).
DIFF_COLUMNS = screen_columns(tables.DIFF_PAIRS)
STATUS_MARK = {"matched": " ", "added": "+", "removed": "-"}
FILTER_HINT = ("text matches the op code; keys status:added status:removed status:matched "
               "sp:REGION bound:SLOW op:Matmul; -term or !term excludes; terms are ANDed; "
               "empty clears")


class DiffTable(OpTable):
    """One table for both traces: scrolling is synced by construction."""

    COLUMNS = DIFF_COLUMNS
    SPECIAL = frozenset({"status", "dus", "dpct", "dbar"})  # drawn here (noise, bars, marks)
    COMPONENT_CLASSES = OpTable.COMPONENT_CLASSES | {"optable--faster", "optable--slower"}
    DEFAULT_CSS = """
    DiffTable > .optable--faster { color: $success; }
    DiffTable > .optable--slower { color: $error; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec = tables.DIFF_PAIRS  # read when made: a column added to the spec shows here
        self.COLUMNS = screen_columns(self.spec)

    def _cell(self, c: Col, w: int, pos: int):
        d = self._data
        kind = c.screen_kind or c.kind
        if kind not in self.SPECIAL:  # present.table.cells, as the op table
            return super()._cell(c, w, pos)
        r = int(self.rows[pos])
        v = d[c.key][r]
        if kind == "status":
            s = d["status"][r]
            mark = "~" if s == "moved" else STATUS_MARK.get(s, "?")
            style = {"+": "optable--slower", "-": "optable--faster"}.get(mark)
            return mark, self._style(style) if style else None
        if is_missing(v):
            return "", None
        noise = bool(d["within_noise"][r])
        style = self._style("optable--dim") if noise else self._style(
            "optable--slower" if v > 0 else "optable--faster" if v < 0 else "optable--dim")
        if kind == "dus":
            return signed_us(v), style
        if kind == "dpct":
            text = f"{v:+.0f}%" if abs(v) >= 1000 else f"{v:+.1f}%"
            return ("≈" if noise else "") + text, style
        half = max(1, (w - 1) // 2)  # diverging bar: faster grows left, slower right
        cells = int(round(min(abs(v), 100.0) / 100.0 * half))
        if v < 0:
            text = " " * (half - cells) + "◂" * cells + "│" + " " * half
        else:
            text = " " * half + "│" + "▸" * cells + " " * (half - cells)
        return text, style


def with_cause(result: DiffResult) -> pd.DataFrame:
    """The diff's display frame with each pair's cause (the pairs' ``cause``, as the table
    output prints it; "" for none), control characters made visible, and every other field
    of the pairs that present.table.DIFF_PAIRS shows on screen."""
    frame = result.display_frame()
    pairs = result.pairs.reset_index(drop=True)
    for c in tables.DIFF_PAIRS.on(SCREEN):
        if c.key not in frame.columns and c.key in pairs.columns and c.key != "cause":
            frame[c.key] = pairs[c.key].to_numpy()
    cause = pairs["cause"] if "cause" in pairs.columns else pd.Series([None] * len(pairs))
    texts = {c: str(clean_text(str(c))) for c in cause.dropna().unique()}
    frame["cause"] = pd.Series([texts.get(c, "") if isinstance(c, str) else ""
                                for c in cause.to_numpy(dtype=object)], dtype=object)
    return frame


def _summary(result: DiffResult) -> Text:
    b, c = result.baseline_totals, result.candidate_totals
    counts = result.counts
    line1 = Text.assemble(("A ", "bold"), plain(Path(b.file).name), f" {b.ops:,} ops  →  ",
                          ("B ", "bold"), plain(Path(c.file).name), f" {c.ops:,} ops · match ",
                          (f"{result.match_rate:.1%}", "bold"),
                          f" · +{counts['added']} added −{counts['removed']} removed")
    pct, speed = result.delta_pct, result.speedup
    line2 = Text.assemble(
        "steady ", (f"{fmt_us(b.steady_us)} → {fmt_us(c.steady_us)}", "bold"),
        f" ({signed_pct(pct.get('steady'))}, {fmt_speedup(speed.get('steady'))})",
        " · device ", (f"{fmt_us(b.device_time_us)} → {fmt_us(c.device_time_us)}", "bold"),
        f" ({signed_pct(pct.get('device'))})",
        f" · host pauses {fmt_us(b.pauses_us)} → {fmt_us(c.pauses_us)}",
        f" · wall {signed_pct(pct.get('wall'))}")
    for line in (line1, line2):
        line.no_wrap, line.overflow = True, "ellipsis"
    return Text("\n", no_wrap=True).join([line1, line2])


class DiffDetailScreen(ModalScreen[None]):
    """Both rows' details, side by side (stacked on narrow terminals)."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="ttdash.diff_detail_close"),
                Binding("tab", "app.focus_next", "Other side", id="ttdash.diff_detail_other"),
                Binding("x", "expand", "Whole values", id="ttdash.diff_detail_expand")]
    DEFAULT_CSS = """
    DiffDetailScreen { align: center middle; }
    DiffDetailScreen #sides { width: 100%; height: 100%; background: $surface;
                              border: tall $primary; }
    DiffDetailScreen VerticalScroll { width: 1fr; height: 1fr; padding: 0 1; }
    DiffDetailScreen .section { text-style: bold; color: $accent; margin-top: 1; }
    DiffDetailScreen .side { text-style: bold reverse; }
    """

    def __init__(self, sides: list[tuple[str, dict | None, pd.Series | None]],
                 stacked: bool) -> None:
        super().__init__()
        self.sides, self.stacked = sides, stacked
        self.expanded = False

    async def action_expand(self) -> None:
        """Long values whole (again: cut)."""
        self.expanded = not self.expanded
        await self.recompose()

    def compose(self) -> ComposeResult:
        box = Vertical(id="sides") if self.stacked else Horizontal(id="sides")
        with box:
            for title, op, raw in self.sides:
                with VerticalScroll():
                    yield Static(plain(title), classes="side")
                    if op is None:
                        yield Static(plain("(not in this trace)"))
                    else:
                        yield from detail_body(op, raw, expanded=self.expanded)


class DiffScreen(TableViewMixin, Screen):
    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        Binding("n", "regression(1)", "Next regr", id="ttdash.next_regression"),
        Binding("N", "regression(-1)", "Prev regr.", show=False, id="ttdash.prev_regression"),
        Binding("t", "threshold", "Threshold", show=False, id="ttdash.threshold"),
        *TABLE_BINDINGS,
        Binding("enter", "details", "Details", show=False, id="ttdash.details"),
        Binding("1", "show('pairs')", "Ops", show=False, id="ttdash.view_ops"),
        Binding("2", "show('grouped')", "Grouped", id="ttdash.view_grouped"),
        Binding("c", "group_by", "By code/region", show=False, id="ttdash.group_by"),
        Binding("e", "export", "Export", id="ttdash.export"),
        Binding("q", "quit_or_back", "Quit", id="ttdash.quit"),
    ]
    DEFAULT_CSS = """
    DiffScreen #summary { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap;
                          text-overflow: ellipsis; }
    DiffScreen #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    DiffScreen #switcher { height: 1fr; }
    DiffScreen #grouped DataTable { height: 1fr; }
    DiffScreen #deltas { height: auto; max-height: 14; padding: 0 1; }
    """
    table_type = DiffTable
    filter_keys = DIFF_FILTER_KEYS
    filter_hint = FILTER_HINT
    default_reverse_key = "delta_us"
    #: the largest slowdown first: delta_us is the per-op change of device time (candidate -
    #: baseline; + an added op's time, - a removed op's), the figure the totals add up; a
    #: percentage would rank a 2 us op that doubled above a 1 ms op 20% slower. Faster ops end
    #: the table; pairs with no device time on either side (host ops) come after them.
    default_sort: str | None = "delta_us"

    def __init__(self, result: DiffResult, *, can_go_back: bool = False) -> None:
        super().__init__()
        self.result = result
        self.frame = with_cause(result)
        self.state = self.new_state(self.frame)
        self.threshold = 5.0
        self.group_by = "op_code"
        self.can_go_back = can_go_back  # pushed over another screen (watch's runs list)

    def compose(self) -> ComposeResult:
        yield Static(_summary(self.result), id="summary")
        with ContentSwitcher(initial="pairs", id="switcher"):
            yield DiffTable(id="pairs")
            with Vertical(id="grouped"):
                yield DataTable(id="groups", cursor_type="row", zebra_stripes=True)
                yield Static(id="deltas")
        yield Static(id="status")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.recompute()
        self.query_one(DiffTable).focus()

    # ------------------------------------------------------------ state
    def table_changed(self) -> None:
        self.update_status()

    def update_status(self) -> None:
        parts = self.status_parts(order=True)  # the header is the two traces' totals
        parts.append(f"regression ≥ {self.threshold:g}% (n/N, t)")
        if self.can_go_back:
            parts.append("esc/q: back")
        self.query_one("#status", Static).update(plain(" · ".join(parts)))

    def on_op_table_cursor_moved(self, message) -> None:
        self.update_status()

    # ------------------------------------------------------------ actions
    def action_widen(self) -> None:
        if not self.state.clear():
            if self.can_go_back:
                self.app.pop_screen()
            return
        self.refresh_table()

    def action_quit_or_back(self) -> None:
        if self.can_go_back:
            self.app.pop_screen()
        else:
            self.app.exit()

    def regression_positions(self) -> np.ndarray:
        """Visible rows that are regressions above the threshold (the model's definition)."""
        return np.flatnonzero(self.result.regression_mask(self.threshold)[self.table.rows])

    def action_regression(self, direction: int) -> None:
        t = self.table
        pos = self.regression_positions()
        if not len(pos):
            self.notify(f"No regression ≥ {self.threshold:g}% in this view", severity="warning")
            return
        after, before = pos[pos > t.cursor], pos[pos < t.cursor]
        t.cursor = int((after[0] if len(after) else pos[0]) if direction > 0
                       else (before[-1] if len(before) else pos[-1]))

    def action_threshold(self) -> None:
        def done(value: str | None) -> None:
            if value:
                try:
                    self.threshold = float(value.strip().rstrip("%"))
                except ValueError:
                    self.notify(f"not a number: {value!r}", severity="error", markup=False)
                self.update_status()
        self.app.push_screen(PromptScreen("Regression threshold (%):", f"{self.threshold:g}"),
                             done)

    def action_details(self) -> None:
        if self.query_one(ContentSwitcher).current == "grouped":
            self.narrow_to_group()
            return
        row = self.table.current_row()
        if row is None:
            return
        sides = []
        for name, view, pos in (("A (baseline)", self.result.baseline, row["baseline_pos"]),
                                ("B (candidate)", self.result.candidate,
                                 row["candidate_pos"])):
            title = f"{name}: {view.trace.path.name}"
            if is_missing(pos):
                sides.append((title, None, None))
                continue
            op = view.op_rows.iloc[int(pos)].to_dict()
            try:
                raw = view.trace.row(int(op["id"]))
            except KeyError:
                raw = None
            sides.append((title, op, raw))
        self.app.push_screen(DiffDetailScreen(sides, stacked=self.app.size.width < 120))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on the grouped table (the DataTable takes enter itself)."""
        if event.data_table.id == "groups":
            self.narrow_to_group()

    def narrow_to_group(self) -> None:
        """enter on a group: the pairs of that op code / region."""
        table = self.query_one("#groups", DataTable)
        frame = self.result.by_op_code if self.group_by == "op_code" else self.result.by_region
        if table.cursor_row is None or table.cursor_row >= len(frame):
            return
        name = str(frame.iloc[table.cursor_row][self.group_by])
        key = "op" if self.group_by == "op_code" else "sp"
        self.state.filter = Filter.for_keys(f"{key}:={shlex.quote(name)}", self.filter_keys)
        self.action_show("pairs")
        self.refresh_table(top=True)

    def action_show(self, name: str) -> None:
        self.query_one(ContentSwitcher).current = name
        if name == "grouped":
            self._show_groups()
            self.query_one("#groups").focus()
        else:
            self.query_one(DiffTable).focus()

    def action_group_by(self) -> None:
        has_regions = len(self.result.by_region) > 0
        self.group_by = "region" if self.group_by == "op_code" and has_regions else "op_code"
        if not has_regions:
            self.notify("No signpost regions: grouping by op code", severity="warning")
        self._show_groups()

    def _show_groups(self) -> None:
        frame = self.result.by_op_code if self.group_by == "op_code" else self.result.by_region
        key = self.group_by
        table = self.query_one("#groups", DataTable)
        table.clear(columns=True)
        # Numbers keep their widths (Δ% included); the name gets the rest of the line.
        nums = (("A ops", 5), ("B ops", 5), ("A time", 9), ("B time", 9), ("Δ time", 10),
                ("Δ%", 8), ("Share", 7))
        width = self.app.size.width
        name_w = max(10, width - sum(w for _, w in nums) - 2 * (len(nums) + 1) - 2)
        table.add_column("Op code" if key == "op_code" else "Region", width=name_w)
        for h, w in nums:
            table.add_column(Text(h, justify="right"), width=w)
        for g in frame.head(500).itertuples(index=False):
            d = g.delta_us
            style = "red" if d > 0 else "green" if d < 0 else ""
            name = str(clean_text(str(getattr(g, key))))
            cut = name if len(name) <= name_w else name[:name_w - 1] + "…"
            table.add_row(plain(cut), Text(str(int(g.baseline_count)), justify="right"),
                          Text(str(int(g.candidate_count)), justify="right"),
                          Text(fmt_us(g.baseline_us), justify="right"),
                          Text(fmt_us(g.candidate_us), justify="right"),
                          Text(signed_us(d), style=style, justify="right"),
                          Text(signed_pct(g.delta_pct), style=style, justify="right"),
                          Text(signed_pct(g.share_pct), justify="right"))
        top = frame.reindex(frame["delta_us"].abs().sort_values(ascending=False).index).head(10)
        labels = [str(clean_text(str(v))) for v in top[key]]
        values = [0.0 if is_missing(v) or not math.isfinite(v) else float(v)
                  for v in top["delta_us"]]
        chart = bar_chart(labels, values, max(40, width - 4), " us", diverging=True)
        self.query_one("#deltas", Static).update(Group(
            Text("Δ device time (us): right = slower in B, left = faster", style="bold"),
            chart))

    def action_help(self) -> None:
        notes = ["One table shows both traces (synced by construction): A = baseline, "
                 "B = candidate; + added in B, - removed from B, ~ moved; ≈ within noise.",
                 f"Filter: {FILTER_HINT}."]
        self.app.push_screen(HelpScreen("ttdash keys: diff view",
                                        help_rows(self.app, self, self.query_one(DiffTable)),
                                        notes, legend=legend()))

    def action_export(self) -> None:
        """The diff in the format the file's suffix names (report.formats: the formats `diff`
        offers; written by `diff --format`'s own writer)."""
        offered = formats.choices("diff")

        def render(target: Path) -> str:
            fmt = export_format(target, offered)
            buf = io.StringIO()
            render_diff(self.result, fmt.name, buf)
            return buf.getvalue()

        ask_and_export(self, "Export the diff (.md for a pull request); the suffix picks the "
                       f"format: {suffix_list(offered)}", "ttdash_diff.md", render)


def diff_app(result: DiffResult, theme: str | None = None) -> TTDashApp:
    return TTDashApp(lambda: DiffScreen(result), theme=theme)


def run_diff_tui(result: DiffResult, theme: str | None = None) -> int:
    return run_guarded(diff_app(result, theme))


def diff_screen_for_paths(baseline: Path, candidate: Path, arch: str | None = None) -> DiffScreen:
    """A diff pushed over another screen (the watch runs list): esc/q go back to it."""
    a = Trace.load(baseline, arch=arch, columns="lazy").view(Window("all"))
    b = Trace.load(candidate, arch=arch, columns="lazy").view(Window("all"))
    return DiffScreen(diff_traces(a, b), can_go_back=True)
