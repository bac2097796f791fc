"""The trend chart of `ttdash history` (`t`): one op code's steady-state time over the runs of
one arch, oldest first (plotext), left/right for the other op codes; `b`: the same op code's
device time per sample over the values of a numeric label (batch size), as `history trend
--by LABEL` computes it."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ..format import fmt_us, is_missing
from ..history.query import numeric_labels, trend, trend_by
from ..model.read.text import clean_text
from .widgets import HelpScreen, SteadyFooter, help_rows

ID_CHARS = 8  # run ids are shown by their first characters (here and in the history's table)


def _text(value: object) -> str:
    """Untrusted text, control characters removed (for Text cells)."""
    return "" if is_missing(value) else str(clean_text(str(value)))


class TrendScreen(Screen):
    """Steady-state time of one op code over the runs of one arch (oldest first); left/right
    cycle through the op codes, largest in the selected run first."""

    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        Binding("left,left_square_bracket", "step(-1)", "Prev op code",
                id="ttdash.trend_prev"),
        Binding("right,right_square_bracket", "step(1)", "Next op code",
                id="ttdash.trend_next"),
        Binding("b", "by", "By label", id="ttdash.trend_by"),
        Binding("escape,q", "close", "Back", id="ttdash.trend_close"),
    ]
    DEFAULT_CSS = """
    TrendScreen #trend-info { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap;
                              text-overflow: ellipsis; }
    TrendScreen PlotextPlot { height: 1fr; }
    """

    def __init__(self, runs: list[dict[str, Any]], selected: str, op_codes: list[str]) -> None:
        super().__init__()
        self.runs, self.selected, self.op_codes = runs, selected, op_codes
        self.index = 0
        self.by_labels = numeric_labels(runs)
        self.by: str | None = None  # b: per sample over this label's values
        self.by_points: list[tuple[float, float]] = []  # what the by-label plot shows
        self.sel = next((i for i, r in enumerate(runs) if r["run_id"] == selected),
                        len(runs) - 1)

    def compose(self) -> ComposeResult:
        yield Static(id="trend-info")
        yield PlotextPlot(id="trend-plot")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.draw()

    @property
    def op_code(self) -> str:
        return self.op_codes[self.index]

    def action_step(self, d: int) -> None:
        self.index = (self.index + d) % len(self.op_codes)
        self.draw()

    def action_by(self) -> None:
        """Cycle: runs over time, then each numeric label (batch first), then runs again."""
        if not self.by_labels:
            self.notify("no numeric label with two values or more in these runs (add runs "
                        "with --label batch=N)", severity="warning", markup=False)
            return
        order: list[str | None] = [None, *self.by_labels]
        self.by = order[(order.index(self.by) + 1) % len(order)]
        self.draw()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("ttdash keys: op code trend",
                                        help_rows(self.app, self),
                                        ["Steady-state time = device time + dispatch gaps "
                                         "(pauses excluded) of the op code's ops in each run.",
                                         "Runs of the selected run's arch only, oldest "
                                         "first; the selected run is marked.",
                                         "b: device time per sample (time / the label's "
                                         "value) over a numeric label's values (batch=N), "
                                         "median over the runs of each value; b again: the "
                                         "next label, then the runs."]))

    def draw(self) -> None:
        if self.by:
            self.draw_by(self.by)
            return
        points = trend(self.runs, op=self.op_code)
        ys = [float(p["steady_us"]) for p in points]
        xs = list(range(1, len(ys) + 1))
        sel = points[self.sel]
        arch = _text(self.runs[self.sel].get("arch"))
        name = _text(self.op_code) or "(no op code)"
        head = Text.assemble(("Trend ", "bold"), (name, "bold"),
                             f" ({self.index + 1}/{len(self.op_codes)}) · {arch} · {len(ys):,} "
                             f"run{'s' * (len(ys) != 1)} · steady state per run")
        line2 = Text.assemble(("▶ ", "bold"), f"run {self.selected[:ID_CHARS]}: ",
                              (fmt_us(sel["steady_us"]), "bold"),
                              f" in {sel['ops']:,} ops · min {fmt_us(min(ys))} · "
                              f"max {fmt_us(max(ys))}")
        plot = self._fresh_plot(head, line2)
        plt = plot.plt
        plt.plot(xs, ys, marker="braille", color="cyan")
        plt.scatter([xs[self.sel]], [ys[self.sel]], marker="@", color="yellow")
        step = max(1, len(xs) // 6)
        ticks = xs[::step]
        days = {p["added_at"].astimezone().date() for p in points}
        tick = "%m-%d" if len(days) > 1 else "%H:%M"  # runs of one day: their times
        plt.xticks(ticks, [points[i - 1]["added_at"].astimezone().strftime(tick)
                           for i in ticks])
        plt.xlabel("run (added, oldest first)")
        plt.ylabel("steady-state us")
        plot.refresh()

    def _fresh_plot(self, head: Text, line2: Text) -> PlotextPlot:
        """The two info lines above the plot written, the plot cleared for a new drawing."""
        info = Text("\n", no_wrap=True, overflow="ellipsis").join([head, line2])
        self.query_one("#trend-info", Static).update(info)
        plot = self.query_one(PlotextPlot)
        plot.plt.clear_data()
        plot.plt.clear_figure()
        return plot

    def draw_by(self, label: str) -> None:
        """The op code's device time per sample over the label's values (`trend --by`)."""
        rows, used = trend_by(self.runs, label, op=self.op_code)
        xs = [float(r["value"]) for r in rows]
        ys = [float(r["device_us_per_sample"]) for r in rows]
        self.by_points = list(zip(xs, ys))
        name = _text(self.op_code) or "(no op code)"
        mine = next((r for r in rows if self.selected in r["run_ids"]), None)
        head = Text.assemble(("By ", "bold"), (_text(label), "bold"), " · ", (name, "bold"),
                             f" ({self.index + 1}/{len(self.op_codes)}) · {len(rows):,} "
                             f"value{'s' * (len(rows) != 1)} from {len(used):,} "
                             f"run{'s' * (len(used) != 1)} · device time per sample")
        best = min(rows, key=lambda r: r["device_us_per_sample"]) if rows else None
        line2 = Text.assemble(
            ("▶ ", "bold"), f"run {self.selected[:ID_CHARS]}: ",
            (f"{_text(label)}={mine['samples']:g} {fmt_us(mine['device_us_per_sample'])}"
             if mine else f"no {_text(label)} label", "bold"),
            (f" · least per sample at {_text(label)}={best['samples']:g}: "
             f"{fmt_us(best['device_us_per_sample'])}" if best else ""))
        plot = self._fresh_plot(head, line2)
        plt = plot.plt
        if xs:
            plt.plot(xs, ys, marker="braille", color="cyan")
            if mine:
                plt.scatter([float(mine["value"])], [float(mine["device_us_per_sample"])],
                            marker="@", color="yellow")
            plt.xticks(xs, [f"{x:g}" for x in xs])
        plt.xlabel(f"{_text(label)} (samples)")
        plt.ylabel("device us per sample")
        plot.refresh()
