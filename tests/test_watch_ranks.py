"""Multi-host watch (issue #37.6): rank folders followed as they appear and go. A watch begun
before the launcher made the rank folders, a rank that appears later, a rank deleted mid-run
(only its rows go), the status naming the right rank; and `watch DIR --once` on a directory it
cannot read (#37.8)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import run_ttdash, wait_until

from ttdash.cli import main
from ttdash.commands.lines import follow_lines
from ttdash.live.feed import LiveFeed, RanksChanged
from ttdash.live.watcher import Status
from ttdash.model import Trace, Window
from ttdash.model.live.ranks import RankedLiveModel
from ttdash.model.read.discover import resolve_trace_paths
from ttdash.sim import (
    cpp_device_rows,
    generate_ops,
    simulate_run,
    write_cpp_device_csv,
    write_report_csv,
)
from ttdash.tui.watch import watch_app

ROWS = {r: cpp_device_rows(generate_ops(900, seed=10 + r)) for r in (0, 1, 2)}


def write_rank(folder: Path, rank: int, start: int, stop: int) -> Path:
    """Rows start..stop of `rank`'s run appended to `folder/.logs` (as the profiler dumps)."""
    log = folder / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True, exist_ok=True)
    write_cpp_device_csv(ROWS[rank].iloc[start:stop], log, append=log.exists())
    return log


class Feed:
    """A started LiveFeed and what it handed over: the latest view, every note."""

    def __init__(self, root: Path, **kw) -> None:
        self.feed = LiveFeed(root, refresh=0.05, follow_ranks=True, **kw)
        self.view = None
        self.notes: list = []
        self.feed.start(lambda: None)

    def pull(self) -> None:
        view, _, notes = self.feed.take()
        self.view = view if view is not None else self.view
        self.notes += notes

    def rows_by_rank(self) -> dict[int, int]:
        self.pull()
        if self.view is None or "rank" not in self.view.ops.columns:
            return {}
        ranks, counts = np.unique(self.view.ops["rank"].to_numpy(dtype="float64"),
                                  return_counts=True)
        return {int(r): int(n) for r, n in zip(ranks, counts)}

    def wait(self, want: dict[int, int], timeout: float = 20.0) -> None:
        """Until the table holds exactly `want` rows per rank (polled, with a deadline)."""
        deadline = time.monotonic() + timeout
        while self.rows_by_rank() != want:
            if time.monotonic() > deadline:
                raise AssertionError(f"rows by rank {self.rows_by_rank()}, wanted {want}")
            time.sleep(0.02)

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *exc) -> None:
        self.feed.stop()


@pytest.mark.parametrize("poll", [None, 0.1], ids=["native", "polling"])
def test_a_watch_begun_before_the_launcher_made_the_rank_folders_follows_every_rank(
        tmp_path, poll):
    """Stayed at 0 rows for a run that wrote 900 + 900: the watch looked for ranks once."""
    top = tmp_path / "profiler"
    top.mkdir()
    with Feed(top, poll=poll) as f:
        assert f.feed.ranks == []
        ranks = [top / "ttrun" / "rank0", top / "ttrun" / "rank1"]
        for start in range(0, 900, 300):  # both ranks dump 300 rows at a time
            for r, folder in enumerate(ranks):
                write_rank(folder, r, start, start + 300)
            f.wait({0: start + 300, 1: start + 300})
        assert [r for r, _ in f.feed.ranks] == [0, 1]
        assert f.feed.model.total_rows == 1800
        changed = [n for n in f.notes if isinstance(n, RanksChanged)]
        assert sorted(r for n in changed for r in n.added) == [0, 1]  # each once
        assert changed[-1].message.endswith(f"appeared; following ranks 0, 1 of {top}")


def test_a_rank_folder_that_appears_after_the_watch_began_is_followed(tmp_path):
    """900 of 1,800 rows: the rank made after the start was never followed."""
    top = tmp_path / "ttrun"
    write_rank(top / "rank0", 0, 0, 450)
    with Feed(top) as f:
        f.wait({0: 450})
        write_rank(top / "rank1", 1, 0, 450)
        write_rank(top / "rank0", 0, 450, 900)
        f.wait({0: 900, 1: 450})
        write_rank(top / "rank1", 1, 450, 900)
        f.wait({0: 900, 1: 900})
        assert f.feed.model.total_rows == 1800
        msg = [n.message for n in f.notes if isinstance(n, RanksChanged)]
        assert msg == [f"rank 1 appeared; following ranks 0, 1 of {top}"]


def test_deleting_one_rank_keeps_the_other_ranks_rows(tmp_path):
    """600 shown of 1,200 written: a rank's folder deleted cleared every rank's rows."""
    top = tmp_path / "ttrun"
    for r in (0, 1, 2):
        write_rank(top / f"rank{r}", r, 0, 400)
    with Feed(top) as f:
        f.wait({0: 400, 1: 400, 2: 400})
        shutil.rmtree(top / "rank1")
        f.wait({0: 400, 2: 400})
        write_rank(top / "rank0", 0, 400, 600)  # the others carry on
        write_rank(top / "rank2", 2, 400, 600)
        f.wait({0: 600, 2: 600})
        assert [r for r, _ in f.feed.ranks] == [0, 2] and f.feed.model.total_rows == 1200
        gone = [n for n in f.notes if isinstance(n, RanksChanged) and n.removed]
        assert [n.removed for n in gone] == [(1,)]
        assert gone[0].message == (f"rank 1 ({top / 'rank1'}) was deleted: its rows dropped; "
                                   f"following ranks 0, 2 of {top}")
        # its watcher's "waiting for it to appear" is not passed on beside the ranks still
        # followed: the feed looks for the ranks at once and says the rank was dropped
        assert not [n for n in f.notes if isinstance(n, Status) and "waiting for" in n.message]
        # made again (a new launch of that rank): followed again, from its new rows
        write_rank(top / "rank1", 1, 0, 100)
        f.wait({0: 600, 1: 100, 2: 600})


def test_dropping_a_rank_leaves_the_table_of_the_others(tmp_path):
    """The rows kept are analysed as if the dropped rank had never sent any: the same ops,
    totals and device numbering as a table of the other ranks only."""
    dirs = {r: (tmp_path / f"rank{r}").absolute() for r in (0, 1, 2)}
    both = RankedLiveModel(tmp_path, ranks={d: r for r, d in dirs.items()})
    only = RankedLiveModel(tmp_path, ranks={d: r for r, d in dirs.items()})
    header = list(ROWS[0].columns)
    for start in range(0, 300, 100):
        for r in (0, 1, 2):
            text = ROWS[r].iloc[start:start + 100].to_csv(index=False, header=False)
            rows = list(csv.reader(io.StringIO(text)))  # as the tailer hands them over
            lines = list(range(start + 2, start + 102))
            src = dirs[r] / ".logs" / "cpp_device_perf_report.csv"
            both.add_rows(src, header, rows, lines)
            if r != 1:
                only.add_rows(src, header, rows, lines)
        both.view()  # analysed in steps, as a live table is
    assert both.drop_rank(1) == 300 and both.total_rows == only.total_rows == 600
    a, b = both.view(), only.view()
    assert a.totals() == b.totals() and both.devices() == only.devices()
    assert set(a.ops["rank"]) == {0.0, 2.0}
    for col in ("device", "rank", "device_time_us", "op_code", "total_pct"):
        assert a.ops[col].astype(str).tolist() == b.ops[col].astype(str).tolist(), col
    assert both.drop_rank(1) == 0  # nothing of it left


async def test_watch_screen_follows_ranks_as_they_appear_and_go(tmp_path):
    """The TUI: a watch of an empty dir shows both ranks' rows once tt-run makes them, and a
    rank deleted mid-run leaves the other's rows and is the rank the status names."""
    top = tmp_path / "profiler"
    top.mkdir()
    app = watch_app(top, refresh=0.1)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        status = screen.query_one("#status")

        def shown() -> dict[int, int]:
            ranks = table._data["rank"][table.rows] if len(table.rows) else []
            r, n = np.unique(np.asarray(ranks, dtype="float64"), return_counts=True)
            return {int(k): int(v) for k, v in zip(r, n)}

        await wait_until(pilot, lambda: f"watching {top} (" in str(status.render()))
        for start in range(0, 900, 300):
            for r in (0, 1):
                write_rank(top / "ttrun" / f"rank{r}", r, start, start + 300)
            await wait_until(pilot, lambda s=start: shown() == {0: s + 300, 1: s + 300})
        assert "2 ranks live" in str(status.render())
        shutil.rmtree(top / "ttrun" / "rank1")
        # rmtree deletes the log before its folder: rank 1's rows may go first as a restarted
        # log (its watcher then says its folder went), and the rank scan drops the rank after.
        # The screen settles once the scan has: one rank live.
        await wait_until(pilot, lambda: shown() == {0: 900}
                         and "1 rank live" in str(status.render()))
        text = str(status.render())
        assert f"rank 1 ({top / 'ttrun' / 'rank1'}) was deleted: its rows dropped; " \
               f"following rank 0 of {top}" in text, text
        assert "1 rank live" in text and "rank 0 (" not in text
        assert screen.mode == "live" and len(table.rows) == 900


REPORTS = {r: generate_ops(900, seed=10 + r) for r in (0, 1)}  # the reports of ROWS' runs


def write_report(folder: Path, rank: int, stamp: str) -> Path:
    """`rank`'s report of the run whose device rows are ROWS[rank] (written in one go)."""
    path = folder / "reports" / stamp / f"ops_perf_results_{stamp}.csv"
    path.parent.mkdir(parents=True)
    return write_report_csv(REPORTS[rank], path)


@pytest.mark.parametrize("before", ["rank0_done", "no_rank"])
async def test_a_rank_that_appears_after_the_start_is_merged_when_every_rank_has_a_report(
        tmp_path, before):
    """rank0_done: rank 0's run (rows and report) ended before the watch began and rank 1 was
    launched after; the merged report never came ("waiting for rank 0" for good: its report
    was older than the watch). no_rank: the watch of a root with no rank yet: rank 0's report
    shown alone said "." in the status. Either way: once every rank followed has its report,
    the merged one (as `report ROOT` builds it: both ranks' ops) and a status line that always
    says something."""
    top = tmp_path / "ttrun"
    top.mkdir()
    if before == "rank0_done":
        write_rank(top / "rank0", 0, 0, 900)
        report = write_report(top / "rank0", 0, "2026_01_01_00_00_00")
        old = time.time() - 3600  # an hour ago: the live log's last rows, then the report
        os.utime(top / "rank0" / ".logs" / "cpp_device_perf_report.csv", (old - 1, old - 1))
        os.utime(report, (old, old))
    app = watch_app(top, refresh=0.1)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        status = screen.query_one("#status")
        said: list[str] = []

        def shown(want) -> bool:
            text = str(status.render())
            message = screen.watch_status[1].strip()
            assert text and message not in ("", "."), (text, screen.watch_status)
            said.append(message)
            return want()

        if before == "no_rank":
            await wait_until(pilot, lambda: shown(lambda: f"watching {top} (" in said[-1]))
            write_rank(top / "rank0", 0, 0, 900)
            write_report(top / "rank0", 0, "2026_01_01_00_00_00")
            await wait_until(pilot, lambda: shown(lambda: screen.mode == "report"))
            assert said[-1].startswith("merged report of rank 0 (900 ops"), said[-1]
        else:
            await wait_until(pilot, lambda: shown(lambda: screen.live.total_rows == 900))
        write_rank(top / "rank1", 1, 0, 900)  # rank 1 launched: followed live
        await wait_until(pilot, lambda: shown(lambda: screen.live.total_rows == 1800))
        write_report(top / "rank1", 1, "2026_01_01_00_00_01")
        await wait_until(pilot, lambda: shown(lambda: screen.mode == "report"
                                              and screen.view.trace.ranks == [0, 1]),
                         state=lambda: said[-3:])
        merged = Trace.load_many(resolve_trace_paths(top))  # what `report ROOT` reads
        assert screen.view.trace.op_count == merged.op_count == 1800  # rank 0's + rank 1's
        assert len(screen.view.op_rows) == len(merged.view(Window("all")).op_rows)
        # (the status line is drawn after the message that switched the view)
        await wait_until(pilot, lambda: "merged report of ranks 0, 1 (" in str(status.render()),
                         state=lambda: str(status.render()))
        text = str(status.render())
        assert "merged report of ranks 0, 1 (" in text and "2 ranks' reports merged" in text
        assert not screen.view.warnings() or all(w.kind != "ranks_mixed_arch"
                                                 for w in screen.view.warnings())


def test_the_merge_line_comes_after_every_merged_reports_line(tmp_path):
    """Rank 1's report on disk before its own event is taken (CI's load made it so): rank 0's
    event does not announce the merge; rank 1's line comes first, then the merge's."""
    import types

    from ttdash.commands.lines import LinePrinter
    from ttdash.live.watcher import ReportSeen

    top = tmp_path / "ttrun"
    for r in (0, 1):
        write_rank(top / f"rank{r}", r, 0, 900)
        write_report(top / f"rank{r}", r, f"2026_01_01_00_00_0{r}")
    paths = resolve_trace_paths(top)
    feed = types.SimpleNamespace(root=top, ranks=[(r, top / f"rank{r}") for r in (0, 1)])
    out = io.StringIO()
    printer = LinePrinter(out, None, feed)
    printer.started = time.time() - 60  # both reports written since the watch began
    printer.update(None, [ReportSeen(paths[0], True)])
    assert out.getvalue().splitlines() == [f"report: {paths[0]}"]
    printer.update(None, [ReportSeen(paths[1], True)])
    assert out.getvalue().splitlines()[1:] == [
        f"report: {paths[1]}", f"merged report of ranks 0, 1: `ttdash report {top}` merges them"]


def test_watch_as_lines_says_when_the_ranks_reports_merge(tmp_path):
    """`watch ROOT | cat`: each rank's report was a line, and the merge never one."""
    top = tmp_path / "ttrun"
    write_rank(top / "rank0", 0, 0, 900)
    report = write_report(top / "rank0", 0, "2026_01_01_00_00_00")
    old = time.time() - 3600  # rank 0's run ended an hour before the watch
    os.utime(top / "rank0" / ".logs" / "cpp_device_perf_report.csv", (old - 1, old - 1))
    os.utime(report, (old, old))
    out, stop = io.StringIO(), threading.Event()
    launched: list[bool] = []

    def until(_printer) -> bool:
        if not launched:  # rank 1 launched once the watch is on
            launched.append(True)
            write_rank(top / "rank1", 1, 0, 900)
            write_report(top / "rank1", 1, "2026_01_01_00_00_01")
        return "merged report of ranks 0, 1" in out.getvalue()

    deadline = threading.Timer(30, stop.set)  # a failure ends the watch instead of hanging
    deadline.start()
    try:
        assert follow_lines(top, refresh=0.05, until=until, out=out, stop=stop) == 0
    finally:
        deadline.cancel()
    lines = out.getvalue().splitlines()
    assert "merged report of ranks 0, 1" in out.getvalue(), lines
    assert lines[-1] == f"merged report of ranks 0, 1: `ttdash report {top}` merges them"


async def test_ranks_of_different_archs_are_a_warning_in_the_status_and_the_report(tmp_path):
    """A Wormhole rank merged with a Blackhole one: summed silently, no word anywhere."""
    top = tmp_path / "ttrun"
    for r, arch in enumerate(("wormhole_b0", "blackhole")):
        simulate_run(top / f"rank{r}", n_ops=40, speed=0, seed=1, arch=arch,
                     timestamp=f"2026_01_01_00_00_0{r}")
    doc = json.loads(run_ttdash("report", str(top), "-f", "json").stdout)
    mixed = [w for w in doc["warnings"] if w["kind"] == "ranks_mixed_arch"]
    assert len(mixed) == 1 and mixed[0]["ranks"] == {"0": "wormhole_b0", "1": "blackhole_p150"}
    assert mixed[0]["message"].startswith("ranks of different archs merged (rank 0 wormhole_b0, "
                                          "rank 1 blackhole_p150)")
    table = run_ttdash("report", str(top), "--top", "1").stdout
    assert f"Warning: {mixed[0]['message']}" in table
    one = json.loads(run_ttdash("report", str(top / "rank1"), "-f", "json").stdout)
    assert not [w for w in one["warnings"] if w["kind"] == "ranks_mixed_arch"]
    live = tmp_path / "live"  # the same ranks' device rows, no report yet
    for r, arch in enumerate(("wormhole_b0", "blackhole")):
        log = live / f"rank{r}" / ".logs" / "cpp_device_perf_report.csv"
        log.parent.mkdir(parents=True)
        write_cpp_device_csv(cpp_device_rows(generate_ops(40, seed=1, arch=arch)), log)
    for root, mode in ((top, "report"), (live, "live")):
        app = watch_app(root, refresh=0.1)
        async with app.run_test(size=(160, 30)) as pilot:
            screen = app.screen
            status = screen.query_one("#status")
            await wait_until(pilot, lambda m=mode, s=screen: s.mode == m and (
                m == "report" or s.live.total_rows == 80))
            # the warning comes with the refresh that analyses those rows (the next tick)
            await wait_until(pilot, lambda st=status: st.has_class("-warning"))
            assert mixed[0]["message"] in " ".join(str(status.render()).split()), mode


def test_watch_once_of_a_directory_it_cannot_read_exits_2(tmp_path, monkeypatch, capsys):
    """Exited 0 as if the directory were empty. (Tests run as root, where chmod 000 does not
    stop a read: the listing is made to fail as it does for a user without the permission.)"""
    locked = tmp_path / "locked"
    (locked / ".logs").mkdir(parents=True)
    real = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert main(["watch", str(locked), "--once"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"ttdash: {locked}: Permission denied\n"
    monkeypatch.setattr(os, "scandir", real)
    assert main(["watch", str(locked), "--once"]) == 0  # readable again: the run's state
    capsys.readouterr()


@pytest.mark.parametrize("where", ["ttrun", ".logs", "reports"])
def test_watch_once_of_an_unreadable_folder_inside_exits_2(tmp_path, monkeypatch, capsys,
                                                           where):
    root = tmp_path / "profiler"
    (root / where).mkdir(parents=True)
    real = os.scandir

    def scandir(path="."):
        if Path(path) == root / where:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert main(["watch", str(root), "--once"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"ttdash: {root / where}: Permission denied\n"


def test_watch_once_under_a_file_exits_2(tmp_path, capsys):
    """A path through a file can never become a directory: one line, not "missing"."""
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "file" / "profiler", tmp_path / "file"):
        assert main(["watch", str(path), "--once"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"ttdash: {path}: not a directory\n"
    assert main(["watch", str(tmp_path / "none"), "--once"]) == 0  # may appear later
    assert '"exists": false' in capsys.readouterr().out
