"""`ttdash watch` and `ttdash demo`: the trace screen fed live by the profiler directory."""

from __future__ import annotations

import json
import queue
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..format import fmt_us
from ..live import (ProfilerWatcher, ReportRemoved, ReportSeen, RowsAppended, SourceReset,
                    Status)
from ..model import Trace, Window
from ..model.discover import find_reports, report_is_complete, resolve_profiler_dir
from ..model.errors import TraceError
from ..model.live import LiveModel, LiveSources
from .app import TraceScreen, TTDashApp, run_guarded, summary_text
from .widgets import plain

MAX_EVENTS_PER_TICK = 400
QUEUE_HIGH_WATER = 200


class Wake(Message):
    """Posted from the watcher thread: something is waiting in the queue."""


class RunsScreen(ModalScreen[None]):
    """Report folders, newest first: open one, or mark a baseline and a candidate to diff."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="ttdash.runs_close"),
                Binding("b", "mark('baseline')", "Baseline", id="ttdash.runs_baseline"),
                Binding("c", "mark('candidate')", "Candidate", id="ttdash.runs_candidate"),
                Binding("d", "diff", "Diff", id="ttdash.runs_diff")]
    DEFAULT_CSS = """
    RunsScreen { align: center middle; }
    RunsScreen > OptionList { width: 100; max-width: 100%; height: 80%; border: tall $primary; }
    RunsScreen > Static { width: 100; max-width: 100%; height: auto; background: $panel; }
    """

    def __init__(self, root: Path, watch: "WatchScreen") -> None:
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
                             (str(r.path.relative_to(self.root)) if r.path.is_relative_to(
                                 self.root) else str(r.path), "dim"))

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
        self.dismiss()
        self.watch.open_diff(self.watch.baseline, self.watch.candidate)


class WatchScreen(TraceScreen):
    """Live op table from `.logs`, switching to the full report when it is written."""

    BINDINGS = TraceScreen.BINDINGS + [
        Binding("f", "follow", "Follow", id="ttdash.follow"),
        Binding("p", "pause", "Pause", id="ttdash.pause"),
        Binding("R", "runs", "Runs", id="ttdash.runs"),
        Binding("L", "live", "Live", show=False, id="ttdash.live"),
    ]

    def __init__(self, root: Path, *, refresh: float = 0.5, poll: float | None = None,
                 arch: str | None = None) -> None:
        self.root = root
        self.live = LiveModel(root, arch)
        self.sources = LiveSources()
        self.arch = arch
        super().__init__(self.live.view(), protected=(root,))
        self.refresh_s = max(0.05, refresh)
        self.poll = poll
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.watcher: ProfilerWatcher | None = None
        self.mode = "live"
        self.report_path: Path | None = None
        self.follow = True
        self.paused = False
        self.pending_new = 0
        self.watch_status: tuple[str, str] = ("info", f"watching {root}")  # (level, message)
        self._wake_sent = threading.Event()
        self._tick_pending = False
        self._last_tick = 0.0
        self._loading: Path | None = None
        self.report_manual = False  # the user picked the shown report (no auto-switch)
        self._auto_ts: float | None = None
        self.baseline: Path | None = None
        self.candidate: Path | None = None

    # ------------------------------------------------------------ lifecycle
    def on_mount(self) -> None:  # Textual runs TraceScreen.on_mount first (MRO dispatch)
        self.watcher = ProfilerWatcher(self.root, self._on_watch_event,
                                       poll_interval=self.poll)
        self.watcher.start()
        self.update_status()

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    def _on_watch_event(self, event) -> None:  # watcher thread
        self.events.put(event)
        if self.events.qsize() > QUEUE_HIGH_WATER and self.watcher is not None:
            self.watcher.pause_reading()  # the UI lags: back off
        if not self._wake_sent.is_set():
            self._wake_sent.set()
            self.post_message(Wake())  # thread-safe

    def on_wake(self, _: Wake) -> None:
        """Refresh now if the last refresh is older than the interval, else when it is due."""
        self._schedule(max(0.0, self._last_tick + self.refresh_s - time.monotonic()))

    def _schedule(self, delay: float) -> None:
        if self._tick_pending:
            return
        self._tick_pending = True
        if delay <= 0.001:
            self.call_later(self._tick)
        else:
            self.set_timer(delay, self._tick)

    def _tick(self) -> None:
        self._tick_pending = False
        self._wake_sent.clear()
        self._last_tick = time.monotonic()
        added = 0
        for _ in range(MAX_EVENTS_PER_TICK):
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                break
            added += self._apply(event)
        if self.watcher is not None and self.events.qsize() < QUEUE_HIGH_WATER // 2:
            self.watcher.resume_reading()
        if added:
            self._show_live(added)
        self.update_status()
        if not self.events.empty():
            self._wake_sent.set()
            self._schedule(self.refresh_s)

    def _apply(self, event) -> int:
        if isinstance(event, RowsAppended):
            lines = event.lines or list(range(event.first_line, event.first_line
                                              + len(event.rows)))
            # One live source feeds the table (the hook's CSV and cpp_device_perf_report.csv
            # describe the same programs: both would count every op twice).
            rows, lines = self.sources.filter(event.source, event.header, event.rows, lines)
            return self.live.add_rows(event.source, event.header, rows, lines) if rows else 0
        if isinstance(event, SourceReset):
            if not self.sources.reset(event.source):
                return 0  # a source we do not show restarted: the table stays
            self.live.reset(event.source)
            self.watch_status = ("warning", f"{event.source.name} {event.reason}: live table "
                                 "restarted (device re-opened?)")
            if self.mode == "live":
                self.set_view(self.live.view())
            return 0
        if isinstance(event, ReportSeen):
            if event.complete:
                ts = event.info.timestamp.timestamp() if event.info else time.time()
                newer = self._auto_ts is None or ts >= self._auto_ts
                auto = newer and (self.mode == "live" or not self.report_manual)
                if auto:
                    self._auto_ts = ts
                self.open_report(event.path, switch=auto or event.path == self.report_path)
            else:
                self.watch_status = ("info", f"report being written: {event.path.name}")
            return 0
        if isinstance(event, ReportRemoved):
            self.watch_status = ("warning", f"report removed: {event.path}")
            return 0
        if isinstance(event, Status):
            self.watch_status = (event.level, event.message)
            if event.level == "error":
                self.notify(event.message, severity="error")
        return 0

    # ------------------------------------------------------------ live display
    def _show_live(self, added: int) -> None:
        if self.mode != "live":
            return
        if self.paused:
            self.pending_new += added
            return
        view = self.live.view()
        table = self.query_one("OpTable")
        if self.follow and not self.op_filter.text and self.sort_key is None and \
                not self.narrowed:
            self.view = view
            self.rows = np.arange(len(view.ops))
            table.append_rows(view.ops, self.rows, follow=True)
            self.update_header()
        else:
            if not self.follow:
                self.pending_new += added
            self.set_view(view)

    def update_header(self) -> None:
        if self.mode == "live":
            tot = self.view.totals()
            extra = (f"live: {tot['ops']:,} ops · {self.live.rate():,.0f} ops/s · "
                     f"device time so far {fmt_us(tot['device_time_us'])}")
            self.query_one("#summary", Static).update(summary_text(self.view, extra))
            self.update_status()
        else:
            super().update_header()

    def update_status(self) -> None:
        level, message = self.watch_status
        bits = ["live" if self.mode == "live" else "report (L live, R runs)"]
        if self.mode == "live":
            bits.append("follow" if self.follow else "follow off (G resumes)")
        if self.paused:
            bits.append("PAUSED (p resumes)")
        if self.pending_new:
            bits.append(f"{self.pending_new:,} new ops")
        bits.append(message)
        note = self.sources.note()
        if note:
            bits.append(note)
        self.status_extra = " · ".join(bits)
        super().update_status()
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
            self.set_view(self.live.view())
            if self.follow:
                self.query_one("OpTable").action_last()
        self.update_status()

    def action_runs(self) -> None:
        self.app.push_screen(RunsScreen(self.root, self))

    def action_live(self) -> None:
        self.mode, self.report_manual = "live", False
        self.set_view(self.live.view(), keep_state=False)
        self.query_one("OpTable").action_last()

    # ------------------------------------------------------------ reports
    def open_report(self, path: Path, switch: bool) -> None:
        """Load a report in a worker thread and switch the view to it; a report not switched
        to is only announced (R lists the runs)."""
        if not switch:
            self.watch_status = ("info", f"new report {path.name} (R lists runs)")
            self.notify(f"New report: {path}")
            return
        if self._loading == path:
            return
        self._loading = path
        self.watch_status = ("info", f"loading report {path.name}…")

        def load() -> None:
            try:
                view = Trace.load(path, arch=self.arch, columns="all").view(Window("all"))
            except TraceError as exc:
                self.app.call_from_thread(self._report_failed, path, exc.oneline())
                return
            self.app.call_from_thread(self._report_loaded, path, view)

        self.run_worker(load, thread=True, group="report")

    def _report_failed(self, path: Path, message: str) -> None:
        if path != self._loading:
            return  # superseded by a newer load
        self._loading = None
        self.watch_status = ("error", message)
        self.update_status()

    def _report_loaded(self, path: Path, view) -> None:
        if path != self._loading:
            return  # superseded by a newer load
        self._loading = None
        current = self.query_one("OpTable").current_row()
        gcc = current.get("global_call_count") if current else None
        self.mode, self.report_path = "report", path
        self.paused, self.pending_new = False, 0
        self.set_view(view, keep_state=False)
        if gcc is not None and gcc == gcc and not self.follow:
            # Keep the op the user was looking at: live rows and the report share GLOBAL CALL
            # COUNT.
            hit = np.flatnonzero(view.ops["global_call_count"].to_numpy() == gcc)
            if len(hit):
                self.query_one("OpTable").cursor = int(np.searchsorted(self.rows, hit[0]))
        self.watch_status = ("info", str(path.relative_to(self.root)) if path.is_relative_to(
            self.root) else str(path))
        self.notify(f"Report ready: switched to {path.name}")
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
            self.notify(exc.oneline(), severity="error")


def watch_app(root: Path, *, refresh: float = 0.5, poll: float | None = None,
              arch: str | None = None, theme: str | None = None) -> TTDashApp:
    return TTDashApp(lambda: WatchScreen(root, refresh=refresh, poll=poll, arch=arch),
                     theme=theme)


def watch_state(root: Path, arch: str | None = None) -> dict:
    """The `watch --once` snapshot: runs found and the live rows so far (read-only)."""
    from ..live import CsvTailer

    live = LiveModel(root, arch)
    logs = root / ".logs"
    sources = []
    if logs.is_dir():
        for p in sorted(logs.glob("*.csv")):
            if p.name.startswith("profile_log_device"):
                continue
            with CsvTailer(p) as tailer:
                res = tailer.poll()
                while True:
                    if res.header and res.rows:
                        live.add_rows(p, res.header, res.rows, res.lines)
                    if not res.more:
                        break
                    res = tailer.poll()
            sources.append(str(p))
    view = live.view()
    tot = view.totals()
    return {
        "root": str(root), "exists": root.is_dir(),
        "runs": [{"path": str(r.path), "name": r.name, "timestamp": r.timestamp.isoformat(),
                  "size": r.size, "complete": report_is_complete(r.path)}
                 for r in find_reports(root)],
        "live": {"sources": sources, "rows": int(live.total_rows), "ops": tot["ops"],
                 "device_time_us": tot["device_time_us"], "op_to_op_us": tot["op_to_op_us"],
                 "devices": view.trace.devices, "arch": view.trace.arch.name if live.total_rows
                 else None},
    }


def run_watch(args) -> int:
    root = resolve_profiler_dir(args.dir)
    if args.poll is not None and args.poll <= 0:
        raise TraceError(None, "--poll must be a positive number of seconds")
    if args.once:
        state = watch_state(root, args.arch)
        if args.format == "json":
            json.dump(state, sys.stdout, indent=None)
            sys.stdout.write("\n")
        else:
            live = state["live"]
            print(f"{root}: {'exists' if state['exists'] else 'missing'}; "
                  f"{len(state['runs'])} report(s); live: {live['ops']} ops, "
                  f"device time {fmt_us(live['device_time_us'])}")
            for r in state["runs"]:
                print(f"  {r['timestamp']}  {r['path']}{'' if r['complete'] else ' (partial)'}")
        return 0
    run_guarded(watch_app(root, refresh=args.refresh, poll=args.poll, arch=args.arch,
                          theme=args.theme))
    return 0


def run_demo(args) -> int:
    from ..sim import simulate_run

    if args.ops <= 0:
        raise TraceError(None, "--ops must be positive")
    temp = args.dir is None
    base = Path(tempfile.mkdtemp(prefix="ttdash-demo-")) if temp else Path(args.dir)
    root = base / "generated" / "profiler" if temp else base
    root.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    kwargs = dict(n_ops=args.ops, speed=args.speed, arch=args.arch, devices=args.devices,
                  stop=stop)
    try:
        if args.once:
            report = simulate_run(root, **kwargs)
            view = Trace.load(report).view(Window("all"))
            tot = view.totals()
            json.dump({"dir": str(root), "report": str(report), "arch": view.trace.arch.name,
                       "ops": tot["ops"], "device_time_us": tot["device_time_us"],
                       "op_to_op_us": tot["op_to_op_us"],
                       "signposts": int(len(view.trace.signposts))}, sys.stdout)
            sys.stdout.write("\n")
            return 0
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                simulate_run(root, **kwargs)
            except BaseException as exc:  # shown by the watch status line
                errors.append(exc)

        thread = threading.Thread(target=writer, name="ttdash-demo-writer", daemon=True)
        thread.start()
        def cleanup() -> None:
            stop.set()
            if temp:
                shutil.rmtree(base, ignore_errors=True)

        run_guarded(watch_app(root, arch=None, theme=args.theme), cleanup)
        stop.set()
        thread.join(timeout=5)
        return 0
    finally:
        stop.set()
        if temp:
            shutil.rmtree(base, ignore_errors=True)
