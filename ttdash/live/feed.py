"""The live feed of a profiler directory: watcher, tailers, the one source rule and the live
model, in a thread of its own (`LiveFeed`, for watch, demo and run), or read once (`read_live`, for
`watch --once` and `run --no-tui`'s summary). Every consumer counts the same ops. No Textual here.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..model.live import LiveModel, LiveSources, is_live_header
from .tailer import CsvTailer
from .watcher import _read_header


@dataclass
class LiveSnapshot:
    model: LiveModel
    sources: LiveSources
    paths: list[Path]  # every live source found (shown or not)
    skipped: int = 0  # malformed rows left out (wrong field count, repeated header)
    skipped_lines: list[tuple[Path, int]] = field(default_factory=list)  # the first few


def live_sources(root: Path) -> list[Path]:
    """`root/.logs/*.csv` files that are live sources, by name."""
    logs = root / ".logs"
    try:
        names = sorted(e.name for e in os.scandir(logs) if e.name.endswith(".csv"))
    except OSError:
        return []
    out = []
    for name in names:
        header = _read_header(logs / name)
        if header is not None and is_live_header(header):
            out.append(logs / name)
    return out


def read_live(root: Path, arch: str | None = None, snapshot=None) -> LiveSnapshot:
    """Every live row under `root/.logs` now, through the one source rule (rows of a second
    source describing the same programs are counted in `sources.ignored`, not twice)."""
    model = LiveModel(root, arch)
    sources = LiveSources(snapshot)
    paths = live_sources(root)
    skipped, where = 0, []
    for path in paths:
        with CsvTailer(path) as tailer:
            while True:
                res = tailer.poll()
                skipped += res.bad_rows
                where += [(path, ln) for ln in res.bad_lines[:10 - len(where)]]
                if res.header and res.rows:
                    rows, lines = sources.filter(path, res.header, res.rows, res.lines)
                    if rows:
                        model.add_rows(path, res.header, rows, lines)
                if not res.more:
                    break
    return LiveSnapshot(model, sources, paths, skipped, where)


class LiveFeed:
    """The live pipeline of a watched profiler directory, off the UI thread.

    The watcher's thread reads the files; this feed's thread applies its events: rows through
    the one source rule (`LiveSources`) into the live model, resets, and the other events kept
    as notes. At most every `refresh` seconds (at once when the last update is older) it
    analyses the new rows and calls `notify()`; the UI then `take()`s the latest view and the
    notes. `notify` must be thread-safe and cheap (a coalescing UI message)."""

    def __init__(self, root: Path, *, arch: str | None = None, refresh: float = 0.5,
                 poll: float | None = None, sources: LiveSources | None = None,
                 ranks: list[tuple[int, Path]] | None = None) -> None:
        """`ranks`: a multi-host run's (rank, profiler dir): every rank's `.logs` is watched
        into the one table (rows in arrival order with their rank; each rank has its own
        one-source rule); `root` is then the run's root."""
        from .watcher import ProfilerWatcher

        self.root = root
        rank_of_dir = {Path(d).absolute(): r for r, d in ranks or ()}
        self.model = LiveModel(root, arch, ranks=rank_of_dir)
        self.sources = sources if sources is not None else LiveSources(
            group=(lambda p: rank_of_dir.get(Path(p).absolute().parent.parent))
            if rank_of_dir else None)
        self.refresh = max(0.05, refresh)
        self._in: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._notes: list = []
        self._view = None
        self._added = 0
        self._dirty = False
        self._last_flush = 0.0
        self.rate = 0.0  # rows/s at the last update
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._notify = lambda: None
        self.watchers = [ProfilerWatcher(d, self._in.put, poll_interval=poll)
                         for d in ([d for _, d in ranks] if ranks else [root])]

    # ------------------------------------------------------------ lifecycle
    def start(self, notify) -> LiveFeed:
        self._notify = notify
        self._thread = threading.Thread(target=self._run, name="ttdash-live-feed", daemon=True)
        self._thread.start()
        for w in self.watchers:
            w.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for w in self.watchers:
            w.stop()
        self._in.put(None)  # wake the loop
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    # ------------------------------------------------------------ the UI's side
    def take(self):
        """(the latest live View or None when unchanged, rows added since, notes)."""
        with self._lock:
            view, added, notes = self._view, self._added, self._notes
            self._view, self._added, self._notes = None, 0, []
        return view, added, notes

    # ------------------------------------------------------------ the feed's thread
    def _run(self) -> None:
        while not self._stop.is_set():
            due = self._last_flush + self.refresh - time.monotonic()
            try:
                event = self._in.get(timeout=max(0.01, due) if self._dirty else 0.5)
            except queue.Empty:
                event = None
            if event is not None:
                self._apply(event)
                # a burst: take what is already queued before analysing
                for _ in range(QUEUE_BATCH):
                    try:
                        nxt = self._in.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is not None:
                        self._apply(nxt)
            lagging = self._in.qsize() > QUEUE_HIGH_WATER  # analysis lags the files: back off
            for w in self.watchers:
                if lagging:
                    w.pause_reading()
                else:
                    w.resume_reading()
            if self._dirty and time.monotonic() >= self._last_flush + self.refresh:
                self._flush()

    def _apply(self, event) -> None:
        from .watcher import RowsAppended, SourceReset

        if isinstance(event, RowsAppended):
            lines = event.lines or list(range(event.first_line,
                                              event.first_line + len(event.rows)))
            rows, lines = self.sources.filter(event.source, event.header, event.rows, lines)
            if rows and self.model.add_rows(event.source, event.header, rows, lines):
                with self._lock:
                    self._added += len(rows)
                self._dirty = True
            return
        if isinstance(event, SourceReset):
            if not self.sources.reset(event.source):
                return  # a source the table does not show restarted: nothing changes
            self.model.reset(event.source)
            self._dirty = True
        with self._lock:
            self._notes.append(event)
        self._notify_soon()

    def _notify_soon(self) -> None:
        if not self._dirty:
            self._notify()  # a note with no rows: tell the UI now

    def _flush(self) -> None:
        view = self.model.view()  # the analysis of the new rows happens here, not in the UI
        self.rate = self.model.rate()
        with self._lock:
            self._view = view
        self._dirty = False
        self._last_flush = time.monotonic()
        self._notify()


#: Events applied before an analysis; above the high-water mark the watcher stops reading.
QUEUE_BATCH = 2000
QUEUE_HIGH_WATER = 4000
