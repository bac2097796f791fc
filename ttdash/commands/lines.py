"""`watch` and `demo` without a terminal: the live feed as plain lines on stdout (the full-screen
view would draw into the pipe and wait for keys that never come)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from .common import inert_line

#: Without a change, a line at most this often says the watch is still on (seconds).
QUIET_WAKE_S = 0.5


def live_line(view) -> str:  # view: model.View
    from ..format import fmt_mhz, fmt_us

    tot = view.totals()
    arch = (f"; {view.trace.arch.name} {fmt_mhz(view.trace.clock_mhz)}"
            if view.trace.arch_detected and view.trace.clock_mhz else "")
    return (f"live: {tot['ops']:,} ops, device time {fmt_us(tot['device_time_us'])}, gaps "
            f"{fmt_us(tot['op_to_op_us'])}{arch}")


class LinePrinter:
    """The feed's updates and notes as one line each."""

    def __init__(self, out: TextIO, record: Callable[[Path], str] | None = None,
                 feed=None) -> None:  # feed: live.feed.LiveFeed (a multi-host run's ranks)
        self.out = out
        self.record = record
        self.feed = feed
        self.started = time.time()
        self.merged: tuple[Path, ...] = ()  # the rank reports last said to merge
        self.reports: list[Path] = []  # complete reports seen, in order
        self._announced: set[tuple[Path, bool]] = set()
        self._last_live = ""

    def line(self, text: object) -> None:
        self.out.write(inert_line(text) + "\n")
        self.out.flush()

    def update(self, view, notes: list) -> None:
        from ..live.feed import RanksChanged
        from ..live.watcher import ReportRemoved, ReportSeen, SourceReset, Status
        from ..model.errors import TraceError

        # The rows came before the reports and statuses taken with them (a report ends a run):
        # their line first, unless the table itself restarted or lost a rank meanwhile.
        restarted = any(isinstance(e, (SourceReset, RanksChanged)) for e in notes)
        if view is not None and not restarted:
            self._live(view)
            view = None
        for event in notes:
            if isinstance(event, ReportSeen):
                key = (event.path, event.complete)
                if key in self._announced:
                    continue
                self._announced.add(key)
                if not event.complete:
                    self.line(f"report being written: {event.path}")
                    continue
                self.reports.append(event.path)
                self.line(f"report: {event.path}")
                if self.feed is not None and self.feed.ranks:
                    self._rank_report(event.path)
                if self.record is not None:
                    try:
                        self.line(self.record(event.path))
                    except TraceError as exc:
                        self.line(f"not recorded: {exc.oneline()}")
            elif isinstance(event, ReportRemoved):
                self._announced = {k for k in self._announced if k[0] != event.path}
                self.line(f"report removed: {event.path}")
            elif isinstance(event, SourceReset):
                self.line(f"{event.source} {event.reason}: live table restarted")
                self._last_live = ""
            elif isinstance(event, Status):
                self.line(event.message if event.level == "info"
                          else f"{event.level}: {event.message}")
            elif isinstance(event, RanksChanged):
                self.line(event.message)
        if view is not None:
            self._live(view)

    def _live(self, view) -> None:
        text = live_line(view)
        if text != self._last_live:
            self._last_live = text
            self.line(text)


    def _rank_report(self, path: Path) -> None:
        """A rank's report: the line the watch view's status says (waiting, or merged)."""
        from ..live.feed import rank_reports
        from ..model.read.discover import rank_of

        reports = rank_reports(self.feed.root, self.feed.ranks, self.started)
        if not reports.ready:
            self.line(reports.waiting_line(rank_of(path)))
        elif not set(reports.paths) <= set(self.reports):
            pass  # a rank's report not yet announced: its line first, then the merge's
        elif reports.paths != self.merged:
            self.merged = reports.paths
            self.line(f"{reports.merged_line()}: `ttdash report {self.feed.root}` merges them")


def follow_lines(root: Path, *, arch: str | None = None, poll: float | None = None,
                 refresh: float = 0.5, record: Callable[[Path], str] | None = None,
                 until: Callable[[LinePrinter], bool] | None = None, out: TextIO | None = None,
                 stop: threading.Event | None = None, what: str = "ttdash watch") -> int:
    """Follow `root` (the watch view's feed) printing lines, until `until(printer)` is true
    (exit 0), `stop` is set (0), ctrl+c (130), SIGTERM or SIGHUP (128 + the signal)."""
    from ..live.feed import LiveFeed
    from .common import no_terminal

    out = sys.stdout if out is None else out
    stop = threading.Event() if stop is None else stop
    wake = threading.Event()
    got: list[int] = []

    def on_signal(signum, frame) -> None:
        got.append(signum)
        stop.set()
        wake.set()

    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, on_signal)
    feed = LiveFeed(root, arch=arch, refresh=refresh, poll=poll, follow_ranks=True)
    printer = LinePrinter(out, record, feed)
    missing = no_terminal() or "the output"
    printer.line(f"{what}: following {root} as lines ({missing} is not a terminal); ctrl+c "
                 "stops")
    try:
        feed.start(wake.set)
        while not stop.is_set():
            wake.wait(QUIET_WAKE_S)
            wake.clear()
            view, _, notes = feed.take()
            printer.update(view, notes)
            if until is not None and until(printer):
                return 0
    except KeyboardInterrupt:
        return 130
    finally:
        feed.stop()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 + got[0] if got else 0
