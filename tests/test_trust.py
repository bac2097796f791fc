"""Data-trust warnings (issue #15.3): what makes a number doubtful is found, named and shown
in every output; real files stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPORT_FIXTURES, ROOT, real_dir, run_ttdash, screen_text

from ttdash.model import Trace, Window
from ttdash.model.analysis.trust import UTIL_LIMIT_PCT
from ttdash.tui.app import open_app
from ttdash.tui.widgets import HelpScreen

EDGE = ROOT / "fixtures" / "edge"
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"


def kinds(path, window: str = "all") -> dict[str, dict]:
    view = Trace.load(path).view(Window(window))
    return {w.kind: w.as_dict() for w in view.warnings()}


def test_buffer_full_tail_names_rows_first_id_and_the_flat_cap():
    w = kinds(EDGE / "device_buffer_full.csv")
    assert set(w) == {"device_data_missing_tail"}
    tail = w["device_data_missing_tail"]
    # ops 7-10 on two devices: 8 rows, the first at CSV line 15 (header 1, signpost 2)
    assert (tail["rows"], tail["first_id"], tail["rows_per_device"]) == (8, 15, 6)
    assert "every device stops at 6 rows" in tail["message"]
    assert "TT_METAL_PROFILER_PROGRAM_SUPPORT_COUNT" in tail["message"]


def _rewrite(src, dst, change) -> None:
    lines = src.read_bytes().decode().split("\r\n")
    change(lines)
    dst.write_bytes("\r\n".join(lines).encode())


TIMING = ("DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "OP TO OP LATENCY [ns]",
          "DEVICE FW DURATION [ns]", "DEVICE KERNEL DURATION [ns]")


def _strip_timing(header: str, line: str) -> str:
    """The row as the host records an op the device log has no row for."""
    names, cells = header.split(","), line.split(",")
    for n in TIMING:
        cells[names.index(n)] = ""
    return ",".join(cells)


def test_a_row_without_device_data_in_the_middle_is_named_not_called_corrupt(tmp_path):
    p = tmp_path / "hole.csv"

    def hole(lines):  # the BinaryNg row (CSV line 5): the host saw it, the device log did not
        lines[4] = _strip_timing(lines[0], lines[4])

    _rewrite(EDGE / "corrupt_timing.csv", p, hole)
    w = kinds(p)
    assert w["no_device_data"]["rows"] == 1 and w["no_device_data"]["first_id"] == 5
    assert w["corrupt_timing"]["ops"] == 3  # the three corrupt rows are still corrupt
    view = Trace.load(p).view(Window("all"))
    assert view.totals()["corrupt_rows"] == 3  # the empty row is not one of them


def test_one_missing_last_row_is_not_a_buffer_overflow(tmp_path):
    p = tmp_path / "last.csv"

    def last(lines):  # the last Matmul (line 6), before the closing signpost
        lines[5] = _strip_timing(lines[0], lines[5])

    _rewrite(EDGE / "clock_mismatch.csv", p, last)
    w = kinds(p)
    assert "device_data_missing_tail" not in w
    assert w["no_device_data"]["rows"] == 1


def test_trace_captured_never_replayed():
    w = kinds(EDGE / "trace_not_replayed.csv")
    assert set(w) == {"trace_not_replayed"}  # its capture rows are not "no device data"
    assert (w["trace_not_replayed"]["trace_id"], w["trace_not_replayed"]["ops"]) == (3, 2)


def test_clock_arch_mismatch():
    w = kinds(EDGE / "clock_mismatch.csv")
    assert set(w) == {"clock_mismatch"}
    m = w["clock_mismatch"]
    assert m["arch"].startswith("blackhole") and m["clock_mhz"] == 1000
    assert "wormhole_b0's" in m["message"]


def test_corrupt_timing_is_a_warning_of_the_view():
    assert kinds(EDGE / "corrupt_timing.csv")["corrupt_timing"]["ops"] == 3


#: What the real files hold that makes a number doubtful (#34 item 6): the performance model's
#: FPU utilisation beyond 100% (its compute time longer than the op ran) and NoC counters on one
#: of the n300's two devices. Every other real file is quiet.
REAL_WARNINGS = {
    "tt-perf-report__bh20_oft.csv": {"values_beyond_limits"},
    "tt-perf-report__bh_p100_dlv3.csv": {"values_beyond_limits"},
    "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv": {"values_beyond_limits"},
    "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv":
        {"counters_incomplete"},
}


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_real_files_warn_only_of_what_they_hold(name):
    w = kinds(real_dir() / name, "default")
    assert set(w) == REAL_WARNINGS.get(name, set()), w
    if name == "tt-perf-report__bh_invalid_trace_decode_window.csv":
        assert kinds(real_dir() / name)["corrupt_timing"]["ops"] == 13  # whole file


def test_pm_fpu_util_beyond_100_percent_on_bh_p100_dlv3():
    """PM FPU UTIL (%) is PM COMPUTE over the kernel's duration: up to 1,878% on bh_p100_dlv3,
    the model's compute time far longer than the op ran. Rows, maximum and the op code with
    most of them against pandas."""
    name = "tt-perf-report__bh_p100_dlv3.csv"
    raw = pd.read_csv(real_dir() / name)
    u = raw["PM FPU UTIL (%)"]
    modelled = raw["PM COMPUTE [ns]"] > 1000  # (the 1 ns placeholder rounds to noise)
    ratio = u / (raw["PM COMPUTE [ns]"] / raw["DEVICE KERNEL DURATION [ns]"] * 100)
    assert ratio[modelled].between(0.99, 1.01).all()  # what the column is
    dev = raw["OP TYPE"] == "tt_dnn_device"
    bad = raw[dev & ((u > UTIL_LIMIT_PCT) | (u < 0))]
    w = kinds(real_dir() / name)["values_beyond_limits"]
    assert (w["column"], w["rows"]) == ("PM FPU UTIL (%)", len(bad)) and len(bad) == 63
    assert w["max"] == pytest.approx(u.max()) == pytest.approx(1878.142)
    assert w["op_code"] == bad["OP CODE"].value_counts().index[0] == "MoveDeviceOperation"
    assert "up to 1,878%" in w["message"]
    doc = json.loads(run_ttdash("report", str(real_dir() / name), "-f", "json").stdout)
    assert "values_beyond_limits" in [x["kind"] for x in doc["warnings"]]


def _deepseek(tmp_path, change) -> Path:
    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    df = change(df)
    p = tmp_path / "capped.csv"
    df.to_csv(p, index=False)
    return p


def _op_id(df: pd.DataFrame) -> pd.Series:
    return pd.to_numeric(df["GLOBAL CALL COUNT"]) // 1024


def test_buffer_cap_signature_with_the_host_rows_kept(tmp_path):
    """DeepSeek's 26 ops on 8 devices, device data gone for every third op on every device
    (the host still has the rows): 17 timed rows on each device of 26 issued, so the cap."""
    def drop(df):
        gone = (_op_id(df) % 3 == 0).to_numpy()
        for c in TIMING:
            df.loc[gone, c] = ""
        return df

    w = kinds(_deepseek(tmp_path, drop))
    assert w["device_buffer_cap"]["rows_per_device"] == 26 - 26 // 3 == 18
    assert w["device_buffer_cap"]["ops_per_device"] == 26
    assert w["device_buffer_cap"]["devices"] == 8
    assert "every one of the 8 devices has device data for exactly 18 op rows" in \
        w["device_buffer_cap"]["message"]
    assert w["no_device_data"]["rows"] == 8 * (26 // 3)


def test_buffer_cap_signature_in_device_rows_alone(tmp_path):
    """The same ops dropped as whole rows (a device log, or a report without the host's rows
    for them): the op ids (GLOBAL CALL COUNT >> 10) still span 26 ops a device."""
    w = kinds(_deepseek(tmp_path, lambda df: df[(_op_id(df) % 3 != 0).to_numpy()]))
    assert set(w) == {"device_buffer_cap"}
    assert (w["device_buffer_cap"]["rows_per_device"],
            w["device_buffer_cap"]["ops_per_device"]) == (18, 26)


def test_uneven_devices_or_a_few_missing_rows_are_not_a_cap(tmp_path):
    """Device 3 loses one more op than the others (not a flat cap), or every device loses one
    op (not well below what was issued): no cap warning."""
    def uneven(df):
        keep = (_op_id(df) % 3 != 0) | ((_op_id(df) == 3) & (df["DEVICE ID"] != "3"))
        return df[keep.to_numpy()]

    assert "device_buffer_cap" not in kinds(_deepseek(tmp_path, uneven))
    assert "device_buffer_cap" not in kinds(_deepseek(
        tmp_path, lambda df: df[(_op_id(df) != 5).to_numpy()]))


def test_counters_on_part_of_the_ops(tmp_path):
    """bh20_oft's (empty) perf-counter column SFPU Util Min (%) filled on every device op but
    the last 100: an incomplete counter capture, the column named with its count; filled on
    every device op: quiet."""
    df = pd.read_csv(real_dir() / "tt-perf-report__bh20_oft.csv", dtype=str,
                     keep_default_na=False)
    name = "SFPU Util Min (%)"
    assert (df[name] == "").all()
    dev = np.flatnonzero((df["OP TYPE"] == "tt_dnn_device").to_numpy())
    df.loc[dev, name] = "12.5"
    whole = tmp_path / "whole.csv"
    df.to_csv(whole, index=False)
    assert "counters_incomplete" not in kinds(whole)
    df.loc[dev[-100:], name] = ""
    p = tmp_path / "partial.csv"
    df.to_csv(p, index=False)
    w = kinds(p)["counters_incomplete"]
    assert w["columns"] == [{"column": name, "ops": len(dev) - 100}]
    assert w["device_ops"] == len(dev) == 1571
    assert f"{name} has values on 1,471 of 1,571 device ops:" in w["message"]


def test_counters_on_one_of_two_devices_name_it():
    w = kinds(real_dir() / "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines"
                           ".csv")["counters_incomplete"]
    assert "NOC UTIL (%) has values on 2 of 4 device ops: device 1 only" in w["message"]
    assert [c["column"] for c in w["columns"]] == ["NOC UTIL (%)", "DRAM BW UTIL (%)",
                                                   "NPE CONG IMPACT (%)"]


def test_every_format_carries_the_warnings(tmp_path):
    f = str(EDGE / "device_buffer_full.csv")
    doc = json.loads(run_ttdash("report", f, "-f", "json").stdout)
    assert [w["kind"] for w in doc["warnings"]] == ["device_data_missing_tail"]
    assert doc["warnings"][0]["rows"] == 8
    for fmt in ("table", "markdown"):
        r = run_ttdash("report", f, "-f", fmt)
        assert r.returncode == 0 and "no device data for the last 8 op rows" in r.stdout
    r = run_ttdash("report", f, "-f", "csv")  # CSV stays CSV: the line goes to stderr
    assert r.returncode == 0 and "no device data" not in r.stdout
    assert r.stderr.startswith(f"ttdash: warning: {f}: no device data for the last 8")
    clean = run_ttdash("report", str(EDGE / "../generated/wh_small_report.csv"), "-f", "csv")
    assert clean.returncode == 0 and clean.stderr == ""


async def test_tui_header_marks_warnings_and_help_lists_them():
    view = Trace.load(EDGE / "trace_not_replayed.csv", columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
        assert "! 1 warning (?)" in text.splitlines()[0] + text.splitlines()[1]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        text, _ = screen_text(app)
        assert "Data warnings" in text and "never replayed" in text
    quiet = open_app(Trace.load(EDGE / "../generated/wh_small_report.csv").view())
    async with quiet.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "warning" not in screen_text(quiet)[0].splitlines()[1]
