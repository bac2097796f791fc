"""`ttdash history` without an action: the stored runs, newest first, under sparklines of device
and steady-state time; open a run, diff two marked runs, or chart one op code's trend.

The store is read in a worker thread; the table is built once per read (again only when a resize
changes its layout): nothing per frame walks the runs. Labels, paths and URIs are untrusted text:
they reach the screen as `rich.text.Text`, never as markup."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Sparkline, Static

from ..format import fmt_us, is_missing
from ..history.query import trend
from ..history.record import file_sha256, stored_view
from ..model.columns import Severity
from ..model.compare.diff import diff_traces
from ..model.errors import TraceError
from ..model.read.text import clean_text
from ..present.screen import change_rule
from ..present.table import RUNS, SCREEN, cells
from .app import TraceScreen, TTDashApp
from .diffview import DiffScreen
from .historytrend import ID_CHARS, TrendScreen, _text
from .widgets import HelpScreen, SteadyFooter, help_rows, plain

#: The run list's columns: present.table.RUNS's (as `history list`), the change coloured from
#: CHANGE_PCT on; the date in local time (shorter on a narrow screen).
CHANGE_PCT = 1.0  # a change against the run before coloured from this many percent
SPEC = RUNS.replace("change_pct", rule=change_rule(CHANGE_PCT))
#: Table columns (row field, spec key); the widths come from the rows (`_layout`).
FIELDS = (("arch", "arch"), ("ops", "ops"), ("device", "device_time_us"),
          ("steady", "steady_us"), ("change", "change_pct"), ("labels", "labels"))
COLUMNS = (("mark", "", False), ("added", "Added", False), ("run", SPEC.by_key["run_id"].head,
                                                              False),
           *((f, SPEC.by_key[k].head, not SPEC.by_key[k].left) for f, k in FIELDS))
LONG_DATE, SHORT_DATE = "%Y-%m-%d %H:%M", "%m-%d %H:%M"
#: Below this width the year is dropped from "Added" (the status line has the full date).
LONG_DATE_FROM = 110
MIN_LABELS = 8
SAMPLE_DAY = datetime(2000, 12, 31, 23, 59)
RESIZE_SETTLE = 0.15  # seconds


class SourceChanged(Exception):
    """A run's CSV is gone or no longer has the content that was stored."""


def _num(v: object) -> float:
    return 0.0 if is_missing(v) else float(v)  # type: ignore[arg-type]


def shown_path(path: str) -> str:
    """A path relative to the working directory when it is under it (shorter on screen)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class RunRow:
    """One run as the table shows it (computed once per store read)."""

    run: dict[str, Any]
    run_id: str
    added: datetime  # local time
    arch: str
    ops: str
    device: str
    steady: str
    change: float | None  # the steady time's change against the run before, in percent
    change_text: str
    labels: str
    change_severity: Severity | None = None


def history_rows(runs: list[dict[str, Any]]) -> list[RunRow]:
    """The table's rows, newest first; `change`: steady state against the previous run of the
    same arch, window and model label (history.query.trend, as `history list`)."""
    change = {p["run_id"]: p["change_pct"] for p in trend(runs)}
    newest = list(reversed(runs))
    frame = pd.DataFrame({"change_pct": [change.get(r["run_id"]) for r in newest],
                          **{k: [r.get(k) for r in newest] for f, k in FIELDS
                             if k != "change_pct"}})
    texts, sev = cells(frame, SPEC.select(k for _, k in FIELDS), where=SCREEN)
    out = []
    for i, r in enumerate(newest):
        t = {f: _text(texts[k][i]) if k in texts else "" for f, k in FIELDS}
        out.append(RunRow(run=r, run_id=str(r["run_id"]), added=r["added_at"].astimezone(),
                          arch=t["arch"], ops=t["ops"], device=t["device"], steady=t["steady"],
                          change=change.get(r["run_id"]), change_text=t["change"],
                          labels=t["labels"],
                          change_severity=sev["change_pct"][i]))
    return out


def check_source(run: dict[str, Any]) -> Path:
    """The run's CSV, when it is still there with the content stored (else SourceChanged)."""
    path = Path(str(run.get("file") or ""))
    # The stored path is untrusted text (a file name can hold escape sequences): inert here
    # (and again, as every toast, in TTDashApp.notify)
    changed = f"source file moved or changed: {clean_text(str(path))}"
    try:
        digest, _ = file_sha256(path)
    except OSError:
        raise SourceChanged(changed) from None
    if run.get("sha256") and digest != run["sha256"]:
        raise SourceChanged(changed)
    return path


def load_run(run: dict[str, Any]):
    """The run's trace as it was analysed when added (worker thread)."""
    return stored_view(run, check_source(run))


class RunTraceScreen(TraceScreen):
    """A stored run's trace, pushed over the history: esc (nothing to clear) and q go back."""

    BINDINGS = [Binding("q", "back", "Back", id="ttdash.history_back")]

    def __init__(self, view, run_id: str) -> None:
        super().__init__(view)
        self.status_extra = f"run {run_id[:ID_CHARS]} · esc/q: back to the history"

    def action_widen(self) -> None:
        if self.state.clear():
            self.refresh_table()
        else:
            self.app.pop_screen()

    def action_back(self) -> None:
        self.app.pop_screen()


class RunsTable(DataTable):
    """The runs, with the op table's vi keys."""

    BINDINGS = [Binding("j", "cursor_down", "Down", show=False, id="ttdash.down"),
                Binding("k", "cursor_up", "Up", show=False, id="ttdash.up"),
                Binding("g", "scroll_top", "Top", show=False, id="ttdash.top"),
                Binding("G", "scroll_bottom", "Bottom", show=False, id="ttdash.bottom")]


class HistoryScreen(Screen):
    """The runs of a history store, newest first."""

    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        Binding("enter", "open", "Open", id="ttdash.history_open", priority=True),
        Binding("b", "mark('baseline')", "Baseline", id="ttdash.history_baseline"),
        Binding("c", "mark('candidate')", "Candidate", id="ttdash.history_candidate"),
        Binding("d", "diff", "Diff", id="ttdash.history_diff"),
        Binding("t", "trend", "Trend", id="ttdash.history_trend"),
        Binding("r", "reload", "Reload", show=False, id="ttdash.history_reload"),
        Binding("q", "app.quit", "Quit", id="ttdash.quit"),
    ]
    DEFAULT_CSS = """
    HistoryScreen #header, HistoryScreen #skipped, HistoryScreen #status {
        height: 1; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    HistoryScreen #skipped { color: $warning; }
    HistoryScreen #status { color: $text-muted; }
    HistoryScreen .spark { height: 1; padding: 0 1; }
    HistoryScreen .spark Static { width: auto; margin-right: 1; }
    HistoryScreen .spark Sparkline { width: 1fr; }
    HistoryScreen #steady-spark > .sparkline--max-color { color: $accent; }
    HistoryScreen #steady-spark > .sparkline--min-color { color: $accent 30%; }
    HistoryScreen #runs { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    HistoryScreen #empty { height: 1fr; padding: 1 2; }
    """

    def __init__(self, store) -> None:
        super().__init__()
        self.store = store
        self.runs: list[dict[str, Any]] = []
        self.rows: list[RunRow] = []
        self.by_id: dict[str, RunRow] = {}
        self.skipped: list[str] = []
        self.error: str | None = None
        self.loaded = False
        self.baseline: str | None = None
        self.candidate: str | None = None
        self.busy: str | None = None  # what a worker is doing ("opening abc12345")
        self._token = self._reads = 0
        self._layout_key: tuple | None = None
        self._resize_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        yield Static(id="skipped")
        with Horizontal(classes="spark"):
            yield Static(id="device-label")
            yield Sparkline([], id="device-spark")
        with Horizontal(classes="spark"):
            yield Static(id="steady-label")
            yield Sparkline([], id="steady-spark")
        yield RunsTable(id="runs", cursor_type="row", zebra_stripes=True, cell_padding=0)
        yield Static(id="empty")
        yield Static(id="status")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.query_one("#empty").display = False
        self.update_header()
        self.action_reload()

    # ------------------------------------------------------------ reading the store
    def action_reload(self) -> None:
        """Read the store again (worker thread); the cursor and the marks stay on their runs."""
        store = self.store
        self.busy = "reading the store"
        self.update_status()
        self._reads += 1
        n = self._reads

        def read() -> None:
            try:
                runs, error = store.runs(), None
            except (TraceError, OSError) as exc:
                runs, error = [], exc.oneline() if isinstance(exc, TraceError) else str(exc)
            skipped = list(store.skipped)  # this read's
            self.app.call_from_thread(self.show_runs, runs, skipped, error, n)

        self.run_worker(read, thread=True, group="history-read")

    def show_runs(self, runs: list[dict[str, Any]], skipped: list[str],
                  error: str | None = None, read: int | None = None) -> None:
        if read is not None and read != self._reads:
            return  # a later reload is under way
        keep = self.current_id()
        self.runs, self.skipped, self.error, self.loaded = runs, skipped, error, True
        self.rows = history_rows(runs)
        self.by_id = {r.run_id: r for r in self.rows}
        if self.baseline not in self.by_id:
            self.baseline = None
        if self.candidate not in self.by_id:
            self.candidate = None
        self.busy = None
        self.update_header()
        self.update_sparklines()
        empty = not self.rows
        table = self.query_one("#runs", DataTable)
        table.display = not empty
        self.query_one("#empty").display = empty
        for spark in self.query(".spark"):
            spark.display = not empty
        if empty:
            self.query_one("#empty", Static).update(self.empty_text())
        self._layout_key = None
        self.build_table(keep)
        if not empty:
            table.focus()
        self.update_status()

    def empty_text(self) -> Text:
        if self.error:
            return Text.assemble(("No runs to show. ", "bold"), plain(self.error))
        return Text.assemble(("No runs in this store yet. ", "bold"), "`ttdash history add "
                             "REPORT` adds one (or `ttdash watch --record`); r reloads.")

    # ------------------------------------------------------------ the table
    def _layout(self, width: int) -> tuple[str, dict[str, int]]:
        """(date format, column widths): each column as wide as its widest cell plus a gap,
        the labels get what is left."""
        long = width >= LONG_DATE_FROM
        rows = self.rows

        def widest(values, title: str) -> int:
            return max([len(title), *(len(v) for v in values)]) + 1

        widths = {
            "mark": 3,
            "added": len(SAMPLE_DAY.strftime(LONG_DATE if long else SHORT_DATE)) + 1,
            "run": ID_CHARS + 1,
            "arch": widest((r.arch for r in rows), "Arch"),
            "ops": widest((r.ops for r in rows), "Ops"),
            "device": widest((r.device for r in rows), "Device"),
            "steady": widest((r.steady for r in rows), "Steady"),
            "change": widest((r.change_text for r in rows), SPEC.by_key["change_pct"].head),
        }
        used = sum(widths.values()) + 1  # + the scrollbar
        widths["labels"] = max(MIN_LABELS, width - used)
        return (LONG_DATE if long else SHORT_DATE), widths

    def build_table(self, keep: str | None = None) -> None:
        """Columns and rows for the current width (again only when the layout changes)."""
        if not self.rows:
            self.query_one("#runs", DataTable).clear(columns=True)
            return
        width = self.query_one("#runs").size.width or self.app.size.width
        fmt, widths = self._layout(width)
        key = (fmt, tuple(widths.items()))
        if key == self._layout_key:
            return
        self._layout_key = key
        table = self.query_one("#runs", DataTable)
        keep = keep or self.current_id()
        table.clear(columns=True)
        for col, title, right in COLUMNS:
            label = Text(title, justify="right") if right else Text(title)
            if col == "labels":
                label = Text(" " + title)
            table.add_column(label, width=widths[col], key=col)
        long = fmt == LONG_DATE
        for r in self.rows:
            table.add_row(*self.cells(r, long), key=r.run_id)
        if keep in self.by_id:
            table.move_cursor(row=table.get_row_index(keep), animate=False)

    def cells(self, r: RunRow, long: bool) -> list[Text]:
        style = {Severity.BAD: "red", Severity.GOOD: "green"}.get(r.change_severity, "") \
            if r.change_severity is not None else ""
        lab = Text(" " + r.labels, no_wrap=True, overflow="ellipsis")
        return [self.mark_text(r.run_id), Text(r.added.strftime(LONG_DATE if long else SHORT_DATE)),
                Text(r.run_id[:ID_CHARS]), Text(r.arch, no_wrap=True, overflow="ellipsis"),
                Text(r.ops, justify="right"), Text(r.device, justify="right"),
                Text(r.steady, justify="right"),
                Text(r.change_text, style=style, justify="right"), lab]

    def mark_text(self, run_id: str) -> Text:
        marks = ("B" if run_id == self.baseline else "") + \
            ("C" if run_id == self.candidate else "")
        return Text(marks, style="bold reverse" if marks else "")

    def on_resize(self) -> None:
        """A new layout once the size settles (a drag resizes many times; a thousand rows take
        a few tenths of a second to lay out)."""
        if self.loaded and self.rows:
            if self._resize_timer is not None:
                self._resize_timer.stop()
            self._resize_timer = self.set_timer(RESIZE_SETTLE, self.build_table)

    def current_id(self) -> str | None:
        table = self.query_one("#runs", DataTable)
        if not self.rows or not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def selected(self) -> dict[str, Any] | None:
        rid = self.current_id()
        return self.by_id[rid].run if rid is not None else None

    # ------------------------------------------------------------ header and status
    def update_header(self) -> None:
        uri = getattr(self.store, "uri", "")
        line = Text("Run history", style="bold")
        if self.loaded:  # counts first: a long store path is what an 80-column line cuts
            n = len(self.runs)
            line.append(f" · {n:,} run{'s' * (n != 1)}")
            if self.skipped:
                line.append(f" · {len(self.skipped)} file{'s' * (len(self.skipped) != 1)} "
                            "skipped (?)", style="bold")
        line.append(" · ")
        line.append_text(plain(uri))
        line.no_wrap, line.overflow = True, "ellipsis"
        self.query_one("#header", Static).update(line)
        skipped = self.query_one("#skipped", Static)
        skipped.display = bool(self.skipped)
        if self.skipped:
            warn = Text("⚠ ")
            warn.append_text(plain(self.skipped[0]))
            if len(self.skipped) > 1:
                warn.append(f" (+{len(self.skipped) - 1} more: ?)")
            warn.no_wrap, warn.overflow = True, "ellipsis"
            skipped.update(warn)

    def update_sparklines(self) -> None:
        for key, field in (("device", "device_time_us"), ("steady", "steady_us")):
            values = [_num(r.get(field)) for r in self.runs]
            self.query_one(f"#{key}-spark", Sparkline).data = values
            self.query_one(f"#{key}-label", Static).update(self.spark_label(key, values))

    def spark_label(self, key: str, values: list[float]) -> Text:
        name = "Device" if key == "device" else "Steady"
        if not values:
            return Text(name)
        # Both labels padded to one width: the two sparklines start in the same column.
        fields = ("device_time_us", "steady_us")
        w_min = max(len(fmt_us(min(_num(r.get(f)) for r in self.runs))) for f in fields)
        w_last = max(len(fmt_us(_num(self.runs[-1].get(f)))) for f in fields)
        return Text.assemble((f"{name} ", "bold"), "min ", fmt_us(min(values), w_min),
                             " · last ", (fmt_us(values[-1], w_last), "bold"))

    def update_status(self) -> None:
        parts = []
        rid = self.current_id()
        if rid is not None:
            row = self.by_id[rid]
            table = self.query_one("#runs", DataTable)
            parts.append(f"run {table.cursor_row + 1:,}/{len(self.rows):,}")
        parts.append("B " + (self.baseline[:ID_CHARS] if self.baseline else "—"))
        parts.append("C " + (self.candidate[:ID_CHARS] if self.candidate else "—"))
        if self.busy:
            parts.append(self.busy + "…")
        elif rid is not None:
            parts.append(row.added.strftime(LONG_DATE))
            parts.append(shown_path(str(row.run.get("file") or "")))
            if row.labels:
                parts.append(row.labels)
        text = plain(" · ".join(parts))
        text.no_wrap, text.overflow = True, "ellipsis"
        self.query_one("#status", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.update_status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()  # a click (enter is the screen's, a priority binding)

    # ------------------------------------------------------------ actions
    def action_mark(self, which: str) -> None:
        rid = self.current_id()
        if rid is None:
            return
        old = {self.baseline, self.candidate}
        setattr(self, which, rid)
        table = self.query_one("#runs", DataTable)
        for r in (old | {rid}) - {None}:
            table.update_cell(r, "mark", self.mark_text(r))
        self.update_status()

    def _start(self, what: str, work, done) -> None:
        """`work()` in a worker thread, then `done(result)` here; a SourceChanged, TraceError or
        OSError is a notification (a later action supersedes an earlier one still running)."""
        self._token += 1
        token = self._token
        self.busy = what
        self.update_status()

        def finish(result: Any, error: str | None) -> None:
            if token != self._token:
                return  # superseded
            self.busy = None
            self.update_status()
            if error is not None:
                self.notify(error, severity="error", markup=False, timeout=8)
            else:
                done(result)

        def run() -> None:
            try:
                result, error = work(), None
            except (SourceChanged, TraceError, OSError) as exc:
                result = None
                error = exc.oneline() if isinstance(exc, TraceError) else str(exc)
            self.app.call_from_thread(finish, result, error)

        self.run_worker(run, thread=True, group="history-open")

    def action_open(self) -> None:
        run = self.selected()
        if run is None:
            return
        rid = run["run_id"]
        self._start(f"opening {rid[:ID_CHARS]}", lambda: load_run(run),
                    lambda view: self.app.push_screen(RunTraceScreen(view, rid)))

    def action_diff(self) -> None:
        if not (self.baseline and self.candidate):
            self.notify("mark a baseline (b) and a candidate (c) first", severity="warning",
                        markup=False)
            return
        if self.baseline == self.candidate:
            self.notify("the baseline and the candidate are the same run: mark another one "
                        "as the candidate (c)", severity="warning", markup=False)
            return
        a, b = self.by_id[self.baseline].run, self.by_id[self.candidate].run

        def work():
            # diffview.diff_screen_for_paths, but the loading and the diff in this thread and
            # only the screen built on the UI thread
            return diff_traces(load_run(a), load_run(b))

        self._start(f"diffing {self.baseline[:ID_CHARS]} → {self.candidate[:ID_CHARS]}", work,
                    lambda result: self.app.push_screen(DiffScreen(result, can_go_back=True)))

    def action_trend(self) -> None:
        run = self.selected()
        if run is None:
            return
        groups = sorted(run.get("op_codes") or (), key=lambda g: (-_num(g["steady_us"]),
                                                                   str(g["name"])))
        if not groups:
            self.notify("this run has no op codes", severity="warning", markup=False)
            return
        same = [r for r in self.runs if r.get("arch") == run.get("arch")]
        self.app.push_screen(TrendScreen(same, run["run_id"], [g["name"] for g in groups]))

    def action_help(self) -> None:
        notes = ["Newest first. Change: steady state (device + dispatch gaps, pauses "
                 "excluded) against the previous run of the same arch. B, C: the marks of d.",
                 "Remap keys in ~/.config/ttdash/keymap.toml: binding_id = \"key\"."]
        if self.skipped:
            notes.append("Files skipped while reading the store:")
            notes.extend(self.skipped)
        self.app.push_screen(HelpScreen("ttdash keys: run history",
                                        help_rows(self.app, self, self.query_one(RunsTable)),
                                        notes))


def history_app(store, *, theme: str | None = None) -> TTDashApp:
    """The run-history TUI over an opened `history.store.Store`."""
    return TTDashApp(lambda: HistoryScreen(store), theme=theme)
