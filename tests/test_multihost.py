"""Multi-host runs (issue #15.1): `tt-run --profile-with-tracy` gives each rank its own
profiler dir, `ttrun/rank<N>/`; ttdash merges the ranks as tt-perf-report merges its CSV
arguments (device ids offset per host) and says which rank every op ran on."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

from conftest import ROOT, run_ttdash, screen_text, wait_until
from oracle import compare

from ttdash.model import Trace, Window
from ttdash.model.read.discover import find_ranks, rank_of, resolve_trace_paths
from ttdash.sim import simulate_run
from ttdash.tui.app import open_app
from ttdash.tui.watch import watch_app

TTRUN = ROOT / "fixtures" / "generated" / "ttrun"


def test_ranks_are_found_under_the_root_or_its_ttrun_folder(tmp_path):
    assert [r for r, _ in find_ranks(TTRUN)] == [0, 1]
    profiler = tmp_path / "profiler"
    shutil.copytree(TTRUN, profiler / "ttrun")
    (profiler / "ttrun" / "rank10").mkdir()  # rank 10 sorts after rank 1 (by number)
    assert [r for r, _ in find_ranks(profiler)] == [0, 1, 10]
    assert find_ranks(ROOT / "fixtures" / "generated" / "profiler_dir") == []
    paths = resolve_trace_paths(TTRUN)
    assert [rank_of(p) for p in paths] == [0, 1]
    # only a rank's own profiler dir (rank<N>/reports/...) says a rank, not any folder name
    assert rank_of(Path("x/rank2/reports/name/ts/ops_perf_results.csv")) == 2
    assert rank_of(Path("/home/rank1/run/reports/ts/ops_perf_results.csv")) is None
    assert rank_of(Path("rank3/ops_perf_results.csv")) is None


def test_merged_ranks_equal_tt_perf_report_merging_the_two_reports(tmp_path):
    paths = resolve_trace_paths(TTRUN)
    r = compare(paths, tmp_path, ignore_signposts=True)
    assert r["ours"] == r["ref"] == 8
    assert all(not v for v in r["mismatch"].values()), r["mismatch"]
    ops = r["view"].op_rows
    # rank 1's kernels are 10% slower: the merge takes its rows, device ids 2 and 3
    assert set(ops["rank"]) == {1} and set(ops["device"]) <= {2, 3}


def test_report_says_the_rank_of_every_op():
    doc = json.loads(run_ttdash("report", str(TTRUN), "-f", "json", "--per-device",
                                "--ignore-signposts").stdout)
    assert doc["ranks"] == [0, 1] and doc["devices"] == 4
    by_rank = {(o["rank"], o["device"]) for o in doc["ops"]}
    assert by_rank == {(0, 0), (0, 1), (1, 2), (1, 3)}  # rank 1's devices offset by 2
    table = run_ttdash("report", str(TTRUN), "--ignore-signposts").stdout
    assert "ranks: 2 (0, 1), device ids offset per rank" in table and " Rank " in table
    csv = run_ttdash("report", str(TTRUN), "-f", "csv").stdout.splitlines()[0]
    assert '"device","rank"' in csv
    one = json.loads(run_ttdash("report", str(TTRUN / "rank0"), "-f", "json").stdout)
    assert one["ranks"] == [0] and {o["rank"] for o in one["ops"]} == {0}
    plain = json.loads(run_ttdash("report", str(ROOT / "fixtures" / "generated" /
                                                "wh_small_report.csv"), "-f", "json").stdout)
    assert plain["ranks"] is None and "rank" not in plain["ops"][0]


def test_a_rank_without_a_report_is_named(tmp_path):
    shutil.copytree(TTRUN, tmp_path / "ttrun")
    shutil.rmtree(tmp_path / "ttrun" / "rank1" / "reports")
    r = run_ttdash("report", str(tmp_path / "ttrun"))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "rank 1 has no ops_perf_results*.csv report" in r.stderr


def test_watch_once_lists_every_rank(tmp_path):
    doc = json.loads(run_ttdash("watch", str(TTRUN), "--once").stdout)
    assert [r["rank"] for r in doc["runs"]] == [0, 1]
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert all(r["live"]["ops"] == 0 for r in doc["ranks"])
    text = run_ttdash("watch", str(TTRUN), "--once", "--format", "table").stdout
    assert "2 report(s)" in text and "rank 1 live: 0 ops" in text


async def test_tui_rank_column_header_and_rank_filter():
    trace = Trace.load_many(resolve_trace_paths(TTRUN))
    app = open_app(trace.view(Window("all"), merge=False))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
        assert "4 dev / 2 ranks" in text and " Dev Rank " in text
        table = app.screen.query_one("OpTable")
        total = len(table.rows)
        await pilot.press("slash")
        await pilot.press(*"rank:1", "enter")
        await pilot.pause()
        assert 0 < len(table.rows) < total
        assert set(table._data["rank"][table.rows]) == {1.0}


async def test_watch_of_a_multi_host_run_shows_every_ranks_live_rows_then_the_merged_report(
        tmp_path):
    """`watch ttrun/`: one live table of both ranks' `.logs` rows (a Rank column, device ids
    numbered through the ranks, each rank's own source rule), then, once every rank has
    written its report, the merged report."""
    top = tmp_path / "ttrun"
    ranks = [top / "rank0", top / "rank1"]
    for r in ranks:
        r.mkdir(parents=True)
    app = watch_app(top, refresh=0.1)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        status = screen.query_one("#status")
        await wait_until(pilot, lambda: f"watching {top} (" in str(status.render()))
        assert screen.mode == "live"
        assert "2 ranks live; their reports merged once every rank has one" in str(
            status.render())
        stop = threading.Event()
        writers = [threading.Thread(target=simulate_run, args=(r,), daemon=True, kwargs=dict(
            n_ops=200, speed=60, stop=stop, seed=5, timestamp=f"2026_01_01_00_00_0{k}"))
            for k, r in enumerate(ranks)]
        for w in writers:
            w.start()
        await wait_until(pilot, lambda: screen.mode == "live" and len(table.rows) > 0
                         and set(table._data["rank"][table.rows]) == {0.0, 1.0}, timeout=30)
        await wait_until(pilot, lambda: screen.mode == "report", timeout=40)
        for w in writers:
            w.join(10)
        assert screen.view.trace.ranks == [0, 1] and len(screen.view.op_rows) == 200
        # (the status line is drawn after the message that switched the view)
        await wait_until(pilot, lambda: "merging the reports" not in str(status.render()),
                         timeout=30)
        assert "2 ranks' reports merged" in str(status.render())
        assert screen.live.total_rows == 400  # both ranks' rows, none dropped as a duplicate
        await pilot.press("L")
        await pilot.pause()
        assert screen.mode == "live" and len(table.rows) == 400
        assert sorted(set(table._data["rank"][table.rows])) == [0.0, 1.0]
        # devices numbered through the ranks as in the merged report (rank 1's device 0 is 1)
        pairs = set(zip(table._data["rank"][table.rows], table._data["device"][table.rows]))
        assert pairs == {(0.0, 0.0), (1.0, 1.0)} and screen.live.devices() == [0, 1]
        assert "2 dev / 2 ranks" in str(screen.query_one("#summary").render())
