"""Inputs a user controls (#37 item 8): hostile tt-smi snapshots, names that are not UTF-8, an
empty -o, sysfs/procfs files that stream, block or hang, and the line a bad CSV row is named at
(huge cells, a lone CR in a quoted cell)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest
from conftest import ROOT, run_ttdash
from fake_host import Card, fake_host

from ttdash.cli import main, parse
from ttdash.health import probe, telemetry
from ttdash.health.doctor import run_checks
from ttdash.model.read.badcsv import numeric_error

BH20 = "tt-perf-report__bh20_oft.csv"


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def host(tmp_path, monkeypatch):
    env = fake_host(tmp_path / "host", [Card()])
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(probe, "_hung", set(), raising=False)
    return env


# ---------------------------------------------------------------- --smi-snapshot

@pytest.mark.parametrize("name,text,says", [
    ("deep", "[" * 5000 + "]" * 5000, "nested too deep"),
    ("deep_in_object", '{"device_info": ' + "[" * 3500 + "]" * 3500 + "}", "nested too deep"),
    ("bigint", '{"device_info": [{"telemetry": {"aiclk": ' + "9" * 5000 + "}}]}", "digits"),
], ids=["deep", "deep_in_object", "bigint"])
def test_hostile_snapshot_is_one_line(tmp_path, host, capsys, name, text, says):
    p = tmp_path / f"{name}.json"
    p.write_text(text)
    assert main(["doctor", "--smi-snapshot", str(p), "-f", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line = _one_line(err)
    assert line.startswith(f"ttdash: {p}: not a tt-smi snapshot") and says in line


@pytest.mark.parametrize("kind", ["fifo", "chardev", "huge"])
def test_snapshot_that_is_not_a_bounded_regular_file_is_one_line(tmp_path, host, kind):
    """/dev/zero was read without bound (24 GB before the kernel killed it), a FIFO hung the
    open waiting for a writer (the in-process call's timeout catches a hang), and 17 MiB of
    zeros was parsed in full: each is refused by its kind or size, one line, exit 2."""
    if kind == "fifo":
        path = tmp_path / "snap.fifo"
        os.mkfifo(path)
        says = "a FIFO (pipe): a tt-smi snapshot is a JSON file (save one with `tt-smi -s`)"
    elif kind == "chardev":
        path = Path("/dev/zero")
        says = "a character device: a tt-smi snapshot is a JSON file (save one with `tt-smi -s`)"
    else:
        path = tmp_path / "huge.json"
        with open(path, "wb") as fh:
            fh.truncate(17 << 20)  # sparse: nothing written to the disk
        says = "larger than 16 MiB: not a tt-smi snapshot (a few KB per board)"
    r = run_ttdash("doctor", "--smi-snapshot", str(path), "-f", "json", timeout=30)
    assert r.returncode == 2 and r.stdout == ""
    assert _one_line(r.stderr) == f"ttdash: {path}: {says}"


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_snapshot_lone_surrogate_is_shown_escaped(tmp_path, host, capsys, fmt):
    p = tmp_path / "s.json"
    p.write_text('{"device_info": [{"board_info": {"board_type": "n300 \\ud800", '
                 '"bus_id": "\\udcff"}, "telemetry": {"aiclk": 1000}}]}')
    assert main(["doctor", "--smi-snapshot", str(p), "-f", fmt]) in (0, 1)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    shown = json.loads(out)["checks"][-1]["name"] if fmt == "json" else out
    assert "n300 \\" in shown and "ud800" in shown and "udcff" in shown


def test_doctor_env_not_utf8(tmp_path, host, capsys, monkeypatch):
    monkeypatch.setenv("TT_METAL_HOME", os.fsdecode(b"/nowhere/\xfe"))
    assert main(["doctor"]) in (0, 1)
    out, _ = capsys.readouterr()
    assert "/nowhere/\\xfe: no such directory" in out


# ---------------------------------------------------------------- names that are not UTF-8

@pytest.fixture
def odd(tmp_path, real):
    """A good report under a name that is not UTF-8, and the good file itself."""
    good = tmp_path / "good.csv"
    shutil.copyfile(real / BH20, good)
    bad = os.fsdecode(bytes(tmp_path) + b"/a\xff.csv")
    shutil.copyfile(good, bad)
    return bad, str(good)


@pytest.mark.parametrize("argv", [
    ["report", "{bad}", "-f", "json"],
    ["report", "{good}", "{bad}", "-f", "csv"],
    ["diff", "{bad}", "{good}", "-f", "table"],
    ["diff", "--baseline", "{good}", "{bad}", "--candidate", "{good}", "-f", "json"],
    ["history", "--store", "{tmp}/h", "add", "{bad}"],
    ["history", "--store", "{tmp}/h", "check", "{bad}", "--fail-above", "5"],
    ["history", "--store", "{tmp}/h\udcff", "list"],
    ["history", "list", "--store", "{tmp}/h\udcfe"],
    ["history", "--store", "{tmp}/h", "add", "{good}", "--label", "k=v\udcff"],
    ["report", "{good}", "--signpost", "s\udcff"],
    ["doctor", "--smi-snapshot", "{tmp}/s\udcff.json"],
])
def test_names_not_utf8_are_one_line(tmp_path, odd, capsys, argv):
    bad, good = odd
    argv = [a.format(bad=bad, good=good, tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert out == "" and re.search("not (a )?UTF-8", line) and ("\\xff" in line or "\\xfe" in line), line
    assert "\udcff" not in line and "\udcfe" not in line


def test_found_name_not_utf8_is_one_line(tmp_path, odd, capsys):
    """A profiler directory whose newest report has a name that is not UTF-8 (found on disk,
    not typed): one line naming it, escaped."""
    _, good = odd
    d = tmp_path / "prof" / "reports" / "2025_01_01_00_00_00"
    d.mkdir(parents=True)
    shutil.copyfile(good, os.fsdecode(bytes(d) + b"/ops_perf_results_\xff.csv"))
    assert main(["report", str(tmp_path / "prof"), "-f", "csv"]) == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert line.startswith(f"ttdash: {d}/ops_perf_results_\\xff.csv: not a UTF-8 name"), line


def test_output_name_not_utf8_still_writes(tmp_path, odd, capsys):
    _, good = odd
    out = os.fsdecode(bytes(tmp_path) + b"/out\xff.json")
    assert main(["report", good, "-f", "json", "-o", out]) == 0
    assert json.loads(Path(out).read_text())["ops"]


GOOD = ROOT / "fixtures" / "generated" / "wh_small_report.csv"


@pytest.mark.parametrize("argv,says", [
    (["report", str(GOOD), "-f", "json"], '"ops"'),
    (["report", str(GOOD), "-f", "csv", "--force"], '"op_code"'),
    (["diff", str(GOOD), str(GOOD), "-f", "json"], '"verdict"'),
    (["diff", str(GOOD), str(GOOD)], "Verdict: "),  # as without -o: the table
    (["doctor", "-f", "json"], '"checks"'),
    (["history", "--store", "{tmp}/h", "list", "-f", "json"], "["),
], ids=["report", "report-force", "diff", "diff-markdown", "doctor", "history-list"])
def test_output_dash_is_stdout(tmp_path, host, argv, says):
    """`-o -` wrote a file named `-` in the working directory (exit 0, nothing on stdout)."""
    argv = [a.format(tmp=tmp_path) for a in argv]
    dash = run_ttdash(*argv, "-o", "-", cwd=tmp_path)
    plain = run_ttdash(*argv, cwd=tmp_path)
    assert not (tmp_path / "-").exists()
    assert dash.returncode in (0, 1) and dash.stderr == plain.stderr
    assert says in dash.stdout and dash.stdout == plain.stdout


def test_workload_arguments_pass_through():
    name, opts = parse(["run", "--no-tui", "--", "echo", "x\udcff"])
    assert name == "run" and opts.cmd[-2:] == ("echo", "x\udcff")


@pytest.mark.parametrize("argv", [
    ["report", "{good}", "-o", ""],
    ["doctor", "-o", ""],
    ["history", "--store", "{tmp}/h", "list", "-o", ""],
    ["report", ""],
    ["diff", "", "{good}"],
    ["doctor", "--smi-snapshot", ""],
    ["watch", "", "--once"],
])
def test_empty_names_are_refused(tmp_path, odd, capsys, argv):
    _, good = odd
    with pytest.raises(SystemExit) as exc:
        main([a.format(good=good, tmp=tmp_path) for a in argv])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert out == "" and "empty" in line, line


# ---------------------------------------------------------------- sysfs / procfs reads

def _hwmon(env: dict[str, str]) -> Path:
    return next(Path(env["TTDASH_SYSFS_ROOT"]).glob("bus/pci/devices/*/hwmon/hwmon*"))


def test_sysfs_fifo_does_not_hang_doctor(tmp_path):
    """A FIFO where an attribute should be: doctor must not wait for a writer (the timeout
    guards it: run_ttdash raises subprocess.TimeoutExpired, and fails a call that leaves a
    reader thread blocked)."""
    env = fake_host(tmp_path, [Card()])
    temp = _hwmon(env) / "temp1_input"
    temp.unlink()
    os.mkfifo(temp)
    os.unlink(Path(env["TTDASH_PROC_ROOT"]) / "meminfo")
    os.mkfifo(Path(env["TTDASH_PROC_ROOT"]) / "meminfo")
    r = run_ttdash("doctor", "-f", "json", env=env, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    sensors = [c for c in json.loads(r.stdout)["checks"] if c["name"].startswith("sensors")]
    assert sensors and " C" not in sensors[0]["detail"]  # no temperature: the FIFO was skipped


def test_sysfs_read_is_bounded(tmp_path, host):
    p = tmp_path / "streams"
    p.write_bytes(b"45000\n" + b"1" * (1 << 20))
    text = probe.read(p)
    assert text is not None and text.startswith("45000") and len(text) <= 8 << 10


def test_sysfs_device_file_is_not_read(tmp_path, host):
    p = tmp_path / "null"
    p.symlink_to("/dev/null")
    assert probe.read(p) is None
    assert probe.read(tmp_path / "missing") is None


def test_sysfs_read_times_out_once(tmp_path, host, monkeypatch):
    """A read that never returns (a hung device's attribute) is given up after the timeout and
    that path is not read again."""
    release = threading.Event()
    calls = []

    def stuck(path: str) -> bytes:
        calls.append(path)
        release.wait(30)
        return b"1"

    monkeypatch.setattr(probe, "READ_TIMEOUT_S", 0.2)
    monkeypatch.setattr(probe, "_read_bounded", stuck)
    try:
        assert probe.read(tmp_path / "tt_aiclk") is None
        assert probe.read(tmp_path / "tt_aiclk") is None
        assert calls == [str(tmp_path / "tt_aiclk")]
    finally:
        release.set()


def test_sysfs_huge_numbers(tmp_path, monkeypatch):
    """400-digit sysfs values (float inf) are no reading, not an OverflowError."""
    env = fake_host(tmp_path, [Card()])
    monkeypatch.setattr(probe, "_hung", set(), raising=False)
    pci = _hwmon(env).parent.parent
    (pci / "current_link_width").write_text("9" * 400 + "\n")
    (Path(env["TTDASH_SYSFS_ROOT"]) / "kernel/mm/hugepages/hugepages-1048576kB/"
     "nr_hugepages").write_text("9" * 400 + "\n")
    checks = {c.name.split(",")[0]: c for c in run_checks(env=env,
                                                           roots=probe.Roots.from_env(env))}
    assert checks["PCIe link"].status == "unknown"
    assert "no 1 GiB HugePages" in checks["HugePages"].detail


def test_telemetry_record_with_bad_lines(tmp_path, monkeypatch):
    """The kept readings file with bytes that are not UTF-8, deep JSON and a device that is a
    list: those lines are skipped, the good one kept."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    report = tmp_path / "prof" / "reports" / "ts" / "ops_perf_results_ts.csv"
    report.parent.mkdir(parents=True)
    report.write_text("x\n")
    end = report.stat().st_mtime
    rec = telemetry.record_path(tmp_path / "prof")
    rec.parent.mkdir(parents=True)
    good = json.dumps({"time": end - 5, "device": 0, "arch": "wormhole", "throttled": False})
    rec.write_bytes(b"\xff\xfe\n" + b"[" * 5000 + b"\n"
                    + json.dumps({"time": end - 4, "device": [1]}).encode() + b"\n"
                    + good.encode() + b"\n")
    got = telemetry.readings_for_report(report)
    assert [r["device"] for r in got] == [0]
    assert telemetry.summarize(got)["devices"] == [0]


# ---------------------------------------------------------------- where a bad CSV row is

def _rows(real: Path) -> tuple[str, list[list[str]]]:
    with open(real / BH20, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:6]


def _csv(path: Path, real: Path, cell: str, *, bad: str = "extra", col: str = "ATTRIBUTES"
         ) -> int:
    """Header; row 1 with `cell` in `col` (quoted); rows 2-3; row 4 spoilt by `bad` (a field
    too many, or a non-numeric duration); row 5. Returns the header's field count."""
    header, rows = _rows(real)
    names = next(csv.reader([",".join(header)]))
    rows = [list(r) for r in rows]
    rows[0][names.index(col)] = cell
    if bad == "extra":
        rows[2].append("extra")
    else:
        rows[2][names.index("DEVICE KERNEL DURATION [ns]")] = bad
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows([header, *rows])
    path.write_text(buf.getvalue(), newline="")
    return len(header)


def _error(capsys, path: Path) -> str:
    assert main(["report", str(path), "-f", "csv"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return _one_line(err)


@pytest.mark.parametrize("cell,line", [
    ("a\rb", 4),  # a lone CR in a quoted cell: the cell's text, not a line break
    ("a\r\nb", 5),  # CRLF in a quoted cell: one line break
    ("a\nb\nc", 6),
])
def test_bad_row_line_with_line_breaks_in_cells(tmp_path, real, capsys, cell, line):
    p = tmp_path / "b.csv"
    n = _csv(p, real, cell)
    assert f"{p}:{line}:{n + 1}: expected {n} fields, found {n + 1}" in _error(capsys, p)


def test_non_numeric_cell_line_after_lone_cr(tmp_path, real):
    """badcsv.numeric_error (pyarrow's conversion errors; the loader's own checks catch this
    file first): the row's line, the lone CR not counted."""
    p = tmp_path / "n.csv"
    _csv(p, real, "a\rb", bad="12x4")
    header = _rows(real)[0]
    col = header.index("DEVICE KERNEL DURATION [ns]")
    err = numeric_error(p, header, f"In CSV column #{col}: CSV conversion error to int64: "
                        "invalid value '12x4'")
    assert (err.line, err.column) == (4, col + 1) and "'12x4'" in err.message


def test_bad_row_line_after_a_long_cell(tmp_path, real, capsys):
    """A 500 KiB cell (over the csv module's default field limit, under pyarrow's block) before
    the bad row: the bad row's line, not a csv.Error traceback."""
    p = tmp_path / "m.csv"
    limit = csv.field_size_limit(1 << 17)  # the default, whoever raised it in this process
    try:
        n = _csv(p, real, "x" * (500 << 10))
        assert f"{p}:4:{n + 1}: expected {n} fields" in _error(capsys, p)
    finally:
        csv.field_size_limit(limit)


@pytest.mark.parametrize("mib", [9, 17])
def test_multi_megabyte_cell_names_its_line(tmp_path, real, capsys, mib):
    """A cell of several MiB: pyarrow cannot fit its row in its blocks (loader.BLOCK, 4 MiB; a
    row across two blocks is read: a 5 MiB cell's file fails on its spoilt row 4); the error
    names the line the row is on (it named the file's last line)."""
    p = tmp_path / "big.csv"
    _csv(p, real, "x" * (mib << 20))
    line = _error(capsys, p)
    assert line.startswith(f"ttdash: {p}:2: a row of {mib}.0 MiB"), line


def test_a_file_with_a_column_named_id_keeps_the_line_as_the_op_id(tmp_path):
    """ttdash's "ID" is the row's line (tt-perf-report's op ID). A file with an "ID" column of
    its own loads, in either read; its column is `ID.1`, as a repeated name would be."""
    from ttdash.model import Trace, Window

    p = tmp_path / "ops_perf_results.csv"
    p.write_text("OP CODE,OP TYPE,GLOBAL CALL COUNT,ID,DEVICE ARCH,DEVICE KERNEL DURATION [ns]\n"
                 "Matmul,tt_dnn_device,1024,7,wormhole_b0,15001\n"
                 "Softmax,tt_dnn_device,2048,9,wormhole_b0,2000\n")
    for columns in ("analysis", "all"):
        trace = Trace.load(p, columns=columns)
        assert trace.ordered["ID"].tolist() == [2, 3]
        assert trace.view(Window("all")).ops["id"].tolist() == [2, 3]
    assert trace.ordered["ID.1"].tolist() == [7, 9]
