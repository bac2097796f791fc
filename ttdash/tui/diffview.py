"""The diff screen: baseline | candidate | delta, one synced table, regressions, regions."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import ContentSwitcher, DataTable, Footer, Static
from textual_plotext import PlotextPlot

from ..format import fmt_us, is_missing
from ..model import Trace, Window
from ..model.diff import DiffResult, diff_traces
from ..model.query import Filter, signpost_positions, sort_order
from ..model.text import clean_text
from ..report.diff import fmt_speedup, signed_pct, signed_us, to_csv, to_markdown
from .app import TTDashApp, run_guarded
from .optable import Col, OpTable
from .widgets import HelpScreen, PromptScreen, ask_and_export, detail_body, help_rows, plain

DIFF_COLUMNS = (
    Col("baseline_id", "A id", 6, 4, "id"),
    Col("candidate_id", "B id", 6, 4, "id"),
    Col("status", "", 1, 0, "status", "left"),
    Col("op_code", "Op code", 22, 0, "op", "left", pref=40),
    Col("baseline_us", "A time", 9, 0, "us"),
    Col("candidate_us", "B time", 9, 0, "us"),
    Col("delta_us", "Δ time", 9, 2, "dus"),
    Col("delta_pct", "Δ%", 8, 0, "dpct"),
    Col("delta_bar", "◂fast│slow▸", 11, 3, "dbar", "left", pref=15),
    Col("bounds", "Bound A→B", 11, 5, "text", "left"),
    Col("baseline_gap_us", "A gap", 9, 6, "us"),
    Col("candidate_gap_us", "B gap", 9, 6, "us"),
    Col("region_label", "Region", 16, 7, "text", "left", pref=24),
)
STATUS_MARK = {"matched": " ", "added": "+", "removed": "-"}
FILTER_HINT = ("text matches the op code; status:added status:removed status:matched "
               "sp:REGION; terms are ANDed; empty clears")


def diff_frame(result: DiffResult) -> pd.DataFrame:
    """The pairs as the table shows them, with the columns the shared widgets expect."""
    p = result.pairs.reset_index(drop=True)
    codes, _ = pd.factorize(p["region"].astype(object).where(p["region"].notna(), None),
                            use_na_sentinel=True)
    region = np.where(codes >= 0, codes + 1, 0)
    ba = p["baseline_bound"].astype(object).where(p["baseline_bound"].notna(), "")
    bb = p["candidate_bound"].astype(object).where(p["candidate_bound"].notna(), "")
    bounds = np.where((ba == "") & (bb == ""), "",
                      np.where(ba == bb, ba, ba.astype(str) + "→" + bb.astype(str)))
    status = p["status"].astype(object).to_numpy()
    status = np.where(p["moved"].to_numpy(dtype=bool) & (status == "matched"), "moved", status)
    out = pd.DataFrame({
        "id": p["candidate_id"].fillna(p["baseline_id"]).astype("float64").to_numpy(),
        "baseline_id": p["baseline_id"].astype("float64").to_numpy(),
        "candidate_id": p["candidate_id"].astype("float64").to_numpy(),
        "status": pd.Series(status, dtype=object),
        "op_code": pd.Series(p["op_code"].astype(object).to_numpy(), dtype=object),
        "size": pd.Series(p["size"].astype(object).where(p["size"].notna(), "").to_numpy(),
                          dtype=object),
        "baseline_us": p["baseline_us"].to_numpy(dtype="float64"),
        "candidate_us": p["candidate_us"].to_numpy(dtype="float64"),
        "delta_us": p["delta_us"].to_numpy(dtype="float64"),
        "delta_pct": p["delta_pct"].to_numpy(dtype="float64"),
        "delta_bar": p["delta_pct"].to_numpy(dtype="float64"),
        "within_noise": p["within_noise"].fillna(False).to_numpy(dtype=bool),
        "bounds": pd.Series(bounds, dtype=object),
        "baseline_gap_us": p["baseline_gap_us"].to_numpy(dtype="float64"),
        "candidate_gap_us": p["candidate_gap_us"].to_numpy(dtype="float64"),
        "region": region,
        "region_label": pd.Series(p["region"].astype(object).where(p["region"].notna(), "")
                                  .to_numpy(), dtype=object),
        "signpost": pd.Series(p["region"].astype(object).to_numpy(), dtype=object),
        "baseline_pos": p["baseline_pos"].astype("float64").to_numpy(),
        "candidate_pos": p["candidate_pos"].astype("float64").to_numpy(),
        "is_signpost": np.zeros(len(p), dtype=bool),
    })
    return out


class DiffTable(OpTable):
    """One table for both traces: scrolling is synced by construction."""

    COLUMNS = DIFF_COLUMNS
    COMPONENT_CLASSES = OpTable.COMPONENT_CLASSES | {"optable--faster", "optable--slower"}
    DEFAULT_CSS = """
    DiffTable > .optable--faster { color: $success; }
    DiffTable > .optable--slower { color: $error; }
    """

    def _cell(self, c: Col, w: int, r: int):
        d = self._data
        if c.kind not in ("status", "dus", "dpct", "dbar"):
            return super()._cell(c, w, r)
        v = d[c.key][r]
        if c.kind == "status":
            s = d["status"][r]
            mark = "~" if s == "moved" else STATUS_MARK.get(s, "?")
            style = {"+": "optable--slower", "-": "optable--faster"}.get(mark)
            return mark, self._style(style) if style else None
        if is_missing(v):
            return "", None
        noise = bool(d["within_noise"][r])
        style = self._style("optable--dim") if noise else self._style(
            "optable--slower" if v > 0 else "optable--faster" if v < 0 else "optable--dim")
        if c.kind == "dus":
            return signed_us(v), style
        if c.kind == "dpct":
            text = f"{v:+.0f}%" if abs(v) >= 1000 else f"{v:+.1f}%"
            return ("≈" if noise else "") + text, style
        half = max(1, (w - 1) // 2)  # diverging bar: faster grows left, slower right
        cells = int(round(min(abs(v), 100.0) / 100.0 * half))
        if v < 0:
            text = " " * (half - cells) + "◂" * cells + "│" + " " * half
        else:
            text = " " * half + "│" + "▸" * cells + " " * (half - cells)
        return text, style


def _summary(result: DiffResult) -> Text:
    b, c = result.baseline_totals, result.candidate_totals
    counts = result.counts
    line1 = Text.assemble(("A ", "bold"), plain(Path(b.file).name), f" {b.ops:,} ops  →  ",
                          ("B ", "bold"), plain(Path(c.file).name), f" {c.ops:,} ops · match ",
                          (f"{result.match_rate:.1%}", "bold"),
                          f" · +{counts['added']} added −{counts['removed']} removed")
    wall = result.delta_pct.get("wall")
    dev = result.delta_pct.get("device")
    line2 = Text.assemble(
        "wall ", (f"{fmt_us(b.wall_us)} → {fmt_us(c.wall_us)}", "bold"),
        f" ({signed_pct(wall)}, {fmt_speedup(result.speedup.get('wall'))})",
        " · device ", (f"{fmt_us(b.device_time_us)} → {fmt_us(c.device_time_us)}", "bold"),
        f" ({signed_pct(dev)}, {fmt_speedup(result.speedup.get('device'))})",
        f" · gaps {fmt_us(b.op_to_op_us)} → {fmt_us(c.op_to_op_us)}")
    for line in (line1, line2):
        line.no_wrap, line.overflow = True, "ellipsis"
    return Text("\n", no_wrap=True).join([line1, line2])


class DiffDetailScreen(ModalScreen[None]):
    """Both rows' details, side by side (stacked on narrow terminals)."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="ttdash.diff_detail_close"),
                Binding("tab", "focus_next", "Other side", id="ttdash.diff_detail_other")]
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

    def compose(self) -> ComposeResult:
        box = Vertical(id="sides") if self.stacked else Horizontal(id="sides")
        with box:
            for title, op, raw in self.sides:
                with VerticalScroll():
                    yield Static(plain(title), classes="side")
                    if op is None:
                        yield Static(plain("(not in this trace)"))
                    else:
                        yield from detail_body(op, raw)


class DiffScreen(Screen):
    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        Binding("n", "regression(1)", "Next regr.", id="ttdash.next_regression"),
        Binding("N", "regression(-1)", "Prev regr.", id="ttdash.prev_regression"),
        Binding("t", "threshold", "Threshold", show=False, id="ttdash.threshold"),
        Binding("slash", "filter", "Filter", id="ttdash.filter"),
        Binding("less_than_sign", "sort(-1)", "Sort ←", id="ttdash.sort_prev"),
        Binding("greater_than_sign", "sort(1)", "Sort →", id="ttdash.sort_next"),
        Binding("r", "reverse", "Reverse", show=False, id="ttdash.reverse"),
        Binding("o", "original_order", "Orig order", show=False, id="ttdash.original_order"),
        Binding("left_square_bracket", "region(-1)", "◆ prev", id="ttdash.signpost_prev"),
        Binding("right_square_bracket", "region(1)", "◆ next", id="ttdash.signpost_next"),
        Binding("enter", "details", "Details", id="ttdash.details"),
        Binding("escape", "clear", "Clear", show=False, id="ttdash.widen"),
        Binding("1", "show('pairs')", "Ops", show=False, id="ttdash.view_ops"),
        Binding("2", "show('grouped')", "Grouped", id="ttdash.view_grouped"),
        Binding("c", "group_by", "By code/region", show=False, id="ttdash.group_by"),
        Binding("e", "export", "Export", id="ttdash.export"),
        Binding("q", "app.quit", "Quit", id="ttdash.quit"),
    ]
    DEFAULT_CSS = """
    DiffScreen #summary { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap;
                          text-overflow: ellipsis; }
    DiffScreen #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    DiffScreen #switcher { height: 1fr; }
    DiffScreen #grouped DataTable { height: 1fr; }
    DiffScreen #grouped PlotextPlot { height: 1fr; min-height: 8; }
    """

    def __init__(self, result: DiffResult) -> None:
        super().__init__()
        self.result = result
        self.frame = diff_frame(result)
        self.op_filter = Filter("")
        self.sort_key: str | None = None
        self.sort_desc = True
        self.threshold = 5.0
        self.group_by = "op_code"
        self.rows = np.arange(len(self.frame))

    def compose(self) -> ComposeResult:
        yield Static(_summary(self.result), id="summary")
        with ContentSwitcher(initial="pairs", id="switcher"):
            yield DiffTable(id="pairs")
            with Vertical(id="grouped"):
                yield DataTable(id="groups", cursor_type="row", zebra_stripes=True)
                yield PlotextPlot(id="deltas")
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.recompute()
        self.query_one(DiffTable).focus()

    # ------------------------------------------------------------ state
    def recompute(self) -> None:
        f = self.frame
        mask = self._mask()
        rows = sort_order(f, np.flatnonzero(mask), self.sort_key, self.sort_desc)
        self.rows = rows
        t = self.query_one(DiffTable)
        t.sort_key, t.sort_desc = self.sort_key, self.sort_desc
        t.set_data(f, rows)
        self.update_status()

    def _mask(self) -> np.ndarray:
        terms, rest = [], []
        for term in self.op_filter.text.split():
            (terms if term.lower().startswith("status:") else rest).append(term)
        mask = np.ones(len(self.frame), dtype=bool)
        if rest:
            mask &= Filter(" ".join(rest)).mask(self.frame)
        for term in terms:
            want = term.split(":", 1)[1].lower()
            st = self.frame["status"].to_numpy(dtype=object)
            mask &= (st == want) | ((want == "matched") & (st == "moved"))
        return mask

    def update_status(self) -> None:
        t = self.query_one(DiffTable)
        parts = [f"row {t.cursor + 1 if len(self.rows) else 0:,}/{len(self.rows):,}",
                 f"regression ≥ {self.threshold:g}% (n/N, t)"]
        if self.op_filter.text:
            parts.append(f"filter: {self.op_filter.text}")
        if self.sort_key:
            title = next(c.title for c in DIFF_COLUMNS if c.key == self.sort_key) or "status"
            parts.append(f"sort: {title} {'↓' if self.sort_desc else '↑'}")
        self.query_one("#status", Static).update(plain(" · ".join(parts)))

    def on_op_table_cursor_moved(self, message) -> None:
        self.update_status()

    # ------------------------------------------------------------ actions
    def regression_positions(self) -> np.ndarray:
        f = self.frame
        d = f["delta_pct"].to_numpy()[self.rows]
        st = f["status"].to_numpy(dtype=object)[self.rows]
        noise = f["within_noise"].to_numpy()[self.rows]
        with np.errstate(invalid="ignore"):
            hit = ((np.nan_to_num(d, nan=-np.inf) >= self.threshold) & ~noise) | (st == "added")
        return np.flatnonzero(hit)

    def action_regression(self, direction: int) -> None:
        t = self.query_one(DiffTable)
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
                    self.notify(f"not a number: {value!r}", severity="error")
                self.update_status()
        self.app.push_screen(PromptScreen("Regression threshold (%):", f"{self.threshold:g}"),
                             done)

    def action_region(self, direction: int) -> None:
        t = self.query_one(DiffTable)
        starts = signpost_positions(self.frame, self.rows)
        if not len(starts):
            self.notify("No signpost regions in these traces", severity="warning")
            return
        later, earlier = starts[starts > t.cursor], starts[starts < t.cursor]
        t.cursor = int((later[0] if len(later) else starts[0]) if direction > 0
                       else (earlier[-1] if len(earlier) else starts[-1]))

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self.op_filter = Filter(value.strip())
                self.recompute()
        self.app.push_screen(PromptScreen("Filter ops:", self.op_filter.text, FILTER_HINT), done)

    def action_clear(self) -> None:
        if self.op_filter.text:
            self.op_filter = Filter("")
            self.recompute()

    def action_sort(self, step: int) -> None:
        keys = [c.key for c in self.query_one(DiffTable).visible_columns()]
        keys = ["delta_pct" if k == "delta_bar" else k for k in keys]
        keys = list(dict.fromkeys(keys))
        i = keys.index(self.sort_key) if self.sort_key in keys else (-1 if step > 0 else 0)
        self.sort_key = keys[(i + step) % len(keys)]
        self.sort_desc = self.sort_key not in ("baseline_id", "candidate_id", "op_code",
                                               "region_label", "status")
        self.recompute()

    def action_reverse(self) -> None:
        if self.sort_key is None:
            self.sort_key, self.sort_desc = "delta_us", True
        else:
            self.sort_desc = not self.sort_desc
        self.recompute()

    def action_original_order(self) -> None:
        self.sort_key = None
        self.recompute()

    def action_details(self) -> None:
        row = self.query_one(DiffTable).current_row()
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
        table.add_columns("Op code" if key == "op_code" else "Region", "A ops", "B ops",
                          "A time", "B time", "Δ time", "Δ%", "Share of Δ")
        for g in frame.head(500).itertuples(index=False):
            d = g.delta_us
            style = "red" if d > 0 else "green" if d < 0 else ""
            table.add_row(plain(getattr(g, key)), Text(str(int(g.baseline_count))),
                          Text(str(int(g.candidate_count))), Text(fmt_us(g.baseline_us)),
                          Text(fmt_us(g.candidate_us)), Text(signed_us(d), style=style),
                          Text(signed_pct(g.delta_pct), style=style),
                          Text(signed_pct(g.share_pct)))
        top = frame.reindex(frame["delta_us"].abs().sort_values(ascending=False).index).head(12)
        plot = self.query_one("#deltas", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        labels = [str(clean_text(str(v)))[:18] for v in top[key]][::-1]
        values = [0.0 if is_missing(v) or not math.isfinite(v) else float(v)
                  for v in top["delta_us"]][::-1]
        if labels:
            plt.bar(labels, values, orientation="horizontal", width=0.6,
                    color=["red" if v > 0 else "green" for v in values])
        plt.title("Δ device time (us): right = slower in B, left = faster")
        plot.refresh()

    def action_help(self) -> None:
        notes = ["One table shows both traces (synced by construction): A = baseline, "
                 "B = candidate; + added in B, - removed from B, ~ moved; ≈ within noise.",
                 f"Filter: {FILTER_HINT}."]
        self.app.push_screen(HelpScreen("ttdash keys: diff view",
                                        help_rows(self.app, self, self.query_one(DiffTable)),
                                        notes))

    def action_export(self) -> None:
        def render(target: Path) -> str:
            buf = io.StringIO()
            (to_csv if target.suffix.lower() == ".csv" else to_markdown)(self.result, buf)
            return buf.getvalue()

        ask_and_export(self, "Export the diff to (.md for a pull request, or .csv):",
                       "ttdash_diff.md", render)


def diff_app(result: DiffResult, theme: str | None = None) -> TTDashApp:
    return TTDashApp(lambda: DiffScreen(result), theme=theme)


def run_diff_tui(result: DiffResult, theme: str | None = None) -> int:
    run_guarded(diff_app(result, theme))
    return 0


def diff_screen_for_paths(baseline: Path, candidate: Path, arch: str | None = None) -> DiffScreen:
    a = Trace.load(baseline, arch=arch, columns="all").view(Window("all"))
    b = Trace.load(candidate, arch=arch, columns="all").view(Window("all"))
    return DiffScreen(diff_traces(a, b))
