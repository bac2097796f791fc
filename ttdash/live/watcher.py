"""Watch a profiler directory and turn what the profiler writes into plain events.

Threads: watchdog's observer only *wakes* one worker thread; the worker does all reading, so a burst
of file-system events costs one pass. The worker also runs on a timer as a safety net (missed
events, network file systems). ``on_event`` is called from the worker thread only.

The watcher never writes under the watched root: files are opened read-only, nothing is created.

Size: one class, the watcher's state machine (root lifecycle, logs, reports, observer fallback),
whose state is guarded together by its worker thread; split, it would spread that state over files.
"""

from __future__ import annotations

import csv
import logging
import os
import stat
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from ..model.read.discover import RunInfo, find_reports, is_live_header, report_is_complete
from .tailer import CsvTailer

__all__ = [
    "ProfilerWatcher",
    "RowsAppended",
    "SourceReset",
    "ReportSeen",
    "ReportRemoved",
    "Status",
    "WatchEvent",
    "LIVE_LOG_NAME",
    "ROOT_DELETED",
]

log = logging.getLogger(__name__)


def quiet_watchdog() -> None:
    """watchdog 7 warns when its recursive registration adds a directory created meanwhile a
    second time ("Callback with id ... already exists ... It will be Overwritten"): harmless
    (the watch is replaced by an equal one) and nothing the user can act on."""
    warnings.filterwarnings("ignore", message=r"Callback with id .* already exists",
                            category=RuntimeWarning, module=r"watchdog\.")

LIVE_LOG_NAME = "cpp_device_perf_report.csv"
#: SourceReset.reason when the whole watched directory went away.
ROOT_DELETED = "root directory deleted"
#: A report written while we watch is "ready" once its last line is whole and either its writer
#: closed it (inotify close-write, seen with this very content) and it stayed unchanged for
#: ``report_settle`` s, or it stayed unchanged for this long (polling mode, or no close event:
#: the profiler writes reports in chunks, and a pause at a line end is not the end).
REPORT_QUIET_S = 3.0
_LOGS_DIR = ".logs"
_EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
]
_IGNORED_EVENT_TYPES = frozenset({"opened", "closed_no_write"})


# ------------------------------------------------------------------ events
@dataclass(frozen=True)
class RowsAppended:
    """Complete new rows of ``source``; ``lines[i]`` is the line number of ``rows[i]``
    (header = 1)."""

    source: Path
    header: list[str]
    rows: list[list[str]]
    first_line: int
    lines: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SourceReset:
    """``source`` was truncated, deleted or replaced: drop every row received from it."""

    source: Path
    reason: str


@dataclass(frozen=True)
class ReportSeen:
    """A report appeared or changed; ``complete`` once it is whole and has stopped changing."""

    path: Path
    complete: bool
    info: RunInfo | None = None


@dataclass(frozen=True)
class ReportRemoved:
    """A report previously announced by :class:`ReportSeen` is gone."""

    path: Path


@dataclass(frozen=True)
class Status:
    """Something the user should know about the watch itself."""

    level: Literal["info", "warning", "error"]
    message: str


WatchEvent = RowsAppended | SourceReset | ReportSeen | ReportRemoved | Status


# ---------------------------------------------------------- internal state
@dataclass
class _Source:
    tailer: CsvTailer
    permanent: bool  # the main live log: kept even while missing
    stall_since: float | None = None
    stall_size: int = -1
    stall_warned: bool = False
    error: str | None = None
    bad_warned: bool = False


@dataclass
class _Report:
    sig: tuple[int, int, int]  # (inode, size, mtime_ns)
    checked: float  # monotonic time of the last signature change
    emitted: bool | None = None  # last `complete` announced; None = nothing announced yet
    stall_warned: bool = False
    written_while_watched: bool = False  # appeared or changed after the first scan


class _Wake(FileSystemEventHandler):
    """Watchdog handler: a meaningful event only sets flags; the worker does the work."""

    def __init__(self, wake: threading.Event, logs_dir: Path) -> None:
        super().__init__()
        self._wake = wake
        self._logs_prefix = str(logs_dir) + os.sep
        #: Set when an event touched something outside .logs/ (a report may have changed).
        self.reports_dirty = True
        #: path -> (inode, size, mtime_ns) of the file when a writer closed it (inotify's
        #: IN_CLOSE_WRITE): the report writer is done with exactly that content.
        self.closed: dict[str, tuple[int, int, int]] = {}

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENT_TYPES:
            return
        if event.event_type == "closed" and not event.is_directory:
            path = os.fsdecode(event.src_path)
            try:
                st = os.stat(path)
                self.closed[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                pass
        for p in (event.src_path, getattr(event, "dest_path", "")):
            if p and not os.fsdecode(p).startswith(self._logs_prefix):
                self.reports_dirty = True
        self._wake.set()


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0]


def _dir_ident(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _nearest_existing_parent(path: Path) -> Path:
    p = path.absolute()
    while True:
        parent = p.parent
        if _dir_ident(parent) is not None or parent == p:
            return parent
        p = parent


class ProfilerWatcher:
    """Watch a profiler root (``generated/profiler``) and report new rows and reports.

    ``poll_interval`` or ``force_polling`` selects watchdog's ``PollingObserver``; otherwise the
    native observer is tried first and polling is the fallback. ``on_event`` runs on the worker
    thread; an exception from it becomes a :class:`Status` and the watcher carries on.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        on_event: Callable[[WatchEvent], Any],
        poll_interval: float | None = None,
        force_polling: bool = False,
        *,
        safety_interval: float = 1.0,
        max_rows_per_event: int = 50_000,
        stall_warning: float = 5.0,
        report_settle: float = 0.3,
        report_quiet: float = REPORT_QUIET_S,
        min_pass_interval: float = 0.05,
    ) -> None:
        self.root = Path(root).absolute()
        self.on_event = on_event
        self.poll_interval = poll_interval
        self.force_polling = force_polling or poll_interval is not None
        self.safety_interval = safety_interval
        self.max_rows_per_event = max(1, max_rows_per_event)
        self.stall_warning = stall_warning
        self.report_settle = report_settle
        self.report_quiet = report_quiet
        self._first_report_scan = True
        self._created_wall = time.time()  # reports modified since were written while we watch
        self.min_pass_interval = min_pass_interval

        self._wake = threading.Event()
        self._stop = threading.Event()
        self._reading = threading.Event()
        self._reading.set()
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._worker: threading.Thread | None = None
        self._observer: BaseObserver | None = None
        self._polling = False
        self._watch: ObservedWatch | None = None
        self._watch_target: tuple[Path, tuple[int, int] | None] | None = None
        self._handler = _Wake(self._wake, self.root / _LOGS_DIR)
        self._timer_due = True  # the safety timer (or the first pass) asks for a full check

        self._root_ident: tuple[int, int] | None = None
        self._waiting_reported = False
        self._sources: dict[Path, _Source] = {}
        # path -> (inode, size) judged not live
        self._ignored_logs: dict[Path, tuple[int, int]] = {}
        self._early: list[WatchEvent] = []  # statuses raised before the worker runs
        self._reports: dict[Path, _Report] = {}
        self._next_report_check: float | None = None
        self._last_errors: dict[str, str] = {}
        self.passes = 0  # worker passes so far (for tests and diagnostics)
        self._last_pass = 0.0  # monotonic start of the last pass

    # ------------------------------------------------------------ lifecycle
    @property
    def polling(self) -> bool:
        """True when a PollingObserver is in use."""
        return self._polling

    def start(self) -> ProfilerWatcher:
        """Start the observer and the worker thread."""
        with self._lock:
            if self._started or self._stopped:
                return self
            self._started = True
        quiet_watchdog()
        self._sources[self.root / _LOGS_DIR / LIVE_LOG_NAME] = _Source(
            CsvTailer(self.root / _LOGS_DIR / LIVE_LOG_NAME), permanent=True
        )
        self._make_observer()
        self._worker = threading.Thread(target=self._run, name="ttdash-live-worker", daemon=True)
        self._worker.start()
        return self

    def stop(self) -> None:
        """Stop all threads and release files; safe to call twice or from ``on_event``."""
        with self._lock:
            if self._stopped or not self._started:
                self._stopped = True
                return
            self._stopped = True
        self._stop.set()
        self._wake.set()
        self._reading.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        obs = self._observer
        if obs is not None:
            try:
                obs.stop()
                if obs.is_alive():
                    obs.join()
            except Exception:  # pragma: no cover - shutdown best effort
                log.debug("observer stop failed", exc_info=True)
        if worker is None or worker is not threading.current_thread():
            self._close_sources()

    def __enter__(self) -> ProfilerWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pause_reading(self) -> None:
        """Stop reading files (data waits on disk; nothing is lost)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        """Resume after :meth:`pause_reading`."""
        self._reading.set()
        self._wake.set()

    def wake(self) -> None:
        """Ask the worker for a pass now."""
        self._wake.set()

    # ------------------------------------------------------------- observer
    def _make_observer(self) -> None:
        if not self.force_polling:
            try:
                from watchdog.observers import Observer

                obs = Observer()
                obs.start()
                self._observer, self._polling = obs, False
                return
            except Exception as exc:  # inotify instance limit, unsupported platform, ...
                self._early.append(
                    Status("warning",
                           f"native file watching unavailable ({_one_line(exc)}); polling")
                )
        self._start_polling()

    def _start_polling(self) -> None:
        obs = PollingObserver(timeout=self.poll_interval or 1.0)
        obs.start()
        self._observer, self._polling = obs, True

    def _switch_to_polling(self, exc: BaseException) -> None:
        old = self._observer
        self._emit(Status("warning",
                          f"native file watching failed ({_one_line(exc)}); polling instead"))
        if old is not None:
            try:
                old.stop()
                old.join()
            except Exception:  # pragma: no cover
                pass
        self._watch = None
        self._watch_target = None
        self._start_polling()

    def _ensure_watch(self, path: Path, recursive: bool) -> None:
        """Point the (single) watch at ``path``; re-create it when the folder was replaced."""
        target = (path, _dir_ident(path))
        if self._watch is not None and self._watch_target == target:
            return
        obs = self._observer
        if obs is None:
            return
        if self._watch is not None:
            try:
                obs.unschedule(self._watch)
            except Exception:
                pass
            self._watch = None
            self._watch_target = None
        if target[1] is None:
            return
        try:
            self._watch = obs.schedule(self._handler, str(path), recursive=recursive,
                                       event_filter=_EVENT_FILTER)
        except Exception as exc:
            if self._polling:
                self._report_error("watch", f"cannot watch {path}: {_one_line(exc)}")
                return
            self._switch_to_polling(exc)
            try:
                self._watch = self._observer.schedule(  # type: ignore[union-attr]
                    self._handler, str(path), recursive=recursive, event_filter=_EVENT_FILTER
                )
            except Exception as exc2:
                self._report_error("watch", f"cannot watch {path}: {_one_line(exc2)}")
                return
        self._watch_target = target

    # --------------------------------------------------------------- worker
    def _run(self) -> None:
        try:
            for event in self._early:
                self._emit(event)
            self._early.clear()
            while not self._stop.is_set():
                self._wake.clear()
                self._reading.wait()
                if self._stop.is_set():
                    break
                self._last_pass = time.monotonic()
                try:
                    self._pass()
                except Exception as exc:  # a bug must not kill live updates
                    log.exception("watcher pass failed")
                    self._emit(Status("error", f"watcher error: {_one_line(exc)}"))
                self.passes += 1
                timeout = self.safety_interval
                if self._next_report_check is not None:
                    timeout = max(0.0, min(timeout, self._next_report_check - time.monotonic()))
                if self._stalls_pending():
                    timeout = min(timeout, max(0.05, self.stall_warning / 4))
                if not self._wake.wait(timeout):
                    self._timer_due = True
                # A burst of events costs one pass per `min_pass_interval` at most; an event
                # after a quiet spell is read at once (a write used to wait the interval too).
                rest = self._last_pass + self.min_pass_interval - time.monotonic()
                if rest > 0:
                    self._stop.wait(rest)
        finally:
            self._close_sources()

    def _pass(self) -> None:
        ident = _dir_ident(self.root)
        if ident is None:
            self._root_missing()
            return
        if self._root_ident != ident:
            if self._root_ident is not None:  # deleted and re-created between two passes
                self._drop_everything("root directory was replaced")
            self._root_ident = ident
            self._waiting_reported = False
            self._timer_due = True  # scan reports of the (new) root at once
            how = "polling" if self._polling else "native"
            self._emit(Status("info", f"watching {self.root} ({how})"))
        self._ensure_watch(self.root, recursive=True)
        self._discover_logs()
        for path in list(self._sources):
            if self._stop.is_set():
                return
            self._read_source(path)
        due = self._next_report_check is not None and time.monotonic() >= self._next_report_check
        if self._handler.reports_dirty or self._timer_due or due:
            # Cleared before the scan: an event arriving during it marks the next pass.
            self._handler.reports_dirty = False
            self._timer_due = False
            self._check_reports()

    def _root_missing(self) -> None:
        parent = _nearest_existing_parent(self.root)
        self._ensure_watch(parent, recursive=False)
        # Something created before the watch was in place sends no event: look again now.
        if _dir_ident(self.root) is not None or _nearest_existing_parent(self.root) != parent:
            self._wake.set()
        if self._root_ident is not None:
            self._root_ident = None
            self._emit(Status("warning", f"{self.root} was deleted; waiting for it to appear"))
            self._drop_everything(ROOT_DELETED)
            self._waiting_reported = True
        elif not self._waiting_reported:
            self._emit(Status("warning", f"waiting for {self.root} to appear"))
            self._waiting_reported = True

    def _drop_everything(self, reason: str) -> None:
        for path, src in list(self._sources.items()):
            had_data = src.tailer.offset > 0
            src.tailer.close()
            if had_data:
                self._emit(SourceReset(path, reason))
            if not src.permanent:
                del self._sources[path]
        self._ignored_logs.clear()
        for path, rep in list(self._reports.items()):
            if rep.emitted is not None:
                self._emit(ReportRemoved(path))
        self._reports.clear()
        self._next_report_check = None

    def _close_sources(self) -> None:
        for src in list(self._sources.values()):
            src.tailer.close()

    # ----------------------------------------------------------------- logs
    def _discover_logs(self) -> None:
        """Tail every ``.logs/*.csv`` that is a live source (``is_live_header``)."""
        logs = self.root / _LOGS_DIR
        try:
            with os.scandir(logs) as it:
                entries = [e for e in it if e.name.endswith(".csv")]
        except FileNotFoundError:
            return
        except OSError as exc:
            self._report_error("logs", f"cannot list {logs}: {_one_line(exc)}")
            return
        self._clear_error("logs")
        for entry in entries:
            path = Path(entry.path)
            if path in self._sources:
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            known = self._ignored_logs.get(path)
            if known is not None and known[0] == st.st_ino and st.st_size >= known[1]:
                self._ignored_logs[path] = (st.st_ino, st.st_size)
                continue  # same file, only grown: its first line cannot have changed
            header = _read_header(path)
            if header is None:
                continue  # header not complete yet: look again next pass
            if is_live_header(header):
                self._sources[path] = _Source(CsvTailer(path), permanent=False)
            else:
                self._ignored_logs[path] = (st.st_ino, st.st_size)

    def _read_source(self, path: Path) -> None:
        src = self._sources[path]
        tailer = src.tailer
        for _ in range(1000):  # `more` loops; bounded so stop() stays responsive
            res = tailer.poll()
            if res.reset:
                self._emit(SourceReset(path, res.reason or "reset"))
                src.stall_since, src.stall_warned, src.bad_warned = None, False, False
            if res.error:
                if res.error != src.error:
                    src.error = res.error
                    level = "error"
                    self._emit(Status(level, f"{path}: {res.error}"))
                return
            if src.error is not None:
                src.error = None
                self._emit(Status("info", f"{path}: readable again"))
            if res.missing:
                if not src.permanent:
                    tailer.close()
                    del self._sources[path]
                return
            if res.bad_rows and not src.bad_warned:
                src.bad_warned = True
                shown = ", ".join(str(n) for n in res.bad_lines[:5])
                more = "..." if len(res.bad_lines) > 5 else ""
                self._emit(
                    Status("warning", f"{path.name}: skipping malformed rows (wrong field count), "
                                      f"line {shown}{more}")
                )
            if res.rows and res.header is not None:
                step = self.max_rows_per_event
                for i in range(0, len(res.rows), step):
                    lines = res.lines[i : i + step]
                    self._emit(RowsAppended(path, res.header, res.rows[i : i + step], lines[0],
                                            lines))
            if not res.more or self._stop.is_set():
                break
        self._check_stall(path, src)

    def _check_stall(self, path: Path, src: _Source) -> None:
        """Warn once when a file stays cut mid-line for longer than ``stall_warning``."""
        tailer = src.tailer
        if tailer.pending_bytes == 0:
            src.stall_since, src.stall_warned = None, False
            return
        now = time.monotonic()
        if src.stall_since is None or src.stall_size != tailer.offset:
            src.stall_since, src.stall_size = now, tailer.offset
            return
        if not src.stall_warned and now - src.stall_since > self.stall_warning:
            src.stall_warned = True
            self._emit(
                Status(
                    "warning",
                    f"{path.name} stopped growing mid-line {now - src.stall_since:.0f} s ago "
                    f"({tailer.pending_bytes} bytes waiting for a newline)",
                )
            )

    def _stalls_pending(self) -> bool:
        return any(s.stall_since is not None and not s.stall_warned for s in self._sources.values())

    # -------------------------------------------------------------- reports
    def _check_reports(self) -> None:
        now = time.monotonic()
        self._next_report_check = None
        seen: set[Path] = set()
        for info in find_reports(self.root):
            path = info.path
            seen.add(path)
            try:
                st = os.stat(path)
            except OSError:
                continue
            sig = (st.st_ino, st.st_size, st.st_mtime_ns)
            rep = self._reports.get(path)
            if rep is None or rep.sig != sig:
                if rep is None:
                    rep = self._reports[path] = _Report(sig, now)
                    rep.written_while_watched = (not self._first_report_scan
                                                 or st.st_mtime >= self._created_wall)
                else:
                    rep.sig, rep.checked, rep.stall_warned = sig, now, False
                    rep.written_while_watched = True
                if not report_is_complete(path) and rep.emitted is not False:
                    rep.emitted = False
                    self._emit(ReportSeen(path, False, info))
                elif rep.emitted is True:  # changed after being complete: being rewritten
                    rep.emitted = False
                    self._emit(ReportSeen(path, False, info))
                self._schedule_report_check(now + self.report_settle)
            elif rep.emitted is not True:
                age = now - rep.checked
                closed = self._handler.closed.get(str(path)) == rep.sig
                settle = (self.report_settle if closed or not rep.written_while_watched
                          else max(self.report_settle, self.report_quiet))
                if age < settle:
                    self._schedule_report_check(rep.checked + settle)
                elif report_is_complete(path):
                    rep.emitted = True
                    self._emit(ReportSeen(path, True, info))
                else:
                    if rep.emitted is None:
                        rep.emitted = False
                        self._emit(ReportSeen(path, False, info))
                    if age > self.stall_warning and not rep.stall_warned:
                        rep.stall_warned = True
                        self._emit(
                            Status("warning", f"{path.name} stopped growing before it was "
                                              f"complete ({age:.0f} s)")
                        )
                    elif not rep.stall_warned:
                        self._schedule_report_check(rep.checked + self.stall_warning + 0.05)
        self._first_report_scan = False
        for path in [p for p in self._reports if p not in seen]:
            rep = self._reports.pop(path)
            if rep.emitted is not None:
                self._emit(ReportRemoved(path))

    def _schedule_report_check(self, when: float) -> None:
        if self._next_report_check is None or when < self._next_report_check:
            self._next_report_check = when

    # -------------------------------------------------------------- helpers
    def _emit(self, event: WatchEvent) -> None:
        if self._stop.is_set():
            return  # stop() was called (perhaps by on_event itself): deliver nothing more
        try:
            self.on_event(event)
        except Exception as exc:
            log.exception("on_event raised for %r", type(event).__name__)
            if not isinstance(event, Status):
                try:
                    self.on_event(Status("error", f"event handler failed: {_one_line(exc)}"))
                except Exception:
                    pass

    def _report_error(self, key: str, message: str) -> None:
        if self._last_errors.get(key) != message:
            self._last_errors[key] = message
            self._emit(Status("error", message))

    def _clear_error(self, key: str) -> None:
        self._last_errors.pop(key, None)


def _read_header(path: Path, limit: int = 1 << 20) -> list[str] | None:
    """The first line of ``path`` split as CSV, or None while it is incomplete or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        buf = b""
        while len(buf) < limit:
            chunk = os.pread(fd, 1 << 16, len(buf))
            if not chunk:
                return None
            buf += chunk
            cut = buf.find(b"\n")
            if cut >= 0:
                line = buf[:cut].decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r")
                return next(csv.reader([line]), [])
        return None
    except (OSError, csv.Error):
        return None
    finally:
        os.close(fd)
