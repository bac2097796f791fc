"""report.safe.columns_json: JSON records made a column at a time are the bytes pandas' encoder
writes (what `report -f json` streamed before), whatever the values."""

from __future__ import annotations

import json
from unittest.mock import patch

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.report import safe

#: floats around every edge of the encoder's own formatting: its rounding of the 6th decimal
#: (ties, carries into the whole part), its switch to "%g" below 1e-15 and above 1e16 - 1,
#: negative values that round to zero, NaN and infinities (null)
EDGES = [0.0, -0.0, 0.5e-6, 1.5e-6, 2.5e-7, -1e-9, 0.9999995, 9.9999995, 123456.0000005,
         1e-15, 9.99e-16, 1e16 - 2, 1e16, 1.0000000000000002e16, 5e-324, 1.7e308, -1.7e308,
         12345678901234.5678, 2.0 ** 53 + 2, float("nan"), float("inf"), float("-inf")]
floats = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True),
                   st.floats(min_value=-1e7, max_value=1e7),
                   st.integers(-10**9, 10**9).map(lambda i: i / 10**6))
texts = st.one_of(st.none(), st.text(max_size=12),
                  st.sampled_from(['a/b', 'q"uote', "back\\slash", "tab\tnew\nline\r", "\x00\x01\x1f\x7f",
                                   "é ü 中 \u2028", '","x":', "}\n{", "=1+2", ""]))


def pandas_records(frame: pd.DataFrame, lines: bool = False) -> str:
    """What records_json wrote before columns_json (pandas' encoder; Int64 with a gap as
    Python ints and None), as records separated by commas (`lines`: a record a line)."""
    out = frame.copy()
    for c in out.columns:
        if str(out[c].dtype) == "Int64":
            out[c] = out[c].astype(object).where(out[c].notna(), None)
    text = out.to_json(orient="records", double_precision=safe.JSON_DECIMALS,
                       force_ascii=False, lines=lines)
    return text if lines else text[1:-1]


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 12))
def test_columns_json_writes_what_pandas_writes(data, n):
    f = data.draw(st.lists(floats, min_size=n, max_size=n))
    i = data.draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n))
    gaps = data.draw(st.lists(st.one_of(st.none(), st.integers(-10**12, 10**12)), min_size=n,
                              max_size=n))
    s = data.draw(st.lists(texts, min_size=n, max_size=n))
    cats = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["x/y", "b", 'c"'])),
                              min_size=n, max_size=n))
    b = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    nb = data.draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n))
    frame = pd.DataFrame({"f": np.array(f, dtype="float64"), "i": np.array(i, dtype="int64"),
                          "gap": pd.array(gaps, dtype="Int64"), "s": pd.Series(s, dtype=object),
                          "cat": pd.Categorical(cats), "b/\"key": b,
                          "nb": pd.array(nb, dtype="boolean"),
                          "same": np.full(n, 7, dtype="int32"),
                          "none": np.full(n, np.nan)})
    order = data.draw(st.permutations(list(frame.columns)))
    frame = frame[order]
    got = safe.columns_json(frame)
    assert got is not None
    want = pandas_records(frame)
    assert got.to_pybytes().decode("utf-8") == want
    lines = safe.columns_json(frame, lines=True).to_pybytes().decode("utf-8")
    assert lines == pandas_records(frame, lines=True)
    assert [json.loads(x) for x in lines.split("\n")[:-1]] == json.loads("[" + want + "]")


@settings(max_examples=15, deadline=None)
@given(f=st.lists(floats, min_size=1, max_size=40), s=st.lists(texts, min_size=1, max_size=40))
def test_repeated_values_are_written_once_each_and_read_the_same(f, s):
    """A column of DISTINCT_FROM values or more that repeat has each distinct value's text made
    once (_per_distinct): the same bytes as value by value (pandas' for every column but the
    share, whose 6 significant digits pandas' encoder does not write), -0.0 kept apart from
    0.0, NaN and infinities null, a text's escapes and its missing rows (a categorical's
    too)."""
    n = safe.DISTINCT_FROM + 3
    rng = np.random.default_rng(len(f) * 41 + len(s))
    frame = pd.DataFrame({
        "f": np.array(f, dtype="float64")[rng.integers(0, len(f), n)],
        "total_pct": np.array(f, dtype="float64")[rng.integers(0, len(f), n)],
        "s": pd.Series(np.array(s, dtype=object)[rng.integers(0, len(s), n)], dtype=object),
        "s_full": pd.Series(np.array([x if x is not None else "" for x in s],
                                     dtype=object)[rng.integers(0, len(s), n)], dtype=object),
        "cat": pd.Categorical(np.array(s, dtype=object)[rng.integers(0, len(s), n)]),
        "distinct": rng.random(n)})  # every value its own: written value by value
    got = safe.columns_json(frame).to_pybytes().decode("utf-8")
    plain = frame.drop(columns="total_pct")
    assert safe.columns_json(plain).to_pybytes().decode("utf-8") == pandas_records(plain)
    with patch.object(safe, "DISTINCT_FROM", len(frame) + 1):  # every column value by value
        assert safe.columns_json(frame).to_pybytes().decode("utf-8") == got


def test_records_json_takes_the_column_path_and_keeps_its_forms():
    """records_json's text, its bare records and its raw bytes agree; a share keeps 6
    significant digits; a frame with a column the column path does not write (lists) goes
    through pandas' encoder, as before."""
    frame = pd.DataFrame({"id": pd.array([2, None], dtype="Int64"), "total_pct": [1.5e-05, 12.0],
                          "op_code": pd.Categorical(["Matmul", None]), "x": [0.1234567, np.nan]})
    text = safe.records_json(frame)
    assert text == ('[{"id":2,"total_pct":1.5e-05,"op_code":"Matmul","x":0.123457},'
                    '{"id":null,"total_pct":12,"op_code":null,"x":null}]')
    assert safe.records_json(frame, bare=True) == text[1:-1]
    assert bytes(safe.records_json(frame, bare=True, raw=True)) == text[1:-1].encode()
    listed = frame.assign(ids=pd.Series([[1, 2], []], dtype=object))
    assert safe.columns_json(listed) is None
    assert safe.records_json(listed) == (
        '[{"id":2,"total_pct":1.5e-05,"op_code":"Matmul","x":0.123457,"ids":[1,2]},'
        '{"id":null,"total_pct":12,"op_code":null,"x":null,"ids":[]}]')


def test_a_second_json_report_writes_the_guide_entries_kept_with_the_view(cached, tmp_path,
                                                                          monkeypatch):
    """The guide rules' entries are made once and kept with the view in the analysis cache:
    the second `report -f json` writes the same bytes without running the rules; a run with
    the cache off keeps nothing."""
    import shutil

    from conftest import real_dir

    from ttdash.cli import main
    from ttdash.model.analysis import guides

    src = tmp_path / "clip.csv"
    shutil.copyfile(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv", src)
    out = tmp_path / "out.json"
    runs: list[int] = []
    rules = guides.guide_frames
    monkeypatch.setattr(guides, "guide_frames",
                        lambda g, keep=None: runs.append(1) or rules(g, keep))

    def report(*flags: str) -> bytes:
        assert main(["report", str(src), "-f", "json", "-o", str(out), "--force", *flags]) == 0
        return out.read_bytes()

    want = report("--no-cache")
    monkeypatch.delenv("TTDASH_NO_CACHE", raising=False)  # (--no-cache set it for the process)
    assert runs == [1] and not list(cached.glob("*.view"))
    assert report() == want and runs == [1, 1]
    assert report() == want and runs == [1, 1]  # the second run: the entries kept
    assert json.loads(want)["guide_advice"]


@settings(max_examples=50, deadline=None)
@given(data=st.data(), n=st.integers(1, 12))
def test_raw_fields_are_the_objects_pandas_writes(data, n):
    """A diff's `changed` objects (columns_json's `raw`: each distinct object written once by
    json_objects, a row's taken by its position, null where it has none) are the bytes
    pandas' encoder writes for the frame with the objects in a column."""
    import pyarrow as pa

    from ttdash.format import Coded

    leaf = st.one_of(st.none(), floats, st.integers(-10**12, 10**12), texts)
    objects = data.draw(st.lists(st.dictionaries(
        st.sampled_from(["op_code", "math_fidelity", 'k"ey']),
        st.dictionaries(st.sampled_from(["baseline", "candidate"]), leaf, max_size=2),
        max_size=3), min_size=1, max_size=4))
    at = np.array(data.draw(st.lists(st.integers(-1, len(objects) - 1), min_size=n,
                                     max_size=n)), dtype=np.int64)
    frame = pd.DataFrame({"id": np.arange(n), "nb": pd.array([None] * n, dtype="boolean"),
                          "x": np.array(data.draw(st.lists(floats, min_size=n, max_size=n)))})
    raw = {"changed": Coded(safe.json_objects(objects, 6), pa.array(at, mask=at < 0))}
    got = safe.columns_json(frame, 6, raw=raw).to_pybytes().decode("utf-8")
    want = frame.assign(changed=np.array(objects + [None], dtype=object)[at]).to_json(
        orient="records", double_precision=6, force_ascii=False)[1:-1]
    assert got == want
