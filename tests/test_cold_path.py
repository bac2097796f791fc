"""The cold path (#38): the writers stay vectorised without changing a number or a word."""

from __future__ import annotations

import io
import json
import re

import pytest
from conftest import (
    FAST_REAL,
    REPORT_FIXTURES,
    ROOT,
    each_real_file,
    pairwise,
    real_dir,
    run_ttdash,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ttdash.format import fmt_floats
from ttdash.model import Trace, Window
from ttdash.model.analysis.advice import iter_advice
from ttdash.report.safe import json_clean
from ttdash.report.single import to_json


@pytest.mark.parametrize("name", each_real_file())
def test_json_advice_written_from_frames_equals_every_entry(name):
    """report -f json writes the advice a frame at a time; the entries are model.advice's, in
    its order, with the same fields and values as Advice.as_dict (floats as json_clean)."""
    view = Trace.load(real_dir() / name).view(Window("all"))
    buf = io.StringIO()
    to_json(view, buf)
    got = json.loads(buf.getvalue())["advice"]
    want = [json_clean(a.as_dict()) for a in iter_advice(view.ops, view.pause_above_us)]
    assert got == want
    assert len(want) > 0 or name.endswith("EXCERPT_first5lines.csv")


@pytest.mark.parametrize("by", ["op", "memory"])
def test_summary_groups_keyed_once_per_distinct_op_equal_row_by_row(by):
    """summary_key works on the distinct (op code, input 0 memory) pairs and spreads the result
    back; on every real file it equals the row-by-row rule, missing keys included."""
    import pandas as pd

    from ttdash.model.query import _summary_key_rows, summary_key

    for name in REPORT_FIXTURES:
        ops = Trace.load(real_dir() / name).view(Window("all")).ops
        got, want = summary_key(ops, by), _summary_key_rows(ops, by)
        pd.testing.assert_series_equal(got, want, check_names=False)


special = st.sampled_from([0.0, -0.0, 9.995, 9.9949, 99.95, 999.5, 1e4 - 0.05, 9999.5, 1e6,
                           999_999.99, 1e300, -1e300, 1e-300, float("inf"), float("-inf"),
                           float("nan"), 2.0 ** 63, 123456789.125])
values = st.lists(st.one_of(special, st.floats(allow_nan=True, allow_infinity=True),
                            st.floats(min_value=-1e7, max_value=1e7)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(values, st.sampled_from(["us", "pct", "num", "int", "id"]), st.integers(0, 3),
       st.sampled_from(["float64", "float32"]))
def test_column_formatting_a_unit_at_a_time_equals_each_value_formatted(xs, kind, digits,
                                                                         dtype):
    """format.fmt_floats (the tables' fast path) gives the text fmt_us / fmt_pct / fmt_num /
    fmt_int give each value, for any float: missing, infinite, huge, rounding edges, float32."""
    import numpy as np

    from ttdash.model.columns import FORMATTERS

    with np.errstate(over="ignore"):
        a = np.array(xs, dtype=dtype)
    assume(not (kind in ("int", "id") and np.isfinite(a).any()
                and np.abs(a[np.isfinite(a)]).max() > 1e30))  # 1e300 digits: both agree, slow
    want = [FORMATTERS[kind](v, digits) for v in a]
    assert fmt_floats(kind, a, digits) == want


@settings(max_examples=200, deadline=None)
@given(values, st.sampled_from(["us", "pct", "num", "int", "id"]), st.integers(0, 3),
       st.sampled_from(["float64", "float32"]), st.integers(1, 40))
def test_column_formatting_each_distinct_value_once_equals_each_value(xs, kind, digits, dtype,
                                                                      times):
    """A column of DISTINCT_FROM values or more is formatted a distinct value at a time (by
    its bits: 0.0 and -0.0 are two texts): the text each value gets from its formatter, for
    repeated values of any kind, in any order."""
    import numpy as np

    from ttdash import format as fmt
    from ttdash.model.columns import FORMATTERS

    xs = [*xs, 0.0, -0.0, 0.05, -0.05]
    with np.errstate(over="ignore"):
        a = np.array(xs * times + xs[::-1] * (fmt.DISTINCT_FROM // len(xs) + 1), dtype=dtype)
    assert len(a) >= fmt.DISTINCT_FROM
    assume(not (kind in ("int", "id") and np.isfinite(a).any()
                and np.abs(a[np.isfinite(a)]).max() > 1e30))
    want = [FORMATTERS[kind](v, digits) for v in a]
    assert fmt_floats(kind, a, digits) == want


def _perfetto_all_at_once(view, out) -> None:
    """report.perfetto.to_perfetto before it wrote its op events a block at a time (the
    reference its output must equal byte for byte)."""
    from ttdash.model.analysis.timeline import for_view
    from ttdash.model.columns import export_frame
    from ttdash.report.perfetto import ARG_FIELDS
    from ttdash.report.safe import records_json

    tl = for_view(view)
    ops = view.ops
    events: list[dict] = []
    for i, name in enumerate(tl.lanes):
        events.append({"ph": "M", "name": "process_name", "pid": i + 1,
                       "args": {"name": name if name.startswith("all") else
                                f"Device {name.removeprefix('dev ')}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": i + 1,
                       "args": {"sort_index": i}})
    fields = tuple(f for f in ARG_FIELDS if f in ops.columns)
    args = records_json(export_frame(ops.iloc[tl.pos], fields), double_precision=15,
                        lines=True).splitlines()
    names = ops["op_code"].astype(object).to_numpy()
    codes = names[tl.pos]
    cats = ops["category"].astype(object).to_numpy()[tl.pos]
    pids = (tl.lane + 1).tolist()
    ts, dur = tl.start_us.tolist(), (tl.end_us - tl.start_us).tolist()
    x_events = [
        f'{{"ph":"X","name":{json.dumps(str(c), ensure_ascii=False)},'
        f'"cat":{json.dumps(k if isinstance(k, str) and k else "op", ensure_ascii=False)},'
        f'"pid":{p},"tid":1,"ts":{t!r},"dur":{d!r},"args":{a}}}'
        for c, k, p, t, d, a in zip(codes, cats, pids, ts, dur, args)]
    for t, p in zip(tl.signpost_us, tl.signpost_pos):
        events.append({"ph": "i", "s": "g", "name": str(names[p]), "cat": "signpost",
                       "pid": 1, "tid": 1, "ts": float(t)})
    sm = view.summary()
    meta = {"source": str(view.trace.path), "arch": sm.arch, "clock": tl.source,
            "window": sm.window,
            "device_time_us": view.totals()["device_time_us"],
            "host_ops_not_shown": int(ops["is_host"].sum()),
            "ops_not_placed": tl.unplaced}
    out.write('{"displayTimeUnit":"ns","metadata":' + json.dumps(meta, ensure_ascii=False)
              + ',"traceEvents":[')
    out.write(",".join([*(json.dumps(e, ensure_ascii=False) for e in events), *x_events]))
    out.write("]}\n")


@pytest.mark.parametrize("name,chunk", pairwise(REPORT_FIXTURES, [7, 20_000], FAST_REAL))
def test_perfetto_written_in_blocks_equals_all_at_once(name, chunk, monkeypatch):
    """-f perfetto writes its op events a block at a time (a million ops: 2.4 GB held at once
    before), names and categories encoded once per distinct value: the bytes are those of the
    all-at-once writer, on every real file, with blocks of 7 ops and of the default size."""
    from ttdash.report import perfetto

    monkeypatch.setattr(perfetto, "CHUNK", chunk)
    view = Trace.load(real_dir() / name).view(Window("all"))
    got, want = io.StringIO(), io.StringIO()
    perfetto.to_perfetto(view, got)
    _perfetto_all_at_once(view, want)
    assert first_difference(got.getvalue(), want.getvalue()) is None


@pytest.mark.parametrize("share", [True, False])
def test_perfetto_of_hostile_cells_equals_all_at_once(share, monkeypatch):
    """The op events' blocks of cells no real file has: text that looks like a record's edge
    or a spliced share's key (quotes, `},{"id":`, a slash pandas escapes, non-ASCII), missing
    and infinite shares, two lanes, and no share column at all: the all-at-once writer's
    bytes, blocks of five events."""
    import numpy as np
    import pandas as pd

    from ttdash.report import perfetto

    monkeypatch.setattr(perfetto, "CHUNK", 5)
    view = Trace.load(ROOT / "fixtures" / "generated" / "n300_2dev_report.csv").view(
        Window("all"), merge=False)
    ops = view.ops.copy()
    n = len(ops)
    hostile = np.array(['a"},{"id":1', 'x/y', 'ü "q" \\', '","cores":"', "", None],
                       dtype=object)
    ops["signpost"] = pd.Categorical(hostile[np.arange(n) % len(hostile)])
    ops["op_code"] = pd.Categorical(hostile[(np.arange(n) + 1) % len(hostile)])
    ops["category"] = pd.Categorical(hostile[(np.arange(n) + 2) % len(hostile)])
    pct = ops["total_pct"].to_numpy(dtype="float64").copy()
    pct[::3], pct[1::7] = np.nan, np.inf
    ops["total_pct"] = pct
    if not share:
        ops = ops.drop(columns=["total_pct"])
    view.ops = ops
    got, want = io.StringIO(), io.StringIO()
    perfetto.to_perfetto(view, got)
    _perfetto_all_at_once(view, want)
    assert first_difference(got.getvalue(), want.getvalue()) is None
    events = json.loads(got.getvalue())["traceEvents"]
    ops_events = [e for e in events if e["ph"] == "X"]
    assert len({e["pid"] for e in ops_events}) == 2
    assert len(ops_events) > 10 and any(e["args"]["signpost"] == 'a"},{"id":1'
                                        for e in ops_events)
    assert any(("total_pct" in e["args"]) == share for e in ops_events)


def first_difference(got: str | list[str], want: str | list[str]) -> tuple | None:
    """Where two outputs first differ (with some context), None when they are equal: cheap to
    report on a megabyte (pytest's diff of two long strings takes minutes)."""
    if got == want:
        return None
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return i, got[max(0, i - 3):i + 3], want[max(0, i - 3):i + 3], len(got), len(want)


SGR_CODE = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("name,width", pairwise(REPORT_FIXTURES, [None, 80, 200], FAST_REAL))
def test_plain_table_rows_equal_the_cell_by_cell_rows(name, width, monkeypatch):
    """The plain table's rows are taken from each column's distinct texts padded once
    (present.worded, report.safe.joined_rows; a narrowed column's texts cut first); the
    coloured table still pads cell by cell (report.single's `cell`). Without their colour
    codes the two are the same text, on every real file, at any width, in blocks of 5 rows, of
    97 (columns of over 8 distinct values made a block at a time: KEEP_DISTINCT), and in one
    block; the same text whatever the block."""
    from ttdash.present import table as present_table
    from ttdash.report import single

    view = Trace.load(real_dir() / name).view(Window("all"))
    tables: dict[int, list[str]] = {}
    for chunk, most in ((5, 1 << 16), (97, 8), (20_000, 1 << 16)):
        monkeypatch.setattr(single, "CHUNK", chunk)
        monkeypatch.setattr(present_table, "KEEP_DISTINCT", most)
        for k, shown in enumerate((single.Shown(), single.Shown(top=3, raw_op_codes=True))):
            plain, coloured = io.StringIO(), io.StringIO()
            single.to_table(view, plain, shown, width=width)
            single.to_table(view, coloured, shown, color=True, width=width)
            want = [SGR_CODE.sub("", line).rstrip()
                    for line in coloured.getvalue().split("\n")]
            assert first_difference(plain.getvalue().split("\n"), want) is None
            assert first_difference(tables.setdefault(k, want), want) is None


class _Recorder(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.at_flush: list[str] = []

    def flush(self) -> None:
        self.at_flush.append(self.getvalue())


def test_table_header_flushed_before_the_columns_are_measured():
    """The default table flushes its first line as soon as it is made (a pipe's reader sees it
    while the rest of the header is worked out: the iterations, the performance model), then
    the whole header before the ops are formatted; no op row in either."""
    from ttdash.report import single

    view = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv").view(Window("all"))
    out = _Recorder()
    single.to_table(view, out)
    head = "".join(line + "\n" for line in single.head_lines(view, single.ALL))
    assert out.at_flush and out.at_flush[0] == head.split("\n")[0] + "\n"
    assert out.at_flush[0].startswith("File: ")
    assert head in out.at_flush
    assert out.getvalue().startswith(head) and len(out.getvalue()) > len(head)


def test_report_writes_the_file_line_before_the_analysis(monkeypatch, capsys):
    """`ttdash report FILE` writes (and flushes) "File: FILE" once the file is read, before the
    analysis starts (a pipe's reader sees the report begin while the ops are analysed); the
    whole output is still the table to_table writes of the analysed view, line for line."""
    from ttdash import cli
    from ttdash.commands import common
    from ttdash.report import single

    path = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    seen: list[str] = []
    view_from = common.view_from

    def analysis(*args, **kwargs):
        seen.append(capsys.readouterr().out)  # what stdout had when the analysis began
        return view_from(*args, **kwargs)

    monkeypatch.setattr(common, "view_from", analysis)
    assert cli.main(["report", str(path)]) == 0
    rest = capsys.readouterr().out
    assert seen == [f"File: {path}\n"]
    whole = io.StringIO()
    single.to_table(Trace.load(path).view(Window("all")), whole)
    assert seen[0] + rest == whole.getvalue()


def test_report_of_a_window_the_trace_lacks_writes_nothing():
    """The window is looked up before the "File:" line is written: a signpost the trace does
    not have is exit 2 with the one-line error and nothing on stdout."""
    r = run_ttdash("report", str(real_dir() / "tt-perf-report__bh20_oft.csv"),
                   "--signpost", "NOPE")
    assert r.returncode == 2 and r.stdout == ""
    assert "no signpost 'NOPE'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_text_cells_once_per_distinct_value_equal_each_value(name):
    """format.fmt_texts (the tables' text columns: each distinct value converted once) gives the
    text columns.FORMATTERS' text formatter gives each value, on every text column of every
    real file; the tables' own text columns take that path."""
    from ttdash.format import fmt_texts
    from ttdash.model.columns import FORMATTERS, TABLE_FIELDS
    from ttdash.report.single import TEXT_KINDS

    ops = Trace.load(real_dir() / name).view(Window("all")).ops
    for c in ops.columns:
        values = ops[c].to_numpy()
        if values.dtype != object:
            continue
        got = fmt_texts(values)
        if got is not None:
            assert got == [FORMATTERS["text"](v, 0) for v in values], c
    from ttdash.model.columns import BY_KEY
    for c in TABLE_FIELDS:
        if c in ops and BY_KEY[c].kind in TEXT_KINDS and ops[c].dtype == object:
            assert fmt_texts(ops[c].to_numpy()) is not None, c


cell_values = st.one_of(st.text(max_size=4), st.none(), st.just(float("nan")),
                        st.sampled_from(["1", "1.0", "True", "", " "]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(cell_values, st.sampled_from([1, 1.0, True, 0])), max_size=30))
def test_text_cells_any_values(xs):
    """For any mix of text, missing cells and numbers (1, 1.0 and True are one key to a hash
    table): the per-value text, or None (the caller then goes value by value)."""
    import numpy as np
    import pandas as pd

    from ttdash.format import fmt_texts
    from ttdash.model.columns import FORMATTERS

    a = np.array(xs + [pd.NA], dtype=object)
    got = fmt_texts(a)
    assert got is None or got == [FORMATTERS["text"](v, 0) for v in a]
    if all(isinstance(v, str) or v is None or v != v for v in xs):
        assert got is not None


@settings(max_examples=300, deadline=None)
@given(shares=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                 st.floats(min_value=1e-9, max_value=1e9)), min_size=1,
                       max_size=6),
       names=st.lists(st.sampled_from(['a"b', '"total_pct":"1"', "x\\", '":"', "plain", "",
                                       '","share_pct":', '1","op_code":', 'z"', "/\"}",
                                       ',"next":', '{"next":', '},{"op_code":', '}\n{']),
                      min_size=12, max_size=12),
       order=st.permutations(["op_code", "total_pct", "share_pct", "x/y", "next"]),
       keep=st.integers(1, 5), lines=st.booleans())
def test_shares_written_equal_the_regex(shares, names, order, keep, lines):
    """records_json writes a share with 6 significant digits: one share column followed by a
    column of a plain name is spliced into the records written without it (cut at the next
    key), else the shares are written as text and unquoted (the regular expression cost 0.25 s
    on 93,600 ops). The same bytes in any column order, with one share, two or none, also when
    other strings hold the keys, quotes, braces or backslashes; without the list's brackets
    (`bare`) the same records."""
    import pandas as pd

    from ttdash.report import safe

    n = len(shares)
    frame = pd.DataFrame({"op_code": names[:n], "total_pct": shares,
                          "share_pct": shares[::-1], "x/y": names[6:6 + n],
                          "next": names[::-1][:n]})[order[:keep]]
    text = safe.records_json(frame, lines=lines)
    plain = frame.astype({c: object for c in ("total_pct", "share_pct") if c in frame})
    for name in ("total_pct", "share_pct"):
        if name in frame:
            plain[name] = [f"{x:.6g}" if pd.notna(x) and abs(x) != float("inf") else None
                           for x in frame[name]]
    want = plain.to_json(orient="records", double_precision=safe.JSON_DECIMALS,
                         force_ascii=False, lines=lines)
    for name in ("total_pct", "share_pct"):
        want = re.sub(f'("{name}":)"([^"]*)"', r"\1\2", want)
    assert text == want
    if not lines:
        json.loads(text)  # still JSON
        assert safe.records_json(frame, bare=True) == want[1:-1]  # what a writer streams
        assert safe.records_json(frame.iloc[:0], bare=True) == ""
