"""The guides' and iterations' memory savings for a million-op report (#38) change no number:
the padding and fusion rules a chunk of ops at a time find the same entries as in one chunk,
the summary's sums are the exact sums of every entry of a kind, the kinds share one
str, and find_period's in-place power spectrum is bit for bit the whole-array product."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.model.analysis import iterations
from ttdash.model.analysis.guides import (
    EXTRA_FIGURES,
    GuideInput,
    entries,
    rule_frames,
    summarise_guides,
)
from ttdash.report.advice import guide_frames_of, guides_cached, guides_of

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
OFT = "tt-perf-report__bh20_oft.csv"


def _fresh(name: str) -> GuideInput:
    return guides_of(Trace.load(real_dir() / name, columns="all").view(Window("all")))


@pytest.mark.parametrize("name", [CLIP, OFT])
def test_rules_in_small_chunks_find_the_same_entries(monkeypatch, name):
    whole = entries(_fresh(name))
    assert len(whole)
    from ttdash.model.analysis import guide_rules  # (after model.guides, which registers its rules)

    monkeypatch.setattr(guide_rules, "PAD_CHUNK", 97)  # chunks (and their seams) everywhere
    chunked = entries(_fresh(name))
    pd.testing.assert_frame_equal(chunked, whole, check_exact=True)


@pytest.mark.parametrize("name", [OFT, CLIP, "tt-perf-report__bh_64_clip_encoder_1.csv",
                                  "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"])
def test_summary_sums_are_exact_a_rule_at_a_time(name, monkeypatch):
    """The summary sums each kind's entries exactly (math.fsum: the same bits however they are
    split; a group-by's sum depends on the block pandas keeps a column in, wh_clip_encoder_2:
    271.01300000000003 us stacked, 271.013 alone, the figures' 271.013), each rule's entries
    made, summed and dropped before the next rule runs, the same from entries kept (JSON)."""
    import math
    import weakref

    from ttdash.model.analysis import guides

    g = _fresh(name)
    e = entries(_fresh(name))
    live, seen = [], []
    rules = guides.guide_frames

    def one_at_a_time(gi):
        for frame in rules(gi):
            assert all(r() is None for r in live), "an earlier rule's entries are still held"
            live.append(weakref.ref(frame))
            seen.append(len(frame))
            yield frame
            del frame

    monkeypatch.setattr(guides, "guide_frames", one_at_a_time)
    got = {r.kind.kind: r for r in summarise_guides(g).rules}
    assert len(seen) > 1 and sum(seen) == len(e) and "frames" not in g.cache
    figures = [f for f in EXTRA_FIGURES if f in e.columns]
    kinds = e["kind"].to_numpy(dtype=object)
    assert set(got) == set(kinds)
    for kind, r in got.items():
        rows = e[kinds == kind]

        def exact(column, rows=rows):
            v = rows[column].dropna().to_numpy(dtype="float64")
            return math.fsum(v) if len(v) else None

        assert (r.ops, r.device_us, r.gap_us, r.at_stake_us) == \
            (len(rows), exact("device_us"), exact("gap_us"), exact("at_stake_us"))
        assert r.figures == {f: exact(f) for f in figures if exact(f) is not None}
        assert r.saving_us == (exact("saving_us") if r.kind.estimate else None)
    monkeypatch.setattr(guides, "guide_frames", rules)
    assert summarise_guides(g).entries == len(e)
    rule_frames(g)  # kept (as JSON keeps them): summed from them, the same bits
    assert summarise_guides(g) == summarise_guides(_fresh(name))


def test_entry_kinds_share_one_str():
    """One reference per entry, not a str each (61 bytes an entry on a million ops)."""
    for frame in rule_frames(_fresh(CLIP)):
        kinds = frame["kind"].to_numpy(dtype=object)
        for kind in pd.unique(kinds):
            same = kinds[kinds == kind]
            assert all(k is same[0] for k in same[:1000])


@pytest.mark.parametrize("n", [1000, 5000, 93_600])
def test_find_period_power_spectrum_is_the_whole_array_product(monkeypatch, n):
    """f * conj(f) in place a slice at a time: the bits of the whole-array product (an `out=`
    on an operand took another loop in numpy and changed last bits from 5,000 ops on); its
    inverse in place (numpy 2's `out=`): the bits of the inverse into a new array."""
    rng = np.random.default_rng(n)
    block = rng.integers(0, 40, 300)
    x = np.concatenate([rng.integers(0, 40, 77), np.tile(block, n // 300)])[:n]
    seen: list[np.ndarray] = []
    made: list[np.ndarray] = []
    real_ifft = np.fft.ifft

    def ifft(a, *args, **kwargs):
        seen.append(a.copy())
        made.append(real_ifft(a, *args, **kwargs))
        return made[-1]

    theta = np.random.default_rng(iterations._SEED).random(int(x.max()) + 1) * 2 * np.pi
    f = np.fft.fft(np.exp(1j * theta[x]), 1 << int(2 * n - 1).bit_length())
    want = f * np.conj(f)
    monkeypatch.setattr(np.fft, "ifft", ifft)
    found = iterations.find_period(x)
    assert found is not None and found[1] == 300
    assert len(seen) == 1 and np.array_equal(seen[0].view(np.int64), want.view(np.int64))
    inverse = real_ifft(want)
    assert np.array_equal(made[0].view(np.int64), inverse.view(np.int64))


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_grouped_advice_drops_the_guide_entries_before_where_and_why(monkeypatch, fmt):
    """The table and markdown make the grouped advice before the where/why analyses (printed
    after them, unchanged: the format goldens) and drop the guide entries it was made from."""
    from ttdash.report import single, where

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    seen: list[bool] = []

    def blocks(v):
        seen.append("frames" in guides_of(v).cache)
        return real_blocks(v)

    real_blocks = where.blocks
    monkeypatch.setattr(where, "blocks", blocks)
    text = single.render_to_string(view, fmt)
    assert seen == [False] and "Tuning guides" in text
    assert "frames" not in guides_of(view).cache


@pytest.mark.parametrize("name", [CLIP, OFT])
def test_guide_frames_are_each_kind_without_a_copy_of_its_rows(name):
    """JSON's guide entries, taken a chunk at a time from the rule frames (no copy of a kind's
    rows), are each kind's rows in order, chunked, less the figures the kind has none of."""
    g = _fresh(name)
    want = []
    for e in rule_frames(g):
        kinds = e["kind"].to_numpy(dtype=object)
        for kind in pd.unique(kinds):
            part = e[kinds == kind]
            part = part.drop(columns=[c for c in EXTRA_FIGURES if c in part.columns
                                      and part[c].isna().all()])
            want += [part.iloc[s:s + 97] for s in range(0, len(part), 97)]
    view = g.source
    got = list(guide_frames_of(view, chunk=97))
    assert len(got) == len(want) > 2
    for a, b in zip(got, want):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                      check_exact=True)


def test_json_drops_the_guide_entries_it_made_and_keeps_a_callers():
    """`report -f json` lets the guide entries go once written (before the ops: ~100 MB of a
    million-op trace); entries a caller made before (the TUI's advice view) stay."""
    from ttdash.report import single

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    text = single.render_to_string(view, "json")
    assert '"guide_advice":[{' in text and not guides_cached(view)
    kept = rule_frames(guides_of(view))
    assert single.render_to_string(view, "json") == text
    assert guides_cached(view) and guides_of(view).cache["frames"] is kept


def _counted_rules(monkeypatch) -> tuple[list[int], list]:
    """guides.RULES wrapped: for each rule run, how many earlier runs' frames are alive (and
    weak references to them)."""
    import weakref

    from ttdash.model.analysis import guides

    alive: list[weakref.ref] = []
    held: list[int] = []

    def counted(find):
        def run(g):
            frame = find(g)
            held.append(sum(r() is not None for r in alive))
            alive.append(weakref.ref(frame))
            return frame
        return run

    monkeypatch.setattr(guides, "RULES", [counted(f) for f in guides.RULES])
    return held, alive


@pytest.mark.parametrize("fmt,advice", [("json", "summary"), ("markdown", "full")])
def test_a_large_view_that_keeps_no_entries_makes_them_a_rule_at_a_time(monkeypatch, fmt,
                                                                        advice):
    """Above HOLD_ENTRIES_UP_TO ops, a view whose guide entries no cache keeps makes them a
    rule at a time each time they are read (the grouped advice's sums, then the entries
    written), no earlier rule's frame alive when the next runs; the same output as a view
    that makes them once and holds them (the rules then run once, each rule's frames kept)."""
    from ttdash.model.analysis import guides
    from ttdash.report import advice as report_advice
    from ttdash.report import single

    shown = single.Shown(advice=advice)
    held, alive = _counted_rules(monkeypatch)
    view = Trace.load(real_dir() / OFT).view(Window("all"))
    assert not report_advice.entries_streamed(view)
    text = single.render_to_string(view, fmt, shown)
    once, held[:], alive[:] = list(held), [], []
    monkeypatch.setattr(report_advice, "HOLD_ENTRIES_UP_TO", 0)
    view = Trace.load(real_dir() / OFT).view(Window("all"))
    assert report_advice.entries_streamed(view)
    assert single.render_to_string(view, fmt, shown) == text
    assert "padding_tile" in text and "fusion_" in text
    rules = len(guides.RULES)
    # held: one run of the rules, every earlier frame alive (json's sums and entries share
    # them; markdown's full list holds them as it writes)
    assert len(once) == rules and once == list(range(rules))
    # streamed: json sums them, then writes them; markdown's full list writes them (its
    # grouped advice is not printed); no earlier frame alive in either pass
    assert len(held) == (2 if fmt == "json" else 1) * rules and set(held) == {0}
    assert not guides_cached(view)


def test_the_parse_buffers_go_back_before_the_analysis(monkeypatch):
    """The heap's free pages go back once a trace is read (before the analysis) and again
    once it is analysed, pyarrow's with them (its allocator keeps the freed buffers of the
    kernels the analysis runs: ~57 MB of a million rows). The releases before the analysis are
    the loader's own: each converted column's buffers, then the parse's."""
    import pyarrow as pa

    from ttdash.commands import common
    from ttdash.commands.options import WindowOptions

    released: list[str] = []

    class Pool:
        backend_name = "mimalloc"  # (memory.freed_at_once reads it: jemalloc's decay untouched)

        def release_unused(self) -> None:
            released.append("arrow")

    monkeypatch.setattr(pa, "default_memory_pool", lambda: Pool())
    real_view = Trace.view

    def view(self, *args, **kwargs):
        released.append("view")
        return real_view(self, *args, **kwargs)

    monkeypatch.setattr(Trace, "view", view)
    common.load_view(str(real_dir() / OFT), WindowOptions())
    # the loader's releases (one per converted column, then the parse's), the analysis, then
    # the analysis's own release
    at = released.index("view")
    assert released[at:] == ["view", "arrow"] and at >= 2, released
    assert set(released[:at]) == {"arrow"}, released


def test_json_writes_advice_and_guide_entries_a_chunk_at_a_time(monkeypatch):
    """JSON's advice and guide entries go through the encoder CHUNK rows at a time (not a frame
    of 131,072 matmuls' bullets: their text ~100 MB at once), the ops OPS_BLOCKS * CHUNK, into
    the same document."""
    from ttdash.report import safe, single

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    whole = single.render_to_string(view, "json")
    sizes: dict[bool, list[int]] = {True: [], False: []}  # an entry's frame (message) or ops'
    real_records = safe.records_later

    def records(frame, *args, **kwargs):
        sizes["message" in frame.columns].append(len(frame))
        return real_records(frame, *args, **kwargs)

    monkeypatch.setattr(single, "records_later", records)
    monkeypatch.setattr(single, "CHUNK", 97)
    assert single.render_to_string(view, "json") == whole
    doc = json.loads(whole)
    assert max(sizes[True]) == 97 and len(doc["advice"]) + len(doc["guide_advice"]) > 2 * 97
    assert max(sizes[False]) == 97 * single.OPS_BLOCKS > 97 and len(doc["ops"]) > 2 * 97 * 2


# ------------------------------------------------------------------ the analysed frame's types
TEXT_COLUMNS = ("op_code", "op_type", "bound", "math_fidelity", "fidelity_desc", "category",
                "size", "config", "analysis", "io_dram_basis", "in0_dtype", "in1_dtype",
                "out_dtype", "in0_memory", "pm_bound", "signpost")
#: wh_clip_encoder_2 has no conv attributes, per-core durations, dispatch or collective columns
ABSENT = ("in0_block_w", "out_subblock_h", "out_subblock_w", "core_skew", "dispatch_cq_us",
          "go_wait_us", "ccl_bytes", "ccl_gbps", "ccl_link_pct")


def test_the_analysed_frame_holds_narrow_types():
    """No object column: text as categoricals (each distinct str once, its categories in
    lexical order, int8 codes), and a float the file has no column for is one NaN (stride 0),
    not a million."""
    ops = Trace.load(real_dir() / CLIP).view(Window("all")).ops
    assert [c for c in ops.columns if ops[c].dtype == object] == []
    for c in TEXT_COLUMNS:
        s = ops[c]
        assert isinstance(s.dtype, pd.CategoricalDtype), c
        cats = s.cat.categories.tolist()
        assert cats == sorted(cats) and all(isinstance(x, str) for x in cats), c
        assert s.cat.codes.dtype == np.int8, c
    assert ops["signpost"].isna().all() and ops["op_code"].notna().all()
    for c in ABSENT:
        a = ops[c].to_numpy()
        assert a.dtype == np.float64 and a.strides == (0,) and np.isnan(a).all(), c
    assert ops["device_time_us"].to_numpy().strides == (8,)


def test_the_text_columns_built_in_chunks_are_the_whole_frames(monkeypatch):
    """A chunk at a time (categories met in any chunk, codes remapped to the lexical order),
    every value equals the one-chunk analysis's, missing values where they were."""
    from ttdash.model.analysis import metrics

    trace = Trace.load(real_dir() / OFT)
    whole_ops = trace.view(Window("all")).ops
    monkeypatch.setattr(metrics, "CHUNK_ROWS", 97)
    chunked = trace.view(Window("all")).ops
    pd.testing.assert_frame_equal(chunked, whole_ops, check_exact=True)
    for c in TEXT_COLUMNS:
        a = chunked[c].to_numpy(dtype=object)
        b = whole_ops[c].to_numpy(dtype=object)
        assert pd.Series(a).equals(pd.Series(b)), c


@pytest.mark.parametrize("key", ["op_code", "size", "fidelity_desc", "bound"])
@pytest.mark.parametrize("descending", [False, True])
def test_sorting_a_text_column_sorts_the_text(key, descending):
    """The table's sort (TableState, what the TUI draws) orders a categorical text column by its
    text, missing and blank last, not by its codes or first appearance."""
    from ttdash.model.query import TableState

    ops = Trace.load(real_dir() / OFT).view(Window("all")).ops
    state = TableState(ops)
    state.sort_by(key, descending)
    values = ops[key].to_numpy(dtype=object)[state.rows()]
    text = ["" if v is None else str(v) for v in values]
    present = [t for t in text if t]
    assert present == sorted(present, reverse=descending)
    assert text == present + [""] * (len(text) - len(present))
    first_seen = list(dict.fromkeys(t for t in ops[key].to_numpy(dtype=object) if t))
    if key == "op_code":  # the file's order is not the text's: a sort by appearance fails
        assert first_seen != sorted(first_seen, reverse=descending)
