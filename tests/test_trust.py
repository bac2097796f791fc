"""Data-trust warnings (issue #15.3): what makes a number doubtful is found, named and shown
in every output; real files stay quiet."""

from __future__ import annotations

import json

import pytest
from conftest import REPORT_FIXTURES, ROOT, real_dir, run_ttdash, screen_text

from ttdash.model import Trace, Window
from ttdash.tui.app import open_app
from ttdash.tui.widgets import HelpScreen

EDGE = ROOT / "fixtures" / "edge"


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


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_real_files_are_quiet(name):
    w = kinds(real_dir() / name, "default")
    assert w == {}, w
    if name == "tt-perf-report__bh_invalid_trace_decode_window.csv":
        assert kinds(real_dir() / name)["corrupt_timing"]["ops"] == 13  # whole file


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
