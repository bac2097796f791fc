"""`ttdash run`: the watch view of the profiler directory while a workload we started writes it,
with the workload's output in a log panel and its state under the table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Log, Static

from ..model.analysis.ttlang import TtlangLog
from ..runner import LiveSources, LogsSnapshot, Workload, WorkloadError, snapshot_logs
from .app import TTDashApp, run_guarded
from .watch import WatchScreen
from .widgets import ConfirmScreen, plain

#: The log panel keeps this many lines; a larger backlog only writes its newest ones.
LOG_MAX_LINES = 5000
TTLANG_LINES = 6  # kernels shown in the tt-lang panel (the latest)
#: At most this often the output backlog is moved into the panel: a chatty workload then costs
#: one panel update per interval, whatever its line rate, and runs at terminal speed.
DRAIN_INTERVAL_S = 0.1


class WorkloadWake(Message):
    """Posted from the workload's reader threads: output or the exit is waiting."""


class RunScreen(WatchScreen):
    """WatchScreen + the workload: its output (``o``), its state line, stopping it."""

    BINDINGS = [b for b in WatchScreen.BINDINGS if b.id != "ttdash.original_order"] + [
        Binding("o", "toggle_output", "Output", id="ttdash.run_output"),
        Binding("O", "original_order", "Orig order", show=False, id="ttdash.original_order"),
        Binding("ctrl+c", "stop_workload", "Stop", show=False, priority=True,
                id="ttdash.run_stop"),
    ]
    DEFAULT_CSS = """
    RunScreen #output { height: 10; max-height: 40%; border-top: solid $panel-lighten-2;
                        border-title-color: $text-muted; padding: 0 1; }
    RunScreen #ttlang { height: auto; max-height: 6; background: $panel; padding: 0 1;
                        display: none; }
    RunScreen #workload { height: 1; background: $panel; padding: 0 1; text-wrap: nowrap;
                          text-overflow: ellipsis; }
    RunScreen #workload.-running { color: $accent; }
    RunScreen #workload.-ok { color: $success; }
    RunScreen #workload.-failed { color: $error; text-style: bold; }
    """

    def __init__(self, root: Path, workload: Workload, *, refresh: float = 0.5,
                 poll: float | None = None, arch: str | None = None,
                 snapshot: LogsSnapshot | None = None,
                 record: Callable[[Path], str] | None = None) -> None:
        super().__init__(root, refresh=refresh, poll=poll, arch=arch,
                         sources=LiveSources(snapshot), record=record)
        self.workload = workload
        self._snapshot = snapshot
        self._wl_wake = threading.Event()
        self._last_drain = 0.0
        self._confirming = False
        self.quit_when_done = False
        self.doctor_note = ""  # health.doctor's warnings, set when mounted
        self.ttlang = TtlangLog()
        self.exit_summary: str | None = None

    # ------------------------------------------------------------ layout
    def panels(self):
        yield from super().panels()
        yield Static(id="ttlang")  # tt-lang's kernel summaries, when the workload prints them
        yield Log(id="output", max_lines=LOG_MAX_LINES, highlight=False)
        yield Static(id="workload")

    def mounted(self) -> None:
        from ..health.doctor import run_checks, warnings_line

        # the host's problems up front, in the workload line (sysfs reads: no prompt, no delay)
        self.doctor_note = warnings_line(run_checks())
        log = self.query_one("#output", Log)
        log.border_title = "workload output (o hides)"
        log.can_focus = False  # keys stay with the op table
        self.workload.listener = self._signal_workload
        if self.workload.state == "new" and self._snapshot is None:
            # rows already in .logs are not this run's (the feed has not started yet)
            self.feed.sources = LiveSources(snapshot_logs(self.root))
        super().mounted()  # the table, then the live feed
        if self.workload.state == "new":
            try:
                self.workload.start()
            except WorkloadError as exc:
                self.notify(str(exc), severity="error", markup=False)
        self.set_interval(1.0, self.update_workload_line)  # elapsed time, source notes
        self._drain_workload()

    def unmounted(self) -> None:
        super().unmounted()
        if self.sources.snapshot is not None:
            self.sources.snapshot.close()
        self.workload.listener = None
        self.workload.terminate()  # never leave it running behind a closed UI

    # ------------------------------------------------------------ the workload's events
    def _signal_workload(self) -> None:  # reader / waiter threads
        if not self._wl_wake.is_set():
            self._wl_wake.set()
            self.post_message(WorkloadWake())  # thread-safe

    def on_workload_wake(self, _: WorkloadWake) -> None:
        wait = self._last_drain + DRAIN_INTERVAL_S - time.monotonic()
        if wait > 0:
            self.set_timer(wait, self._drain_after_wait)
        else:
            self._wl_wake.clear()
            self._drain_workload()

    def _drain_after_wait(self) -> None:
        self._wl_wake.clear()
        self._drain_workload()

    def _drain_workload(self) -> None:
        self._last_drain = time.monotonic()
        lines, exited = self.workload.drain()
        changed = False
        for ln in lines:
            changed |= self.ttlang.feed(ln.text)
        if changed:
            panel = self.query_one("#ttlang", Static)
            panel.update(plain("\n".join(self.ttlang.summary_lines()[-TTLANG_LINES:])))
            panel.display = True
        if lines:
            # Lines beyond the panel's capacity would be pruned at once: skip writing them.
            self.query_one("#output", Log).write_lines(
                [ln.text for ln in lines[-LOG_MAX_LINES:]])
        if exited is not None:
            self._workload_exited(exited)
        self.update_workload_line()

    def _workload_exited(self, exited) -> None:
        self.exit_summary = f"workload {exited.summary}"
        self.query_one("#output", Log).write_line(f"[ttdash] {self.exit_summary}")
        if self.quit_when_done:
            self.app.exit(return_code=exited.exit_code)
            return
        severity = ("information" if exited.exit_code == 0 else
                    "warning" if self.workload.terminating else "error")
        reason = self.no_rows_reason()
        self.notify(self.exit_summary + (f"; {reason.split(' · ', 1)[1]}" if reason else ""),
                    severity="warning" if reason and severity == "information" else severity,
                    timeout=10, markup=False)
        self.update_status()

    def no_rows_reason(self) -> str | None:
        """After the workload ended with no live row and no report: what `run --no-tui` says
        (the device profiler off, or no device opened) and where to look, instead of "waiting
        for ... to appear" under an empty table; None otherwise (rows arriving after the exit
        take the message back)."""
        from ..model.live.table import NO_ROWS

        if self.workload.state not in ("exited", "failed") or self.live.total_rows \
                or self.mode != "live" or self.report_path is not None:
            return None
        return (f"workload ended · no live rows in {self.root / '.logs'} ({NO_ROWS}); "
                "`ttdash doctor` checks this host")

    def draw_status(self) -> None:
        reason = self.no_rows_reason()
        if reason is None:
            super().draw_status()
            return
        kept, self.watch_status = self.watch_status, ("warning", reason)
        try:
            super().draw_status()
        finally:
            self.watch_status = kept

    def update_workload_line(self) -> None:
        w = self.workload
        line = self.query_one("#workload", Static)
        ok = w.exit_code == 0
        icon = {"running": "▶", "exited": "✔" if ok else "✘"}.get(w.state, "✘")
        text = Text.assemble((f"{icon} workload {w.describe()}", "bold"), "  ",
                             plain(w.command))
        note = " · ".join(x for x in (self.sources.note(), self.doctor_note) if x)
        if w.lines_dropped:
            note = " · ".join(x for x in (note, f"{w.lines_dropped:,} output lines dropped") if x)
        if note:
            text.append(" · ")
            text.append_text(plain(note))
        text.no_wrap, text.overflow = True, "ellipsis"
        line.update(text)
        line.set_class(w.state == "running", "-running")
        line.set_class(w.state == "exited" and w.exit_code == 0, "-ok")
        line.set_class(w.state == "failed" or (w.state == "exited" and w.exit_code != 0),
                       "-failed")

    # Live rows of this run only: WatchScreen._apply filters through self.sources, which this
    # screen makes snapshot-aware (rows already in .logs before the run are left out).

    # ------------------------------------------------------------ keys
    def action_toggle_output(self) -> None:
        log = self.query_one("#output", Log)
        log.display = not log.display

    def action_stop_workload(self) -> None:
        """ctrl+c: stop the running workload (after a y/n) and keep its results on screen;
        once it has ended, quit."""
        if self.workload.running:
            self.ask_stop(quit_after=False)
        else:
            self.app.exit(return_code=self.workload.exit_code or 0)

    def ask_stop(self, quit_after: bool) -> None:
        w = self.workload
        if self._confirming:
            return
        if w.terminating:
            if quit_after:  # asked again while it stops: quit now (the caller kills the rest)
                self.app.exit(return_code=w.exit_code or 0)
            return
        self._confirming = True
        what = "Stop it and quit" if quit_after else "Stop it"
        question = (f"The workload is still running (pid {w.pid}). {what}? (SIGTERM to its "
                    f"process group, SIGKILL after {w.grace:g} s)")

        def answered(yes: bool | None) -> None:
            self._confirming = False
            if not yes:
                return
            if quit_after:
                if not w.running:
                    self.app.exit(return_code=w.exit_code or 0)
                    return
                self.quit_when_done = True
            w.terminate()
            self.update_workload_line()

        self.app.push_screen(ConfirmScreen(question), answered)


class RunApp(TTDashApp):
    """The app of `ttdash run`: quitting (q, ctrl+q) while the workload runs asks first."""

    def __init__(self, root: Path, workload: Workload, *, refresh: float = 0.5,
                 poll: float | None = None, arch: str | None = None, theme: str | None = None,
                 snapshot: LogsSnapshot | None = None,
                 record: Callable[[Path], str] | None = None) -> None:
        self.workload = workload
        self.run_screen = RunScreen(root, workload, refresh=refresh, poll=poll, arch=arch,
                                    snapshot=snapshot, record=record)
        super().__init__(lambda: self.run_screen, theme=theme)

    async def action_quit(self) -> None:
        if self.workload.running:
            self.run_screen.ask_stop(quit_after=True)
            return
        self.exit(return_code=self.workload.exit_code or 0)


def run_app(root: Path, workload: Workload, *, refresh: float = 0.5, poll: float | None = None,
            arch: str | None = None, theme: str | None = None,
            snapshot: LogsSnapshot | None = None,
            record: Callable[[Path], str] | None = None) -> RunApp:
    """The app; it starts ``workload`` when its screen is mounted unless it was started."""
    return RunApp(root, workload, refresh=refresh, poll=poll, arch=arch, theme=theme,
                  snapshot=snapshot, record=record)


def run_tui(spec, *, refresh: float = 0.5, poll: float | None = None,
            theme: str | None = None, record: Callable[[Path], str] | None = None) -> int:
    """`ttdash run` on a terminal; the workload's exit code."""
    from ..model.errors import TraceError

    spec.snapshot = snapshot_logs(spec.root)
    workload = Workload(spec.argv, env=spec.env(capture=True), grace=spec.grace)
    app = run_app(spec.root, workload, refresh=refresh, poll=poll, arch=spec.arch, theme=theme,
                  snapshot=spec.snapshot, record=record)
    # (a bad theme fails above, before the workload starts)
    try:
        workload.start()
    except WorkloadError as exc:
        raise TraceError(None, str(exc)) from None

    try:
        # A lost terminal or SIGTERM: the workload, in its own session, would not get the
        # signal, so stop it (SIGTERM, SIGKILL after the grace) before anything else.
        run_guarded(app, cleanup=workload.stop)
    finally:
        workload.stop()
        spec.snapshot.close()
    code = workload.exit_code
    return 1 if code is None else code
