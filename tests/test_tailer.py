"""Tests for ttdash.live.tailer.CsvTailer."""

from __future__ import annotations

import csv
import io
import os
import random
import time
from pathlib import Path

import pytest
from formats import HEADER_LINE  # noqa: E402
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttdash.live import tailer as tailer_mod
from ttdash.live.tailer import CsvTailer, TailResult

HEADER = HEADER_LINE.split(",")
WIDTH = len(HEADER)


def make_row(i: int, *, op_name: str = "") -> list[str]:
    """A plausible cpp_device_perf_report row (numbers, blanks, the OP NAME)."""
    start = 1_000_000_000 + i * 9_000
    row = [str(i << 10), "", "", "0", "wormhole_b0", op_name or f"Op{i % 7}", "64", "64"]
    row += [str(5000 + i % 97), str(4000 + i % 89), str(120 + i % 5), str(6000 + i % 101)]
    row += [str(start), str(start + 6000)]
    row += [str(4000 + i % 89), str(start + 100), str(start + 4100)]
    row += [str(3900 + i % 83), str(start + 120), str(start + 4000)]
    row += [str(3000 + i % 13 + k) for k in range(6)]
    row += ["", "", "", "", "", ""]
    row += [str(5900 + i % 7), str(5800 + i % 11), str(700 + i % 300), str(650 + i % 250)]
    assert len(row) == WIDTH
    return row


def to_csv(rows: list[list[str]], terminator: str = "\n") -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=terminator).writerows(rows)
    return buf.getvalue().encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def collect(t: CsvTailer) -> TailResult:
    """Poll until there is nothing more waiting (``more``) and merge the results."""
    out = t.poll()
    while out.more:
        nxt = t.poll()
        out.rows += nxt.rows
        out.lines += nxt.lines
        out.bad_rows += nxt.bad_rows
        out.bad_lines += nxt.bad_lines
        out.more = nxt.more
    return out


# --------------------------------------------------------------------------- basics
def test_header_then_rows(tmp_path: Path) -> None:
    p = tmp_path / "cpp_device_perf_report.csv"
    p.write_bytes(to_csv([HEADER]))
    t = CsvTailer(p)
    r = t.poll()
    assert r.header == HEADER and r.rows == [] and r.first_line == 0
    assert not (r.reset or r.missing or r.error)
    rows = [make_row(i) for i in range(3)]
    append(p, to_csv(rows))
    r = t.poll()
    assert r.header == HEADER
    assert r.rows == rows and r.lines == [2, 3, 4] and r.first_line == 2
    r = t.poll()
    assert r.rows == [] and r.header == HEADER and not r.reset


def test_cut_line_is_held_back(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    row = make_row(1)
    data = to_csv([HEADER, row])
    p.write_bytes(data[:-10])
    t = CsvTailer(p)
    r = t.poll()
    assert r.header == HEADER and r.rows == []
    assert t.pending_bytes == len(data) - 10 - len(HEADER_LINE) - 1
    append(p, data[-10:])
    r = t.poll()
    assert r.rows == [row] and r.first_line == 2 and t.pending_bytes == 0


def test_header_cut_mid_line(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    data = to_csv([HEADER, make_row(0)])
    p.write_bytes(data[:17])
    t = CsvTailer(p)
    assert t.poll().header is None
    append(p, data[17:])
    r = t.poll()
    assert r.header == HEADER and r.rows == [make_row(0)] and r.lines == [2]


@pytest.mark.parametrize("seed", range(40))
def test_random_chunks_split_lines(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    max_chunk = rng.choice([1, 7, 64, 500, 5000])
    n = rng.randint(1, 120 if max_chunk >= 64 else 12)
    terminator = rng.choice(["\n", "\r\n"])
    rows = [make_row(i, op_name=rng.choice(["", "Matmul", 'a,"b",c', "x y"])) for i in range(n)]
    data = to_csv([HEADER, *rows], terminator)
    p = tmp_path / "log.csv"
    p.write_bytes(b"")
    t = CsvTailer(p)
    seen: list[list[str]] = []
    lines: list[int] = []
    pos = 0
    while pos < len(data):
        step = rng.randint(1, max_chunk)
        append(p, data[pos : pos + step])
        pos += step
        r = t.poll()
        assert not r.reset and r.error is None and r.bad_rows == 0
        seen += r.rows
        lines += r.lines
        if r.rows:
            assert r.first_line == r.lines[0]
        # Never more than the complete lines written so far, never half a row.
        complete_lines = data[: min(pos, len(data))].count(b"\n")
        assert len(seen) == max(0, complete_lines - 1)
        assert seen == rows[: len(seen)]
    assert seen == rows
    assert lines == list(range(2, n + 2))


def test_crlf(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    rows = [make_row(i) for i in range(5)]
    p.write_bytes(to_csv([HEADER, *rows], "\r\n"))
    r = CsvTailer(p).poll()
    assert r.header == HEADER
    assert r.rows == rows and r.lines == [2, 3, 4, 5, 6]
    assert all(not f.endswith("\r") for row in r.rows for f in row)


def test_quoted_fields_commas_and_newlines(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    content = (
        b'ID,ATTRIBUTES,X\n'
        b'1,"{\'a\': 1, \'b\': 2}",x\n'
        b'2,"say ""hi"", ok",y\n'
        b'3,"two\nlines, here",z\n'
        b'4,plain,w\n'
    )
    t = CsvTailer(p)
    p.write_bytes(content[:60])  # ends inside the multi-line field's first line
    r1 = t.poll()
    append(p, content[60:])
    r2 = t.poll()
    rows = r1.rows + r2.rows
    assert rows == [
        ["1", "{'a': 1, 'b': 2}", "x"],
        ["2", 'say "hi", ok', "y"],
        ["3", "two\nlines, here", "z"],
        ["4", "plain", "w"],
    ]
    # Line numbers are where each record starts; record 3 spans lines 4 and 5.
    assert r1.lines + r2.lines == [2, 3, 4, 6]


def test_quoted_field_open_across_polls(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b'a,b\n1,"x\n')
    t = CsvTailer(p)
    r = t.poll()
    assert r.header == ["a", "b"] and r.rows == []
    append(p, b"more\n")
    assert t.poll().rows == []
    append(p, b'end"\n3,4\n')
    r = t.poll()
    assert r.rows == [["1", "x\nmore\nend"], ["3", "4"]] and r.lines == [2, 5]


def test_bad_field_counts_are_skipped(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"a,b,c\n1,2,3\n1,2\n4,5,6\n1,2,3,4\n\n7,8,9\n")
    r = CsvTailer(p).poll()
    assert r.rows == [["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]]
    assert r.lines == [2, 4, 7]
    assert r.bad_rows == 2 and r.bad_lines == [3, 5]


def test_utf8_split_inside_a_character(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    data = "name,v\nµs→ns,1\n".encode()
    cut = data.index("→".encode()) + 1
    p.write_bytes(data[:cut])
    t = CsvTailer(p)
    assert t.poll().rows == []
    append(p, data[cut:])
    assert t.poll().rows == [["µs→ns", "1"]]


def test_bom_is_stripped(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    r = CsvTailer(p).poll()
    assert r.header == ["a", "b"] and r.rows == [["1", "2"]]


# ---------------------------------------------------------------- resets
def test_truncation_resets_and_rereads_header(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, *[make_row(i) for i in range(10)]]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 10
    new_header = HEADER[:5]
    with open(p, "r+b") as f:  # same inode, shorter content
        f.truncate(0)
        f.write(to_csv([new_header, ["1", "2", "3", "4", "5"]]))
    r = t.poll()
    assert r.reset and r.reason == "truncated"
    assert r.header == new_header
    assert r.rows == [["1", "2", "3", "4", "5"]] and r.lines == [2]
    assert t.poll().rows == []


def test_truncation_to_zero_then_growth(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, make_row(0)]))
    t = CsvTailer(p)
    assert t.poll().rows == [make_row(0)]
    os.truncate(p, 0)
    r = t.poll()
    assert r.reset and r.reason == "truncated" and r.header is None and r.rows == []
    append(p, to_csv([HEADER, make_row(5)]))
    r = t.poll()
    assert not r.reset and r.rows == [make_row(5)] and r.lines == [2]


def test_copytruncate_then_rows_without_a_header_keeps_the_header(tmp_path: Path) -> None:
    """logrotate's copytruncate: the log copied away and cut to 0 bytes (same inode), the
    writer appending rows with no header. The first appended row was taken as the header and
    every row after it was read under it (the live table dropped them all, without a word)."""
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, *[make_row(i) for i in range(10)]]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 10
    ino = p.stat().st_ino
    (tmp_path / "a.csv.1").write_bytes(p.read_bytes())  # the copy
    os.truncate(p, 0)
    rows = [make_row(i) for i in range(100, 105)]
    append(p, to_csv(rows))
    assert p.stat().st_ino == ino
    r = t.poll()
    assert r.reset and r.reason == "truncated"
    assert r.header == HEADER and r.rows == rows and r.lines == [1, 2, 3, 4, 5]
    append(p, to_csv([make_row(105)]) + b"1,2,3\n")  # more rows, and one that cannot be read
    r = t.poll()
    assert r.rows == [make_row(105)] and r.bad_rows == 1 and r.bad_lines == [7]
    # truncated between two polls and appended from its first line again: read as before
    os.truncate(p, 0)
    append(p, to_csv([HEADER, make_row(200)]))
    r = t.poll()
    assert r.reset and r.header == HEADER and r.rows == [make_row(200)] and r.lines == [2]


def test_rewrite_in_place_to_larger_file(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, make_row(0), make_row(1)]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 2
    rows = [make_row(i) for i in range(100, 110)]
    with open(p, "r+b") as f:  # same inode, bigger and different content
        f.truncate(0)
        f.write(to_csv([HEADER, *rows]))
    r = t.poll()
    assert r.reset and r.reason == "rewritten"
    assert r.rows == rows and r.lines == list(range(2, 12))


def test_delete_and_recreate_smaller(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, *[make_row(i) for i in range(20)]]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 20
    p.unlink()
    p.write_bytes(to_csv([HEADER, make_row(99)]))
    r = t.poll()
    assert r.reset and r.reason == "replaced"
    assert r.header == HEADER and r.rows == [make_row(99)] and r.lines == [2]


def test_delete_and_recreate_larger_with_same_header(tmp_path: Path) -> None:
    """The held descriptor pins the old inode: even a bigger new file is seen as new."""
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, make_row(0)]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 1
    p.unlink()
    rows = [make_row(i) for i in range(50)]
    p.write_bytes(to_csv([HEADER, *rows]))
    r = t.poll()
    assert r.reset and r.reason == "replaced" and r.rows == rows


def test_deleted_then_missing_then_back(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, make_row(0)]))
    t = CsvTailer(p)
    assert t.poll().rows == [make_row(0)]
    p.unlink()
    r = t.poll()
    assert r.missing and r.reset and r.reason == "deleted" and r.rows == []
    r = t.poll()
    assert r.missing and not r.reset
    p.write_bytes(to_csv([HEADER, make_row(1)]))
    r = t.poll()
    assert not r.reset and not r.missing and r.rows == [make_row(1)] and r.lines == [2]


def test_os_replace_changes_inode(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(to_csv([HEADER, make_row(0), make_row(1)]))
    t = CsvTailer(p)
    assert len(t.poll().rows) == 2
    tmp = tmp_path / "a.csv.tmp"
    tmp.write_bytes(to_csv([HEADER, make_row(7), make_row(8), make_row(9)]))
    os.replace(tmp, p)
    r = t.poll()
    assert r.reset and r.reason == "replaced"
    assert r.rows == [make_row(7), make_row(8), make_row(9)] and r.lines == [2, 3, 4]
    append(p, to_csv([make_row(10)]))
    r = t.poll()
    assert not r.reset and r.rows == [make_row(10)] and r.lines == [5]


# ---------------------------------------------------------------- errors
def test_missing_file(tmp_path: Path) -> None:
    t = CsvTailer(tmp_path / "nope.csv")
    r = t.poll()
    assert r.missing and not r.reset and r.error is None and r.rows == [] and r.header is None
    (tmp_path / "nope.csv").write_bytes(b"a\n1\n")
    r = t.poll()
    assert not r.missing and r.rows == [["1"]]


def test_missing_parent_directory(tmp_path: Path) -> None:
    r = CsvTailer(tmp_path / "no" / "such" / "dir.csv").poll()
    assert r.missing and r.error is None


def test_permission_denied_via_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"a\n1\n")

    def deny(path: str) -> int:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(tailer_mod, "_open_readonly", deny)
    t = CsvTailer(p)
    r = t.poll()
    assert r.error is not None and "Permission denied" in r.error and "\n" not in r.error
    assert not r.missing and r.rows == []
    monkeypatch.undo()
    r = t.poll()
    assert r.error is None and r.rows == [["1"]]


def test_directory_path_is_an_error(tmp_path: Path) -> None:
    r = CsvTailer(tmp_path).poll()
    assert r.error is not None and "not a regular file" in r.error and not r.missing


def test_read_error_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"a\n1\n")
    t = CsvTailer(p)

    def broken(fd: int, n: int, off: int) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(tailer_mod.os, "pread", broken)
    r = t.poll()
    monkeypatch.undo()
    assert r.error is not None and "Input/output error" in r.error
    assert t.poll().rows == [["1"]]


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    p = tmp_path / "fifo.csv"
    os.mkfifo(p)
    t0 = time.monotonic()
    r = CsvTailer(p).poll()
    assert r.error is not None and "not a regular file" in r.error
    assert time.monotonic() - t0 < 2


def test_close_and_context_manager(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"a\n1\n")
    with CsvTailer(p) as t:
        assert t.poll().rows == [["1"]]
    assert t._fd is None  # noqa: SLF001 - closed on exit
    # After close() the tailer starts over (the caller asked for it).
    assert t.poll().rows == [["1"]]
    t.close()


def test_max_bytes_limits_one_poll(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    rows = [make_row(i) for i in range(200)]
    p.write_bytes(to_csv([HEADER, *rows]))
    t = CsvTailer(p, max_bytes=4096)
    first = t.poll()
    assert first.more and 0 < len(first.rows) < 200
    r = collect(t)
    assert first.rows + r.rows == rows
    assert first.lines + r.lines == list(range(2, 202))


# ---------------------------------------------------------------- size
def test_100k_rows_in_one_poll(tmp_path: Path) -> None:
    """A big append comes back whole in one poll (its speed is bench_watch.py's business: a
    timed assertion here failed under load, which is no regression)."""
    p = tmp_path / "big.csv"
    p.write_bytes(to_csv([HEADER]))
    t = CsvTailer(p)
    assert t.poll().header == HEADER
    append(p, to_csv([make_row(i) for i in range(100_000)]))
    r = t.poll()
    assert len(r.rows) == 100_000 and r.lines[0] == 2 and r.lines[-1] == 100_001
    assert r.rows[12_345] == make_row(12_345) and not r.more
    t.close()


# ---------------------------------------------------------------- property
_field = st.text(
    alphabet=st.sampled_from(list('ab ,"\n\r;µ→0123456789')),
    max_size=8,
)


@st.composite
def _csv_docs(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    width = draw(st.integers(1, 5))
    header = draw(st.lists(_field.filter(bool), min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(_field, min_size=width, max_size=width), max_size=25))
    terminator = draw(st.sampled_from(["\n", "\r\n"]))
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    table = [header, *rows]
    if quoting == csv.QUOTE_MINIMAL and terminator == "\n":
        # csv.writer only quotes the terminator's own characters: a bare CR would be invalid CSV.
        table = [[f.replace("\r", "") for f in row] for row in table]
        if not any(table[0]):
            table[0][0] = "h"
    # a row equal to the header is a repeated header (compared as written: ["0\r"] and ["0"]
    # are the same row once the CR is dropped)
    table = [table[0], *(r for r in table[1:] if r != table[0])]
    buf = io.StringIO()
    csv.writer(buf, lineterminator=terminator, quoting=quoting).writerows(table)
    data = buf.getvalue().encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    return data, cuts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_csv_docs())
def test_property_chunked_equals_whole(tmp_path: Path, doc: tuple[bytes, list[int]]) -> None:
    data, cuts = doc
    p = tmp_path / "prop.csv"
    p.write_bytes(b"")
    t = CsvTailer(p)
    got: list[list[str]] = []
    lines: list[int] = []
    header = None
    prev = 0
    for cut in [*cuts, len(data)]:
        append(p, data[prev:cut])
        prev = max(prev, cut)
        r = t.poll()
        assert not r.reset and r.error is None and r.bad_rows == 0
        got += r.rows
        lines += r.lines
        header = r.header or header
    t.close()
    text = data.decode()
    expected = list(csv.reader(io.StringIO(text, newline="")))
    assert header == expected[0]
    assert got == expected[1:]
    # Line numbers: the physical (\n-separated) line each record starts on.
    reader = csv.reader(io.StringIO(text, newline="\n"))
    starts, before = [], 0
    for _rec in reader:
        starts.append(before + 1)
        before = reader.line_num
    assert lines == starts[1:]


def test_a_repeated_header_is_skipped_and_counted(tmp_path: Path) -> None:
    """A second header line mid-file (a profiler dump appended with its header) is not an op."""
    p = tmp_path / "log.csv"
    rows = [make_row(i) for i in range(4)]
    p.write_bytes(to_csv([HEADER, rows[0], rows[1], HEADER, rows[2], rows[3]]))
    with CsvTailer(p) as t:
        res = t.poll()
    assert res.rows == rows and res.lines == [2, 3, 5, 6]
    assert res.bad_rows == 1 and res.bad_lines == [4]


def test_a_cell_over_128_kib_is_kept(tmp_path: Path) -> None:
    """The csv module's default field limit (128 KiB) must not drop a row the loader keeps."""
    p = tmp_path / "log.csv"
    big = make_row(1, op_name="Op" + "x" * 200_000)
    p.write_bytes(to_csv([HEADER, make_row(0), big, make_row(2)]))
    with CsvTailer(p) as t:
        res = t.poll()
    assert len(res.rows) == 3 and res.rows[1] == big and res.bad_rows == 0


def test_watch_once_counts_skipped_rows_and_fails_when_all_are_bad(tmp_path: Path) -> None:
    import json

    from conftest import run_ttdash

    logs = tmp_path / "p" / ".logs"
    logs.mkdir(parents=True)
    log = logs / "cpp_device_perf_report.csv"
    log.write_bytes(to_csv([HEADER, make_row(0), ["short", "row"], HEADER, make_row(1)]))
    r = run_ttdash("watch", str(tmp_path / "p"), "--once")
    assert r.returncode == 0, r.stderr
    live = json.loads(r.stdout)["live"]
    assert live["rows"] == 2 and live["skipped_rows"] == 2
    assert live["skipped_lines"] == [f"{log}:3", f"{log}:4"]
    log.write_bytes(to_csv([HEADER, ["short", "row"], ["a", "b", "c"]]))
    r = run_ttdash("watch", str(tmp_path / "p"), "--once")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"ttdash: {log}:2: every row of the live log is malformed"), \
        r.stderr


# ------------------------------------------------------------- plain blocks through pyarrow
def _poll_all(t: CsvTailer) -> list[tuple]:
    """Every poll's result as plain values (rows as lists, whatever their kind)."""
    out = []
    while True:
        r = t.poll()
        out.append((r.header, [list(x) for x in r.rows], r.lines, r.first_line, r.bad_rows,
                    r.bad_lines, r.reset, r.error))
        if not r.more:
            return out


def test_a_big_block_of_plain_rows_is_parsed_by_arrow_as_the_csv_module_reads_it(
        tmp_path: Path) -> None:
    """A block of plain lines comes as Arrow text (TextRows) with every cell the csv module's,
    header and line numbers included; the next block too."""
    from ttdash.model.read.rows import TextRows

    p = tmp_path / "cpp_device_perf_report.csv"
    rows = [make_row(i) for i in range(400)]
    p.write_bytes(to_csv([HEADER, *rows[:300]]))
    t = CsvTailer(p)
    r = t.poll()
    assert isinstance(r.rows, TextRows) and len(r.rows) == 300
    assert r.header == HEADER and r.rows == rows[:300] and list(r.rows) == rows[:300]
    assert r.lines == list(range(2, 302)) and r.first_line == 2
    append(p, to_csv(rows[300:]))
    t.plain_bytes = 0
    r = t.poll()
    assert isinstance(r.rows, TextRows)
    assert r.rows == rows[300:] and r.lines == list(range(302, 402))
    assert r.rows[5] == rows[305] and r.rows[-1] == rows[-1] and r.rows[2:4] == rows[302:304]


_cell = st.text(alphabet=st.sampled_from(list('ab ,"\r;µ0123456789') + ["\0", "\n"]), max_size=5)


@st.composite
def _raw_docs(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Comma-joined lines, most plain, some not: wrong widths, blank lines, quotes, CRs, NULs,
    the header again, bytes that are not UTF-8."""
    width = draw(st.integers(1, 5))
    header = [f"h{i}" for i in range(width)]
    lines = [",".join(header).encode()]
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["plain"] * 6 + ["odd", "blank", "header", "width", "bytes"]))
        if kind == "plain":
            cells = draw(st.lists(st.text(alphabet="ab 019µ", max_size=4), min_size=width,
                                  max_size=width))
        elif kind == "odd":
            cells = draw(st.lists(_cell, min_size=width, max_size=width))
        elif kind == "blank":
            cells = [""] if width == 1 else []
        elif kind == "header":
            cells = header
        elif kind == "width":
            cells = draw(st.lists(st.text(alphabet="ab1", max_size=3), min_size=1,
                                  max_size=width + 2))
        else:
            lines.append(b"1" + b"," * (width - 1) + b"\xff\xfe")
            continue
        lines.append(",".join(cells).encode())
    data = b"\n".join(lines) + b"\n"
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    return data, cuts


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_raw_docs())
def test_property_arrow_blocks_read_what_the_csv_module_reads(
        tmp_path: Path, doc: tuple[bytes, list[int]]) -> None:
    """Whatever the bytes, a tailer offering every block to pyarrow gives, poll by poll, what
    one that never does gives: the same header, rows, line numbers and malformed lines."""
    data, cuts = doc
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    for p in (fast, slow):
        p.write_bytes(b"")
    tf, ts = CsvTailer(fast), CsvTailer(slow)
    tf.plain_bytes, ts.plain_bytes = 0, 1 << 40
    prev = 0
    for cut in [*cuts, len(data)]:
        for p in (fast, slow):
            append(p, data[prev:cut])
        prev = max(prev, cut)
        assert _poll_all(tf) == _poll_all(ts)
    tf.close()
    ts.close()
