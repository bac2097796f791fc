"""`ttdash watch` and `ttdash demo`: the trace screen fed live by the profiler directory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..live import ROOT_DELETED, ReportRemoved, ReportSeen, SourceReset, Status
from ..live.feed import LiveFeed, RanksChanged, rank_reports, ranks_text
from ..model import Trace, Window
from ..model.errors import TraceError
from ..model.live.rankarch import MIXED_ARCH
from ..model.live.table import LiveSources
from ..model.read.discover import (
    find_reports,
    rank_of,
    report_is_complete,
)
from ..model.read.text import clean_text
from ..model.trace import REPLAY_COLUMN
from .app import TraceScreen, TTDashApp, summary_text
from .telemetry import TelemetryStrip
from .widgets import plain

#: what an empty live table means: the profiler writes .logs rows only when it dumps
NO_ROWS_HINT = ("no device rows yet: the profiler writes .logs at each dump "
                "(TT_METAL_PROFILER_MID_RUN_DUMP=1, ttnn.ReadDeviceProfiler) and at device close")


class FeedUpdated(Message):
    """Posted from the live feed's thread: a new view or notes are waiting (`feed.take()`).
    Repeats coalesce in the queue: a burst of updates costs the UI one refresh."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedUpdated)


class RunsScreen(ModalScreen[None]):
    """Report folders, newest first: open one, or mark a baseline and a candidate to diff."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="ttdash.runs_close"),
                Binding("j", "move(1)", "Down", show=False, id="ttdash.runs_down"),
                Binding("k", "move(-1)", "Up", show=False, id="ttdash.runs_up"),
                Binding("b", "mark('baseline')", "Baseline", id="ttdash.runs_baseline"),
                Binding("c", "mark('candidate')", "Candidate", id="ttdash.runs_candidate"),
                Binding("d", "diff", "Diff", id="ttdash.runs_diff")]
    DEFAULT_CSS = """
    RunsScreen { align: center middle; }
    RunsScreen > OptionList { width: 100; max-width: 100%; height: 80%; border: tall $primary; }
    RunsScreen > Static { width: 100; max-width: 100%; height: auto; background: $panel; }
    """

    def __init__(self, root: Path, watch: WatchScreen) -> None:
        super().__init__()
        self.root, self.watch = root, watch
        self.runs = find_reports(root)

    def compose(self):
        yield OptionList(*[Option(self._label(r), id=str(i)) for i, r in enumerate(self.runs)])
        yield Static(plain("enter open · b baseline · c candidate · d diff the two · esc close"
                           if self.runs else "No reports yet under reports/."), id="runs-help")

    def _label(self, r) -> Text:
        marks = []
        if self.watch.baseline == r.path:
            marks.append("[baseline]")
        if self.watch.candidate == r.path:
            marks.append("[candidate]")
        complete = "" if report_is_complete(r.path) else " (being written)"
        return Text.assemble(plain(r.label), ("  " + " ".join(marks), "bold"),
                             (f"  {r.size / 1e6:.1f} MB{complete}", "dim"), "\n  ",
                             plain(str(r.path.relative_to(self.root)) if r.path.is_relative_to(
                                 self.root) else str(r.path)))

    def action_move(self, step: int) -> None:
        ol = self.query_one(OptionList)
        if ol.option_count:
            cur = ol.highlighted if ol.highlighted is not None else 0
            ol.highlighted = max(0, min(ol.option_count - 1, cur + step))

    def _selected(self):
        ol = self.query_one(OptionList)
        return self.runs[ol.highlighted] if ol.highlighted is not None and self.runs else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run = self.runs[int(event.option.id)]
        self.dismiss()
        self.watch.report_manual = True
        self.watch.open_report(run.path, switch=True)

    def action_mark(self, which: str) -> None:
        run = self._selected()
        if run is None:
            return
        setattr(self.watch, which, run.path)
        ol = self.query_one(OptionList)
        keep = ol.highlighted
        ol.clear_options()
        ol.add_options([Option(self._label(r), id=str(i)) for i, r in enumerate(self.runs)])
        ol.highlighted = keep

    def action_diff(self) -> None:
        if not (self.watch.baseline and self.watch.candidate):
            self.notify("Mark a baseline (b) and a candidate (c) first", severity="warning")
            return
        if self.watch.baseline == self.watch.candidate:
            self.notify("The baseline and the candidate are the same run: mark another one as "
                        "the candidate (c)", severity="warning", markup=False)
            return
        self.dismiss()
        self.watch.open_diff(self.watch.baseline, self.watch.candidate)


class WatchScreen(TraceScreen):
    """Live op table from `.logs`, switching to the full report when it is written."""

    # The footer has room for the live keys at 80 columns: export moves to `?` and the palette.
    BINDINGS = [b if b.id != "ttdash.export" else Binding(b.key, b.action, b.description,
                                                            show=False, id=b.id)
                for b in TraceScreen.BINDINGS] + [
        Binding("f", "follow", "Follow", id="ttdash.follow"),
        Binding("p", "pause", "Pause", show=False, id="ttdash.pause"),
        Binding("R", "runs", "Runs", id="ttdash.runs"),
        Binding("L", "live", "Live", show=False, id="ttdash.live"),
    ]

    #: live rows in the order they arrive (following the tail), and a report switched to in
    #: file order, the cursor on the op it was on (the same call count)
    default_sort: str | None = None
    #: the live state the status line shows (reactives: a change redraws it, once a message)
    mode: var[str] = var("live", init=False)
    follow: var[bool] = var(True, init=False)
    paused: var[bool] = var(False, init=False)
    pending_new: var[int] = var(0, init=False)
    watch_status: var[tuple[str, str]] = var(("info", ""), init=False)  # (level, message)
    STATUS_STATE = (*TraceScreen.STATUS_STATE, "mode", "follow", "paused", "pending_new",
                    "watch_status")

    def __init__(self, root: Path, *, refresh: float = 0.5, poll: float | None = None,
                 arch: str | None = None, sources: LiveSources | None = None,
                 record: Callable[[Path], str] | None = None) -> None:
        #: a multi-host run (tt-run ranks under `root`, followed as they appear and go): one
        #: live table of every rank, then the ranks' reports merged; `root` (runs list,
        #: telemetry) is then the first rank's at the start
        self.feed = LiveFeed(root, arch=arch, refresh=refresh, poll=poll, sources=sources,
                             follow_ranks=True)
        self.top, self.ranks = root, self.feed.ranks
        if self.ranks:
            root = self.ranks[0][1]
        self.root = root
        #: --record: adds a finished report to the run history (returns the line to show)
        self.record = record
        self._recorded: set[Path] = set()
        self._record_lines: dict[Path, str] = {}  # what recording said, per report
        self._started = time.time()
        self.arch = arch
        self._merged: tuple[Path, ...] = ()  # the rank reports shown merged
        super().__init__(self.feed.model.view(), protected=(self.top, root))
        self.mode = "live"
        self.report_path: Path | None = None
        self.follow = True
        self.paused = False
        self.pending_new = 0
        self.watch_status: tuple[str, str] = ("info", f"watching {root}")  # (level, message)
        self._loading: tuple[Path, tuple[Path, ...]] | None = None  # (shown as, merged)
        self.report_manual = False  # the user picked the shown report (no auto-switch)
        self._auto_ts: float | None = None
        self.baseline: Path | None = None
        self.candidate: Path | None = None
        self._screen_mark: float | None = None  # the UI thread's CPU clock at the last refresh

    @property
    def live(self):  # the live model (its counters are safe to read from the UI)
        return self.feed.model

    @property
    def sources(self) -> LiveSources:
        return self.feed.sources

    # ------------------------------------------------------------ lifecycle
    #: Live rows have no report ID (their line in a .logs file means something else): the table
    #: shows the call count, which live rows and the report share.
    LIVE_HIDDEN = frozenset({"id"})

    def panels(self):
        """The device telemetry strip (hidden without a Tenstorrent device)."""
        yield TelemetryStrip(id="telemetry", record_for=self.root)

    def mounted(self) -> None:
        super().mounted()
        self.table.hidden_columns = self.LIVE_HIDDEN
        self.feed.start(lambda: self.post_message(FeedUpdated()))  # post_message: thread-safe
        self.update_status()

    def unmounted(self) -> None:
        self.feed.stop()
        super().unmounted()

    def on_feed_updated(self, _: FeedUpdated) -> None:
        view, added, notes = self.feed.take()
        if view is not None:
            # What the screen spent since the last refresh (that one's update and render):
            # the feed's pacer counts it in the gap between refreshes.
            now = time.thread_time()
            if self._screen_mark is not None:
                self.feed.screen_cost(now - self._screen_mark)
            self._screen_mark = now
        for note in notes:
            self._note(note)
        if view is not None:
            self._show_live(view, added)
        self.update_status()

    def _note(self, event) -> None:
        """A watcher event other than rows (the feed already applied rows and resets)."""
        if isinstance(event, RanksChanged):  # rank folders appeared or went
            self.ranks = list(event.ranks)
            self.watch_status = ("warning" if event.removed else "info", event.message)
            return
        if isinstance(event, SourceReset):
            rank = rank_of(event.source) if self.ranks else None
            if event.reason == ROOT_DELETED:  # the watcher said so just before: keep saying it
                folder = event.source.parent.parent  # the folder its watcher watched
                self.watch_status = ("warning", f"{folder} was deleted: live table cleared; "
                                     "waiting for it to appear")
            elif rank is not None:
                self.watch_status = ("warning", f"rank {rank}: {event.source.name} "
                                     f"{event.reason}: rank {rank}'s live rows restarted "
                                     "(device re-opened?)")
            else:
                self.watch_status = ("warning", f"{event.source.name} {event.reason}: live "
                                     "table restarted (device re-opened?)")
            if self.mode != "live" and self.follow and not self.report_manual \
                    and event.reason != ROOT_DELETED:
                # The live log restarted: a new run began. Following means showing it.
                self.action_live()
            return
        if isinstance(event, ReportSeen):
            if event.complete and self.ranks:
                self._rank_report(event.path)
            elif event.complete:
                ts = event.info.timestamp.timestamp() if event.info else time.time()
                newer = self._auto_ts is None or ts >= self._auto_ts
                auto = newer and (self.mode == "live" or not self.report_manual)
                if auto:
                    self._auto_ts = ts
                self.open_report(event.path, switch=auto or event.path == self.report_path)
                self._record(event.path)
            else:
                self.watch_status = ("info", f"report being written: {event.path.name}")
            return
        if isinstance(event, ReportRemoved):
            if self.mode == "report" and event.path == self.report_path:
                self.action_live()  # a deleted report must not stay on screen as if it were
            self.watch_status = ("warning", f"report removed: {event.path}")
            return
        if isinstance(event, Status):
            message = event.message
            for _, d in self.ranks:  # one watcher per rank: the run is what is watched
                message = message.replace(f"watching {d} (", f"watching {self.top} (")
            self.watch_status = (event.level, message)
            if event.level == "error":
                self.notify(event.message, severity="error", markup=False)

    # ------------------------------------------------------------ live display
    def _show_live(self, view, added: int) -> None:
        self._live_view = view
        if self.mode != "live":
            return
        if self.paused:
            self.pending_new += added
            return
        table = self.table
        if self.follow and not self.op_filter.text and self.sort_key is None and \
                not self.narrowed and len(view.ops) >= len(self.view.ops):
            self.view = view
            self.state.frame = view.ops
            table.append_rows(view.ops, np.arange(len(view.ops)), follow=True)
            self.refresh_current_view()
            self.update_header()
        else:
            if not self.follow:
                self.pending_new += added
            self.set_view(view)

    def live_view(self):
        """The latest live view the feed handed over."""
        return getattr(self, "_live_view", None) or self.feed.model.view()

    def update_header(self) -> None:
        if self.mode == "live":
            tot = self.view.totals()
            extra = f"live: {tot['ops']:,} ops · {self.feed.rate:,.0f} ops/s"
            # #summary has a fixed height: no layout of the screen (it would repaint all of it)
            self.query_one("#summary", Static).update(
                summary_text(self.view, extra, self.sort_text()), layout=False)
            self.update_status()
        else:
            super().update_header()

    def draw_status(self) -> None:
        level, message = self.watch_status
        bits = ["live" if self.mode == "live" else "report (L live, R runs)"]
        if self.mode == "live":
            bits.append("follow" if self.follow else "follow off (G resumes)")
        if self.paused:
            bits.append("PAUSED (p resumes)")
        if self.pending_new:
            bits.append(f"{self.pending_new:,} new ops")
        if self.ranks and self.mode != "live" and self.report_path == self.top:
            # before the message (the report's path, often the longest part): a narrow
            # status line cuts the path, not what was merged
            n = len(self._merged)
            bits.append(f"{n} ranks' reports merged (L live)" if n > 1
                        else "1 rank's report (L live)")
        bits.append(message)
        if self.ranks and self.mode == "live":
            bits.append(f"{len(self.ranks)} rank{'s' if len(self.ranks) > 1 else ''} live; "
                        "their reports merged once every rank has one")
        if self.mode == "live" and not len(self.view.ops):
            bits.append(NO_ROWS_HINT)
        mixed = [w.message for w in (self.view.data_warnings or []) if w.kind == MIXED_ARCH] \
            if self.mode == "live" else []
        if mixed:  # the live rows of ranks of different archs: summed, so say it here
            bits.append(mixed[0])
            level = "warning" if level == "info" else level
        note = self.sources.note()
        if note:
            bits.append(note)
        self.status_extra = " · ".join(bits)
        super().draw_status()
        status = self.query_one("#status", Static)
        status.set_class(level == "error", "-error")
        status.set_class(level == "warning", "-warning")

    DEFAULT_CSS = TraceScreen.DEFAULT_CSS + """
    WatchScreen #status.-error { color: $error; text-style: bold; }
    WatchScreen #status.-warning { color: $warning; }
    """

    # ------------------------------------------------------------ keys
    def on_op_table_cursor_moved(self, message) -> None:
        table = self.query_one("OpTable")
        if self.mode == "live" and len(table.rows):
            at_end = table.cursor >= len(table.rows) - 1
            if at_end and not self.follow:
                self.follow, self.pending_new = True, 0
            elif not at_end and self.follow:
                self.follow = False  # the user scrolled up
        # TraceScreen's handler runs too (Textual dispatches along the MRO).

    def action_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.pending_new = 0
            self.query_one("OpTable").action_last()
        self.update_status()

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.mode == "live":
            self.pending_new = 0
            self.set_view(self.live_view())
            if self.follow:
                self.query_one("OpTable").action_last()
        self.update_status()

    def action_runs(self) -> None:
        # a multi-host run's reports are its ranks': the first rank's (as the watch began with)
        root = self.root if self.root != self.top or not self.ranks else self.ranks[0][1]
        self.app.push_screen(RunsScreen(root, self))

    def action_live(self) -> None:
        self.mode, self.report_manual = "live", False
        self.table.hidden_columns = self.LIVE_HIDDEN
        self.set_view(self.live_view(), keep_state=False)
        self.query_one("OpTable").action_last()

    # ------------------------------------------------------------ reports
    def _record(self, path: Path, fresh: bool | None = None) -> None:
        """--record: add a report finished while watching (not the ones already there when the
        watch began) to the history, in a worker thread; say so in the status line. `fresh`:
        known to be (a multi-host run's root, its ranks' reports merged)."""
        if self.record is None or path in self._recorded:
            return
        if fresh is None:
            try:
                fresh = self._written_since_start(path)
            except OSError:
                return
        if not fresh:
            return
        self._recorded.add(path)
        record = self.record

        def work() -> None:
            try:
                line, level = record(path), "info"
            except TraceError as exc:
                line, level = f"not recorded: {exc.oneline()}", "error"
            self.app.call_from_thread(self._recorded_note, path, level, line)

        self.run_worker(work, thread=True, group="record")

    def _recorded_note(self, path: Path, level: str, line: str) -> None:
        self._record_lines[path] = line
        self.watch_status = (level, line)
        self.notify(str(clean_text(line)), severity="error" if level == "error" else
                    "information", markup=False)
        self.update_status()

    def _written_since_start(self, path: Path) -> bool:
        """A report written while watching (not one already there when the watch began);
        OSError when it is gone."""
        return path.stat().st_mtime >= self._started - 1.0

    def _rank_report(self, path: Path) -> None:
        """A rank of a multi-host run finished its report: the ranks' newest reports merged
        (as `report ROOT` merges them), once every rank followed has a current one
        (`live.feed.rank_reports`)."""
        reports = rank_reports(self.top, self.ranks, self._started)
        if not reports.ready:
            self.watch_status = ("info", reports.waiting_line(rank_of(path)))
            return
        if reports.paths == self._merged:
            return
        self._merged = reports.paths
        switch = self.mode == "live" or not self.report_manual
        self.open_report(self.top, switch=switch, paths=list(reports.paths))
        if reports.fresh:
            self._record(self.top, fresh=True)

    def open_report(self, path: Path, switch: bool, paths: list[Path] | None = None) -> None:
        """Load a report in a worker thread and switch the view to it; a report not switched
        to is only announced (R lists the runs)."""
        if not switch:
            self.watch_status = ("info", f"new report {path.name} (R lists runs)")
            self.notify(str(clean_text(f"New report: {path}")), markup=False)
            return
        key = (path, tuple(paths or ()))  # a merge of other ranks' reports is another load
        if self._loading == key:
            return
        self._loading = key
        self.watch_status = ("info", f"merging the reports of {self._ranks_of(paths)}…"
                             if paths else f"loading report {path.name}…")

        def load() -> None:
            try:
                trace = Trace.load_many(paths, arch=self.arch, columns="all") if paths else \
                    Trace.load(path, arch=self.arch, columns="all")
                view = trace.view(Window("all"))
            except TraceError as exc:
                self.app.call_from_thread(self._report_failed, key, exc.oneline())
                return
            self.app.call_from_thread(self._report_loaded, key, view)

        self.run_worker(load, thread=True, group="report")

    @staticmethod
    def _ranks_of(paths) -> str:
        return ranks_text([(rank_of(p), None) for p in paths or ()])

    def _report_failed(self, key: tuple[Path, tuple[Path, ...]], message: str) -> None:
        if key != self._loading:
            return  # superseded by a newer load
        self._loading = None
        self.watch_status = ("error", message)
        self.update_status()

    def _report_loaded(self, key: tuple[Path, tuple[Path, ...]], view) -> None:
        if key != self._loading:
            return  # superseded by a newer load
        self._loading = None
        path, merged = key
        current = self.query_one("OpTable").current_row()
        self.mode, self.report_path = "report", path
        self.paused, self.pending_new = False, 0
        self.set_view(view, keep_state=False)
        self.table.hidden_columns = frozenset()
        # Keep the op under the cursor (following or not): live rows and the report share
        # GLOBAL CALL COUNT, the "Call" column both show.
        pos = same_op(view, current) if current else None
        if pos is not None:
            table = self.table
            at = np.flatnonzero(table.rows == pos)
            if len(at):
                table.cursor = int(at[0])
                table.scroll_to(y=max(0, table.cursor - table.body_height // 2), animate=False)
        shown = str(path.relative_to(self.root)) if path.is_relative_to(self.root) \
            and path != self.root else str(path)
        if merged:
            shown = f"merged report of {self._ranks_of(merged)} ({len(view.op_rows):,} ops)"
        recorded = self._record_lines.get(path)  # --record finished first: keep saying so
        level = "info"
        mixed = [w.message for w in view.warnings() if w.kind == MIXED_ARCH]
        if mixed:  # ranks of different archs: say so where the eye is, not only in the header
            level, shown = "warning", f"{shown} · {mixed[0]}"
        self.watch_status = (level, f"{shown} · {recorded}" if recorded else shown)
        self.notify(str(clean_text(f"Report ready: switched to {path.name}")), markup=False)
        self.update_status()

    def open_diff(self, baseline: Path, candidate: Path) -> None:
        try:
            from .diffview import diff_screen_for_paths
        except ImportError:
            self.notify("diff view unavailable; run `ttdash diff A B`", severity="error")
            return
        try:
            self.app.push_screen(diff_screen_for_paths(baseline, candidate, arch=self.arch))
        except TraceError as exc:
            self.notify(exc.oneline(), severity="error", markup=False)


def same_op(view, live: dict) -> int | None:
    """The report's row (a position in `view.ops`) of the live row `live`: a row with its
    GLOBAL CALL COUNT; of several (a metal trace's capture has the call count and no device
    data, each replay has it again, with device data), one with device data, then the one whose
    device time is the live row's (the same run of the op), else the last replayed one (the
    live table follows the newest rows)."""
    gcc = live.get("global_call_count")
    if gcc is None or gcc != gcc:
        return None
    ops = view.ops
    hit = np.flatnonzero(ops["global_call_count"].to_numpy() == gcc)
    if len(hit) < 2:
        return int(hit[0]) if len(hit) else None
    dev = ops["device_time_us"].to_numpy(dtype="float64", na_value=np.nan)[hit]
    if (~np.isnan(dev)).any():
        hit, dev = hit[~np.isnan(dev)], dev[~np.isnan(dev)]
    mine = live.get("device_time_us")
    if mine is not None and mine == mine:
        same = np.flatnonzero(np.isclose(dev, float(mine), rtol=1e-9, atol=1e-3))
        if len(same):
            return int(hit[same[0]])
    again = hit[replayed(view, hit)]
    return int(again[-1]) if len(again) else int(hit[0])


def replayed(view, pos: np.ndarray) -> np.ndarray:
    """Which of the ops at `pos` are metal-trace replays (a METAL TRACE REPLAY SESSION ID)."""
    ordered = view.trace.ordered
    if REPLAY_COLUMN not in ordered.columns or "ID" not in ordered.columns:
        return np.zeros(len(pos), dtype=bool)
    session = pd.to_numeric(ordered[REPLAY_COLUMN], errors="coerce")
    by_id = pd.Series(session.to_numpy(), index=ordered["ID"].to_numpy())
    by_id = by_id[~by_id.index.duplicated()]
    got = by_id.reindex(view.ops["id"].to_numpy()[pos]).to_numpy(dtype="float64")
    return ~np.isnan(got)


def watch_app(root: Path, *, refresh: float = 0.5, poll: float | None = None,
              arch: str | None = None, theme: str | None = None,
              record: Callable[[Path], str] | None = None) -> TTDashApp:
    return TTDashApp(lambda: WatchScreen(root, refresh=refresh, poll=poll, arch=arch,
                                         record=record),
                     theme=theme)
