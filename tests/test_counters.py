"""Per-RISC kernel times and utilisation counters in an op's details (issue #15.4)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash, screen_text

from ttdash.format import fmt_us
from ttdash.model import Trace, Window
from ttdash.model.read.counters import (
    RISC_COLUMN,
    RISC_NAMES,
    RISC_ROLES,
    counter_cells,
    counter_columns,
    risc_times,
    slowest_risc,
    slowest_riscs,
)
from ttdash.tui.app import open_app
from ttdash.tui.columns import ColumnsScreen, counter_title
from ttdash.tui.widgets import DetailScreen


def row(**ns) -> dict:
    return {f"DEVICE {k} KERNEL DURATION [ns]": v for k, v in ns.items()}


def test_the_slowest_risc_is_named_with_what_it_suggests():
    assert slowest_risc({}) is None
    assert slowest_risc(row(BRISC=9000, NCRISC=20000, TRISC1=10000)).startswith(
        "NCRISC (data movement, reader), 20.00 us: the op waits on data")
    assert "compute bound" in slowest_risc(row(BRISC=9000, NCRISC=8000, TRISC1=30000))
    assert "neither alone" in slowest_risc(row(BRISC=10000, TRISC2=10400))  # within 5%
    assert "ethernet" in slowest_risc(row(ERISC=50000, BRISC=1000))
    # zero, blank and absurd cells are no time
    assert risc_times(row(BRISC=0, NCRISC=np.nan, TRISC0="x", TRISC1=np.inf, TRISC2=5)) == \
        [("TRISC2", 5.0)]


def test_counters_shown_when_they_have_a_value():
    r = {"PM FPU UTIL (%)": 61.5, "NOC UTIL (%)": pd.NA, "DRAM BW UTIL (%)": "",
         "PERF COUNTER L1 HITS": 12, "SFPU Util Max (%)": 3.0, "OP CODE": "Matmul",
         "_region": 1, "Math Reuse Median (ratio)": 2.5, "CORE COUNT": 64}
    # tt-metal's perf-counter metrics: "<metric> Min|Median|Max|Avg (%)" or "(ratio)"
    assert counter_cells(r) == [("PM FPU UTIL (%)", 61.5), ("PERF COUNTER L1 HITS", 12),
                                ("SFPU Util Max (%)", 3.0), ("Math Reuse Median (ratio)", 2.5)]


async def test_details_pane_shows_risc_times_and_counters():
    path = real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
    app = open_app(Trace.load(path, columns="all").view(Window("all")))
    async with app.run_test(size=(100, 80)) as pilot:
        await pilot.press("o", "enter")  # file order: the first op, a matmul
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text, _ = screen_text(app)
        assert "Per-RISC kernel time" in text and "TRISC1 (compute, math)" in text
        assert "Slowest" in text and "BRISC (data movement, writer), 94.25 us" in text
        assert "Utilisation counters" in text and "PM FPU UTIL (%)" in text
        assert "NOC UTIL (%)" not in text.split("Utilisation counters")[1].split("Advice")[0]


# ---------------------------------------------------------------- counters as op fields

def _raw_cells(path) -> pd.DataFrame:
    """The file's cells as text, by ID (tt-perf-report's ID: the line number)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    raw.index = range(2, len(raw) + 2)
    return raw


@pytest.mark.parametrize("name", ["tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
                                  "tt-perf-report__bh_p100_dlv3.csv"])
def test_json_and_csv_ops_carry_the_files_counters_of_the_row_shown(name):
    """Every counter column with a value passes through under its file name, the value of the
    row the op shows (merged ops: the slowest device's row, whose ID the op carries); columns
    with no value anywhere are left out; the slowest RISC is the largest per-RISC time."""
    path = real_dir() / name
    raw = _raw_cells(path)
    with_value = [c for c in counter_columns(list(raw.columns)) if (raw[c] != "").any()]
    assert any(c.startswith("DEVICE BRISC") for c in with_value) and "PM FPU UTIL (%)" in \
        with_value
    r = run_ttdash("report", str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    ops = json.loads(r.stdout)["ops"]
    assert [k for k in ops[0] if k in set(raw.columns)] == with_value
    checked = 0
    for op in ops:
        for c in with_value:
            cell = raw.at[op["id"], c]
            assert (op[c] is None) == (cell == ""), (op["id"], c)
            if cell:
                assert op[c] == pytest.approx(float(cell), rel=1e-12), (op["id"], c)
                checked += 1
        times = {rc: op.get(RISC_COLUMN.format(rc)) or 0 for rc in RISC_ROLES}
        if max(times.values()) > 0:
            assert times[op["slowest_risc"]] == max(times.values())
        else:
            assert op["slowest_risc"] is None
    assert checked > 100
    r = run_ttdash("report", str(path), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["id"] for row in rows] == [str(op["id"]) for op in ops]
    for row, op in zip(rows, ops):
        for c in with_value:
            assert (row[c] == "") == (op[c] is None)
            if row[c]:
                assert float(row[c]) == pytest.approx(op[c], rel=1e-12)


def test_hostile_counter_cells_are_numbers_or_nothing(tmp_path):
    """Text, formulas and absurd values in counter columns: never passed through as text (a CSV
    cell could be a spreadsheet formula); a number, or empty."""
    head = ("OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],DEVICE BRISC KERNEL DURATION "
            "[ns],DEVICE TRISC1 KERNEL DURATION [ns],PM FPU UTIL (%),MY COUNTER\n")
    body = ("Matmul,tt_dnn_device,0,1000,=cmd|' /C calc'!A0,900,12.5,7\n"
            "Add,tt_dnn_device,0,2000,1500,inf,[red]x[/red],\n")
    f = tmp_path / "hostile.csv"
    f.write_text(head + body)
    r = run_ttdash("report", str(f), "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["DEVICE BRISC KERNEL DURATION [ns]"] for row in rows] == ["", "1500"]
    assert [row["PM FPU UTIL (%)"] for row in rows] == ["12.5", ""]
    assert [row["MY COUNTER"] for row in rows] == ["7", ""]
    assert [row["slowest_risc"] for row in rows] == ["TRISC1", "BRISC"]  # inf: no time
    assert "=cmd" not in r.stdout and "[red]" not in r.stdout
    doc = json.loads(run_ttdash("report", str(f), "--format", "json").stdout)
    assert doc["ops"][1]["DEVICE TRISC1 KERNEL DURATION [ns]"] is None or \
        doc["ops"][1]["DEVICE TRISC1 KERNEL DURATION [ns]"] > 1e300


def test_only_the_counter_columns_with_a_value_are_fields():
    """SEG_ENCODER (2025-02) has per-RISC times and no utilisation columns: its ops carry the
    RISC times that have a value anywhere, nothing else of the counters."""
    path = real_dir() / "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
    raw = _raw_cells(path)
    view = Trace.load(path).view(Window("all"))
    want = [c for c in counter_columns(list(raw.columns)) if (raw[c] != "").any()]
    assert view.counter_names == want and want and set(want) <= RISC_NAMES
    assert not [c for c in view.ops.columns if c in want]  # looked up when asked, not carried


def test_slowest_riscs_vectorised_equals_the_details_rule():
    frame = pd.DataFrame([row(BRISC=9000, NCRISC=20000, TRISC1=10000), row(BRISC=0),
                          row(TRISC2=5.0, ERISC=np.nan), row(ERISC=50000, BRISC=1000)])
    got = list(slowest_riscs(frame).astype(object))
    assert [None if pd.isna(g) else g for g in got] == ["NCRISC", None, "TRISC2", "ERISC"]
    for k in (0, 2, 3):
        assert slowest_risc(frame.iloc[k].to_dict()).startswith(got[k])


async def test_counter_columns_are_picked_into_the_table_sorted_and_filtered():
    """`a` lists the trace's optional columns; checked ones join the table (per-RISC times in
    us, counters as %), `>` sorts by them, `risc:` filters by the slowest RISC."""
    path = real_dir() / "tt-perf-report__bh_p100_dlv3.csv"
    app = open_app(Trace.load(path).view(Window("all")))
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        table = screen.table
        assert not table.extra_columns
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ColumnsScreen)
        text, _ = screen_text(app)
        assert "[ ] BRISC" in text and "DEVICE BRISC KERNEL DURATION [ns]" in text
        assert "PM FPU UTIL (%)" in text
        assert "SFPU" not in text  # no value anywhere in the file: not offered
        await pilot.press("space", "down", "enter")  # slowest RISC, BRISC
        await pilot.pause()
        text, _ = screen_text(app)
        assert "[x] RISC" in text and "[x] BRISC" in text and "[ ] NCRISC" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert [c.key for c in table.extra_columns] == ["slowest_risc",
                                                        "DEVICE BRISC KERNEL DURATION [ns]"]
        titles = [c.title for c in table.visible_columns()]
        assert titles.index("BRISC") == titles.index("Device") + 2  # after the device time
        ops = screen.state.frame
        brisc = ops["DEVICE BRISC KERNEL DURATION [ns]"].to_numpy(dtype="float64")
        first = int(np.nanargmax(brisc))
        for _ in range(len(titles)):
            if screen.sort_key == "DEVICE BRISC KERNEL DURATION [ns]":
                break
            await pilot.press("greater_than_sign")
            await pilot.pause()
        assert table.current_pos() == first  # largest first
        text, _ = screen_text(app)
        assert f"BRISC   {fmt_us(brisc[first] / 1000)}" in text and "sort: BRISC ↓" in text
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"risc:ncrisc", "enter")
        await pilot.pause()
        want = (ops["slowest_risc"].astype(object) == "NCRISC").to_numpy(dtype=bool)
        assert 0 < len(table.rows) == want.sum()


async def test_a_trace_without_counters_says_so(tmp_path):
    f = tmp_path / "plain.csv"
    f.write_text("OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns]\n"
                 "Matmul,tt_dnn_device,0,1000\n")
    app = open_app(Trace.load(f).view(Window("all")))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, ColumnsScreen)
        assert any("no per-RISC times or counter" in str(n.message)
                   for n in app._notifications)


def test_counter_titles_are_short():
    assert counter_title("DEVICE TRISC1 KERNEL DURATION [ns]") == "TRISC1"
    assert counter_title("PM FPU UTIL (%)") == "PM FPU%"
    assert counter_title("MULTICAST NOC UTIL (%)") == "MULTICAST N…"
    assert counter_title("PERF COUNTER L1") == "PERF COUNTE…"
    assert counter_title("SFPU Util Max (%)") == "SFPU Max%"
    assert counter_title("Reuse Max (ratio)") == "Reuse Max"
