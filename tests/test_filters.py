"""The filter language's comparisons (`cores<10`, `device>1ms`) on real traces, each count checked
against pandas on the same frame; keys generated from the column spec's aliases; the hint."""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.model import columns as C
from ttdash.model.filters import (
    DIFF_FILTER_KEYS,
    FILTER_KEYS,
    Filter,
    FilterError,
    comparison_keys,
    filter_examples,
    filter_hint,
)

OFT = "tt-perf-report__bh20_oft.csv"  # a few 1-8 ms ops, 4 ops under 10 cores
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"  # 781 host ops
DLV3 = "tt-perf-report__bh_p100_dlv3.csv"
DSV3 = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"  # 8 devices


@cache
def ops_of(name: str) -> pd.DataFrame:
    return Trace.load(real_dir() / name, columns="all").view(Window("all")).ops


def count(name: str, text: str) -> int:
    return int(Filter(text).mask(ops_of(name)).sum())


def expected(name: str, pick) -> int:
    """Ops (signposts never match a filter) for which `pick(frame)` holds, by pandas alone."""
    o = ops_of(name)
    o = o[~o["is_signpost"].astype(bool)]
    return int(pick(o).fillna(False).astype(bool).sum())


# ------------------------------------------------------------------ each comparison on real data
CASES = [
    (OFT, "device>1ms", lambda o: o["device_time_us"] > 1000),
    (OFT, "time>=500", lambda o: o["device_time_us"] >= 500),
    (SEG, "gap>100us", lambda o: o["op_to_op_us"] > 100),
    (OFT, "gap<=20us", lambda o: o["op_to_op_us"] <= 20),
    (SEG, "cores<10", lambda o: o["cores"] < 10),
    (OFT, "cores<10", lambda o: o["cores"] < 10),
    (DLV3, "dram>20", lambda o: o["dram_pct"] > 20),
    (OFT, "flop>50", lambda o: o["flops_pct"] > 50),
    (OFT, "flops<=60", lambda o: o["flops_pct"] <= 60),
    (SEG, "total>1", lambda o: o["total_pct"] > 1),
    (SEG, "id>=100", lambda o: o["id"] >= 100),
    (DSV3, "dev>3", lambda o: o["device"] > 3),
    (DSV3, "dev!=0", lambda o: o["device"].notna() & (o["device"] != 0)),
    (SEG, "cores!=64", lambda o: o["cores"].notna() & (o["cores"] != 64)),
    (DLV3, "gbps>100", lambda o: o["dram_gbps"] > 100),
    (DLV3, "tflops>10", lambda o: o["flops"] > 10),
    (OFT, "io>50", lambda o: o["io_dram_pct"] > 50),
    (OFT, "call<400000", lambda o: o["global_call_count"] < 400000),
    (OFT, "cores=20", lambda o: o["cores"] == 20),
    (OFT, "cores:20", lambda o: o["cores"] == 20),
    (SEG, "cores:<10", lambda o: o["cores"] < 10),
]


@pytest.mark.parametrize("name, text, pick", CASES, ids=[f"{n[:14]}:{t}" for n, t, _ in CASES])
def test_comparison_counts_agree_with_pandas(name, text, pick):
    want = expected(name, pick)
    assert 0 < want < len(ops_of(name)), "a vacuous case: pick another threshold"
    assert count(name, text) == want


@pytest.mark.parametrize("text", ["device>1ms", "device>1000us",  # time: a bare number is us
                                  "time>1000", "device>1000000ns", "device>0.001s",
                                  "device>1 ms", "device > 1ms", "DEVICE>1MS", '"device > 1 ms"',
                                  "device>1000µs", "time:>1ms"])
def test_time_units(text):
    assert count(OFT, text) == expected(OFT, lambda o: o["device_time_us"] > 1000) == 22


def test_ns_are_exact_for_equality():
    o = ops_of(OFT)
    v = float(o["device_time_us"].dropna().iloc[0])
    assert count(OFT, f"time={v}") == count(OFT, f"time={round(v * 1000)}ns") > 0


def test_percent_sign_is_optional():
    assert count(DLV3, "dram>20%") == count(DLV3, "dram>20") == 14


def test_negation_and_missing_values():
    """A host op has no device time: it never matches device>… and always its negation."""
    o = ops_of(SEG)
    ops = ~o["is_signpost"].astype(bool)
    missing = o["device_time_us"].isna() & ops
    assert missing.sum() == 781
    for term in ("time>1", "time<=1", "time=1", "time!=1"):
        hit = Filter(term).mask(o)
        neg = Filter("-" + term).mask(o)
        assert not hit[missing.to_numpy()].any(), term
        assert neg[missing.to_numpy()].all(), term
        assert (hit ^ neg)[ops.to_numpy()].all(), term  # every op in exactly one of them
    assert count(SEG, "!time>1") == count(SEG, "-time>1") == int(ops.sum()) \
        - expected(SEG, lambda f: f["device_time_us"] > 1)
    assert count(SEG, '"-time>1"') == count(SEG, "-time>1")


def test_combined_with_keys_and_text():
    text = "cat:TM cores<=20 -gap>100us !Reshape"
    want = expected(OFT, lambda o: (o["category"] == "TM") & (o["cores"] <= 20)
                    & ~(o["op_to_op_us"] > 100)
                    & ~o["op_code"].str.contains("reshape", case=False))
    assert 0 < want and count(OFT, text) == want


def test_device_id_keys_keep_working():
    """dev:/device: are the device id (as before); device>… with a unit is the device time."""
    for text in ("dev:3", "device:3", "dev=3", "dev:=3"):
        assert count(DSV3, text) == expected(DSV3, lambda o: o["device"] == 3) == 6, text
    terms = Filter("device:3 device>1ms dev<2").terms()
    assert [(t.field, t.op, t.number) for t in terms] == [
        ("device", "=", 3.0), ("device_time_us", ">", 1000.0), ("device", "<", 2.0)]


def test_text_keys_compare_for_equality_only():
    assert count(OFT, "cat=TM") == count(OFT, "cat:=tm") == expected(
        OFT, lambda o: o["category"] == "TM")
    assert count(OFT, "cat!=TM") == expected(OFT, lambda o: o["category"] != "TM")


def test_a_column_missing_from_the_frame_matches_nothing():
    o = ops_of(OFT)
    assert "rank" not in o.columns
    assert not Filter("rank>0").mask(o).any()
    assert Filter("-rank>0").mask(o).sum() == (~o["is_signpost"].astype(bool)).sum()


def test_huge_cells_compare_without_warnings():
    o = pd.DataFrame({"device_time_us": [1e308, np.inf, np.nan, 5.0],
                      "is_signpost": [False] * 4})
    with np.errstate(all="raise"):
        assert Filter("time>1s").mask(o).tolist() == [True, True, False, False]


# ------------------------------------------------------------------ errors: one line naming the term
@pytest.mark.parametrize("text, words", [
    ("cores<1x", ["'cores<1x'", "plain number"]),
    ("cores<", ["'cores<'", "needs a number"]),
    ("cores<ten", ["'cores<ten'", "not a number"]),
    ("gap>5kg", ["'gap>5kg'", "unknown unit", "ns, us, ms or s"]),
    ("cores<10ms", ["'cores<10ms'", "plain number"]),
    ("dram>60ms", ["'dram>60ms'", "%"]),
    ("device>1", ["'device>1'", "ambiguous", "device>1ms", "dev>1"]),
    ("device:1ms", ["'device:1ms'", "device=1ms (no colon) compares the device time"]),
    ("cat>3", ["'cat>3'", "text", "cat:TEXT"]),
    ("foo>3", ["'foo>3'", "unknown filter key", "cores", "dram"]),
    ("foo:3", ["'foo:'", "unknown filter key", "bound:", "cores:"]),
    ("gap>1e999", ["'gap>1e999'", "too large"]),
    ("-gap>x", ["'gap>x'", "not a number"]),
])
def test_bad_terms_are_one_line_errors(text, words):
    with pytest.raises(FilterError) as exc:
        Filter(f"matmul {text}").terms()
    msg = str(exc.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_op_code_text_is_still_text():
    assert [(t.field, t.value, t.op) for t in Filter("ttnn::add Matmul op:a=b").terms()] == [
        ("op_code", "ttnn::add", ""), ("op_code", "Matmul", ""), ("op_code", "a=b", "")]


# ------------------------------------------------------------------ keys from the column spec
def test_every_alias_is_a_key_and_every_key_a_column():
    aliases = {a: c.key for c in C.COLUMNS for a in c.aliases}
    assert FILTER_KEYS == aliases
    assert set(FILTER_KEYS.values()) <= set(C.BY_KEY)
    compare = comparison_keys(FILTER_KEYS)
    assert all(compare[a] == c.key for c in C.COLUMNS for a in c.compare_aliases)
    # the keys of before the spec generated them still mean what they meant
    old = {"bound": "bound", "cat": "category", "category": "category", "dev": "device",
           "device": "device", "sp": "signpost", "signpost": "signpost", "op": "op_code",
           "fid": "math_fidelity", "mem": "in0_memory", "rank": "rank", "risc": "slowest_risc"}
    assert old.items() <= FILTER_KEYS.items()


def test_every_number_column_compares():
    compare = comparison_keys(FILTER_KEYS)
    numeric = {c.key for c in C.COLUMNS if c.kind in ("us", "pct", "int", "num", "id")}
    assert numeric <= set(compare.values()), numeric - set(compare.values())


def test_diff_keys_reach_the_diff_table_fields():
    from ttdash.model.compare.diff import diff_traces

    a = Trace.load(real_dir() / DLV3, columns="all").view(Window("all"))
    frame = diff_traces(a, a).display_frame()
    assert set(DIFF_FILTER_KEYS.values()) <= set(frame.columns)
    # bound: reaches the diff's "A→B" bounds (it matched nothing when it named `bound`)
    n = int(Filter.for_keys("bound:SLOW", DIFF_FILTER_KEYS).mask(frame).sum())
    assert n == int(frame["bounds"].str.contains("SLOW").sum()) > 0
    d = frame["delta_us"]
    assert Filter.for_keys("delta>=0us", DIFF_FILTER_KEYS).mask(frame).sum() == (d >= 0).sum()
    with pytest.raises(FilterError):
        Filter.for_keys("device>1ms", DIFF_FILTER_KEYS).terms()  # no device time in the diff


def test_a_new_column_needs_only_its_alias(monkeypatch):
    """A future efficiency column: one Column with an alias is a key, compares, and shows in
    the hint and the glossary."""
    from ttdash.model.glossary import column_rows

    eff = C.Column("eff_pct", "Efficiency", "Eff", "pct", "share of the modelled ideal time",
                   "%", aliases=("eff",), filter_example="eff<30")
    monkeypatch.setattr(C, "COLUMNS", (*C.COLUMNS, eff))
    monkeypatch.setitem(C.BY_KEY, "eff_pct", eff)
    keys = C.filter_aliases()
    assert keys["eff"] == "eff_pct"
    frame = pd.DataFrame({"eff_pct": [10.0, 50.0, np.nan], "is_signpost": [False] * 3})
    assert Filter.for_keys("eff<30", keys).mask(frame).tolist() == [True, False, False]
    assert Filter.for_keys("-eff<30%", keys).mask(frame).tolist() == [False, True, True]
    assert "eff<30" in filter_hint(keys)
    assert any(term == "Eff" and "eff<N" in meaning for term, meaning in column_rows())


# ------------------------------------------------------------------ the hint
def test_hint_is_one_line_of_valid_examples():
    for keys in (FILTER_KEYS, DIFF_FILTER_KEYS):
        hint = filter_hint(keys)
        assert "\n" not in hint and len(hint) < 260
        matches, comparisons = filter_examples(keys)
        for ex in matches + comparisons:
            assert ex in hint
            Filter.for_keys(ex, keys).terms()  # each parses with these keys
    trace, diff = filter_hint(FILTER_KEYS), filter_hint(DIFF_FILTER_KEYS)
    for ex in ("device>1ms", "gap>100us", "cores<10", "dram>60", "cat:TM", "dev:1", "mem:dram"):
        assert ex in trace
    assert "status:added" in diff and "delta>100us" in diff and "device>1ms" not in diff
