"""Property tests (hypothesis, bounded): the loader, the live tailer and random damage.

(a) random valid traces load; totals are finite; IDs are tt-perf-report's line numbers;
(b) a report-shaped file written in random chunks and tailed live gives the same ops as a
    one-shot load;
(c) random byte damage to a valid report: a TraceError or a working trace, nothing else.
"""

from __future__ import annotations

import csv
import io
import math
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, example, given, note, settings
from hypothesis import strategies as st

from ttdash.live.tailer import CsvTailer
from ttdash.model import Trace, TraceError, Window
from ttdash.model.live.table import LiveModel
from ttdash.model.read.text import clean_text

# Bounded: no shrinking (a failing example is reported as found, so a failing run stays fast)
# and the first failure only.
SETTINGS = dict(deadline=timedelta(seconds=5), report_multiple_bugs=False,
                phases=(Phase.explicit, Phase.reuse, Phase.generate),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HEADER = ["OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "DEVICE ID", "DEVICE ARCH", "ATTRIBUTES",
          "MATH FIDELITY", "CORE COUNT", "AVAILABLE WORKER CORE COUNT", "HOST START TS",
          "DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "OP TO OP LATENCY [ns]",
          "DEVICE FW DURATION [ns]", "DEVICE KERNEL DURATION [ns]",
          "INPUT_0_W_PAD[LOGICAL]", "INPUT_0_Z_PAD[LOGICAL]", "INPUT_0_Y_PAD[LOGICAL]",
          "INPUT_0_X_PAD[LOGICAL]", "INPUT_0_LAYOUT", "INPUT_0_DATATYPE", "INPUT_0_MEMORY",
          "INPUT_1_W", "INPUT_1_Z", "INPUT_1_Y", "INPUT_1_X", "INPUT_1_DATATYPE",
          "INPUT_1_MEMORY", "OUTPUT_0_DATATYPE", "OUTPUT_0_MEMORY", "PM IDEAL [ns]",
          "METAL TRACE ID", "METAL TRACE REPLAY SESSION ID"]
COL = {h: i for i, h in enumerate(HEADER)}

# Op codes: commas, quotes, semicolons, brackets, unicode, control characters.
TEXT_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
OP_NAMES = st.sampled_from(["MatmulDeviceOperation", "Conv2d", "OptimizedConvNew", "Softmax",
                            "AllGather", "ReduceScatter", "(torch) linear", "BinaryNg", ""])
op_code = st.one_of(OP_NAMES, st.text(TEXT_CHARS, max_size=30),
                    st.builds(lambda a, b: a + b, OP_NAMES, st.text(TEXT_CHARS, max_size=8)))


def maybe(strategy, p_empty=True):
    return st.one_of(st.just(""), strategy) if p_empty else strategy


def int_text(lo, hi):
    return st.integers(lo, hi).map(str)


number = st.one_of(int_text(0, 10**9), st.floats(0, 1e9, allow_nan=False).map(repr),
                   st.floats(0, 1e6, allow_nan=False).map(lambda x: f"{x:.3e}"))
gap_number = st.one_of(int_text(-10**7, 10**8), st.floats(-1e6, 1e8, allow_nan=False).map(repr))
dim = st.one_of(int_text(1, 4096), st.builds(lambda a, b: f"{a}[{b}]", st.integers(1, 4096),
                                             st.integers(1, 4096)))


@st.composite
def op_row(draw, device: int | None, code: str, kind: str) -> list[str]:
    r = [""] * len(HEADER)
    r[COL["OP CODE"]] = code
    r[COL["OP TYPE"]] = kind
    if kind == "signpost":
        r[COL["ATTRIBUTES"]] = draw(st.text(TEXT_CHARS, max_size=10))
        r[COL["HOST START TS"]] = draw(int_text(0, 10**12))
        return r
    r[COL["DEVICE ID"]] = "" if device is None else str(device)
    r[COL["GLOBAL CALL COUNT"]] = draw(maybe(int_text(0, 2**31)))
    r[COL["DEVICE ARCH"]] = draw(st.sampled_from(["", "wormhole_b0", "blackhole"]))
    r[COL["ATTRIBUTES"]] = draw(st.one_of(st.just(""), st.text(TEXT_CHARS, max_size=40),
                                          st.just("{'program_config': 'MatmulMultiCoreReuse"
                                                  "ProgramConfig(in0_block_w=2)'}")))
    r[COL["MATH FIDELITY"]] = draw(st.sampled_from(["", "HiFi4", "HiFi3", "HiFi2", "LoFi",
                                                    "odd"]))
    r[COL["CORE COUNT"]] = draw(maybe(int_text(0, 200)))
    r[COL["AVAILABLE WORKER CORE COUNT"]] = draw(maybe(int_text(1, 140)))
    r[COL["HOST START TS"]] = draw(maybe(int_text(0, 10**12)))
    start = draw(st.integers(0, 10**13))
    r[COL["DEVICE FW START CYCLE"]] = draw(maybe(st.just(str(start))))
    r[COL["DEVICE FW END CYCLE"]] = draw(maybe(int_text(start, start + 10**8)))
    r[COL["OP TO OP LATENCY [ns]"]] = draw(maybe(gap_number))
    r[COL["DEVICE FW DURATION [ns]"]] = draw(maybe(number))
    r[COL["DEVICE KERNEL DURATION [ns]"]] = draw(maybe(number))
    for c in ("INPUT_0_W_PAD[LOGICAL]", "INPUT_0_Z_PAD[LOGICAL]", "INPUT_0_Y_PAD[LOGICAL]",
              "INPUT_0_X_PAD[LOGICAL]", "INPUT_1_W", "INPUT_1_Z", "INPUT_1_Y", "INPUT_1_X"):
        r[COL[c]] = draw(maybe(dim))
    r[COL["INPUT_0_LAYOUT"]] = draw(st.sampled_from(["", "TILE", "ROW_MAJOR"]))
    for c in ("INPUT_0_DATATYPE", "INPUT_1_DATATYPE", "OUTPUT_0_DATATYPE"):
        r[COL[c]] = draw(st.sampled_from(["", "BFLOAT16", "BFLOAT8_B", "FLOAT32", "UINT32",
                                          "WEIRD"]))
    for c in ("INPUT_0_MEMORY", "INPUT_1_MEMORY", "OUTPUT_0_MEMORY"):
        r[COL[c]] = draw(st.sampled_from(["", "DEV_0_DRAM_INTERLEAVED",
                                          "DEV_0_L1_WIDTH_SHARDED", "DRAM"]))
    r[COL["PM IDEAL [ns]"]] = draw(maybe(number))
    return r


@st.composite
def trace_rows(draw, max_ops: int = 12, signposts: bool = True) -> list[list[str]]:
    devices = draw(st.integers(1, 3))
    n = draw(st.integers(1, max_ops))
    rows = []
    for _ in range(n):
        kind = draw(st.sampled_from(["tt_dnn_device"] * 6 + ["python_fallback"]
                                    + (["signpost"] if signposts else [])))
        code = draw(op_code)
        if kind == "tt_dnn_device":
            for d in range(devices):
                rows.append(draw(op_row(d, code, kind)))
        else:
            rows.append(draw(op_row(None, code, kind)))
    return rows


def csv_text(rows: list[list[str]], header: list[str] = HEADER, terminator: str = "\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=terminator)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _finite_totals(view) -> None:
    tot = view.totals()
    for k, v in tot.items():
        if v is None and k.startswith("dram_roofline"):
            continue  # nothing modelled: no roofline (as tt-perf-report prints none)
        assert isinstance(v, (int, float)) and math.isfinite(v), (k, v)


def _expected_code(code: str):
    cleaned = clean_text(code)
    return None if code == "" else cleaned


# --------------------------------------------------------------------------- (a)


@settings(max_examples=80, **SETTINGS)
@given(rows=trace_rows(), crlf=st.booleans())
def test_random_valid_traces_load(rows, crlf):
    text = csv_text(rows, terminator="\r\n" if crlf else "\n")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "ops_perf_results.csv"
        p.write_text(text, encoding="utf-8", newline="")
        try:
            trace = Trace.load(p, columns="all")
            views = [trace.view(Window("all")), trace.view(Window("all"), merge=False),
                     trace.view()]
        except TraceError as exc:
            note(f"TraceError: {exc}")
            return
    for v in views:
        _finite_totals(v)
        ids = v.ops["id"].to_numpy()
        assert np.all((ids >= 2) & (ids <= len(rows) + 1)), ids
    # IDs are tt-perf-report's: the record's line number (header = 1), every row once.
    ordered = trace.ordered
    assert sorted(ordered["ID"].tolist()) == list(range(2, len(rows) + 2))
    for i, r in enumerate(rows):
        got = trace.row(i + 2)["OP CODE"]
        want = _expected_code(r[COL["OP CODE"]])
        if not want:  # empty, or nothing left once control characters are removed: blank
            assert pd.isna(got) or got == "", (i, got, want)
        else:
            assert not pd.isna(got) and got == want, (i, got, want)
    if not any("\n" in c or "\r" in c for r in rows for c in r):
        # Without newlines inside fields, that is also the physical line number.
        lines = text.split("\r\n" if crlf else "\n")
        for i in range(len(rows)):
            assert next(csv.reader([lines[i + 1]]))[COL["OP CODE"]] == rows[i][COL["OP CODE"]]
    all_rows = views[1]
    assert len(all_rows.ops) == len(rows)


# --------------------------------------------------------------------------- (b)

LIVE_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"),
                           blacklist_characters="\x85")
live_code = st.one_of(OP_NAMES.filter(bool), st.text(LIVE_CHARS, min_size=1, max_size=20)
                      .filter(lambda s: s.strip() != ""))


@st.composite
def live_file(draw):
    """A report-shaped file: one device or two, device ops only, HOST START TS increasing,
    op-to-op gaps never 0 (0 is a dump boundary in the live source)."""
    devices = draw(st.integers(1, 2))
    n = draw(st.integers(1, 25))
    rows, ts = [], 0
    for _ in range(n):
        code = draw(live_code)
        for d in range(devices):
            r = draw(op_row(d, code, "tt_dnn_device"))
            ts += draw(st.integers(1, 10**6))
            r[COL["HOST START TS"]] = str(ts)
            r[COL["METAL TRACE ID"]] = ""
            g = r[COL["OP TO OP LATENCY [ns]"]]
            if g and float(g) == 0:
                r[COL["OP TO OP LATENCY [ns]"]] = "17"
            # No line breaks inside fields here: live IDs are physical line numbers, report
            # IDs record numbers (tt-perf-report's); they agree only without embedded newlines.
            rows.append([c.replace("\n", " ").replace("\r", " ") for c in r])
    data = csv_text(rows, terminator=draw(st.sampled_from(["\n", "\r\n"]))).encode("utf-8")
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=12))))
    return rows, data, cuts


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    return a.shape == b.shape and bool(np.all((np.isnan(a) & np.isnan(b))
                                              | np.isclose(a, b, rtol=1e-9, atol=1e-9)))


@settings(max_examples=60, **SETTINGS)
@given(spec=live_file())
def test_tailed_report_matches_one_shot_load(spec):
    rows, data, cuts = spec
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        p = root / ".logs" / "cpp_device_perf_report.csv"
        p.parent.mkdir()
        p.write_bytes(b"")
        live = LiveModel(root)
        tailer = CsvTailer(p)
        tailer.plain_bytes = 0  # every plain block through pyarrow (the others' tests: lists)
        bounds = [0, *cuts, len(data)]
        for lo, hi in zip(bounds, bounds[1:]):
            with open(p, "ab") as fh:
                fh.write(data[lo:hi])
            res = tailer.poll()
            while True:
                assert not res.reset and not res.error and not res.bad_rows, res
                if res.header and res.rows:
                    live.add_rows(p, res.header, res.rows, res.lines)
                if not res.more:
                    break
                res = tailer.poll()
            live.frames()  # analysed incrementally, as the UI does after each batch
        tailer.close()
        one_shot = Trace.load(p, columns="all").view(Window("all"), merge=False).ops
    view = live.view()
    got = view.ops
    assert len(got) == len(one_shot) == len(rows)
    # the header's totals, added up batch by batch, are the totals of the whole table
    summed, whole = view.totals(), replace(view, sums=None).totals()
    assert summed.keys() == whole.keys()
    for k, v in whole.items():
        assert (summed[k] is None and v is None) or _same(summed[k], v), (k, summed[k], v)
    assert got["op_code"].tolist() == one_shot["op_code"].tolist()
    assert got["id"].tolist() == one_shot["id"].tolist()
    for c in ("device_time_us", "op_to_op_us", "device", "cores", "total_pct"):
        assert _same(got[c].to_numpy(dtype="float64", na_value=np.nan),
                     one_shot[c].to_numpy(dtype="float64", na_value=np.nan)), (
            c, got[c].tolist(), one_shot[c].tolist())


# --------------------------------------------------------------------------- (c)

_SMALL: bytes | None = None


def small_report() -> bytes:
    """A valid small report (one device, a signpost, a matmul): about 1.5 KB."""
    global _SMALL
    if _SMALL is None:
        rows = [[""] * len(HEADER) for _ in range(6)]
        codes = ["start", "MatmulDeviceOperation", "Softmax", "layer_0", "Conv2d", "AllGather"]
        for i, (r, code) in enumerate(zip(rows, codes)):
            r[COL["OP CODE"]] = code
            r[COL["HOST START TS"]] = str(1000 * (i + 1))
            if code in ("start", "layer_0"):
                r[COL["OP TYPE"]] = "signpost"
                continue
            r[COL["OP TYPE"]] = "tt_dnn_device"
            r[COL["DEVICE ID"]] = "0"
            r[COL["GLOBAL CALL COUNT"]] = str(1024 * i)
            r[COL["DEVICE ARCH"]] = "wormhole_b0"
            r[COL["MATH FIDELITY"]] = "HiFi2"
            r[COL["CORE COUNT"]] = "64"
            r[COL["DEVICE FW START CYCLE"]] = str(10**9 * i)
            r[COL["DEVICE FW END CYCLE"]] = str(10**9 * i + 20000)
            r[COL["DEVICE FW DURATION [ns]"]] = "20000"
            r[COL["DEVICE KERNEL DURATION [ns]"]] = str(15000 + i)
            r[COL["OP TO OP LATENCY [ns]"]] = str(700 * i)
            for t in ("INPUT_0_W_PAD[LOGICAL]", "INPUT_0_Z_PAD[LOGICAL]"):
                r[COL[t]] = "1[1]"
            r[COL["INPUT_0_Y_PAD[LOGICAL]"]] = "1024[1000]"
            r[COL["INPUT_0_X_PAD[LOGICAL]"]] = "768[768]"
            r[COL["INPUT_0_DATATYPE"]] = "BFLOAT16"
            r[COL["INPUT_0_MEMORY"]] = "DEV_0_DRAM_INTERLEAVED"
            for t, v in (("INPUT_1_W", "1"), ("INPUT_1_Z", "1"), ("INPUT_1_Y", "768"),
                         ("INPUT_1_X", "2304")):
                r[COL[t]] = v
            r[COL["INPUT_1_DATATYPE"]] = "BFLOAT8_B"
            r[COL["INPUT_1_MEMORY"]] = "DEV_0_DRAM_INTERLEAVED"
            r[COL["ATTRIBUTES"]] = "{'program_config': 'MatmulMultiCoreReuseProgramConfig'}"
        _SMALL = csv_text(rows).encode("utf-8")
    return _SMALL


def test_small_report_is_valid(tmp_path):
    p = tmp_path / "ops_perf_results.csv"
    p.write_bytes(small_report())
    assert Trace.load(p).view(Window("all")).totals()["ops"] == 4


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(small_report())
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup_line"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] = draw(st.sampled_from([0, 10, 13, 34, 44, 0xFF, 0xC3, 0x80, 0x1B,
                                            data[i] ^ (1 << draw(st.integers(0, 7)))]))
        elif kind == "insert":
            data[i:i] = draw(st.sampled_from([b",", b'"', b"\n", b"\r", b"\x00", b"\xef\xbb\xbf",
                                              b"nan", b"-", b"1e999", b'""', b",,,\n",
                                              draw(st.binary(min_size=1, max_size=8))]))
        elif kind == "delete":
            del data[i:i + draw(st.integers(1, 64))]
        elif kind == "truncate":
            del data[i:]
        else:
            j = data.find(b"\n", i)
            k = data.rfind(b"\n", 0, i)
            if j > k >= 0:
                data[j + 1:j + 1] = data[k + 1:j + 1]
    return bytes(data)


@settings(max_examples=100, **SETTINGS)
@given(data=mutated())
def test_damaged_report_loads_or_raises_trace_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "ops_perf_results.csv"
        p.write_bytes(data)
        for columns in ("analysis", "all"):
            try:
                trace = Trace.load(p, columns=columns)
            except TraceError as exc:
                assert "\n" not in exc.oneline()
                continue
            for w in (Window("all"), Window()):
                v = trace.view(w)
                _finite_totals(v)
                trace.view(w, merge=False)


# --------------------------------------------------------------------------- numeric cells

def _nearest(cell: str, parsed: float) -> float:
    """The nearest double to a cell pandas read as `parsed` (missing stays missing)."""
    if np.isnan(parsed):
        return parsed
    try:
        return float(cell)
    except ValueError:  # a form Python does not read: pandas' value stands
        return parsed


_CELL = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(str), st.just(""),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text("0123456789+-.xeE _abn", max_size=8),
    st.integers(0, 999).map(lambda i: f" {i}"), st.integers(0, 999).map(hex))


@settings(max_examples=300, **SETTINGS)
@given(cells=st.lists(_CELL, min_size=1, max_size=12))
# pandas 2.2 reads this 19-digit number 1 ulp off (-1.8470453986239447e18; the nearest double
# is ...452e18): found by CI's lowest-dependency pass
@example(cells=["-1847045398623945216", "", "", "06264005"])
def test_numeric_cells_read_as_pandas_reads_them(cells):
    """The live table's fast number parse (Arrow's cast for whole numbers) gives what
    pd.to_numeric(errors="coerce") gives: the same dtype, the same cells read as numbers, the
    same values, except where pandas < 3's own parse is not correctly rounded and Arrow's is:
    there the value is the nearest double to the text (Python's float())."""
    from ttdash.model.read.cells import numeric_cells

    a = np.array(cells, dtype=object)
    got = numeric_cells(a)
    want = pd.to_numeric(pd.Series(a, dtype=object), errors="coerce").to_numpy()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        nearest = np.array([_nearest(c, w) for c, w in zip(cells, want)], dtype=want.dtype)
        same = (got == want) | (got == nearest) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (got, want, nearest)
    else:
        assert np.array_equal(got, want), (got, want)


_WHOLE_CELL = st.one_of(st.integers(-(1 << 40), 1 << 40).map(str), st.just(""))


@settings(max_examples=200, **SETTINGS)
@given(columns=st.lists(st.one_of(st.lists(_WHOLE_CELL, min_size=4, max_size=4),
                                  st.lists(_CELL, min_size=4, max_size=4)),
                        min_size=0, max_size=5))
def test_numeric_columns_are_numeric_cells_a_column_at_a_time(columns):
    """A live block's numeric columns are parsed in one pass (cells.numeric_columns): each is
    what numeric_cells makes of it alone, dtype included (int64 unless a cell is empty), when
    every column is whole numbers and when one is not."""
    from ttdash.model.read.cells import numeric_cells, numeric_columns

    cells = np.array(columns, dtype=object).T.reshape(4, len(columns))
    got = numeric_columns(cells)
    # the same cells as Arrow text columns (a block the tailer parsed with pyarrow)
    arrow = numeric_columns([pa.array(list(c), pa.string()) for c in columns])
    assert len(got) == len(arrow) == len(columns)
    for j, (g, a) in enumerate(zip(got, arrow)):
        want = numeric_cells(cells[:, j])
        assert g.dtype == a.dtype == want.dtype, (j, g, a, want)
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("seed", [3, 5])
def test_live_rows_as_arrow_text_make_the_table_rows_as_lists_make(tmp_path, seed):
    """Rows the tailer parsed with pyarrow (TextRows), alone or between blocks of rows as
    lists, make the same live table, totals and devices as the same rows all as lists."""
    from ttdash.model.read.rows import TextRows
    from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv

    p = tmp_path / ".logs" / "cpp_device_perf_report.csv"
    p.parent.mkdir()
    write_cpp_device_csv(cpp_device_rows(generate_ops(60, devices=2, seed=seed)), p,
                         append=False)
    with open(p, newline="") as fh:
        header, *data = list(csv.reader(fh))
    table = pa.table({f"f{j}": pa.array([r[j] for r in data], pa.string())
                      for j in range(len(header))})

    def view(kinds: str):
        model = LiveModel(tmp_path)
        for k, lo in enumerate(range(0, len(data), 25)):
            hi = min(lo + 25, len(data))
            rows = TextRows(table.slice(lo, hi - lo)) if kinds[k % len(kinds)] == "a" \
                else data[lo:hi]
            model.add_rows(p, header, rows, list(range(lo + 2, hi + 2)))
            if k % 2:
                model.frames()
        return model, model.view()

    (lists, want), (arrow, got), (mixed, both) = view("l"), view("a"), view("aal")
    for model, v in ((arrow, got), (mixed, both)):
        assert len(v.ops) == len(data) == 120
        pd.testing.assert_frame_equal(v.ops, want.ops)
        pd.testing.assert_frame_equal(v.trace.ordered, want.trace.ordered)
        assert v.totals() == want.totals() and v.bound_time_us == want.bound_time_us
        assert model.devices() == lists.devices() == [0, 1]


def test_live_rows_converted_before_a_refresh_equal_rows_converted_at_it(tmp_path, monkeypatch):
    """A big read (watch --once) converts its string rows every CONVERT_ROWS rows instead of at
    the refresh: the table and its totals are the same."""
    import ttdash.model.live.table as live_module
    from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv

    p = tmp_path / ".logs" / "cpp_device_perf_report.csv"
    p.parent.mkdir()
    write_cpp_device_csv(cpp_device_rows(generate_ops(40, devices=2, seed=3)), p, append=False)
    with open(p, newline="") as fh:
        header, *data = list(csv.reader(fh))

    def view(convert_rows: int):
        monkeypatch.setattr(live_module, "CONVERT_ROWS", convert_rows)
        model = LiveModel(tmp_path)
        for i in range(0, len(data), 9):
            batch = data[i:i + 9]
            model.add_rows(p, header, batch, list(range(i + 2, i + 2 + len(batch))))
            if i % 27 == 0:
                model.frames()
        return model.view()

    at_refresh, early = view(1 << 16), view(4)
    assert len(early.ops) == len(data) == 80
    pd.testing.assert_frame_equal(early.ops, at_refresh.ops)
    pd.testing.assert_frame_equal(early.trace.ordered, at_refresh.trace.ordered)
    assert early.totals() == at_refresh.totals()


@settings(max_examples=100, **SETTINGS)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None]),
                               st.sampled_from([1.0, 2.5, math.nan]), st.integers(-3, 3),
                               st.integers(-10**15, 10**15)), max_size=30))
def test_factorize_rows_numbers_distinct_tuples_by_first_appearance(rows):
    """Floats, objects and whole numbers (of a narrow range: their own codes; of a wide one:
    factorized); first_rows gives np.unique's first index of the ids."""
    from ttdash.model.read.cells import factorize_rows, first_rows

    types = [np.float64, object, np.float64, np.int64, np.int64]
    cols = [np.array([r[k] for r in rows], dtype=t) for k, t in enumerate(types)]
    seen: dict = {}
    want = [seen.setdefault(tuple("nan" if isinstance(v, float) and math.isnan(v) else v
                                  for v in r), len(seen)) for r in rows]
    ids = factorize_rows(cols)
    assert ids.tolist() == want
    assert factorize_rows(iter(cols)).tolist() == want  # a generator: one column at a time
    assert first_rows(ids).tolist() == np.unique(ids, return_index=True)[1].tolist()


def test_factorize_rows_takes_whole_numbers_at_the_ends_of_their_range():
    """A narrow range near the ends of uint64 and int64 is factorized, not shifted by its least
    (which overflows int64)."""
    from ttdash.model.read.cells import factorize_rows

    for values in (np.array([2**64 - 1, 2**64 - 2, 2**64 - 1], dtype=np.uint64),
                   np.array([-2**63, -2**63 + 1, -2**63], dtype=np.int64),
                   np.array([2**63 - 1, 2**63 - 2, 2**63 - 1], dtype=np.int64)):
        assert factorize_rows([values, values]).tolist() == [0, 1, 0]


def test_factorize_rows_renumbers_before_the_tuple_number_overflows():
    """Rows told apart only by their first column, followed by four columns of 65,535 distinct
    values each: folded without renumbering, the first column's codes are multiplied by
    65,536^4 = 2^64 and vanish (every row would collide with its twin)."""
    from ttdash.model.read.cells import factorize_rows

    rng = np.random.default_rng(7)
    n = 65_535
    cols = [np.repeat([0, 1], n)] + [np.tile(rng.permutation(n), 2) for _ in range(4)]
    assert factorize_rows(cols).tolist() == list(range(2 * n))


@settings(max_examples=200, **SETTINGS)
@given(columns=st.lists(st.tuples(st.lists(st.text(max_size=6), min_size=3, max_size=3),
                                  st.integers(0, 8), st.booleans()), min_size=1, max_size=4))
@example(columns=[(["", "\x00", ""], 0, False)])  # (two texts one hash took for one, CI found)
def test_padded_rows_are_the_rows_percent_format_and_rstrip_make(columns):
    """The plain table's rows are made in Arrow (report.safe.padded, joined_rows): each row is what
    `"%-Ns  %Ms" % row` and `str.rstrip` make of it (padding by code points, any Unicode
    whitespace stripped at its end: a cell of spaces, tabs, U+3000), a newline after each;
    the same from columns given as their distinct texts and a position a row (Coded)."""
    import pyarrow as pa

    from ttdash.format import Coded
    from ttdash.report.safe import joined_rows, padded

    def padded_rows(columns, widths, left):
        return joined_rows([padded(t, w, lt) for t, w, lt in zip(columns, widths, left)])

    texts, widths, left = (list(x) for x in zip(*columns))
    fmt = "  ".join(f"%{'-' if lt else ''}{w}s" for w, lt in zip(widths, left))
    want = "".join((fmt % row).rstrip() + "\n" for row in zip(*texts))
    assert memoryview(padded_rows(texts, widths, left)).tobytes().decode("utf-8") == want
    coded = []
    for t in texts:  # (not pd.factorize: pandas 2.2 takes "" and "\x00" for one string)
        seen: dict[str, int] = {}
        at = np.array([seen.setdefault(x, len(seen)) for x in t])
        coded.append(Coded(pa.array(list(seen), type=pa.string()), at))
    assert memoryview(padded_rows(coded, widths, left)).tobytes().decode("utf-8") == want


def test_float_reprs_are_pythons_repr_of_each_value_repeated_or_not():
    """Perfetto's times (report.safe.float_reprs): each float's repr, made once per distinct
    value when they repeat (a block of 20,000 events' durations) and per value when not;
    -0.0 and 0.0, nan and the infinities keep their own texts."""
    from ttdash.report.safe import DISTINCT_FROM, float_reprs

    rng = np.random.default_rng(5)
    odd = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-300, 123456.789, 0.1 + 0.2]
    repeated = np.concatenate([rng.choice(rng.random(50) * 1e4, 3 * DISTINCT_FROM), odd])
    distinct = np.concatenate([rng.random(DISTINCT_FROM + 10) * 1e6, odd])
    for values in (repeated, distinct, np.array(odd)):
        assert float_reprs(values).to_pylist() == [repr(v) for v in values.tolist()]
