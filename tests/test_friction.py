"""First-use friction of #33 (items 9-12): a new run's arch in a restarted live table, `run`
without a device, the history's empty store and unknown op codes, doctor without a card, a
report-less profiler dir, compressed files, --output over the input, a typo'd command."""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

import pytest
from conftest import real_dir, wait_until
from fake_host import fake_host

from ttdash.cli import main
from ttdash.health.doctor import run_checks
from ttdash.health.probe import Roots
from ttdash.model.live.table import LiveModel
from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv

SMALL = "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv"
CLIP = "tt-perf-report__bh_64_clip_encoder_1.csv"


def live_rows(path: Path, arch: str, n: int = 10) -> tuple[list[str], list[list[str]]]:
    write_cpp_device_csv(cpp_device_rows(generate_ops(n, seed=1, arch=arch)), path)
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


# --------------------------------------------------------------------------- 9: live arch
@pytest.mark.parametrize("ranked", [False, True])
def test_a_restarted_live_table_detects_its_arch_again(tmp_path, ranked):
    """A Wormhole run, then a Blackhole run rewriting .logs: not Blackhole rows at 1000 MHz."""
    from ttdash.model.live.ranks import RankedLiveModel

    log = tmp_path / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir()
    model = RankedLiveModel(tmp_path) if ranked else LiveModel(tmp_path)
    header, rows = live_rows(log, "wormhole_b0")
    model.add_rows(log, header, rows, list(range(2, len(rows) + 2)))
    assert (model.view().trace.arch.name, model.view().trace.clock_mhz) == ("wormhole_b0", 1000)
    if ranked:
        model.drop_rank(None)  # the root's rows start over (how the feed resets them)
    else:
        model.reset(log)
    header, rows = live_rows(log, "blackhole")
    model.add_rows(log, header, rows, list(range(2, len(rows) + 2)))
    trace = model.view().trace
    assert trace.arch.name.startswith("blackhole") and trace.clock_mhz == 1350


def test_reset_keeps_an_arch_given_with_arch(tmp_path):
    log = tmp_path / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir()
    model = LiveModel(tmp_path, arch="wormhole_b0")
    model.reset(log)
    header, rows = live_rows(log, "blackhole")
    model.add_rows(log, header, rows, list(range(2, len(rows) + 2)))
    assert model.view().trace.arch.name == "wormhole_b0"


# --------------------------------------------------------------------------- 10: run
def test_no_tui_summary_without_rows_points_at_doctor(tmp_path):
    from ttdash.commands.run import summary_line

    line = summary_line("exited with 0", {"root": str(tmp_path), "best": None, "note": ""})
    assert "device profiler off, or no device opened?" in line and "ttdash doctor" in line


async def test_run_screen_without_rows_says_why_not_waiting(tmp_path):
    from ttdash.runner import Workload, profiler_env
    from ttdash.tui.run import run_app

    root = tmp_path / "p"
    w = Workload([sys.executable, "-c", "pass"], env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=(220, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.exit_summary is not None)
        await pilot.pause()
        status = str(screen.query_one("#status").render())
        assert "no live rows in" in status and "device profiler off" in status, status
        assert "ttdash doctor" in status and "to appear" not in status, status
        await pilot.press("q")


# --------------------------------------------------------------------------- 11: history
def test_history_list_of_a_new_store_is_an_empty_list(tmp_path, capsys):
    store = tmp_path / "new" / "store"
    assert main(["history", "list", "--store", str(store), "-f", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"schema_version": 1, "store": str(store), "runs": []}
    assert err.startswith(f"ttdash: note: {store}: no history store here yet")
    assert not store.exists()  # listing creates nothing


def test_trend_of_an_unknown_op_code_exits_2_naming_the_closest(tmp_path, capsys):
    store = str(tmp_path / "store")
    assert main(["history", "add", "--store", store, str(real_dir() / SMALL)]) == 0
    capsys.readouterr()
    assert main(["history", "trend", "--store", store, "--op", "Untilise"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, (out, err)
    assert err.startswith(f"ttdash: {store}: no run in the selection has op code Untilise; "
                          "closest: Untilize"), err
    assert main(["history", "trend", "--store", store, "--op", "Untilize", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["ops"] > 0


def test_doctor_without_a_card_asks_for_no_hugepages(tmp_path):
    env = {**fake_host(tmp_path, [], driver=None, hugepages_1g=0), "TT_METAL_HOME": str(tmp_path)}
    checks = {c.name: c for c in run_checks(env, Roots.from_env(env))}
    hp = checks["HugePages"]
    assert hp.status == "unknown" and "no Tenstorrent device" in hp.detail, hp
    assert "reboot" not in hp.detail and "hugepages-setup" not in hp.detail


# --------------------------------------------------------------------------- 12: smaller
def test_a_dir_with_only_a_live_log_reads_it(tmp_path, capsys):
    log = tmp_path / "p" / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    live_rows(log, "wormhole_b0", n=12)
    assert main(["report", str(tmp_path / "p"), "-f", "json", "--no-advice"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["file"] == str(log) and len(doc["ops"]) == 12
    assert err == (f"ttdash: note: {tmp_path / 'p'}: no ops_perf_results*.csv report (yet): "
                   f"reading its live log {log} (the device ops so far)\n")


def test_a_gzip_file_says_gzip(tmp_path, capsys):
    gz = tmp_path / "x.csv.gz"
    gz.write_bytes(gzip.compress((real_dir() / SMALL).read_bytes(), mtime=1))
    assert main(["report", str(gz)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ttdash: {gz}: gzip-compressed"), err
    assert "gunzip -k 'x.csv.gz'" in err


@pytest.mark.parametrize("how", ["same path", "a symlink to it", "the profiler dir"])
def test_output_over_the_input_is_refused_even_with_force(tmp_path, capsys, how):
    trace = tmp_path / "reports" / "ops_perf_results_x.csv"
    trace.parent.mkdir()
    trace.write_bytes((real_dir() / SMALL).read_bytes())
    given = {"same path": trace, "a symlink to it": tmp_path / "link.csv",
             "the profiler dir": tmp_path}[how]
    if how == "a symlink to it":
        given.symlink_to(trace)
    before = trace.read_bytes()
    assert main(["report", str(given), "-o", str(trace), "--force", "-f", "csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output is the input" in err, err
    assert trace.read_bytes() == before


def test_output_over_a_diff_input_is_refused(tmp_path, capsys):
    a = tmp_path / "a.csv"
    a.write_bytes((real_dir() / SMALL).read_bytes())
    before = a.read_bytes()
    assert main(["diff", str(a), str(real_dir() / SMALL), "-o", str(a), "--force"]) == 2
    assert "--output is the input" in capsys.readouterr().err and a.read_bytes() == before


@pytest.mark.parametrize("argv,meant", [(["reprot", "x.csv"], "report"),
                                        (["history", "lsit"], "list"),
                                        (["report", "x.csv", "-f", "markdwn"], "markdown")])
def test_a_typo_gets_did_you_mean(capsys, argv, meant):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert f"did you mean '{meant}'?" in err, err


def test_no_suggestion_when_nothing_is_close(capsys):
    with pytest.raises(SystemExit):
        main(["zzzz"])
    assert "did you mean" not in capsys.readouterr().err
