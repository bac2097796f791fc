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

from ..model.errors import TraceError
from ..model.live.ranks import RankedLiveModel
from ..model.live.table import LiveModel, LiveSources, is_live_header
from ..model.read.discover import find_ranks, find_reports, rank_of, resolve_trace_paths
from .pacer import RefreshPacer
from .tailer import CsvTailer
from .watcher import (
    LIVE_LOG_NAME,
    ROOT_DELETED,
    ProfilerWatcher,
    RowsAppended,
    SourceReset,
    Status,
    _read_header,
)


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


@dataclass(frozen=True)
class RanksChanged:
    """The ranks of a multi-host run followed now changed: rank folders appeared (followed from
    then on) or went (their rows dropped, the other ranks' kept). `message` says so."""

    ranks: tuple[tuple[int, Path], ...]  # (rank, its profiler dir) followed now, by rank
    added: tuple[int, ...]
    removed: tuple[int, ...]
    message: str


@dataclass(frozen=True)
class RankReports:
    """The newest report of every rank of a multi-host run, and whether they merge now."""

    paths: tuple[Path, ...]  # every rank's newest report, by rank; () while one has none
    waiting: tuple[int, ...]  # ranks whose report is not their current run's yet
    fresh: bool  # every one written since the watch began

    @property
    def ready(self) -> bool:
        return bool(self.paths) and not self.waiting

    def waiting_line(self, rank: int | None) -> str:
        who = f"{ranks_text([(r, None) for r in self.waiting])}'s report" if self.waiting \
            else "the other ranks' reports"
        return f"report of rank {rank} ready: waiting for {who}"

    def merged_line(self) -> str:
        return f"merged report of {ranks_text([(rank_of(p), None) for p in self.paths])}"


def rank_reports(top: Path, ranks: list[tuple[int, Path]], started: float) -> RankReports:
    """Every rank's newest report (as `report ROOT` merges them) and which ranks are still
    waited for: a report counts once written since `started` (the watch's start), or when it
    is not older than its rank's live log (that rank's run ended before the watch began);
    when none was written since the start (a watch begun after the run), all of them do."""
    try:
        paths = tuple(resolve_trace_paths(top))
        fresh = [p.stat().st_mtime >= started - 1.0 for p in paths]
        current = [f or _not_older_than_its_log(p) for p, f in zip(paths, fresh)]
    except (TraceError, OSError):  # a rank without a report yet (or one being replaced)
        return RankReports((), tuple(r for r, d in ranks if not find_reports(d)), False)
    waiting = tuple(r for p, c in zip(paths, current) if not c and (r := rank_of(p)) is not None)
    return RankReports(paths, waiting if any(fresh) else (), all(fresh))


def _not_older_than_its_log(report: Path) -> bool:
    """`report` was written after its rank's live log last grew: the report of the run that
    log holds, not one of an earlier run."""
    folder = report
    while folder.name != "reports" and folder.parent != folder:
        folder = folder.parent
    try:
        return report.stat().st_mtime >= (folder.parent / ".logs" / LIVE_LOG_NAME).stat(
            ).st_mtime
    except FileNotFoundError:
        return True  # no live log: nothing says the report is older than its run


def ranks_text(ranks) -> str:
    """"ranks 0, 1", "rank 0" or "no rank"."""
    nums = [str(r) for r, _ in ranks]
    if not nums:
        return "no rank"
    return f"rank{'s' if len(nums) > 1 else ''} {', '.join(nums)}"


class LiveFeed:
    """The live pipeline of a watched profiler directory, off the UI thread.

    The watchers' threads read the files; this feed's thread applies their events: rows through
    the one source rule (`LiveSources`) into the live model, resets, and the other events kept
    as notes. When rows come it analyses them and calls `notify()` (at once after a quiet
    spell; while rows keep coming, a gap apart that `RefreshPacer` adapts to what a refresh
    costs, never more than `refresh` seconds); the UI then `take()`s the latest view and the
    notes, and says what showing it cost (`screen_cost`). `notify` must be thread-safe and
    cheap (a coalescing UI message).

    A multi-host run (tt-run's `ttrun/rank<N>/`, `find_ranks`): one watcher per rank's folder
    into the one table. With `follow_ranks` the root is looked at again every `rank_scan`
    seconds (two directory listings; whatever the observer, so the polling fallback too): a rank
    folder that appears is followed from then on (also when the watch began before the launcher
    made any), one that goes is no longer followed and only its rows are dropped; each change is
    a `RanksChanged` note."""

    def __init__(self, root: Path, *, arch: str | None = None, refresh: float = 0.5,
                 poll: float | None = None, sources: LiveSources | None = None,
                 ranks: list[tuple[int, Path]] | None = None, follow_ranks: bool = False,
                 rank_scan: float | None = None) -> None:
        """`ranks`: a multi-host run's (rank, profiler dir) (default with `follow_ranks`: the
        ones under `root` now): every rank's `.logs` is watched into the one table (rows in
        arrival order with their rank; each rank has its own one-source rule); `root` is then
        the run's root. Without ranks, `root` itself is watched as one profiler dir."""
        self.root = root
        self.poll = poll
        self.follow_ranks = follow_ranks
        self.rank_scan = rank_scan if rank_scan is not None else (
            max(0.05, poll) if poll else RANK_SCAN_S)
        self.refresh = max(0.05, refresh)
        #: the gap between two refreshes: at most `refresh`, shorter when refreshing is cheap
        self.pacer = RefreshPacer(most=self.refresh)
        self._rows_since = 0  # rows applied since the last refresh
        self._measured: tuple[int, float] | None = None  # (rows, CPU s) of the last refresh
        self._screen_cost = 0.0  # CPU s the screen reported since the last refresh
        self._in: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._notes: list = []
        self._view = None
        self._added = 0
        self._dirty = False
        self._last_flush = 0.0
        self._next_scan = 0.0
        self._scan_error: str | None = None
        self.rate = 0.0  # rows/s at the last update
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._notify = lambda: None
        self._wlock = threading.Lock()  # the watchers: added and removed by the feed's thread
        self._started = False
        #: watched dir -> (its token, its watcher); events of a watcher no longer here are
        #: dropped (a rank that went may still have some queued)
        self._watchers: dict[Path, tuple[object, ProfilerWatcher]] = {}
        if ranks is None and follow_ranks:
            ranks = self._find_ranks() or []
        self.model = RankedLiveModel(root, arch, ranks={d: r for r, d in ranks or ()})
        self.sources = sources if sources is not None else LiveSources()
        for d in [d for _, d in ranks] if ranks else [root]:
            self._add_watcher(Path(d))

    @property
    def ranks(self) -> list[tuple[int, Path]]:
        """The ranks followed now, (rank, profiler dir) by rank ([] for one profiler dir)."""
        return sorted((r, d) for d, r in self.model.ranks.items())

    @property
    def sources(self) -> LiveSources:
        """The one source rule of the table (`run` sets its own before the start)."""
        return self._sources

    @sources.setter
    def sources(self, value: LiveSources) -> None:
        # a rank's sources are a group of their own; the others (the root's) one together
        value.group = self.model.rank_of_source
        self._sources = value

    @property
    def watchers(self) -> list[ProfilerWatcher]:
        with self._wlock:
            return [w for _, w in self._watchers.values()]

    def _find_ranks(self) -> list[tuple[int, Path]] | None:
        """The rank folders under the root now; None when it cannot be listed."""
        try:
            found = find_ranks(self.root, strict=True)
        except OSError as exc:
            message = f"cannot list {self.root}: {exc.strerror or exc}"
            if message != self._scan_error:
                self._scan_error = message
                self._note(Status("error", message))
            return None
        self._scan_error = None
        return [(r, Path(d).absolute()) for r, d in found]

    def _add_watcher(self, path: Path) -> None:
        token = object()
        watcher = ProfilerWatcher(path, lambda e, t=token: self._in.put((t, e)),
                                  poll_interval=self.poll)
        with self._wlock:
            if self._stop.is_set():
                return
            self._watchers[Path(path).absolute()] = (token, watcher)
            if self._started:
                watcher.start()

    def _remove_watcher(self, path: Path) -> None:
        with self._wlock:
            entry = self._watchers.pop(Path(path).absolute(), None)
        if entry is not None:
            entry[1].stop()

    # ------------------------------------------------------------ lifecycle
    def start(self, notify) -> LiveFeed:
        self._notify = notify
        self._thread = threading.Thread(target=self._run, name="ttdash-live-feed", daemon=True)
        self._thread.start()
        with self._wlock:
            self._started = True
            for _, w in self._watchers.values():
                w.start()
        return self

    def stop(self) -> None:
        with self._wlock:
            self._stop.set()  # no watcher added from now on
        self._in.put(None)  # wake the loop
        for w in self.watchers:
            w.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for w in self.watchers:  # one the feed's thread added meanwhile
            w.stop()

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
            now = time.monotonic()
            wait = max(0.01, self.pacer.wait(now, self._last_flush)) if self._dirty else 0.5
            if self.follow_ranks:
                wait = max(0.01, min(wait, self._next_scan - now))
            try:
                event = self._in.get(timeout=wait)
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
            if self.follow_ranks and time.monotonic() >= self._next_scan \
                    and not self._stop.is_set():
                self._next_scan = time.monotonic() + self.rank_scan
                self._scan_ranks()
            lagging = self._in.qsize() > QUEUE_HIGH_WATER  # analysis lags the files: back off
            for w in self.watchers:
                if lagging:
                    w.pause_reading()
                else:
                    w.resume_reading()
            if self._dirty and self.pacer.due(time.monotonic(), self._last_flush):
                self._flush()

    def _scan_ranks(self) -> None:
        """Follow the rank folders that appeared, stop following the ones that went."""
        found = self._find_ranks()
        if found is None:
            return
        now = {d: r for r, d in found}
        added = [(r, d) for d, r in now.items() if d not in self.model.ranks]
        removed = [(r, d) for d, r in self.model.ranks.items() if now.get(d) != r]
        if not added and not removed:
            return
        for r, d in removed:
            self._drop_rank(r, d)
        for r, d in added:  # a watch of the root itself (begun before any rank) stays
            self.model.ranks[d] = r
            self._add_watcher(d)
        self._ranks_note([r for r, _ in added], removed)

    def _drop_rank(self, rank: int, folder: Path) -> None:
        """Stop following a rank: its watcher stopped, its rows dropped, the others kept."""
        self._remove_watcher(folder)
        self.model.drop_rank(rank)
        self.sources.chosen_by_group.pop(rank, None)
        for path in [p for p in self.sources.ignored if self.model.rank_of_source(p) == rank]:
            del self.sources.ignored[path]
        self.model.ranks.pop(folder, None)
        self._dirty = True

    def _ranks_note(self, added: list[int], removed: list[tuple[int, Path]]) -> None:
        bits = []
        if removed:
            gone = ", ".join(f"rank {r} ({d})" for r, d in removed)
            bits.append(f"{gone} {'were' if len(removed) > 1 else 'was'} deleted: "
                        f"{'their' if len(removed) > 1 else 'its'} rows dropped")
        if added:
            bits.append(f"{ranks_text([(r, None) for r in added])} appeared")
        ranks = tuple(self.ranks)
        message = "; ".join(bits) + f"; following {ranks_text(ranks)} of {self.root}"
        self._note(RanksChanged(ranks, tuple(added), tuple(r for r, _ in removed), message))

    def _note(self, event) -> None:
        with self._lock:
            self._notes.append(event)
        self._notify_soon()

    def _apply(self, item) -> None:
        token, event = item
        with self._wlock:
            folder = next((d for d, (t, _) in self._watchers.items() if t is token), None)
        if folder is None:
            return  # a watcher stopped since (a rank that went): nothing of it counts
        if isinstance(event, Status) and self.follow_ranks and folder in self.model.ranks \
                and not folder.is_dir():
            # A rank's folder went (its watcher says "waiting for it to appear"): look for
            # the ranks now, so the status says the rank was dropped, not a folder awaited
            # beside "2 ranks live" until the next scan.
            self._next_scan = 0.0
            return
        if isinstance(event, RowsAppended):
            lines = event.lines or list(range(event.first_line,
                                              event.first_line + len(event.rows)))
            left_out = self.sources.stale + sum(self.sources.ignored.values())
            rows, lines = self.sources.filter(event.source, event.header, event.rows, lines)
            if rows and self.model.add_rows(event.source, event.header, rows, lines):
                with self._lock:
                    self._added += len(rows)
                self._rows_since += len(rows)
                self._dirty = True
            elif self.sources.stale + sum(self.sources.ignored.values()) != left_out:
                self._notify_soon()  # rows set aside change only the status note: redraw it
            return
        if isinstance(event, SourceReset):
            rank = self.model.rank_of_source(event.source)
            if rank is not None and event.reason == ROOT_DELETED:
                # a rank's folder went: that rank only, whichever noticed first (its watcher
                # or the scan); a folder made again is followed again by the next scan
                folder = Path(event.source).absolute().parent.parent
                self._drop_rank(rank, folder)
                self._ranks_note([], [(rank, folder)])
                return
            if not self.sources.reset(event.source):
                return  # a source the table does not show restarted: nothing changes
            if self.model.ranks:
                self.model.drop_rank(rank)  # that rank's rows (or the root's) start over
            else:
                self.model.reset(event.source)
            self._dirty = True
        self._note(event)

    def _notify_soon(self) -> None:
        if not self._dirty:
            self._notify()  # a note with no rows: tell the UI now

    def screen_cost(self, seconds: float) -> None:
        """The UI's seconds for showing a refresh (thread-safe): counted in the next gap."""
        with self._lock:
            self._screen_cost += seconds

    def _flush(self) -> None:
        with self._lock:
            screen, self._screen_cost = self._screen_cost, 0.0
        if self._measured is not None:  # the previous refresh, with what the screen reported
            self.pacer.observe(self._measured[0], self._measured[1] + screen)
        # CPU time of this thread, as the screen's part is: the budget is a share of a core.
        # (Wall time grew with the other processes' load: on a shared machine the gap went to
        # --refresh and every row waited it. Nothing piles up when refreshes come faster than
        # they can be done: each one takes every row applied since, and the screen's message
        # coalesces.)
        start, cpu = time.monotonic(), time.thread_time()
        view = self.model.view()  # the analysis of the new rows happens here, not in the UI
        self.rate = self.model.rate()
        with self._lock:
            self._view = view
        self._dirty = False
        self._measured = (self._rows_since, time.thread_time() - cpu)
        self._rows_since = 0
        # the gap runs from this refresh's start: rows that came during its analysis wait the
        # gap less that analysis (from its end, a refresh every gap + its own time: the fixed
        # cost's share of a core was below the budget, and every row waited the difference)
        self._last_flush = start
        self._notify()


#: Events applied before an analysis; above the high-water mark the watcher stops reading.
QUEUE_BATCH = 2000
QUEUE_HIGH_WATER = 4000
#: Seconds between two looks for rank folders that appeared or went (`--poll` when given).
RANK_SCAN_S = 0.5
