"""Device logs as traces (issue #15.2): the realtime profiler's quick mode
(`.logs/rt_device_perf_report.csv`) and cpp_device_perf_report.csv open, report and diff; a
realtime device time is labelled as the dispatch window; an arch nothing tells is never shown."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, run_ttdash, screen_text
from hostile_corpus import strict_json, strings_in, unsafe_chars

from ttdash.model import Trace, Window
from ttdash.model.read.loader import read_ops_csv
from ttdash.tui.app import open_app

GEN = ROOT / "fixtures" / "generated"
RT = GEN / "rt_device_perf_report.csv"
CLASSIC = GEN / "bh_classic_report.csv"  # the same run, as the classic report


def test_quick_mode_log_reports_with_its_clock_and_its_timing_basis():
    r = run_ttdash("report", str(RT), "-f", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # no arch column: the 1350 MHz clock from kernel cycles over durations says Blackhole
    assert doc["arch"] == "blackhole_p150" and doc["clock_mhz"] == 1350
    assert doc["arch_source"] == "inferred from the 1350 MHz clock"
    assert doc["device_time_basis"] == "dispatch" and doc["totals"]["ops"] == 12
    assert doc["ops"][0]["op_code"] == "op #1024"  # OP NAME is empty in quick mode
    assert doc["ops"][0]["op_to_op_us"] is None  # 0: a chip's first record, not a gap
    table = run_ttdash("report", str(RT)).stdout
    assert "Timing: device times are the realtime profiler's dispatch-core window" in table
    classic = json.loads(run_ttdash("report", str(CLASSIC), "-f", "json").stdout)
    assert classic["device_time_basis"] == "kernel" and "Timing:" not in \
        run_ttdash("report", str(CLASSIC)).stdout


def test_quick_mode_times_are_the_classic_ones_plus_the_dispatch_window():
    rt = Trace.load(RT).view(Window("all")).ops
    classic = Trace.load(CLASSIC).view(Window("all")).op_rows
    by_gcc = dict(zip(classic["global_call_count"], classic["device_time_us"]))
    extra = rt["device_time_us"].to_numpy() - np.array([by_gcc[g] for g in
                                                        rt["global_call_count"]])
    assert np.allclose(extra, 2.5, atol=0.002)  # the writer's 2,500 ns, to the rounding


def test_a_log_without_arch_or_cycles_never_shows_an_arch(tmp_path):
    df = pd.read_csv(RT, dtype=str, keep_default_na=False)
    df["DEVICE KERNEL START CYCLE"] = df["DEVICE KERNEL END CYCLE"] = ""
    logs = tmp_path / "profiler" / ".logs"
    logs.mkdir(parents=True)
    p = logs / "rt_device_perf_report.csv"
    df.to_csv(p, index=False)
    doc = json.loads(run_ttdash("report", str(p), "-f", "json").stdout)
    assert doc["arch"] is None and doc["peaks_arch"] == "wormhole_b0"
    assert doc["clock_mhz"] is None
    assert "Arch: not detected" in run_ttdash("report", str(p)).stdout
    once = json.loads(run_ttdash("watch", str(tmp_path / "profiler"), "--once").stdout)
    assert once["live"]["ops"] == 12 and once["live"]["arch"] is None
    assert once["live"]["device_time_basis"] == "dispatch"
    shutil.copy(RT, p)  # with its cycles: the clock tells
    once = json.loads(run_ttdash("watch", str(tmp_path / "profiler"), "--once").stdout)
    assert once["live"]["arch"] == "blackhole_p150" and once["live"]["clock_mhz"] == 1350


def test_a_cpp_log_as_a_trace_equals_the_live_table():
    r = run_ttdash("report", str(GEN / "cpp_device_perf_report.csv"), "-f", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["device_time_basis"] == "kernel"
    assert doc["totals"]["ops"] == 280 and doc["ops"][0]["op_code"] == \
        "EmbeddingsDeviceOperation"
    report = json.loads(run_ttdash("report", str(GEN / "wh_small_report.csv"), "-f", "json",
                                   "--ignore-signposts").stdout)
    assert abs(doc["totals"]["device_time_us"] - report["totals"]["device_time_us"]) < 1e-6


def test_diff_of_a_quick_mode_log_against_a_classic_report_fails_closed():
    r = run_ttdash("diff", str(CLASSIC), str(RT), "-f", "json", "--fail-above", "50",
                   "--metric", "device")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["candidate"]["device_time_basis"] == "dispatch"
    assert any("realtime profiler's dispatch window" in p for p in doc["problems"])
    same = run_ttdash("diff", str(RT), str(RT), "-f", "json", "--fail-above", "1")
    assert same.returncode == 0, same.stdout[:500]


def test_a_bad_cell_in_a_log_is_named_by_line_and_column(tmp_path):
    lines = RT.read_bytes().decode().split("\n")
    cells = lines[3].split(",")
    cells[8] = "fast"  # DEVICE KERNEL DURATION [ns], file line 4
    lines[3] = ",".join(cells)
    p = tmp_path / "rt_device_perf_report.csv"
    p.write_bytes("\n".join(lines).encode())
    r = run_ttdash("report", str(p))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"ttdash: {p}:4:9: column 'DEVICE KERNEL DURATION [ns]': "
                                "expected a number, found 'fast'")


def test_loader_reads_a_log_as_report_rows():
    t = read_ops_csv(RT)
    assert (t.df["OP TYPE"] == "tt_dnn_device").all() and "OP CODE" in t.header


async def test_tui_header_labels_the_rt_window():
    app = open_app(Trace.load(RT).view(Window("all")))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
        assert "device (rt window)" in text and "blackhole_p150 1350 MHz" in text


# ----------------------------------------------------------------- hostile logs
def _rt_lines() -> list[str]:
    return RT.read_bytes().decode().rstrip("\n").split("\n")


def _with_cell(row: int, col: int, value: str) -> bytes:
    lines = _rt_lines()
    cells = lines[row].split(",")
    cells[col] = value
    lines[row] = ",".join(cells)
    return ("\n".join(lines) + "\n").encode()


HOSTILE_LOGS = {
    "empty": (b"", "file is empty"),
    "header only": ((_rt_lines()[0] + "\n").encode(), "header only"),
    "cut last line": ("\n".join(_rt_lines())[:-7].encode(), "last line is cut short"),
    "short row": (("\n".join(_rt_lines()[:5]) + "\n1,2,3\n").encode(), ":6"),
    "nul byte": (("\n".join(_rt_lines()[:5]) + "\n1,\x00,3\n").encode(), "binary data"),
    "negative duration": (_with_cell(3, 8, "-5"), None),
    "1e300 duration": (_with_cell(3, 8, "1e300"), None),
    "huge cycles": (_with_cell(3, 10, "99999999999999999999999"), None),
    "markup op name": (_with_cell(3, 5, "[bold red]x[/]\x1b]0;pwned\x07"), None),
    "text call count": (_with_cell(3, 0, "many"), ":4:1: column 'GLOBAL CALL COUNT'"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_LOGS))
def test_hostile_quick_mode_logs(name, tmp_path):
    data, expect = HOSTILE_LOGS[name]
    p = tmp_path / "rt_device_perf_report.csv"
    p.write_bytes(data)
    for fmt in ("json", "table"):
        r = run_ttdash("report", str(p), "-f", fmt)
        assert "Traceback" not in r.stderr, r.stderr
        if r.returncode:
            assert r.returncode == 2 and r.stdout == ""
            assert r.stderr.startswith(f"ttdash: {p}") and r.stderr.count("\n") == 1
            assert expect is not None and expect in r.stderr, r.stderr
            continue
        assert expect is None, f"{name}: expected a failure with {expect!r}"
        assert not unsafe_chars(r.stdout, allow_sgr=fmt == "table"), name
        if fmt == "json":
            doc = strict_json(r.stdout)
            assert doc["device_time_basis"] == "dispatch" and doc["totals"]["ops"] >= 11
            assert not any(unsafe_chars(s) for s in strings_in(doc))
