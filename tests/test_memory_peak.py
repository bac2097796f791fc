"""A million-op report's peak (#51 item 2) without changing a byte: what each report section
freed is given back before the next one runs, the summary groups are grouped on numbers (a
categorical's codes, not a string per row) into the same groups, and the advice frames are
cut into frames of a bounded number of entries (the same entries, in order)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir

from ttdash import memory
from ttdash.model import Trace, Window
from ttdash.model.analysis import advice
from ttdash.model.query import summary_codes, summary_groups, summary_key
from ttdash.present import sections

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
OFT = "tt-perf-report__bh20_oft.csv"


def _ops() -> pd.DataFrame:
    """Op codes and input 0 memories with repeats, a missing value, an empty code (no group)
    and two codes of one first word (one group): as categoricals."""
    code = ["MatmulDeviceOperation", "BinaryNg add", None, "", "MatmulDeviceOperation",
            "BinaryNg mul", "Softmax", "MatmulDeviceOperation", "BinaryNg add", "Softmax"]
    mem = ["DEV_0_DRAM_INTERLEAVED", "DEV_0_L1_INTERLEAVED", None, "DEV_0_DRAM_INTERLEAVED",
           None, "DEV_0_L1_INTERLEAVED", "x", "DEV_0_DRAM_INTERLEAVED", None, "DEV_0_L1_SHARDED"]
    n = len(code)
    return pd.DataFrame({
        "op_code": pd.Categorical(code), "in0_memory": pd.Categorical(mem),
        "category": pd.Categorical(["mm", "eltwise", None, "x", "mm", "eltwise", "norm", "mm",
                                    "eltwise", "norm"]),
        "device": np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 1], dtype="float64"),
        "device_time_us": np.arange(1, n + 1, dtype="float64") * 1.5,
        "flops_pct": np.array([50, np.nan, 10, 20, 60, np.nan, 5, 55, 1, 2], dtype="float64"),
        "is_host": np.array([False] * 8 + [True, False]),
        "is_signpost": np.array([False, False, False, False, False, True] + [False] * 4)},
        index=pd.RangeIndex(10, 20))


def _as_objects(ops: pd.DataFrame) -> pd.DataFrame:
    return ops.assign(**{c: ops[c].astype(object) for c in ("op_code", "in0_memory",
                                                            "category")})


@pytest.mark.parametrize("by", ["op", "memory", "category"])
def test_summary_groups_of_categoricals_are_those_of_their_text(by):
    """Grouped on a categorical's codes, the summary is the one of the same text as objects
    (the groups, their order, every figure), per device or not, with rows left out or not."""
    cat = _ops()
    obj = _as_objects(cat)
    pd.testing.assert_series_equal(summary_key(cat, by), summary_key(obj, by))
    keep = np.array([True] * 9 + [False])
    for per_device in (False, True):
        for k in (None, keep):
            a = summary_groups(cat, by, per_device, keep=k)
            b = summary_groups(obj, by, per_device, keep=k)
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            assert len(a)


@pytest.mark.parametrize("by", ["op", "memory", "category"])
def test_summary_codes_number_summary_key(by):
    """summary_codes: one number per group name (-1: no group), the rows `rows` only."""
    ops = _ops()
    rows = np.array([True, False] * 5)
    codes, names = summary_codes(ops, by, rows)
    key = summary_key(ops, by).to_numpy(dtype=object)[rows]
    assert len(set(names.tolist())) == len(names)
    got = np.array([names[c] if c >= 0 else None for c in codes], dtype=object)
    want = np.array([None if pd.isna(k) else k for k in key], dtype=object)
    assert got.tolist() == want.tolist()


def test_summary_groups_of_a_real_trace_are_unchanged():
    """The summary of a real trace (categorical columns) is the one of its text as objects."""
    ops = Trace.load(real_dir() / CLIP).view(Window("all")).ops
    obj = _as_objects(ops)
    for by in ("memory", "op", "category"):
        pd.testing.assert_frame_equal(summary_groups(ops, by), summary_groups(obj, by),
                                      check_exact=True)


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_each_section_gives_back_what_it_freed(monkeypatch, fmt):
    """A large view's report trims the heap after each section that works something out (the
    header's facts, the blocks after the table, the JSON keys); a small one's does not. The
    text is the same either way."""
    from ttdash.report import single

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    trims: list[int] = []
    monkeypatch.setattr(memory, "trim", lambda: trims.append(1))
    small = single.render_to_string(view, fmt)
    assert not trims
    monkeypatch.setattr(memory, "SETTLE_ROWS", 1)
    view = Trace.load(real_dir() / OFT).view(Window("all"))
    assert single.render_to_string(view, fmt) == small
    parts = {"table": "facts", "markdown": "facts", "json": "json"}[fmt]
    worked = [s for s in sections.SECTIONS if getattr(s, parts)]
    assert len(trims) >= len(worked) > 2


def test_advice_frames_hold_a_bounded_number_of_entries(monkeypatch):
    """The matmuls' advice comes in frames of at most FRAME_ROWS entries (each frame's text is
    its own copy), the same entries in the same order as in one frame."""
    ops = Trace.load(real_dir() / OFT).view(Window("all")).ops
    whole = pd.concat(list(advice.advice_frames(ops)), ignore_index=True)
    monkeypatch.setattr(advice, "FRAME_ROWS", 7)
    frames = list(advice.advice_frames(ops))
    matmul = [f for f in frames if f["kind"].isin(["host", "gap", "gap_saving"]).sum() == 0]
    assert matmul and max(len(f) for f in matmul) == 7 and min(len(f) for f in frames) > 0
    pd.testing.assert_frame_equal(pd.concat(frames, ignore_index=True), whole,
                                  check_exact=True)


def test_the_why_window_of_the_whole_file_is_the_traces_columns():
    """The rows the per-device figures read, for a view of the whole file, are the trace's
    own columns (no copy kept with the view: pandas 2 copied ~110 MB of a million ops)."""
    from ttdash.model.analysis import whyslow

    view = Trace.load(real_dir() / CLIP).view(Window("all"))
    rows = whyslow.window_rows(view)
    o = view.trace.ordered
    assert rows.index.equals(o.index) and "ID" in rows and "OP CODE" in rows
    numeric = [c for c in rows.columns if rows[c].dtype.kind in "fiub"]
    assert numeric and all(np.shares_memory(rows[c].to_numpy(), o[c].to_numpy())
                           for c in numeric)


def test_json_lets_the_reasons_it_made_go_and_keeps_a_callers():
    """`report -f json` drops the per-op reasons it made for its `why` key (held through the
    guide rules and the advice it writes next), the same document either way; reasons a caller
    made before (the TUI's why view) stay."""
    from ttdash.model.analysis import whyslow
    from ttdash.report import single

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    text = single.render_to_string(view, "json")
    assert not whyslow.reasons_kept(view)
    kept = whyslow.op_reasons(view)
    assert single.render_to_string(view, "json") == text
    assert whyslow.reasons_kept(view) and whyslow.op_reasons(view) is kept


@pytest.mark.parametrize("name", [CLIP, OFT])
def test_fusion_of_a_categorical_op_code_is_that_of_its_text(name):
    """The fusion rule reads a categorical op code's codes: the entries of the same codes as
    text."""
    from dataclasses import replace

    from ttdash.model.analysis import guide_rules
    from ttdash.report.advice import guides_of

    g = guides_of(Trace.load(real_dir() / name).view(Window("all")))
    assert isinstance(g.ops["op_code"].dtype, pd.CategoricalDtype)
    text = replace(g, ops=g.ops.assign(op_code=g.ops["op_code"].astype(object)), cache={})
    pd.testing.assert_frame_equal(guide_rules.find_fusion(g), guide_rules.find_fusion(text),
                                  check_exact=True)


def test_the_guide_rules_input_shares_the_views_columns():
    """guide_input (the rules' ops and tensor rows) and the advice summary take the view's
    ops and the trace's tensor columns as they are, renumbered, not copies (pandas 2.2 copied
    the whole ops frame three times and the tensor columns twice: a million-op report peaked
    at 1.8 GB there), and the same rows as a copy would hold; a frame with signposts still
    has them left out."""
    from ttdash.model.analysis.guides import guide_input
    from ttdash.model.columns import without_signposts

    view = Trace.load(real_dir() / CLIP).view(Window("all"))
    ops, ordered = view.op_rows, view.trace.ordered
    assert without_signposts(ops) is ops
    g = guide_input(ops, ordered, view.merged, 100.0)
    for name in ("device_time_us", "op_code"):
        a, b = g.ops[name].array, ops[name].array
        got = a.codes if hasattr(a, "codes") else np.asarray(a)
        want = b.codes if hasattr(b, "codes") else np.asarray(b)
        assert np.shares_memory(got, want), name
    tensor = next(c for c in ordered.columns if c.startswith("INPUT_0_") and
                  ordered[c].dtype.kind == "f")
    assert np.shares_memory(g.rows[tensor].to_numpy(), ordered[tensor].to_numpy())
    assert list(g.ops.index) == list(range(len(ops)))
    pd.testing.assert_frame_equal(g.ops, ops.reset_index(drop=True))
    pd.testing.assert_frame_equal(g.rows, ordered[list(g.rows.columns)].reset_index(drop=True))
    marked = view.ops.assign(is_signpost=np.arange(len(view.ops)) % 7 == 0)
    assert len(without_signposts(marked)) == len(marked) - int((np.arange(len(marked)) % 7
                                                                == 0).sum())


def test_a_load_under_jemalloc_gives_freed_pages_back_sooner_then_arrows_setting(monkeypatch):
    """pyarrow < 18 (jemalloc): a trace's load keeps freed pages LOAD_DECAY_MS, not Arrow's
    second, and Arrow's setting is back after it, an error included; pyarrow 18+ (mimalloc):
    nothing is set."""
    import pyarrow as pa

    from ttdash.model.read.loader import read_ops_csv

    calls: list[int] = []
    monkeypatch.setattr(pa, "jemalloc_set_decay_ms", calls.append)
    path = real_dir() / "tt-perf-report__bh_p100_dlv3.csv"
    jemalloc = pa.default_memory_pool().backend_name == "jemalloc"
    read_ops_csv(path)
    assert calls == ([memory.LOAD_DECAY_MS, memory.ARROW_DECAY_MS] if jemalloc else [])
    calls.clear()

    class Pool:
        backend_name = "jemalloc"
    monkeypatch.setattr(pa, "default_memory_pool", Pool)
    with pytest.raises(RuntimeError), memory.freed_at_once():
        assert calls == [memory.LOAD_DECAY_MS]
        raise RuntimeError
    assert calls == [memory.LOAD_DECAY_MS, memory.ARROW_DECAY_MS]


def test_the_op_tables_text_columns_are_read_through_their_codes():
    """The op table holds a categorical text column as its codes (tui.optable.TextColumn), not
    an object array of every row: each value, slice and set of positions reads as the
    column's own values (None where missing); a column of "" and missing only is blank."""
    from ttdash.model.analysis.metrics import column_values
    from ttdash.tui.optable import TextColumn, column_data

    ops = Trace.load(real_dir() / "tt-perf-report__bh_p100_dlv3.csv").view(Window("all")).ops
    text = [c for c in ops.columns if isinstance(ops[c].dtype, pd.CategoricalDtype)]
    assert len(text) >= 5
    for c in text:
        got, want = column_data(ops[c]), column_values(ops[c])
        assert isinstance(got, TextColumn) and len(got) == len(want)
        assert [got[i] for i in range(len(want))] == want.tolist(), c
        assert got[5:40].tolist() == want[5:40].tolist()
        at = np.array([3, 0, len(want) - 1])
        assert got[at].tolist() == want[at].tolist()
        assert got.blank() == bool((pd.isna(want) | (want == "")).all())
    blank = column_data(pd.Series(pd.Categorical(["", None, ""])))
    assert blank.blank() and blank[1] is None
    assert not column_data(pd.Series(pd.Categorical(["", "x"]))).blank()


_SCRATCH_CHILD = r"""
import resource, sys
import numpy as np
from ttdash import memory

def faults(n=40):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        a = np.ones(1 << 20)  # 8 MB, a million-row column
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

if memory._glibc() is None:
    print("no glibc"); sys.exit(0)
free = faults()  # glibc's own sliding threshold: reused after the first
memory.return_freed_memory()
memory.trim()  # (the heap's top, which the sliding threshold left, given back)
fixed = faults()
with memory.scratch_heap():
    scratch = faults()
after = faults()
print(free, fixed, scratch, after)
"""


def test_a_scratch_heap_reuses_whole_columns_then_gives_them_back():
    """Under the CLI's fixed mmap threshold each 8 MB array is a new mapping, faulted in page by
    page; within scratch_heap the heap reuses them, and the fixed threshold is back after (a
    child process: the policy is the process's)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _SCRATCH_CHILD], capture_output=True,
                         text=True, check=True).stdout.split()
    if out == ["no", "glibc"]:
        pytest.skip("glibc only: nothing to do elsewhere")
    free, fixed, scratch, after = map(int, out)
    assert fixed > 20 * 1000  # 40 arrays of ~2,048 pages (fewer with huge pages)
    assert scratch < fixed / 4 and free < fixed / 4
    assert after > fixed / 2  # the fixed threshold back
