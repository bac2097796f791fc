"""The trace model on real files: eras, arch and clock, signposts, corrupt rows, devices."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import FAST_REAL, REPORT_FIXTURES, assert_frame_equal, real_dir, tiered

from ttdash.model import Trace, TraceError, Window, get_arch, registry
from ttdash.model.read import loader

EXPECTED_ARCH = {
    "tt-perf-report__bh20_oft.csv": ("blackhole_p150", "DEVICE ARCH column", 1350),
    "tt-perf-report__bh20_oft_integral_image_trace.csv": ("blackhole_p150", "inferred", 1350),
    "tt-perf-report__wh_clip_encoder_2.csv": ("wormhole_b0", "DEVICE ARCH column", 1000),
    "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv": ("blackhole_p150", "inferred",
                                                                 1350),
    "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv": ("wormhole_b0",
                                                                              "inferred", 1000),
}


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_every_real_file_loads(name):
    t = Trace.load(real_dir() / name)
    assert len(t.raw) > 0
    assert (t.raw["ID"].to_numpy() == np.arange(2, len(t.raw) + 2)).all()
    v = t.view(Window("all"))
    assert len(v.op_rows) + len(t.signposts) >= len(t.raw) // max(len(t.devices), 1)


@pytest.mark.parametrize("name,expected", EXPECTED_ARCH.items())
def test_arch_and_clock(name, expected):
    t = Trace.load(real_dir() / name)
    arch, source, clock = expected
    assert t.arch.name == arch
    assert source in t.arch_source
    assert t.clock_mhz == pytest.approx(clock, rel=0.01)


def test_arch_override_and_profile_log(tmp_path):
    src = real_dir() / "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"
    assert Trace.load(src, arch="p100").arch.name == "blackhole_p100"
    d = tmp_path / "reports" / "2025_01_01_00_00_00"
    d.mkdir(parents=True)
    (d / "ops_perf_results.csv").write_bytes(src.read_bytes())
    (d / "profile_log_device.csv").write_text("ARCH: grayskull, CHIP_FREQ[MHz]: 1202\n")
    t = Trace.load(d / "ops_perf_results.csv")
    assert (t.arch.name, t.arch_source) == ("grayskull_e150", "profile_log_device.csv")


def test_arch_table_covers_all_chips_and_is_extensible(tmp_path, monkeypatch):
    names = set(registry())
    assert {"grayskull_e75", "grayskull_e150", "wormhole_b0", "blackhole_p100",
            "blackhole_p150"} <= names
    wh = get_arch("wormhole")
    assert wh.dram_gbps == 288 and wh.tflops_per_core["LoFi"] == pytest.approx(262 / 72)
    user = tmp_path / "arches.toml"
    user.write_text('[quasar]\nclock_mhz = 1500\nworker_cores = 32\ndram_gbps = 600\n'
                    'tflops_per_core = { HiFi4 = 1, HiFi3 = 2, HiFi2 = 3, LoFi = "9/2" }\n'
                    '[wormhole_b0]\ndram_gbps = 300\n')
    monkeypatch.setenv("TTDASH_ARCHES", str(user))
    assert get_arch("quasar").tflops_per_core["LoFi"] == 4.5
    assert get_arch("wormhole_b0").dram_gbps == 300
    assert get_arch("wormhole_b0").worker_cores == 64  # merged field by field
    with pytest.raises(TraceError):
        get_arch("nonsense")


def test_signposts_repeated_names_and_selection():
    t = Trace.load(real_dir() / "tt-perf-report__bh20_oft_integral_image_trace.csv")
    sp = t.signposts
    assert len(sp) == 6
    repeated = sp[sp["name"].duplicated(keep=False)]
    assert len(repeated) >= 2 and repeated["label"].str.contains("#").all()
    name = repeated.iloc[1]["name"]
    k = t.find_signpost(f"{name}#2")
    assert sp.iloc[k - 1]["occurrence"] == 2
    assert t.find_signpost("3") == 3
    v = t.view(Window("region", region=k))
    assert len(v.op_rows) == sp.iloc[k - 1]["ops"]
    assert (v.op_rows["signpost"] == sp.iloc[k - 1]["label"]).all()
    with pytest.raises(TraceError):
        t.find_signpost("no such signpost")


def test_corrupt_rows_flagged_and_left_out():
    t = Trace.load(real_dir() / "tt-perf-report__bh_invalid_trace_decode_window.csv")
    assert t.trace_mode
    v = t.view(Window("all"))
    tot = v.totals()
    assert tot["corrupt_rows"] == 13
    assert tot["device_time_us"] < 1e5  # the 6.9e9 ns rows would make this ~9e7 us
    assert v.op_rows.loc[v.op_rows["corrupt"], "device_time_us"].isna().all()


def test_multi_device_merge_and_per_device():
    t = Trace.load(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    assert t.devices == list(range(8))
    merged, per = t.view(Window("all")), t.view(Window("all"), merge=False)
    assert len(merged.op_rows) == 26 and len(per.op_rows) == 208
    assert set(per.op_rows["device"]) == set(range(8))


def test_host_fallback_rows():
    t = Trace.load(real_dir() / REPORT_FIXTURES[8])
    v = t.view()
    host = v.op_rows[v.op_rows["is_host"]]
    assert len(host) == 781 and (host["bound"] == "HOST").all()
    assert host["device_time_us"].isna().all() and (host["category"] == "Host").all()


def test_utilisation_beyond_matmul():
    """Every op with DRAM tensors gets a DRAM-traffic figure; matmul DRAM % stays tt-perf-report's."""
    t = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    ops = t.view().op_rows
    non_mm = ops[~ops["op_code"].str.contains("Matmul")]
    assert non_mm["io_dram_pct"].notna().sum() > 100
    assert non_mm["dram_pct"].isna().all()
    mm = ops[ops["analysis"] == "full"]
    assert (mm["io_dram_pct"] >= mm["dram_pct"] - 1e-9).all()


def test_model_does_not_import_textual():
    code = ("import sys, ttdash.model, ttdash.model.trace, ttdash.report.single; "
            "bad=[m for m in sys.modules if m.split('.')[0] in ('textual','textual_plotext')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_column_store_equals_concat_and_never_copies_the_table():
    """The live table's store: frames equal pd.concat of the chunks (dtype promotion, a chunk
    with other columns), share the store's memory, are read-only, and a frame taken earlier is
    not changed by later appends (growth reallocates, it does not write into old rows)."""
    import pandas as pd

    from ttdash.model.live.table import ColumnStore

    chunks = [pd.DataFrame({"i": np.arange(n, dtype=np.int64) + 10 * n, "x": np.full(n, 0.5 * n),
                            "s": [f"op{n}"] * n, "b": np.arange(n) % 2 == 0})
              for n in (3, 700, 1, 900)]
    chunks.append(pd.DataFrame({"i": [1.5], "x": [np.nan], "s": [None], "b": ["yes"]}))
    store = ColumnStore()
    early = None
    for k, c in enumerate(chunks):
        store.append(c)
        if k == 1:
            early = store.frame()
            early_copy = early.copy()
    want = pd.concat(chunks, ignore_index=True)
    got = store.frame()
    assert len(store) == len(want) == 1605
    assert got["i"].dtype == np.float64 and got["b"].dtype == object  # int+float, bool+str
    pd.testing.assert_frame_equal(got, want.astype({"s": object}), check_dtype=False)
    pd.testing.assert_frame_equal(early, early_copy)  # untouched by 3 later appends
    assert np.shares_memory(got["x"].to_numpy(), store.column("x"))
    with pytest.raises(ValueError):
        got["x"].to_numpy()[0] = 1.0
    store.append(pd.DataFrame({"i": [1.0], "x": [2.0]}))  # other columns: rebuilt via concat
    assert store.frame()["s"].iloc[-1] is None or pd.isna(store.frame()["s"].iloc[-1])
    assert len(store) == 1606 and list(store.frame().columns) == ["i", "x", "s", "b"]


def test_a_live_model_turns_numpys_huge_page_advice_off():
    """A live table's buffers grow while shown: numpy's advice to back them with huge pages
    cost a 345,700-row doubling 0.3-0.6 s of CPU where the kernel's defrag is `madvise`
    (0.15 s without). A live model turns it off for its process (a fresh one: it is
    process-wide), in numpy 2 and 1.26 alike; a missing private setter would leave it on and
    fail here."""
    code = ("import numpy as np; core = getattr(np, '_core', None) or np.core; "
            "get = core.multiarray._get_madvise_hugepage; core.multiarray._set_madvise_hugepage(True); "
            "from pathlib import Path; from ttdash.model.live.table import LiveModel; "
            "assert get(); LiveModel(Path('.')); assert not get()")
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
                   check=True, env=env)


def test_column_store_takes_arrays_as_a_frame_of_them():
    """A live block comes as arrays (metrics.analyze_columns), no frame built for it: the store
    holds the same as when given the frame of those arrays."""
    from ttdash.model.live.table import ColumnStore

    blocks = [{"i": np.arange(n, dtype=np.int64), "s": np.array(["a", np.nan] * n, object)[:n],
               "x": np.broadcast_to(np.float64(np.nan), (n,))} for n in (3, 2000, 1)]
    a, b = ColumnStore(), ColumnStore()
    for block in blocks:
        a.append(block)
        b.append(pd.DataFrame(block))
    assert len(a) == 2004
    pd.testing.assert_frame_equal(a.frame(), b.frame())


@pytest.mark.parametrize("name", tiered(REPORT_FIXTURES, FAST_REAL))
def test_analyze_columns_are_analyzes_as_arrays(name):
    """The live table's blocks are analysed into arrays: each is analyze's column, text as
    its objects (NaN where missing, as the categorical's to_numpy gives)."""
    from ttdash.model.analysis.metrics import analyze, analyze_columns

    trace = Trace.load(real_dir() / name, columns="all")
    rows, arch = trace.ordered.iloc[:3000], trace.arch
    frame, arrays = analyze(rows, arch), analyze_columns(rows, arch)
    assert list(arrays) == list(frame.columns)
    for c, v in arrays.items():
        want = frame[c].to_numpy(dtype=object) if isinstance(frame[c].dtype, pd.CategoricalDtype) \
            else frame[c].to_numpy()
        assert isinstance(v, np.ndarray) and v.dtype == want.dtype, c
        if v.dtype == object:
            assert [type(x) for x in v] == [type(x) for x in want], c
            assert pd.Series(v).equals(pd.Series(want)), c
        else:
            np.testing.assert_array_equal(v, want, err_msg=c)


@pytest.mark.parametrize("name", tiered(REPORT_FIXTURES, FAST_REAL))
def test_sums_read_only_their_declared_columns(name):
    """A live block hands op_sums and bound_time only trace.SUMS_COLUMNS: their answers from
    those columns alone are the answers from every column."""
    from ttdash.model.trace import SUMS_COLUMNS, bound_time, op_sums

    ops = Trace.load(real_dir() / name).view(Window("all")).ops
    only = ops[[c for c in SUMS_COLUMNS if c in ops.columns]]
    assert op_sums(only, 1000.0) == op_sums(ops, 1000.0)
    assert bound_time(only) == bound_time(ops)


#: The two largest traces hold nothing the others lack (signposts: ops_perf_results_2025_09_18;
#: host ops: SEG_ENCODER) and cost 9 s here: the slow tier runs them
_LARGE = ("tt-perf-report__bh20_oft.csv", "tt-perf-report__wh_clip_encoder_2.csv")


@pytest.mark.parametrize("name", tiered(REPORT_FIXTURES, set(FAST_REAL) - set(_LARGE)))
def test_chunked_analysis_equals_the_whole(name, monkeypatch):
    """A million-row trace is analysed in chunks; a chunk boundary (here every 7 rows, so
    signposts, corrupt rows and device merges all meet one) must change no number: the gap's
    look-back carries across, the share of the total is over the whole."""
    from ttdash.model.analysis import metrics

    whole = Trace.load(real_dir() / name).view(Window("all")).ops
    size = 7 if len(whole) > 21 else 1  # the five-line excerpt (2 merged ops) still splits
    monkeypatch.setattr(metrics, "CHUNK_ROWS", size)
    chunked = Trace.load(real_dir() / name).view(Window("all")).ops
    assert len(whole) > size
    assert_frame_equal(chunked, whole)


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_compact_columns_read_back_every_value(name):
    """Text read dictionary-encoded and numbers in 32 bits where exact: every cell is what
    pandas' own reader finds in the file."""
    import pandas as pd

    from ttdash.model.analysis.metrics import num, text
    from ttdash.model.read.loader import read_ops_csv

    ours = read_ops_csv(real_dir() / name, columns="all").df
    ref = pd.read_csv(real_dir() / name, dtype=str, keep_default_na=False)
    ref.columns = [c.strip() for c in ref.columns]
    compact = [c for c in ours.columns if str(ours[c].dtype) in ("int32", "float32", "category")]
    assert compact, "nothing was compacted"
    for c in compact:
        if c not in ref.columns or ref[c].str.contains(r"\[", regex=True).any():
            continue  # derived (_ATTR_*, canonical dims) or "32[2]" shape cells
        if str(ours[c].dtype) == "category":
            got = text(ours, c).fillna("").to_numpy(dtype=object)
            assert (got == ref[c].str.strip().to_numpy(dtype=object)).all() or \
                (got == ref[c].to_numpy(dtype=object)).all(), c
        else:
            want = pd.to_numeric(ref[c], errors="coerce").to_numpy(dtype="float64")
            np.testing.assert_array_equal(num(ours, c), want, err_msg=c)


@pytest.mark.parametrize("warm", [False, True], ids=["parse", "cached-copy"])
@pytest.mark.parametrize("columns", ["analysis", "lazy", "all"])
def test_a_long_read_previews_its_first_rows_as_the_read_has_them(columns, warm, tmp_path,
                                                                   monkeypatch):
    """`offer_preview` is given, once and before the read ends, the rows read so far (parsed,
    or the cached copy's first row group): the same frame as the whole read's first rows; no
    preview without a sink or for a short file."""
    from ttdash.model.progress import previewing, reporting
    from ttdash.model.read import cache, loader

    monkeypatch.setattr(loader, "PREVIEW_ROWS", 300)
    # The preview comes while bytes are left to read, and pyarrow reads blocks ahead of the
    # parse: with 64 KiB blocks 79-88% of this 2.7 MB file was read by the 300th row, a margin
    # a loaded run lost (no preview); with 16 KiB blocks about 30%
    monkeypatch.setattr(loader, "BLOCK", 1 << 14)
    path = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    if warm:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        monkeypatch.setattr(cache, "MIN_BYTES", 0)
        monkeypatch.setattr(cache, "ROW_GROUP", 400)
        loader.read_ops_csv(path, columns="all")  # writes the copy: every column
        monkeypatch.setattr(loader, "_parse", None)  # what follows reads the copy alone
    got, phases = [], []
    with previewing(lambda make: got.append((phases[-1], make()))), \
            reporting(lambda phase, done, total: phases.append(phase)):
        whole = loader.read_ops_csv(path, columns=columns)
    before, got = [g[0] for g in got], [g[1] for g in got]  # the phase it came in
    assert before == ["reading the cached copy" if warm
                      else f"reading {path.name}: {len(got[0].df):,} rows"]
    assert len(got) == 1 and 300 <= len(got[0].df) < len(whole.df)
    first = got[0].df
    pd.testing.assert_frame_equal(first, whole.df.iloc[:len(first)], check_dtype=False,
                                  check_categorical=False)
    got.clear()
    monkeypatch.setattr(loader, "PREVIEW_ROWS", 1 << 20)
    with previewing(lambda make: got.append(make())):
        loader.read_ops_csv(path, columns=columns)
    assert not got


def test_a_failed_parse_leaves_no_reader_on_the_next_file(tmp_path, monkeypatch):
    """A parse error ends the streamed read while its read-ahead threads still run. Closing the
    file under them handed its descriptor to the next file opened, whose bytes they then took:
    the error's slow path named the wrong line (or none), a good file lost rows (1,603 of 1,872)."""
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")  # every read parses
    good = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    lines = good.read_bytes().splitlines(keepends=True)
    bad_row = lines[5].rstrip(b"\r\n") + b',"extra"\n'
    bad = tmp_path / "bad.csv"  # 2.7 MB: blocks are still read ahead when line 6 fails
    bad.write_bytes(b"".join(lines[:5] + [bad_row] + lines[6:]))
    rows = len(loader.read_ops_csv(good).df)
    for _ in range(60):
        with pytest.raises(TraceError) as err:
            loader.read_ops_csv(bad)
        assert (err.value.line, err.value.column) == (6, 99)
        assert len(loader.read_ops_csv(good).df) == rows
