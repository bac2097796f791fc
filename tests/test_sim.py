"""Tests of the trace simulator (ttdash.sim) and of the repo's fixtures."""

from __future__ import annotations

import cProfile
import filecmp
import io
import pstats
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ttdash.sim import (
    CORRUPT_OFFSET_NS,
    cpp_device_rows,
    generate_ops,
    get_arch,
    infer_arch_from_clock,
    profile_log_device_header,
    report_csv_text,
    simulate_run,
    write_report_csv,
)
from ttdash.sim.columns import CPP_DEVICE_COLUMNS, REPORT_HEAD, report_columns

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
REAL = REPO.parent / "shared" / "fixtures" / "real"
REAL_V21 = REAL / "tt-perf-report__bh20_oft.csv"


def _roundtrip(df: pd.DataFrame, tmp_path: Path, name: str = "r.csv") -> tuple[Path, pd.DataFrame]:
    path = write_report_csv(df, tmp_path / name)
    return path, pd.read_csv(path)


def _dims(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Split ``padded[logical]`` cells into two int arrays."""
    parts = series.astype(str).str.extract(r"^(\d+)\[(\d+)\]$").astype("int64")
    return parts[0].to_numpy(), parts[1].to_numpy()


# --------------------------------------------------------------------------- report layout


def test_report_loads_with_pandas(tmp_path: Path) -> None:
    df = generate_ops(400, seed=1)
    path, back = _roundtrip(df, tmp_path)
    assert list(back.columns) == list(df.columns)
    assert len(back) == len(df)
    raw = path.read_bytes()
    assert raw.endswith(b"\r\n") and b"\r\n" in raw.split(b"\n", 1)[0] + b"\n"
    assert b"<NA>" not in raw and b",nan," not in raw.lower()
    # types survive: integer columns are integers, shapes are padded[logical]
    assert back["DEVICE KERNEL DURATION [ns]"].dropna().map(float.is_integer).all()
    assert back["INPUT_0_Y_PAD[LOGICAL]"].dropna().str.fullmatch(r"\d+\[\d+\]").all()


def test_header_follows_v21_layout() -> None:
    df = generate_ops(50, seed=2)
    cols = list(df.columns)
    assert cols[: len(REPORT_HEAD)] == list(REPORT_HEAD)
    assert cols == report_columns(4, 3)
    assert "INPUT_3_MEMORY" in cols and "OUTPUT_2_MEMORY" in cols
    if REAL_V21.exists():  # relative order of shared columns matches a real V2.1 file
        real = pd.read_csv(REAL_V21, nrows=0).columns.tolist()
        shared = [c for c in real if c in cols]
        assert len(shared) > 80
        assert shared == [c for c in cols if c in real]


def test_v2_header_drops_arch_columns() -> None:
    df = generate_ops(30, arch="grayskull", header="v2", seed=3)
    assert "DEVICE ARCH" not in df.columns
    assert "AVAILABLE WORKER CORE COUNT" not in df.columns
    assert "INPUT_0_W_PAD[LOGICAL]" in df.columns


def test_generation_is_deterministic() -> None:
    a = generate_ops(300, seed=9, devices=2)
    b = generate_ops(300, seed=9, devices=2)
    c = generate_ops(300, seed=10, devices=2)
    assert report_csv_text(a) == report_csv_text(b)
    assert report_csv_text(a) != report_csv_text(c)


# --------------------------------------------------------------------------- self-consistency


@pytest.mark.parametrize(
    ("arch", "devices"), [("wormhole_b0", 1), ("blackhole", 1), ("grayskull", 1), ("wormhole_b0", 2), ("blackhole", 4)]
)
def test_timing_and_arch_are_self_consistent(tmp_path: Path, arch: str, devices: int) -> None:
    df = generate_ops(600, arch=arch, devices=devices, seed=4)
    _, back = _roundtrip(df, tmp_path)
    spec = get_arch(arch)
    dev = back[back["OP TYPE"] == "tt_dnn_device"]

    # clock inference from FW cycles gives the arch clock: median exact, every row within 0.1%
    clk = (dev["DEVICE FW END CYCLE"] - dev["DEVICE FW START CYCLE"]) * 1000 / dev["DEVICE FW DURATION [ns]"]
    assert abs(clk.median() - spec.clock_mhz) < 0.5
    assert (clk / spec.clock_mhz - 1).abs().max() < 1e-3
    assert infer_arch_from_clock(back)[0] == spec.name
    assert set(dev["DEVICE ARCH"]) == {spec.name}
    assert set(dev["AVAILABLE WORKER CORE COUNT"]) == {spec.worker_cores}
    assert dev["CORE COUNT"].between(1, spec.worker_cores).all()

    # host timestamps strictly increase in row order
    hs = back["HOST START TS"].to_numpy()
    assert (np.diff(hs) > 0).all()
    assert (back["HOST END TS"].dropna() >= back.loc[back["HOST END TS"].notna(), "HOST START TS"]).all()

    # GLOBAL CALL COUNT = (op_id << 10) | device_id, one row per device per op
    gcc = dev["GLOBAL CALL COUNT"].astype("int64")
    assert ((gcc & 1023) == dev["DEVICE ID"]).all()
    per_op = dev.groupby(gcc // 1024)["DEVICE ID"].apply(lambda s: sorted(s.tolist()))
    assert per_op.map(lambda ids: ids == list(range(devices))).all()
    assert len(per_op) == 600

    # durations: kernel <= FW, op-to-op matches the cycle gap per device
    assert (dev["DEVICE KERNEL DURATION [ns]"] <= dev["DEVICE FW DURATION [ns]"]).all()
    assert (dev["DEVICE KERNEL DURATION [ns]"] > 0).all()
    for _, g in dev.sort_values("GLOBAL CALL COUNT").groupby("DEVICE ID"):
        s = g["DEVICE FW START CYCLE"].to_numpy()
        e = g["DEVICE FW END CYCLE"].to_numpy()
        o2o = g["OP TO OP LATENCY [ns]"].to_numpy()
        assert o2o[0] == 0
        expected = (s[1:] - e[:-1]) * 1000 / spec.clock_mhz
        assert np.abs(o2o[1:] - expected).max() <= 1
        gaps_us = o2o[1:] / 1000
        assert 1 <= np.median(gaps_us) <= 10
        assert gaps_us.max() > 100  # occasional big host stalls / compiles

    # multi-device: slight per-device jitter, CCL ops present
    if devices > 1:
        assert dev["OP CODE"].str.contains("AllGather").any()
        assert dev["OP CODE"].str.contains("ReduceScatter").any()
        spread = dev.groupby(gcc // 1024)["DEVICE KERNEL DURATION [ns]"].agg(lambda s: s.max() / s.min())
        assert (spread > 1).mean() > 0.9 and spread.median() < 1.2
    else:
        assert not dev["OP CODE"].str.contains("AllGather|ReduceScatter").any()


def test_shapes_dtypes_and_memory(tmp_path: Path) -> None:
    df = generate_ops(800, seed=5)
    _, back = _roundtrip(df, tmp_path)
    dev = back[back["OP TYPE"] == "tt_dnn_device"]
    for col in [c for c in back.columns if c.endswith("_PAD[LOGICAL]")]:
        vals = back[col].dropna()
        padded, logical = _dims(vals)
        assert (padded >= logical).all(), col
        if col.endswith(("_Y_PAD[LOGICAL]", "_X_PAD[LOGICAL]")):
            tile = back.loc[vals.index, col.replace(col.split("_")[2] + "_PAD[LOGICAL]", "LAYOUT")] == "TILE"
            assert (padded[tile.to_numpy()] % 32 == 0).all(), col
    mm = dev[dev["OP CODE"].str.contains("Matmul")]
    assert len(mm) > 50
    m0, _ = _dims(mm["INPUT_0_Y_PAD[LOGICAL]"])
    k0, _ = _dims(mm["INPUT_0_X_PAD[LOGICAL]"])
    k1, _ = _dims(mm["INPUT_1_Y_PAD[LOGICAL]"])
    n1, _ = _dims(mm["INPUT_1_X_PAD[LOGICAL]"])
    mo, _ = _dims(mm["OUTPUT_0_Y_PAD[LOGICAL]"])
    no, _ = _dims(mm["OUTPUT_0_X_PAD[LOGICAL]"])
    assert (k0 == k1).all() and (m0 == mo).all() and (n1 == no).all()
    assert mm["MATH FIDELITY"].isin(["HiFi4", "HiFi3", "HiFi2", "LoFi"]).all()
    assert mm["ATTRIBUTES"].str.contains("program_config").all()
    assert mm["ATTRIBUTES"].str.contains("in0_block_w=").any()
    mem = pd.concat([back[c] for c in back.columns if c.endswith("_MEMORY")]).dropna()
    assert mem.str.fullmatch(r"DEV_\d+_(DRAM|L1)_(INTERLEAVED|WIDTH_SHARDED|HEIGHT_SHARDED|BLOCK_SHARDED)").all()
    dtypes = set(pd.concat([back[c] for c in back.columns if c.endswith("_DATATYPE")]).dropna())
    assert {"BFLOAT16"} <= dtypes and dtypes & {"BFLOAT8_B", "BFLOAT4_B"}
    for name in ("LayerNorm", "Matmul", "CreateHeads|CreateQKVHeads", "RotaryEmbedding", "SDPA|Sdpa", "ConcatHeads", "BinaryNg"):
        assert dev["OP CODE"].str.contains(name).any(), name


def test_signposts_only_have_host_start(tmp_path: Path) -> None:
    df = generate_ops(500, seed=6, layers=3)
    _, back = _roundtrip(df, tmp_path)
    sp = back[back["OP TYPE"] == "signpost"]
    names = sp["OP CODE"].tolist()
    assert names[0] == "start" and "layer_0" in names and "stop" in names
    assert sp["OP CODE"].duplicated().any()  # names repeat per iteration
    filled = sp.drop(columns=["OP CODE", "OP TYPE", "ATTRIBUTES"]).notna().sum()
    assert filled[filled > 0].index.tolist() == ["HOST START TS"]


def test_decode_models_use_dram_sharded_matmuls() -> None:
    from ttdash.sim import ModelConfig

    cfg = ModelConfig(hidden=2048, heads=16, kv_heads=4, head_dim=128, ffn=5632, seq=32, seq_logical=32,
                      layers=2, style="llama", weight_dtype="BFLOAT8_B", mlp_dtype="BFLOAT4_B")  # fmt: skip
    df = generate_ops(200, model=cfg, seed=1)
    mm = df[df["OP CODE"] == "MatmulDeviceOperation"]
    assert mm["ATTRIBUTES"].str.contains("MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig").all()
    assert (mm["INPUT_1_MEMORY"] == "DEV_0_DRAM_WIDTH_SHARDED").all()
    assert (mm["INPUT_0_MEMORY"] == "DEV_0_L1_WIDTH_SHARDED").all()
    assert df["OP CODE"].str.contains("SdpaDecode").any()


# --------------------------------------------------------------------------- optional knobs


def test_host_fallback_rows(tmp_path: Path) -> None:
    df = generate_ops(300, seed=7, host_fallback_every=10)
    _, back = _roundtrip(df, tmp_path)
    fb = back[back["OP TYPE"] == "python_fallback"]
    assert len(fb) == 30
    assert fb["OP CODE"].str.startswith("(torch) ").all()
    assert fb["DEVICE ID"].isna().all()
    assert ((fb["GLOBAL CALL COUNT"].astype("int64") // 2**31) % 2 == 1).all()
    assert fb["HOST DURATION [ns]"].gt(0).all()


def test_corrupt_rows(tmp_path: Path) -> None:
    df = generate_ops(500, seed=8, corrupt_every=50)
    _, back = _roundtrip(df, tmp_path)
    dev = back[back["OP TYPE"] == "tt_dnn_device"]
    bad = dev["DEVICE KERNEL DURATION [ns]"] > 6e9
    assert bad.sum() == 10  # ops 50, 100, ..., 500
    assert (dev.loc[bad, "OP TO OP LATENCY [ns]"] < -6e9).all()
    assert (dev.loc[bad, "DEVICE KERNEL DURATION [ns]"] - CORRUPT_OFFSET_NS).abs().max() < 5e6
    assert (dev.loc[~bad, "OP TO OP LATENCY [ns]"] >= 0).all()
    # clock inference still works on the corrupt rows (the FW window is consistent)
    assert infer_arch_from_clock(back)[0] == "wormhole_b0"


def test_trace_replay(tmp_path: Path) -> None:
    df = generate_ops(400, seed=9, layers=2, trace_replay=True)
    _, back = _roundtrip(df, tmp_path)
    dev = back[back["OP TYPE"] == "tt_dnn_device"]
    traced = dev["METAL TRACE ID"].notna()
    assert traced.any() and (~traced).any()
    assert (dev.loc[traced, "METAL TRACE ID"] == 0).all()
    assert dev.loc[traced, "METAL TRACE REPLAY SESSION ID"].min() == 1
    sessions = dev.loc[traced, "METAL TRACE REPLAY SESSION ID"].nunique()
    assert sessions >= 2
    # replay rows carry capture-time host timestamps: the last signpost sorts after every op
    sp = back[back["OP TYPE"] == "signpost"]
    assert sp["HOST START TS"].max() > dev["HOST START TS"].max()
    assert not (np.diff(back["HOST START TS"].to_numpy()) > 0).all()
    # and in-trace gaps are short
    o2o = dev.loc[traced, "OP TO OP LATENCY [ns]"]
    assert o2o.median() < 2000


# --------------------------------------------------------------------------- tt-perf-report


def _tt_perf_report(csv: Path, out: Path, *extra: str) -> pd.DataFrame:
    from oracle import MODULE, tt_perf_report

    r = tt_perf_report([*MODULE, str(csv), "--csv", str(out), "--no-advice", "--no-summary",
                        *extra], [csv], [(str(out), out)])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    return pd.read_csv(out)


def test_tt_perf_report_runs_and_sees_mixed_bounds(tmp_path: Path) -> None:
    df = generate_ops(600, seed=0)
    path, _ = _roundtrip(df, tmp_path, "ops_perf_results.csv")
    out = _tt_perf_report(path, tmp_path / "perf.csv")
    mm = out[out["OP Code"].str.contains("Matmul", na=False)]
    assert len(mm) > 20
    bounds = set(mm["Bound"].dropna())
    print("tt-perf-report matmul bounds:", mm["Bound"].value_counts().to_dict())
    assert "SLOW" in bounds
    assert bounds & {"DRAM", "FLOP", "BOTH"}
    assert mm["DRAM %"].notna().all() and mm["FLOPs %"].notna().all()
    assert out["Device Time"].notna().all()


def test_tt_perf_report_multi_device_and_knobs(tmp_path: Path) -> None:
    df = generate_ops(300, seed=12, devices=2, host_fallback_every=25, corrupt_every=40)
    path, _ = _roundtrip(df, tmp_path, "ops_perf_results.csv")
    out = _tt_perf_report(path, tmp_path / "perf.csv", "--ignore-signposts")
    assert out["Bound"].eq("HOST").any()
    merged = out[out["OP Code"].str.contains("Matmul", na=False)]
    assert merged["Global Call Count"].nunique() == len(merged)


# --------------------------------------------------------------------------- live log + device log


def test_cpp_device_rows_match_report() -> None:
    df = generate_ops(300, seed=3, devices=2, host_fallback_every=20)
    rows = cpp_device_rows(df)
    assert tuple(rows.columns) == CPP_DEVICE_COLUMNS
    dev = df[(df["OP TYPE"] == "tt_dnn_device") & df["DEVICE ID"].notna()]
    assert len(rows) == len(dev) == 600
    assert rows["GLOBAL CALL COUNT"].tolist() == dev["GLOBAL CALL COUNT"].tolist()
    assert rows["OP NAME"].tolist() == dev["OP CODE"].tolist()
    assert rows["DEVICE KERNEL DURATION [ns]"].tolist() == dev["DEVICE KERNEL DURATION [ns]"].tolist()
    assert (rows["DEVICE KERNEL START CYCLE"] >= rows["DEVICE FW START CYCLE"]).all()
    assert (rows["DEVICE KERNEL END CYCLE"] <= rows["DEVICE FW END CYCLE"]).all()
    assert rows["DEVICE QUASAR_DM KERNEL DURATION [ns]"].isna().all()
    assert set(rows["DEVICE ARCH"]) == {"wormhole_b0"}


def test_cpp_device_rows_infers_arch_without_column() -> None:
    df = generate_ops(60, arch="grayskull", header="v2", seed=3)
    assert set(cpp_device_rows(df)["DEVICE ARCH"]) == {"grayskull"}


def test_profile_log_device_header() -> None:
    text = profile_log_device_header("wormhole_b0", 1000, 64)
    first, second, rest = text.split("\n")
    assert first == "ARCH: wormhole_b0, CHIP_FREQ[MHz]: 1000, Max Compute Cores: 64"
    assert second.startswith("PCIe slot, core_x, core_y, RISC processor type, timer_id, time[cycles since reset]")
    assert rest == ""
    m = re.match(r"ARCH: (\w+), CHIP_FREQ\[MHz\]: (\d+)", profile_log_device_header("blackhole", 1350, 120))
    assert m and m.groups() == ("blackhole", "1350")


# --------------------------------------------------------------------------- simulate_run


def test_simulate_run_speed0_writes_complete_tree(tmp_path: Path) -> None:
    root = tmp_path / "generated" / "profiler"
    # leftovers of a previous run must be replaced (device open deletes the logs)
    (root / ".logs").mkdir(parents=True)
    (root / ".logs" / "cpp_device_perf_report.csv").write_text("stale\n")
    phases: list[str] = []
    report = simulate_run(root, n_ops=300, speed=0, dumps=3, devices=2, seed=21, timestamp="2025_01_02_03_04_05",
                          on_progress=lambda phase, done, total: phases.append(phase))  # fmt: skip
    assert report == root / "reports/2025_01_02_03_04_05/ops_perf_results_2025_01_02_03_04_05.csv"
    expected = write_report_csv(generate_ops(300, devices=2, seed=21), tmp_path / "expected.csv")
    assert filecmp.cmp(report, expected, shallow=False)
    for f in ("profile_log_device.csv", "tracy_profile_log_host.tracy"):
        assert (report.parent / f).exists() and (root / ".logs" / f).exists()

    live = root / ".logs" / "cpp_device_perf_report.csv"
    text = live.read_text()
    assert text.count("GLOBAL CALL COUNT") == 1 and "stale" not in text
    rows = pd.read_csv(live)
    assert list(rows.columns) == list(CPP_DEVICE_COLUMNS)
    report_df = pd.read_csv(report)
    dev = report_df[report_df["OP TYPE"] == "tt_dnn_device"]
    assert sorted(rows["GLOBAL CALL COUNT"]) == sorted(dev["GLOBAL CALL COUNT"])
    assert (rows["OP TO OP LATENCY [ns]"] == 0).sum() == 3 * 2  # restarts per dump and device
    log = (root / ".logs" / "profile_log_device.csv").read_text().splitlines()
    assert log[0] == "ARCH: wormhole_b0, CHIP_FREQ[MHz]: 1000, Max Compute Cores: 64"
    assert len(log) == 2 + 4 * 600
    assert phases[0] == "open" and phases.count("dump") == 3 and phases[-1] == "done"


def test_simulate_run_named_layout(tmp_path: Path) -> None:
    report = simulate_run(tmp_path, n_ops=20, speed=0, name="demo", timestamp="2025_01_01_00_00_00", seed=1)
    assert report == tmp_path / "reports/demo/2025_01_01_00_00_00/ops_perf_results_demo_2025_01_01_00_00_00.csv"
    assert report.exists()


def test_simulate_run_report_is_written_non_atomically(tmp_path: Path) -> None:
    views: list[bytes] = []

    def peek(phase: str, done: int, total: int) -> None:
        if phase == "report" and done < total:
            views.append(next((tmp_path / "reports").rglob("ops_perf_results_*.csv")).read_bytes())

    report = simulate_run(tmp_path, n_ops=200, speed=0, seed=2, timestamp="2025_01_01_00_00_01", on_progress=peek)
    final = report.read_bytes()
    assert len(views) >= 3
    assert all(final.startswith(v) and len(v) < len(final) for v in views)
    assert any(not v.endswith(b"\r\n") for v in views)  # a half-written last line is visible
    cut = pd.read_csv(io.BytesIO(views[0]), on_bad_lines="skip")
    assert 0 < len(cut) < len(pd.read_csv(report))


def test_simulate_run_paced_and_stoppable(tmp_path: Path) -> None:
    stop = threading.Event()
    seen: list[tuple[str, int]] = []
    t0 = time.perf_counter()
    timer = threading.Timer(0.6, stop.set)
    timer.start()
    try:
        simulate_run(tmp_path, n_ops=2000, speed=1.0, seed=3, stop=stop,
                     on_progress=lambda phase, done, total: seen.append((phase, done)))  # fmt: skip
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0, elapsed  # stopped promptly, not after the ~25 s of a full demo
    assert ("dump", 2000) not in seen
    reports = tmp_path / "reports"
    assert not reports.exists() or not list(reports.rglob("*.csv"))
    assert (tmp_path / ".logs" / "profile_log_device.csv").exists()


def test_simulate_run_fast_speed_takes_a_fraction_of_demo_time(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    report = simulate_run(tmp_path, n_ops=400, speed=50.0, seed=4, timestamp="2025_01_01_00_00_02")
    elapsed = time.perf_counter() - t0
    # 400 ops * 12.5 ms + post-processing, divided by 50: ~0.15 s of pauses
    assert 0.1 < elapsed < 3.0
    assert report.exists()


# --------------------------------------------------------------------------- scale


def test_generating_ops_is_vectorised() -> None:
    """100,000 ops cost the generator no more Python calls than 10,000 (whole-array numpy work,
    no loop per op): a count, not a timing, so a loaded machine cannot fail it. The time itself
    is a benchmark's business (benchmarks/bench_run.py builds its traces with it)."""
    generate_ops(1000, seed=0)  # warm up imports and caches

    def calls(n: int) -> tuple[int, pd.DataFrame]:
        prof = cProfile.Profile()
        prof.enable()
        df = generate_ops(n, seed=0)
        prof.disable()
        return pstats.Stats(prof).total_calls, df  # type: ignore[attr-defined]

    small, _ = calls(10_000)
    big, df = calls(100_000)
    assert (df["OP TYPE"] == "tt_dnn_device").sum() == 100_000
    assert big < small * 1.2, (small, big)


# --------------------------------------------------------------------------- fixtures


def _run_make_fixtures(out: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(FIXTURES / "make_fixtures.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_fixtures_is_deterministic_and_up_to_date(tmp_path: Path) -> None:
    _run_make_fixtures(tmp_path / "a")
    _run_make_fixtures(tmp_path / "b")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) >= 15
    assert all(a[k] == b[k] for k in a)
    committed = {k: v for k, v in _tree(FIXTURES).items() if k.startswith(("generated/", "edge/"))}
    if committed:
        assert committed.keys() == a.keys()
        stale = [k for k in a if committed[k] != a[k]]
        assert not stale, f"fixtures out of date, rerun fixtures/make_fixtures.py: {stale}"


def test_fixture_folder_is_small_and_complete() -> None:
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 1_000_000
    gen, edge = FIXTURES / "generated", FIXTURES / "edge"
    for name in ("wh_small_report.csv", "gs_e150_report.csv", "n300_2dev_report.csv", "cpp_device_perf_report.csv"):
        assert (gen / name).stat().st_size > 0, name
    tree = gen / "profiler_dir"
    assert (tree / ".logs" / "cpp_device_perf_report.csv").exists()
    assert (tree / ".logs" / "profile_log_device.csv").exists()
    assert len(list((tree / "reports").glob("*/ops_perf_results_*.csv"))) == 1
    for name in ("empty.csv", "header_only.csv", "not_csv.bin", "missing_columns.csv", "non_numeric.csv",
                 "cut_last_line.csv", "markup_injection.csv", "corrupt_timing.csv"):  # fmt: skip
        assert (edge / name).exists(), name
    assert (FIXTURES / "README.md").exists()


def test_generated_fixtures_have_the_promised_properties() -> None:
    gen = FIXTURES / "generated"
    wh = pd.read_csv(gen / "wh_small_report.csv")
    assert (wh["OP TYPE"] == "tt_dnn_device").sum() == 280 and (wh["OP TYPE"] == "signpost").any()
    gs = pd.read_csv(gen / "gs_e150_report.csv")
    assert "DEVICE ARCH" not in gs.columns
    arch, clock = infer_arch_from_clock(gs)
    assert arch == "grayskull" and abs(clock - 1202) < 0.5
    n300 = pd.read_csv(gen / "n300_2dev_report.csv")
    assert set(n300["DEVICE ID"].dropna()) == {0, 1}
    assert n300["OP CODE"].str.contains("AllGather|ReduceScatter").any()
    live = pd.read_csv(gen / "cpp_device_perf_report.csv")
    assert list(live.columns) == list(CPP_DEVICE_COLUMNS)
    assert set(live["GLOBAL CALL COUNT"]) == set(wh["GLOBAL CALL COUNT"].dropna().astype("int64"))
    assert (live["OP TO OP LATENCY [ns]"] == 0).sum() == 3


def test_edge_fixtures_are_what_the_readme_says() -> None:
    edge = FIXTURES / "edge"
    assert (edge / "empty.csv").stat().st_size == 0
    assert pd.read_csv(edge / "header_only.csv").empty
    assert b"\x00" in (edge / "not_csv.bin").read_bytes()
    assert "DEVICE KERNEL DURATION [ns]" not in pd.read_csv(edge / "missing_columns.csv").columns
    line4 = (edge / "non_numeric.csv").read_text().splitlines()[3].split(",")
    assert "abc" in line4 and line4[0] == "MatmulDeviceOperation"
    raw = (edge / "cut_last_line.csv").read_bytes()
    assert not raw.endswith(b"\n")
    evil = (edge / "markup_injection.csv").read_text(encoding="utf-8")
    for needle in ("[bold red]x[/]", "\x1b]0;pwned\x07", "\x1b]52;c;", "\x1b[31m", "\u009b"):
        assert needle in evil, repr(needle)
    ev = pd.read_csv(edge / "markup_injection.csv")
    assert len(ev) == 6 and (ev["OP TYPE"] == "signpost").sum() == 2
    bad = pd.read_csv(edge / "corrupt_timing.csv")
    dev = bad[bad["OP TYPE"] == "tt_dnn_device"]
    assert ((dev["DEVICE KERNEL DURATION [ns]"] > 6e9) == (dev["OP TO OP LATENCY [ns]"] < -6e9)).all()
    assert (dev["DEVICE KERNEL DURATION [ns]"] > 6e9).sum() == 3
    assert infer_arch_from_clock(bad)[0] == "wormhole_b0"
