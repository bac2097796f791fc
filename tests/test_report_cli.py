"""`ttdash report`: output formats and one-line errors for bad input (exit 2, no traceback)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from conftest import real_dir, run_ttdash

FIELDS = ["id", "op_code", "op_type", "device", "device_time_us", "op_to_op_us", "total_pct",
          "cores", "dram_gbps", "dram_pct", "flops", "flops_pct", "bound", "math_fidelity",
          "signpost", "pm_eff_pct", "recoverable_us", "pm_bound", "core_skew", "grid_pct",
          "ccl_gbps", "ccl_link_pct"]




def test_json_shape():
    r = run_ttdash("report", str(real_dir() / "tt-perf-report__bh20_oft.csv"), "--format", "json",
            "--perf-report-window")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"file", "arch", "clock_mhz", "devices", "signposts", "totals", "ops"} <= set(doc)
    assert doc["arch"] == "blackhole_p150" and doc["clock_mhz"] == 1350 and doc["devices"] == 1
    assert set(doc["signposts"][0]) >= {"index", "name", "ops", "device_time_us"}
    assert set(doc["totals"]) >= {"ops", "device_time_us", "op_to_op_us", "corrupt_rows"}
    assert doc["totals"]["ops"] == len(doc["ops"]) == 49
    # then the file's per-RISC times and counters (#15.4; tests/test_counters.py checks them)
    assert list(doc["ops"][0]) == FIELDS + ["slowest_risc"] + [
        f"DEVICE {r} KERNEL DURATION [ns]" for r in ("BRISC", "NCRISC", "TRISC0", "TRISC1",
                                                     "TRISC2")] + ["PM FPU UTIL (%)"]
    assert doc["ops"][0]["op_to_op_us"] is None  # first op of the window: no gap (null)
    conv = [o for o in doc["ops"] if "Conv2d" in o["op_code"]]
    assert conv and all(isinstance(o["flops_pct"], float) for o in conv)


def test_advice_and_footer_in_every_format():
    """tt-perf-report's advice and totals footer: json (advice list, totals counts and roofline),
    table and markdown (an Advice section after the totals line); --no-advice leaves it out."""
    f = str(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    doc = json.loads(run_ttdash("report", f, "-f", "json").stdout)
    tot = doc["totals"]
    assert (tot["device_ops"], tot["host_ops"], tot["signposts"]) == (26, 0, 0)
    assert round(tot["dram_roofline_pct"], 1) == 3.3 and round(tot["dram_roofline_gbps"]) == 17
    kinds = [a["kind"] for a in doc["advice"]]
    assert kinds.count("gap") == 25 and kinds.count("gap_saving") == 1
    saving = next(a for a in doc["advice"] if a["kind"] == "gap_saving")
    assert saving["id"] is None and round(saving["saving_us"]) == 90322390
    assert {"id": 7, "kind": "matmul_grid"}.items() <= next(
        a for a in doc["advice"] if a["kind"] == "matmul_grid").items()
    table = run_ttdash("report", f).stdout
    assert "26 ops (26 device, 0 host; 0 signposts)" in table
    assert "overall DRAM roofline (modelled ops) 3.3% (17 GB/s)" in table
    advice = table[table.index("Advice"):]
    assert "FLOP-bound on 100 of 110 cores: use a bigger grid" in advice  # grouped by rule
    full = run_ttdash("report", f, "--advice", "full").stdout
    advice = full[full.index("Advice, every entry"):]
    assert "ID 7  MatmulDeviceOperation 3200 x 1792 x 1536\n    - FLOP-bound on 100 of 110" in advice
    md = run_ttdash("report", f, "-f", "markdown", "--advice", "full").stdout
    assert "### Advice" in md and "- ID 14  ReduceScatterMinimalAsyncDeviceOperation" in md
    for fmt in ("table", "markdown", "json"):
        out = run_ttdash("report", f, "-f", fmt, "--no-advice").stdout
        assert "Advice" not in out and '"advice"' not in out and "FLOP-bound" not in out


def test_top_and_signpost_selection():
    f = str(real_dir() / "tt-perf-report__bh20_oft.csv")
    doc = json.loads(run_ttdash("report", f, "-f", "json", "--top", "5", "--ignore-signposts").stdout)
    device = [o["device_time_us"] for o in doc["ops"]]  # device time ranks by default
    assert len(device) == 5 and device == sorted(device, reverse=True)
    assert doc["ranked_by"] == {"top": 5, "by": "device_time_us"}
    by_device = [o["id"] for o in doc["ops"]]
    doc = json.loads(run_ttdash("report", f, "-f", "json", "--top", "5", "--rank-by", "share",
                                "--ignore-signposts").stdout)
    shares = [o["total_pct"] for o in doc["ops"]]
    assert len(shares) == 5 and shares == sorted(shares, reverse=True)
    assert [o["id"] for o in doc["ops"]] != by_device  # the gaps rank these
    doc = json.loads(run_ttdash("report", f, "-f", "json", "--signpost", "TTBasicBlock 0 forward started")
                     .stdout)
    assert doc["window"] == "signpost TTBasicBlock 0 forward started"
    assert len(doc["ops"]) == 14 and {o["signpost"] for o in doc["ops"]} == {
        "TTBasicBlock 0 forward started"}
    doc = json.loads(run_ttdash("report", f, "-f", "json", "--start-signpost", "ResNet module started",
                         "--end-signpost", "ResNet module finished").stdout)
    assert 0 < len(doc["ops"]) < 1571


def test_csv_and_markdown_and_plain_table():
    f = str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    rows = list(csv.DictReader(io.StringIO(run_ttdash("report", f, "-f", "csv").stdout)))
    assert len(rows) == 1872 and rows[0]["id"] == "2"
    md = run_ttdash("report", f, "-f", "markdown", "--top", "3").stdout
    assert md.count("\n| ") == 4 and "| ID | Total % (wall) |" in md
    table = run_ttdash("report", f, "--top", "3", env={"NO_COLOR": "1"}).stdout
    assert "\x1b[" not in table and "Device time" in table and "wormhole_b0" in table


def test_directory_resolves_newest_report(tmp_path):
    src = (real_dir() / "tt-perf-report__bh_p100_dlv3.csv").read_bytes()
    for ts in ("2025_01_01_00_00_00", "2025_03_01_00_00_00"):
        d = tmp_path / "reports" / ts
        d.mkdir(parents=True)
        (d / f"ops_perf_results_{ts}.csv").write_bytes(src)
    doc = json.loads(run_ttdash("report", str(tmp_path), "-f", "json").stdout)
    assert doc["file"].endswith("ops_perf_results_2025_03_01_00_00_00.csv")


HEADER = "OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns]\n"
ROW = "MatmulDeviceOperation,tt_dnn_device,0,1000,500\n"


@pytest.mark.parametrize("name,content,expect", [
    ("empty.csv", b"", ":  file is empty"),
    ("header_only.csv", HEADER.encode(), ":2: header only"),
    ("binary.csv", b"\x00\x01\x02\xff\xfe" * 100, ":1: not a CSV file"),
    ("prose.csv", b"hello world\nthis is not a csv\n", ":1: not a profiler CSV"),
    ("missing.csv", b"OP CODE,OP TYPE\nfoo,bar\n", ":1: missing required column "
     "'DEVICE KERNEL DURATION [ns]'"),
    ("nonnum.csv", (HEADER + ROW + "Foo,tt_dnn_device,0,abc,1\n").encode(),
     ":3:4: column 'DEVICE KERNEL DURATION [ns]': expected a number, found 'abc'"),
    ("cut.csv", (HEADER + ROW + "MatmulDeviceOperation,tt_dnn").encode(),
     ":3:2: last line is cut short (2 of 5 fields)"),
    ("extra.csv", (HEADER + ROW + "a,b,0,1,2,3,4\n" + ROW).encode(), ":3:6: expected 5 fields"),
])
def test_bad_input_one_line_exit_2(tmp_path, name, content, expect):
    p = tmp_path / name
    p.write_bytes(content)
    r = run_ttdash("report", str(p))
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert lines[0].startswith(f"ttdash: {p}")
    assert expect.replace(":  ", ": ") in lines[0]


def test_unreadable_paths(tmp_path):
    r = run_ttdash("report", str(tmp_path / "nope.csv"))
    assert (r.returncode, r.stderr.strip()) == (2, f"ttdash: {tmp_path / 'nope.csv'}: no such file")
    fifo = tmp_path / "ops_perf_results_fifo.csv"
    os.mkfifo(fifo)
    r = run_ttdash("report", str(fifo))  # must not block on a FIFO nobody writes to
    assert r.returncode == 2 and "a pipe that gave nothing" in r.stderr
    r = run_ttdash("report", str(tmp_path))
    assert r.returncode == 2 and "no ops_perf_results" in r.stderr
    if os.geteuid() != 0:  # root reads anything; the permission branch is covered elsewhere
        p = tmp_path / "locked.csv"
        p.write_text(HEADER + ROW)
        p.chmod(0)
        assert "permission denied" in run_ttdash("report", str(p)).stderr


def test_usage_errors_are_one_line():
    for args in (["report"], ["report", "x.csv", "--format", "xml"], ["bogus"],
                 ["report", "x.csv", "--top", "zero"]):
        r = run_ttdash(*args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (args, r.stderr)


def test_help_describes_every_option():
    out = run_ttdash("report", "--help").stdout
    for opt in ("--format", "--signpost", "--start-signpost", "--end-signpost",
                "--ignore-signposts", "--arch", "--per-device", "--top"):
        assert opt in out
    top = run_ttdash("--help").stdout
    for cmd in ("report", "open", "watch", "demo", "diff"):
        assert cmd in top


def test_markup_and_escapes_inert_in_outputs(tmp_path):
    p = tmp_path / "evil.csv"
    p.write_text(HEADER + '"[bold red]x[/]\x1b]0;pwned\x07\x1b[31m=cmd|calc",tt_dnn_device,0,1000,5\n'
                 + ROW)
    table = run_ttdash("report", str(p), env={"NO_COLOR": "1"}).stdout
    assert "[bold red]x[/]" in table and "\x1b" not in table and "\x07" not in table
    rows = list(csv.DictReader(io.StringIO(run_ttdash("report", str(p), "-f", "csv").stdout)))
    assert rows[0]["op_code"].startswith("[bold red]x[/]")
    md = run_ttdash("report", str(p), "-f", "markdown").stdout
    assert "\x1b" not in md


def test_output_file_needs_force_to_overwrite(tmp_path):
    f = str(real_dir() / "tt-perf-report__bh20_oft.csv")
    out = tmp_path / "r.csv"
    assert run_ttdash("report", f, "-f", "csv", "-o", str(out), "--perf-report-window").returncode == 0
    assert out.read_text().count("\n") == 50  # header + 49 ops
    out.write_text("keep")
    r = run_ttdash("report", f, "-f", "csv", "-o", str(out), "--perf-report-window")
    assert r.returncode == 2 and "--force" in r.stderr and out.read_text() == "keep"
    assert run_ttdash("report", f, "-f", "json", "-o", str(out), "--force",
               "--perf-report-window").returncode == 0
    assert json.loads(out.read_text())["totals"]["ops"] == 49
    md = tmp_path / "d.md"
    assert run_ttdash("diff", f, f, "-o", str(md)).returncode == 0
    assert md.read_text().startswith("## ttdash diff")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.md", "r.csv"]  # no temp files


def test_absurd_numbers_work_silently(tmp_path):
    """1e300 / inf cells: the report works and nothing (no numpy warning) reaches stderr."""
    p = tmp_path / "huge.csv"
    p.write_text("OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns],"
                 "DEVICE FW START CYCLE,DEVICE FW END CYCLE,DEVICE FW DURATION [ns]\n"
                 "MatmulDeviceOperation,tt_dnn_device,0,1e300,inf,0,1e300,1e-300\n" + ROW.rstrip()
                 + ",0,1000,1000\n")
    r = run_ttdash("report", str(p), "-f", "json", "--ignore-signposts")
    assert r.returncode == 0 and r.stderr == ""
    assert json.loads(r.stdout)["totals"]["ops"] == 2


def test_stdout_on_a_full_disk_is_one_line_exit_2():
    """`report > /dev/full`: ENOSPC on stdout is a clean error, not a traceback (a file
    without data warnings: those go to stderr beside csv)."""
    f = str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    for fmt in ("table", "json", "csv"):
        with open("/dev/full", "w") as full:  # opened for writing, never replaced
            r = subprocess.run([sys.executable, "-m", "ttdash", "report", f, "-f", fmt],
                               stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert r.returncode == 2, (fmt, r.stderr)
        assert r.stderr == "ttdash: output: No space left on device\n", (fmt, r.stderr)


def test_demo_dir_must_be_new_or_empty(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    (tmp_path / "file").write_text("mine")
    for target, why in (("busy", "--dir: not empty"), ("file", "--dir: not a directory")):
        r = run_ttdash("demo", "--dir", str(tmp_path / target), "--once", "--ops", "10",
                       "--speed", "0")
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["keep.txt"]
    assert (tmp_path / "file").read_text() == "mine"
    r = run_ttdash("demo", "--dir", str(tmp_path / "new"), "--once", "--ops", "10",
                   "--speed", "0")
    assert r.returncode == 0, r.stderr


def test_error_locations_name_the_line_and_column(tmp_path):
    """A bad cell deep in the file: its line and column, not the column in the line slot; an
    unclosed quote: the line it opens at, not the end of the file."""
    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    lines = src.read_text().splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    col = header.index("DEVICE KERNEL DURATION [ns]")
    row = next(csv.reader([lines[1501]]))
    row[col] = "12x4"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(lines[:1501]) + buf.getvalue() + "".join(lines[1502:]))
    r = run_ttdash("report", str(bad), "-f", "csv")
    assert r.returncode == 2
    assert r.stderr == (f"ttdash: {bad}:1502:{col + 1}: column 'DEVICE KERNEL DURATION [ns]': "
                        "expected a number, found '12x4'\n")
    quote = tmp_path / "quote.csv"
    quote.write_text("".join(lines[:10]) + '"' + "".join(lines[10:]))
    r = run_ttdash("report", str(quote), "-f", "csv")
    assert r.returncode == 2 and r.stderr.startswith(f"ttdash: {quote}:11: unclosed quote"), \
        r.stderr


def test_error_lines_are_inert_text(tmp_path):
    """A path (or a cell) carrying terminal escapes or bidi controls reaches stderr inert."""
    d = tmp_path / "run\x1b]0;pwned\x07\u061c\u202e"
    d.mkdir()
    (d / "ops.csv").write_text("not,a\nreport,file\n")
    r = run_ttdash("report", str(d / "ops.csv"))
    assert r.returncode == 2 and r.stderr.startswith("ttdash: ")
    assert not any(ch in r.stderr for ch in "\x1b\x07\u061c\u202e"), repr(r.stderr)
    assert "run]0;pwned" in r.stderr


def test_min_percentage_raw_op_codes_print_signposts_and_several_files(tmp_path):
    """--min-percentage hides ops under the share (totals still count them); --raw-op-codes
    drops the size suffix; --print-signposts lists every signpost; several CSVs with different
    device counts are refused in one line (exit 2)."""
    deep = str(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    doc = json.loads(run_ttdash("report", deep, "-f", "json", "--min-percentage", "5").stdout)
    assert len(doc["ops"]) == 5 and all(o["total_pct"] >= 5 for o in doc["ops"])
    assert doc["totals"]["ops"] == 26
    table = run_ttdash("report", deep, "--no-advice").stdout
    raw = run_ttdash("report", deep, "--no-advice", "--raw-op-codes").stdout
    assert "MatmulDeviceOperation 3200 x 1792 x 1536" in table
    assert "MatmulDeviceOperation 3200" not in raw and "MatmulDeviceOperation" in raw
    sp = str(real_dir() / "tt-perf-report__bh20_oft.csv")
    short = run_ttdash("report", sp, "-f", "markdown", "--no-advice").stdout
    full = run_ttdash("report", sp, "-f", "markdown", "--no-advice", "--print-signposts").stdout
    assert "more (--print-signposts lists them)" in short and "more (" not in full
    assert len(full.split("**Signposts")[1].splitlines()[0]) > \
        len(short.split("**Signposts")[1].splitlines()[0])
    one = str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    r = run_ttdash("report", deep, one)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "device(s)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_summary_in_every_format():
    """--summary [--group-by]: tt-perf-report's grouped summary as table, markdown, csv, json
    (the numbers themselves are checked against tt-perf-report in test_oracle)."""
    f = str(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    doc = json.loads(run_ttdash("report", f, "--summary", "-f", "json").stdout)
    assert doc["group_by"] == "memory" and "ops" not in doc and len(doc["groups"]) == 15
    mm = next(g for g in doc["groups"] if g["name"] == "MatmulDeviceOperation (in0:dram_interleaved)")
    assert set(mm) == {"name", "op_count", "device_time_us", "total_pct", "category",
                       "flops_pct_min", "flops_pct_max", "flops_pct_mean", "flops_pct_std",
                       "flops_pct_weighted_mean"}
    assert mm["op_count"] == 6 and round(mm["flops_pct_weighted_mean"], 2) == 54.13
    assert sum(g["op_count"] for g in doc["groups"]) == 26
    cat = json.loads(run_ttdash("report", f, "--summary", "--group-by", "category", "-f",
                                "json").stdout)
    assert {g["name"] for g in cat["groups"]} == {"Other", "Compute", "CCL", "TM"}
    rows = list(csv.DictReader(io.StringIO(run_ttdash("report", f, "--summary", "--group-by",
                                                      "op", "-f", "csv").stdout)))
    assert rows[0]["name"] == "RingJointSDPADeviceOperation" and len(rows) == 13
    table = run_ttdash("report", f, "--summary").stdout
    assert "Summary by memory: 15 groups" in table and "54.13%" in table
    md = run_ttdash("report", f, "--summary", "-f", "markdown").stdout
    assert "| Group | Ops | Device time | Total % (device) |" in md


def test_json_numbers_do_not_depend_on_their_neighbours():
    """A whole-number column with a gap prints its numbers as ints in every pandas release
    (pandas < 3 printed "51778.0" for a nullable int column that has a missing cell)."""
    import pandas as pd

    from ttdash.report.safe import records_json

    frame = pd.DataFrame({"n": pd.array([51778, None], dtype="Int64"),
                          "m": pd.array([1, 2], dtype="Int64"), "x": [0.5, None]})
    assert records_json(frame, 6) == ('[{"n":51778,"m":1,"x":0.5},'
                                      '{"n":null,"m":2,"x":null}]')
    assert records_json(frame.iloc[:1], 6, lines=True) == '{"n":51778,"m":1,"x":0.5}\n'
    assert frame["n"].dtype == "Int64"  # the caller's frame is left as it was


@pytest.mark.parametrize("name,rows", [
    ("tt-perf-report__bh_p100_dlv3.csv", 5),  # 387 ops, 445 advice entries, gaps in 26 columns
    # 1,872 ops in 37-row chunks (51 of them; in 5-row chunks this case took 17-30 s)
    pytest.param("tt-perf-report__wh_clip_encoder_2.csv", 37, marks=pytest.mark.slow),
])
def test_streamed_outputs_do_not_depend_on_the_chunk_size(monkeypatch, name, rows):
    """Every format is written a chunk of rows (and of advice) at a time so a million ops stay
    in bounded memory; chunks of a few rows must print exactly what one chunk prints."""
    import ttdash.model.analysis.advice as advice
    from ttdash.model import Trace, Window
    from ttdash.report import safe, single

    view = Trace.load(real_dir() / name).view(Window())
    whole = {fmt: single.render_to_string(view, fmt) for fmt in ("table", "csv", "json",
                                                                 "markdown")}
    assert "Advice" in whole["table"] and whole["csv"].count("\n") > 10 * rows  # 10+ chunks
    monkeypatch.setattr(single, "CHUNK", rows)
    monkeypatch.setattr(advice, "MATMUL_CHUNK", 4)
    original = safe.write_csv
    monkeypatch.setattr(single, "write_csv",
                        lambda *a, **k: original(*a, **{**k, "chunk": rows}))
    streamed = single.advice_entries.__defaults__
    monkeypatch.setattr(single.advice_entries, "__defaults__", (None, 3))
    for fmt, text in whole.items():
        assert single.render_to_string(view, fmt) == text, fmt
    assert streamed == (None, 20_000)
