"""Collectives against the Ethernet links (#34 item 4): bytes each device moves (NCCL's ring
bus-bandwidth rule), GB/s per op and per link, statistics over devices and over runs, the
cross-device skew. Two DeepSeek ops worked by hand; every CCL row against pandas."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import real_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.model import Trace, Window, get_arch
from ttdash.model.analysis import whyslow
from ttdash.model.analysis.ccl import KINDS, ccl_kind, link_peak_gbps

DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
NS = "DEVICE KERNEL DURATION [ns]"


def _raw() -> pd.DataFrame:
    df = pd.read_csv(real_dir() / DEEPSEEK, low_memory=False)
    df["id"] = np.arange(len(df)) + 2  # tt-perf-report's ID: the CSV line
    return df


def _dim(cell: object) -> int:
    return int(str(cell).split("[")[0])


def test_two_deepseek_ops_worked_by_hand():
    """AllGatherAsync, first run (CSV lines 18-25, device 0 on line 22): input 1x1x3200x384
    BFLOAT16 = 2,457,600 B on each of n = 4 devices (ring_size 4; the output's 1536 columns are 4
    x 384), so S = 4 x 2,457,600 = 9,830,400 B and each device sends S x 3/4 = 7,372,800 B. The
    merged row's time is the mean of the 8 devices' (tt-perf-report): 1,603,945 / 8 =
    200,493.125 ns, so 36.7733 GB/s; device 0 alone: 7,372,800 / 202,041 = 36.4916 GB/s.

    ReduceScatterMinimalAsync, second run (lines 202-209, device 0 on line 206): input
    1x1x3200x7168 BFLOAT16 = 45,875,200 B = S, each device sends S x 3/4 = 34,406,400 B; mean
    time 6,687,823 / 8 = 835,977.875 ns: 41.1571 GB/s; slowest device 857,377 ns over the
    fastest 802,239 ns: skew 1.0687. Both ops use num_links 2 on Blackhole (50 GB/s a link and
    direction): 36.77% and 41.16% of 2 x 50 GB/s."""
    view = Trace.load(real_dir() / DEEPSEEK, columns="all").view(Window("all"))
    ops = view.ops.set_index("id")
    ag, rs = ops.loc[22], ops.loc[206]
    assert ag["op_code"] == "AllGatherAsyncDeviceOperation"
    assert rs["op_code"] == "ReduceScatterMinimalAsyncDeviceOperation"
    assert ag["ccl_bytes"] == 7_372_800 and rs["ccl_bytes"] == 34_406_400
    assert ag["ccl_gbps"] == pytest.approx(7_372_800 / 200_493.125, rel=1e-12)
    assert ag["ccl_gbps"] == pytest.approx(36.7733, abs=1e-4)
    assert rs["ccl_gbps"] == pytest.approx(41.1571, abs=1e-4)
    assert ag["ccl_link_pct"] == pytest.approx(36.7733, abs=1e-4)  # of 2 links x 50 GB/s
    assert rs["ccl_link_pct"] == pytest.approx(41.1571, abs=1e-4)
    per_device = Trace.load(real_dir() / DEEPSEEK).view(Window("all"), merge=False)
    dev = per_device.ops.set_index("id")
    assert dev.loc[22, "ccl_gbps"] == pytest.approx(36.4916, abs=1e-4)
    runs = whyslow.collectives(view).runs.set_index("first_id")
    assert runs.loc[202, "skew"] == pytest.approx(857_377 / 802_239, rel=1e-12)
    assert runs.loc[202, "skew"] == pytest.approx(1.0687, abs=1e-4)
    assert runs.loc[202, "devices"] == 8 and runs.loc[202, "n"] == 4


def test_every_ccl_row_against_pandas():
    """All 32 CCL rows per device: n from ring_size in ATTRIBUTES, S from INPUT_0's padded shape
    and 2 bytes (BFLOAT16), each device's bytes S (n-1)/n (all-gather: S = n x input), GB/s over
    its own kernel time, % of num_links x 50 GB/s; every other op blank."""
    raw = _raw()
    view = Trace.load(real_dir() / DEEPSEEK, columns="all").view(Window("all"), merge=False)
    ops = view.ops.set_index("id")
    ccl = raw[raw["OP CODE"].str.contains("AllGather|ReduceScatter")]
    assert len(ccl) == 32
    ring = ccl["ATTRIBUTES"].str.extract(r"'ring_size': '(\d+)'")[0].astype(float)
    links = ccl["ATTRIBUTES"].str.extract(r"'num_links': '(\d+)'")[0].astype(float)
    elems = np.prod([ccl[f"INPUT_0_{d}_PAD[LOGICAL]"].map(_dim) for d in "WZYX"], axis=0)
    assert (ccl["INPUT_0_DATATYPE"] == "BFLOAT16").all()
    array = np.where(ccl["OP CODE"].str.contains("AllGather"), ring * elems * 2, elems * 2)
    moved = array * (ring - 1) / ring
    got = ops.loc[ccl["id"]]
    np.testing.assert_allclose(got["ccl_bytes"], moved, rtol=1e-12)
    np.testing.assert_allclose(got["ccl_gbps"], moved / ccl[NS], rtol=1e-12)
    np.testing.assert_allclose(got["ccl_link_pct"], moved / ccl[NS] / (links * 50) * 100,
                               rtol=1e-12)
    others = ops.drop(index=ccl["id"])
    assert others[["ccl_bytes", "ccl_gbps", "ccl_link_pct"]].isna().all().all()


def test_the_default_read_has_the_ring_and_the_links_of_the_attributes():
    """The default read leaves the ATTRIBUTES column out but the loader keeps ring_size and
    num_links of the collectives' cells (_ATTR_RING_SIZE, _ATTR_NUM_LINKS): the same GB/s and
    per-link share as a read of every column."""
    full = Trace.load(real_dir() / DEEPSEEK, columns="all").view(Window("all")).ops
    lean = Trace.load(real_dir() / DEEPSEEK).view(Window("all")).ops
    assert "ATTRIBUTES" not in Trace.load(real_dir() / DEEPSEEK).ordered.columns
    for c in ("ccl_gbps", "ccl_link_pct"):
        np.testing.assert_allclose(lean[c], full[c], rtol=1e-12)
    assert lean["ccl_gbps"].notna().sum() == 4 and lean["ccl_link_pct"].notna().sum() == 4


def test_without_attributes_n_comes_from_the_shapes_and_links_stay_unknown(tmp_path):
    """A file whose ATTRIBUTES say neither ring_size nor num_links: the group size follows
    from the shapes (all-gather: output / input; reduce-scatter: input / its smallest output),
    so the GB/s are the same; the per-link share needs num_links and is blank."""
    full = Trace.load(real_dir() / DEEPSEEK, columns="all").view(Window("all")).ops
    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    df["ATTRIBUTES"] = df["ATTRIBUTES"].str.replace("'ring_size'", "'ring'").str.replace(
        "'num_links'", "'links'")
    p = tmp_path / "no_ring.csv"
    df.to_csv(p, index=False)
    lean = Trace.load(p).view(Window("all")).ops
    np.testing.assert_allclose(lean["ccl_gbps"], full["ccl_gbps"], rtol=1e-12)
    assert lean["ccl_gbps"].notna().sum() == 4 and lean["ccl_link_pct"].isna().all()


def test_the_loaders_attribute_features_are_used_when_made(tmp_path):
    """A read whose loader made `_ATTR_NUM_LINKS` / `_ATTR_RING_SIZE` (ATTRIBUTES itself gone):
    the features give n and the links. Here the features are set to 2 devices and 1 link, so
    the figures must follow them and not ATTRIBUTES' 4 and 2."""
    trace = Trace.load(real_dir() / DEEPSEEK, columns="all")
    trace.ordered = trace.ordered.drop(columns="ATTRIBUTES").assign(
        _ATTR_RING_SIZE=2.0, _ATTR_NUM_LINKS=1.0)
    ops = trace.view(Window("all")).ops.set_index("id")
    assert ops.loc[22, "ccl_bytes"] == 2 * 2_457_600 * 1 / 2  # S = 2 x input, half of it moves
    assert ops.loc[22, "ccl_link_pct"] == pytest.approx(ops.loc[22, "ccl_gbps"] / 50 * 100)


def test_statistics_over_devices_and_runs_against_pandas():
    """Per op code: GB/s over every device row (min/median/max/std, population) and over the
    runs (each at its devices' mean time); the worst skew (slowest over fastest device)."""
    raw = _raw()
    ccl = raw[raw["OP CODE"].str.contains("AllGather|ReduceScatter")].copy()
    ring = 4
    elems = np.prod([ccl[f"INPUT_0_{d}_PAD[LOGICAL]"].map(_dim) for d in "WZYX"], axis=0)
    ag = ccl["OP CODE"].str.contains("AllGather").to_numpy()
    ccl["bytes"] = np.where(ag, ring * elems * 2, elems * 2) * (ring - 1) / ring
    ccl["gbps"] = ccl["bytes"] / ccl[NS]
    ccl["run"] = ccl["GLOBAL CALL COUNT"] // 1024  # the op id: one run across 8 devices
    view = Trace.load(real_dir() / DEEPSEEK).view(Window("all"))
    got = {g["op_code"]: g for g in whyslow.collectives(view).by_op_code()}
    assert set(got) == set(ccl["OP CODE"])
    for code, rows in ccl.groupby("OP CODE"):
        g = got[code]
        d = g["gbps_over_devices"]
        assert (d["min"], d["median"], d["max"]) == pytest.approx(
            (rows["gbps"].min(), rows["gbps"].median(), rows["gbps"].max()), rel=1e-12)
        assert d["std"] == pytest.approx(rows["gbps"].std(ddof=0), rel=1e-9)
        runs = rows.groupby("run").agg(b=("bytes", "first"), t=(NS, "mean"), lo=(NS, "min"),
                                       hi=(NS, "max"))
        at_mean = runs["b"] / runs["t"]
        r = g["gbps_over_runs"]
        assert (r["min"], r["median"], r["max"], r["std"]) == pytest.approx(
            (at_mean.min(), at_mean.median(), at_mean.max(), at_mean.std(ddof=0)), rel=1e-9)
        assert g["max_skew"] == pytest.approx((runs["hi"] / runs["lo"]).max(), rel=1e-12)
        assert (g["runs"], g["device_rows"], g["devices"], g["n"]) == (2, 16, 8, [4])
        assert g["first_runs"] == 2  # every DeepSeek op is its program's first run


def test_report_section_json_and_markdown():
    f = str(real_dir() / DEEPSEEK)
    run = run_main("report", f, "--advice", "none")
    assert run.returncode == 0, run.describe()
    section = run.stdout[run.stdout.index("Collectives (CCL) against the Ethernet links"):]
    assert "50 GB/s per link and direction (blackhole_p150)" in section
    assert re.search(r"40\.2 GB/s  ReduceScatterMinimalAsyncDeviceOperation x2 on 8 devices "
                     r"\(n=4, 2 links at 40% of their peak\): 35\.1-42\.9 over 16 device runs; "
                     r"slowest device 1\.20x the fastest", section)
    doc = json.loads(run_main("report", f, "-f", "json", "--advice", "none").stdout)
    c = doc["ccl_bandwidth"]
    assert c["link_peak_gbps"] == 50 and len(c["runs"]) == 4
    assert [r["first_id"] for r in c["runs"]] == [10, 18, 98, 202]
    assert doc["ops"][0]["ccl_gbps"] is None and "ccl_link_pct" in doc["ops"][0]
    md = run_main("report", f, "-f", "markdown", "--advice", "none").stdout
    assert "### Collectives against the Ethernet links" in md


def test_no_collective_no_section():
    f = str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    run = run_main("report", f, "--advice", "none")
    assert "Collectives (CCL)" not in run.stdout
    doc = json.loads(run_main("report", f, "-f", "json", "--advice", "none").stdout)
    assert doc["ccl_bandwidth"] is None


def test_kinds_and_link_peaks():
    assert [KINDS[int(ccl_kind(c))] for c in (
        "AllGatherAsyncDeviceOperation", "ReduceScatterMinimalAsyncDeviceOperation",
        "AllReduceAsync", "AllToAllAsyncGeneric", "AllGatherMatmul", "RMSAllGather",
        "AllToAllDispatch", "MatmulDeviceOperation", "LlamaReduceScatterDeviceOperation")] == [
        "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "", "", "", "",
        "reduce_scatter"]
    assert link_peak_gbps(get_arch("wormhole_b0")) == 12.5
    assert link_peak_gbps(get_arch("blackhole")) == 50
    assert link_peak_gbps(get_arch("grayskull")) is None  # no Ethernet


def test_all_reduce_without_ring_size_takes_the_devices_that_ran_it(tmp_path):
    """An all-reduce's shapes do not tell n: without ring_size the per-op figure is blank and the
    aggregate takes the devices that ran it (8 here): each device sends 2 S (n-1)/n."""
    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    rs = df["OP CODE"] == "ReduceScatterMinimalAsyncDeviceOperation"
    df.loc[rs, "OP CODE"] = "AllReduceAsyncDeviceOperation"
    df.loc[rs, "ATTRIBUTES"] = df.loc[rs, "ATTRIBUTES"].str.replace("'ring_size'", "'ring'")
    p = tmp_path / "ar.csv"
    df.to_csv(p, index=False)
    view = Trace.load(p).view(Window("all"))
    assert view.ops.loc[view.ops["op_code"] == "AllReduceAsyncDeviceOperation",
                        "ccl_gbps"].isna().all()
    runs = whyslow.collectives(view).runs
    ar = runs[runs["kind"] == "all_reduce"].iloc[0]
    s = 3200 * 1536 * 2
    assert ar["n"] == 8 and ar["bytes"] == pytest.approx(2 * s * 7 / 8)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["AllGatherAsync", "ReduceScatterMinimalAsync", "AllReduceAsync",
                        "AllToAllAsync"]), st.integers(2, 64), st.integers(1, 4096),
       st.integers(1, 4), st.floats(1e3, 1e9))
def test_bus_bandwidth_is_nccls_algbw_times_its_factor(op, n, rows, links, ns):
    """busbw = algbw x factor (nccl-tests PERFORMANCE.md): all-reduce 2(n-1)/n, the others
    (n-1)/n, algbw = S / t; never above S / t x 2."""
    from ttdash.model.analysis.ccl import ccl_columns

    kind = KINDS[int(ccl_kind(op))]
    out_rows = rows * n if kind == "all_gather" else rows // n if kind == "reduce_scatter" \
        else rows
    if out_rows < 1 or (kind == "reduce_scatter" and rows % n):
        return
    frame = pd.DataFrame({"OP CODE": [op], "INPUT_0_W": [1.0], "INPUT_0_Z": [1.0],
                          "INPUT_0_Y": [float(rows)], "INPUT_0_X": [32.0],
                          "INPUT_0_DATATYPE": ["BFLOAT16"], "OUTPUT_0_W": [1.0],
                          "OUTPUT_0_Z": [1.0], "OUTPUT_0_Y": [float(out_rows)],
                          "OUTPUT_0_X": [32.0], "OUTPUT_0_MEMORY": ["DEV_0_DRAM_INTERLEAVED"],
                          "INPUT_0_MEMORY": ["DEV_0_DRAM_INTERLEAVED"],
                          "_ATTR_RING_SIZE": [float(n)], "_ATTR_NUM_LINKS": [float(links)]})
    got = ccl_columns(frame, frame["OP CODE"].astype("string"), np.array([ns]),
                      np.array([False]), get_arch("wormhole_b0"))
    s = (n if kind == "all_gather" else 1) * rows * 32 * 2
    algbw = s / ns
    factor = (2.0 if kind == "all_reduce" else 1.0) * (n - 1) / n
    assert got["ccl_gbps"][0] == pytest.approx(algbw * factor, rel=1e-12)
    assert got["ccl_link_pct"][0] == pytest.approx(algbw * factor / (links * 12.5) * 100,
                                                   rel=1e-12)
    assert 0 < got["ccl_gbps"][0] < 2 * algbw


def test_links_unknown_says_what_the_file_lacks(tmp_path):
    """Without num_links in ATTRIBUTES the section says the file lacks it (the default read
    keeps num_links, so it is never 'this read leaves it out')."""
    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    df["ATTRIBUTES"] = df["ATTRIBUTES"].str.replace("'num_links'", "'links'")
    p = tmp_path / "no_links.csv"
    df.to_csv(p, index=False)
    out = run_main("report", str(p), "--advice", "none").stdout
    assert "Links unknown: the ops' ATTRIBUTES do not say num_links" in out
    full = run_main("report", str(real_dir() / DEEPSEEK), "--advice", "none").stdout
    assert "Links unknown" not in full


def test_unknown_links_and_ring_size_keep_the_report_schema(tmp_path):
    """A run whose links (or ring size) the file does not say is null in `ccl_bandwidth.runs`:
    the schema typed both integer only, so such a report broke its own schema."""
    import json

    import jsonschema

    from ttdash.schemas import load

    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    df["ATTRIBUTES"] = df["ATTRIBUTES"].str.replace("'num_links'", "'links'")
    p = tmp_path / "no_links.csv"
    df.to_csv(p, index=False)
    doc = json.loads(run_main("report", str(p), "-f", "json").stdout)
    runs = doc["ccl_bandwidth"]["runs"]
    assert runs and all(r["links"] is None for r in runs)
    jsonschema.Draft202012Validator(load("report")).validate(doc)
