"""Why it got slower (#35): what changed between paired ops (the cause, in every format), what
each pair was matched on, what changed around the run, and the gate's options (--min-delta-us,
--fail-below, median vs median, one REGRESSION line). Candidates are real traces with one thing
changed and those ops slowed, so the expected cause is known exactly."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash
from trace_inputs import profiler_run

from ttdash.model import Trace
from ttdash.model.compare.diff import diff_traces
from ttdash.model.read.attributes import field_diff, flatten, normalise
from ttdash.model.read.loader import RawTable, read_ops_csv

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
DUR, FW = "DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]"


def edited(tmp_path: Path, name: str, change: Callable[[pd.DataFrame], pd.DataFrame],
           src: str = WH) -> Path:
    """A copy of a real trace with `change` applied (cells kept as text)."""
    df = pd.read_csv(real_dir() / src, dtype=str, keep_default_na=False)
    out = tmp_path / f"{name}.csv"
    change(df).to_csv(out, index=False)
    return out


def scale(df: pd.DataFrame, col: str, factor: float, rows: pd.Series | None = None
          ) -> pd.DataFrame:
    v = pd.to_numeric(df[col], errors="coerce")
    pick = v.notna() if rows is None else (v.notna() & rows)
    df.loc[pick, col] = (v[pick] * factor).round().astype(np.int64).astype(str)
    return df


def ops_of(df: pd.DataFrame, code: str) -> pd.Series:
    return df["OP CODE"] == code


def lower_fidelity(df: pd.DataFrame) -> pd.DataFrame:
    """The matmuls at HiFi2 (column and ATTRIBUTES) and 40% faster: the baseline of a
    candidate that moved them to HiFi4."""
    mm = ops_of(df, "MinimalMatmulOp")
    df.loc[mm, "MATH FIDELITY"] = "HiFi2"
    df.loc[mm, "ATTRIBUTES"] = df.loc[mm, "ATTRIBUTES"].str.replace(
        "math_fidelity=HiFi4", "math_fidelity=HiFi2", regex=False)
    return scale(df, DUR, 0.6, mm)


def fewer_cores(df: pd.DataFrame) -> pd.DataFrame:
    """The binary ops on 32 cores instead of 64, and 1.8x slower."""
    b = ops_of(df, "BinaryNgDeviceOperation")
    df.loc[b, "CORE COUNT"] = "32"
    return scale(df, DUR, 1.8, b)


def in0_in_l1(df: pd.DataFrame) -> pd.DataFrame:
    """The layer norms read their input from L1 (DRAM in the real run) and are 30% faster: the
    baseline of a candidate that moved in0 to DRAM."""
    ln = ops_of(df, "LayerNormDeviceOperation")
    df.loc[ln, "INPUT_0_MEMORY"] = "DEV_0_L1_INTERLEAVED"
    return scale(df, DUR, 0.7, ln)


def smaller_k_block(df: pd.DataFrame) -> pd.DataFrame:
    """The matmuls' program config with K_block_size 4 (8 in the real run), 20% slower."""
    mm = ops_of(df, "MinimalMatmulOp")
    df.loc[mm, "ATTRIBUTES"] = df.loc[mm, "ATTRIBUTES"].str.replace(
        "K_block_size=8", "K_block_size=4", regex=False)
    return scale(df, DUR, 1.2, mm)


def run_json(a: Path, b: Path, *extra: str) -> dict:
    r = run_ttdash("diff", str(a), str(b), "-f", "json", "--top", "5", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ------------------------------------------------------------------ ATTRIBUTES


def test_attributes_flatten_and_normalise():
    cell = ("{'compute_kernel_config': 'WormholeComputeKernelConfig(math_fidelity=HiFi4;"
            "fp32_dest_acc_en=1)'; 'output_mem_config': 'MemoryConfig(memory_layout="
            "TensorMemoryLayout::INTERLEAVED;buffer_type=BufferType::DRAM;shard_spec="
            "std::nullopt)'; 'program_config': 'Cfg(compute_with_storage_grid_size=(x=8;y=8);"
            "in0_block_w=4)'; 'is_sfpu': 'true'}")
    f = dict(flatten(cell))
    assert f["compute_kernel_config"] == "WormholeComputeKernelConfig"
    assert f["compute_kernel_config.math_fidelity"] == "HiFi4"
    assert f["output_mem_config.buffer_type"] == "DRAM"
    assert f["output_mem_config.memory_layout"] == "INTERLEAVED"
    assert f["output_mem_config.shard_spec"] == "none"
    assert f["program_config.compute_with_storage_grid_size"] == "8x8"
    assert f["program_config.in0_block_w"] == "4"
    # tt-metal's normalisation: is_sfpu folded, doubled quotes undone, space stripped
    assert normalise(" " + cell) == normalise(cell.replace("'is_sfpu': 'true'",
                                                           "'is_sfpu': 'false'"))
    assert normalise('{"a": ""x""}') == '{"a": "x"}'
    other = cell.replace("in0_block_w=4", "in0_block_w=2").replace("DRAM", "L1")
    assert field_diff(cell, other) == [("output_mem_config.buffer_type", "DRAM", "L1"),
                                       ("program_config.in0_block_w", "4", "2")]
    assert flatten("{a: X(b=(1;2)}") == (("ATTRIBUTES", "{a: X(b=(1;2)}"),)  # unbalanced
    assert flatten("{'a': 'X(b=(1;2)'}") == (("a", "X(b=(1;2)"),)  # one field, as written


def test_every_real_attributes_cell_parses():
    for name in (WH, BH, DEEPSEEK, "tt-perf-report__bh_p100_dlv3.csv",
                 "tt-perf-report__bh20_oft.csv",
                 "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"):
        cells = pd.read_csv(real_dir() / name, dtype=str)["ATTRIBUTES"].dropna().unique()
        for c in cells:
            assert flatten(c)[0][0] != "ATTRIBUTES", (name, c[:200])


# ------------------------------------------------------------------ the cause, each change


@pytest.mark.parametrize("name,change,baseline_edited,code,cause,changed", [
    ("fidelity", lower_fidelity, True, "MinimalMatmulOp", "fidelity HiFi2 -> HiFi4",
     {"fidelity": {"baseline": "HiFi2", "candidate": "HiFi4"}}),
    ("cores", fewer_cores, False, "BinaryNgDeviceOperation", "cores 64 -> 32",
     {"cores": {"baseline": 64, "candidate": 32}}),
    ("memory", in0_in_l1, True, "LayerNormDeviceOperation", "in0 L1 -> DRAM",
     {"in0.memory": {"baseline": "L1_INTERLEAVED", "candidate": "DRAM_INTERLEAVED"}}),
    ("k_block", smaller_k_block, False, "MinimalMatmulOp", "config.K_block_size 8 -> 4",
     {"attributes.config.K_block_size": {"baseline": "8", "candidate": "4"}}),
])
def test_the_top_regression_names_the_change(tmp_path, name, change, baseline_edited, code,
                                             cause, changed):
    edit = edited(tmp_path, name, change)
    a, b = (edit, real_dir() / WH) if baseline_edited else (real_dir() / WH, edit)
    n_changed = int(ops_of(pd.read_csv(real_dir() / WH, dtype=str), code).sum())

    doc = run_json(a, b)
    top = doc["top_regressions"][0]
    assert top["op_code"] == code and top["match"] == "exact"
    assert top["cause"] == cause and top["changed"] == changed
    assert [r["delta_us"] for r in doc["top_regressions"]] == sorted(
        (r["delta_us"] for r in doc["top_regressions"]), reverse=True)
    ops = doc["ops"]
    assert sum(o["changed"] is not None for o in ops) == n_changed  # nothing else differs
    assert all(o["cause"] == cause for o in ops if o["op_code"] == code)
    assert all(o["cause"] is None and o["changed"] is None for o in ops
               if o["op_code"] != code)
    group = next(g for g in doc["by_op_code"] if g["op_code"] == code)
    assert group["cause"] == f"{cause} ({n_changed} ops)"
    assert doc["by_op_code"][0]["op_code"] == code  # the change that moved the total most

    md = run_ttdash("diff", str(a), str(b), "-f", "markdown", "--top", "3").stdout
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert code in row and cause.replace(">", "\\>") in row
    assert f"| {cause.replace('>', chr(92) + '>')} ({n_changed} ops) |" in md

    table = run_ttdash("diff", str(a), str(b), "-f", "table", "--top", "3").stdout
    lines = table.splitlines()
    head = lines.index(next(x for x in lines if x.startswith("Top 3 regressions")))
    assert "Cause" in lines[head + 1] and cause in lines[head + 2]

    rows = list(csv.DictReader(io.StringIO(run_ttdash("diff", str(a), str(b), "-f",
                                                      "csv").stdout)))
    assert {r["cause"] for r in rows if r["op_code"] == code} == {cause}
    assert {r["cause"] for r in rows if r["op_code"] != code} == {""}


def test_side_by_side_fields_for_the_details_view(tmp_path):
    edit = edited(tmp_path, "k_block", smaller_k_block)
    r = diff_traces(Trace.load(real_dir() / WH).view(), Trace.load(edit).view())
    row = int(np.flatnonzero(r.pairs["op_code"].to_numpy() == "MinimalMatmulOp")[0])
    assert [c.text() for c in r.changed(row)] == ["config.K_block_size 8 -> 4"]
    fields = {f.key: f for f in r.pair_fields(row)}
    assert fields["attributes.config.K_block_size"].changed
    assert (fields["attributes.config.K_block_size"].baseline,
            fields["attributes.config.K_block_size"].candidate) == ("8", "4")
    assert fields["fidelity"].baseline == fields["fidelity"].candidate == "HiFi4"
    assert fields["in0.shape"].baseline == "1x1x32x1280" and not fields["in0.shape"].changed
    assert [f.key for f in r.pair_fields(row) if f.changed] == [
        "attributes.config.K_block_size"]
    same = int(np.flatnonzero(r.pairs["op_code"].to_numpy() == "SoftmaxDeviceOperation")[0])
    assert r.changed(same) == () and not any(f.changed for f in r.pair_fields(same))


def test_a_file_against_itself_has_no_cause():
    for name in (WH, DEEPSEEK, "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10"
                 ".csv"):
        v = Trace.load(real_dir() / name).view()
        r = diff_traces(v, v)
        assert r.counts["changed"] == 0 and r.pairs["cause"].isna().all(), name
        assert "attributes" in r.compared.compared and "fidelity" in r.compared.compared


# ------------------------------------------------------------------ what a pair matched on


def test_a_dtype_change_matches_on_attributes_and_is_ranked(tmp_path):
    def bf8(df):
        m = ops_of(df, "SoftmaxDeviceOperation")
        df.loc[m, "INPUT_0_DATATYPE"] = "BFLOAT8_B"
        return scale(df, DUR, 1.5, m)

    doc = run_json(real_dir() / WH, edited(tmp_path, "bf8", bf8))
    soft = [o for o in doc["ops"] if o["op_code"] == "SoftmaxDeviceOperation"]
    assert soft and all(o["match"] == "attributes" for o in soft)
    assert {o["cause"] for o in soft} == {"in0 BFLOAT16 -> BFLOAT8_B"}
    assert {o["match"] for o in doc["ops"] if o["op_code"] != "SoftmaxDeviceOperation"} == {
        "exact"}
    assert doc["counts"]["by_attributes"] == len(soft)
    assert doc["top_regressions"][0]["op_code"] == "SoftmaxDeviceOperation"


def test_attributes_pair_the_right_op_where_op_code_alone_does_not(tmp_path):
    """Two adjacent binary ops with other attributes, the first gone and the second with
    another input dtype: by op code alone the second would pair with the first (the earlier of
    two equal choices); its attributes say which one is left."""
    df = pd.read_csv(real_dir() / WH, dtype=str, keep_default_na=False)
    code, attrs = df["OP CODE"].to_numpy(), df["ATTRIBUTES"].to_numpy()
    i = next(k for k in range(1, len(df) - 1) if code[k] == code[k + 1] ==
             "BinaryNgDeviceOperation" and attrs[k] != attrs[k + 1] and code[k - 1] != code[k])
    cand = df.drop(index=i).copy()
    cand.loc[i + 1, "INPUT_0_DATATYPE"] = "BFLOAT8_B"
    path = tmp_path / "cand.csv"
    cand.to_csv(path, index=False)
    r = diff_traces(Trace.load(real_dir() / WH).view(), Trace.load(path).view())
    p = r.pairs
    kept = p[p["baseline_id"] == i + 3].iloc[0]  # the CSV row i + 1
    assert kept["status"] == "matched" and kept["match"] == "attributes"
    assert kept["candidate_id"] == i + 2  # the same op, one line up in the candidate
    assert kept["cause"] == "in0 BFLOAT16 -> BFLOAT8_B"
    assert p.loc[p["baseline_id"] == i + 2, "status"].iloc[0] == "removed"
    assert r.counts["by_attributes"] == 1 and r.counts["op_code_only"] == 0


def test_wh_vs_bh_pairs_say_what_they_matched_on():
    r = diff_traces(Trace.load(real_dir() / WH).view(), Trace.load(real_dir() / BH).view())
    m = r.pairs[r.pairs["status"] == "matched"]
    counts = m["match"].value_counts().to_dict()
    assert set(counts) == {"exact", "attributes", "op_code"}
    assert counts["attributes"] > counts["op_code"]  # most shape changes keep their attributes
    by_attr = m[m["match"] == "attributes"]
    assert by_attr["cause"].str.contains(r"in0 1x1x32x1280 -> 1x1x32x768").any()
    assert (m[m["match"] != "exact"]["cause"].notna()).all()  # another shape is named


# ------------------------------------------------------------------ around the run


def test_a_clock_change_is_named_and_explains_a_uniform_slowdown(tmp_path):
    slow_clock = edited(tmp_path, "clock", lambda df: scale(scale(df, FW, 1.25), DUR, 1.25))
    doc = run_json(real_dir() / WH, slow_clock, "--metric", "device")
    assert doc["context"]["baseline"]["clock_mhz"] == 1000
    assert doc["context"]["candidate"]["clock_mhz"] == 800
    assert doc["context"]["changed"] == {"clock_mhz": {"baseline": 1000.0, "candidate": 800.0}}
    assert "around the run: clock 1000 -> 800 MHz" in doc["verdict"]
    assert "(at equal cycles the clock change alone makes device time +25.0%: it explains the " \
        "+25.0% seen)" in doc["verdict"]
    table = run_ttdash("diff", str(real_dir() / WH), str(slow_clock), "-f", "table").stdout
    assert "Around the run: clock 1000 -> 800 MHz" in table


def test_arch_and_clock_of_two_archs_are_named():
    doc = run_json(real_dir() / WH, real_dir() / BH)
    assert doc["context"]["changed"]["arch"] == {"baseline": "wormhole_b0",
                                                 "candidate": "blackhole_p150"}
    assert doc["context"]["changed"]["clock_mhz"] == {"baseline": 1000.0, "candidate": 1350.0}
    assert "arch wormhole_b0 -> blackhole_p150; clock 1000 -> 1350 MHz" in doc["verdict"]


def test_device_count_is_named(tmp_path):
    one = edited(tmp_path, "one", lambda df: df[df["DEVICE ID"] == "0"], src=DEEPSEEK)
    doc = run_json(real_dir() / DEEPSEEK, one)
    assert doc["context"]["changed"]["devices"] == {"baseline": 8, "candidate": 1}
    assert "devices 8 -> 1" in doc["verdict"]
    same = run_json(real_dir() / DEEPSEEK, real_dir() / DEEPSEEK)
    assert same["context"]["changed"] == {} and "around the run" not in same["verdict"]


def test_recorded_aiclk_and_temperature_are_compared(tmp_path):
    state = tmp_path / "state"
    slow = edited(tmp_path, "slow", lambda df: scale(df, DUR, 1.25))
    a = profiler_run(tmp_path / "a", real_dir() / WH, state, [
        {"aiclk_mhz": 1000, "temp_c": 55.0, "throttled": False}] * 3)
    b = profiler_run(tmp_path / "b", slow, state, [
        {"aiclk_mhz": 800, "temp_c": 96.0, "throttled": True}] * 3)
    r = run_ttdash("diff", str(a), str(b), "-f", "json", "--metric", "device",
                   env={"XDG_STATE_HOME": str(state)})
    doc = json.loads(r.stdout)
    ctx = doc["context"]
    assert ctx["baseline"]["aiclk_mhz"] == 1000 and ctx["candidate"]["aiclk_mhz"] == 800
    assert ctx["candidate"]["temp_c_max"] == 96.0 and ctx["candidate"]["throttled"] == 3
    assert set(ctx["changed"]) == {"aiclk_mhz", "throttled"}
    assert "AICLK 1000 -> 800 MHz" in doc["verdict"]
    assert "the AICLK change alone makes device time +25.0%" in doc["verdict"]
    assert "it explains" in doc["verdict"]


# ------------------------------------------------------------------ gate options


def _gate(a: Path, b: Path, *extra: str, fmt: str = "json"):
    return run_ttdash("diff", str(a), str(b), "-f", fmt, "--metric", "device", *extra)


def test_min_delta_us_is_a_floor(tmp_path):
    slow = edited(tmp_path, "slow3", lambda df: scale(df, DUR, 1.03))  # +3%: ~1,900 us
    r = _gate(real_dir() / WH, slow, "--fail-above", "1")
    assert r.returncode == 1
    delta = json.loads(r.stdout)["delta_pct"]
    assert delta == pytest.approx(3.0, abs=0.05)
    floor = _gate(real_dir() / WH, slow, "--fail-above", "1", "--min-delta-us", "5000")
    assert floor.returncode == 0, floor.stderr
    assert floor.stderr.count("\n") == 1 and "under --min-delta-us 5000: not a regression" \
        in floor.stderr
    assert json.loads(floor.stdout)["gate"]["outcome"] == "floor"
    under = _gate(real_dir() / WH, slow, "--fail-above", "1", "--min-delta-us", "1000")
    assert under.returncode == 1 and "REGRESSION" in under.stderr


def test_fail_below_has_its_own_exit_code(tmp_path):
    fast = edited(tmp_path, "fast", lambda df: scale(df, DUR, 0.9))
    r = _gate(real_dir() / WH, fast, "--fail-above", "5", "--fail-below", "5")
    assert r.returncode == 3, r.stderr
    assert r.stderr.startswith("ttdash: FASTER THAN EXPECTED: candidate is 10.00% faster")
    assert json.loads(r.stdout)["gate"]["exit_code"] == 3
    assert _gate(real_dir() / WH, fast, "--fail-below", "20").returncode == 0
    assert _gate(real_dir() / WH, fast, "--fail-below", "5", "--min-delta-us",
                 "1e6").returncode == 0
    assert _gate(real_dir() / WH, real_dir() / WH, "--fail-below", "0").returncode == 0


def test_median_vs_median_with_several_runs(tmp_path):
    def runs(name: str, factors: list[float]) -> list[str]:
        return [str(edited(tmp_path, f"{name}{k}", lambda df, f=f: scale(df, DUR, f)))
                for k, f in enumerate(factors)]

    base = runs("a", [1.0, 1.001, 0.999])
    outlier = runs("b", [1.02, 1.03, 1.6])  # mean +21.7%, median +3%: one slow run
    r = run_ttdash("diff", "--baseline", *base, "--candidate", *outlier, "-f", "json",
                   "--metric", "device", "--fail-above", "5")
    doc = json.loads(r.stdout)
    assert doc["median_pct"] == pytest.approx(3.0, abs=0.2)
    assert doc["spread"]["delta_pct"] > 20 and not doc["spread"]["within_noise"]
    assert r.returncode == 0 and "the median run only +3.0" in r.stderr, r.stderr
    steady = runs("c", [1.08, 1.09, 1.1])
    r = run_ttdash("diff", "--baseline", *base, "--candidate", *steady, "-f", "json",
                   "--metric", "device", "--fail-above", "5")
    assert r.returncode == 1 and json.loads(r.stdout)["median_pct"] == pytest.approx(9, abs=0.2)


def test_the_regression_line_appears_once(tmp_path):
    slow = edited(tmp_path, "slow5", lambda df: scale(df, DUR, 1.05))
    table = _gate(real_dir() / WH, slow, "--fail-above", "1", fmt="table")
    assert table.returncode == 1
    assert table.stderr == ""  # the report on stdout carries it
    gate_lines = [x for x in table.stdout.splitlines() if "REGRESSION" in x]
    assert gate_lines == [gate_lines[0]] and gate_lines[0].startswith(
        "Gate: REGRESSION (exit 1): +5.00% on device time, above --fail-above 1%")
    md = _gate(real_dir() / WH, slow, "--fail-above", "1", fmt="markdown")
    assert md.returncode == 1 and md.stderr == "" and md.stdout.count("REGRESSION") == 1
    js = _gate(real_dir() / WH, slow, "--fail-above", "1")
    assert js.returncode == 1 and js.stderr.count("REGRESSION") == 1
    assert js.stderr.startswith("ttdash: REGRESSION: candidate is 5.00% slower")
    out = tmp_path / "summary.md"
    to_file = _gate(real_dir() / WH, slow, "--fail-above", "1", "-o", str(out), fmt="markdown")
    assert to_file.returncode == 1 and to_file.stdout == ""
    assert to_file.stderr.count("REGRESSION") == 1
    assert "- **Gate**: REGRESSION (exit 1)" in out.read_text()


# ------------------------------------------------------------------ scale


@pytest.mark.slow  # 100k ops a side (3-5 s); the fast tier aligns the real files
def test_100k_ops_with_attributes_find_every_changed_op_fast():
    base = read_ops_csv(real_dir() / WH, columns="all").df
    raw = pd.concat([base] * 54, ignore_index=True)  # 101,088 ops with their ATTRIBUTES
    raw["ID"] = np.arange(len(raw)) + 2
    raw["HOST START TS"] = (np.arange(len(raw)) + 1) * 1000
    cand = raw.copy()
    rng = np.random.default_rng(5)
    mm = np.flatnonzero(cand["OP CODE"].astype(str).to_numpy() == "MinimalMatmulOp")
    pick = np.sort(rng.choice(mm, 500, replace=False))
    cand["CORE COUNT"] = cand["CORE COUNT"].astype("float64")
    cand.loc[pick, "CORE COUNT"] = 32.0
    cand.loc[pick, DUR] = (cand.loc[pick, DUR] * 1.5).round().astype(cand[DUR].dtype)

    def trace(df: pd.DataFrame, name: str):
        return Trace.from_table(RawTable(Path(name), list(df.columns), df)).view()

    a, b = trace(raw, "base.csv"), trace(cand, "cand.csv")
    t0 = time.perf_counter()
    r = diff_traces(a, b)
    total = time.perf_counter() - t0
    print(f"\n100k diff with ATTRIBUTES: {total:.2f} s {r.seconds}")
    assert total < 10  # measured ~1 s on two shared cores
    assert r.counts["matched"] == len(raw) and r.counts["changed"] == 500
    assert set(r.pairs.loc[r.pairs["change"] >= 0, "candidate_id"]) == set(pick + 2)
    assert set(r.pairs["cause"].dropna()) == {"cores 64 -> 32"}
    assert r.regressions(1)["cause"].iloc[0] == "cores 64 -> 32"
    assert "attributes" in r.compared.compared


def test_diff_format_tui_without_a_terminal_is_one_line_exit_2(capsys, monkeypatch):
    """`diff --format tui` asked for in a pipe: one line, exit 2, no screen drawn into it (it
    used to draw the full-screen diff into the pipe and wait for keys)."""
    import ttdash.tui.diffview as diffview
    from ttdash.cli import main

    started = []
    monkeypatch.setattr(diffview, "run_diff_tui", lambda *a, **k: started.append(a) or 0)
    f = str(real_dir() / "tt-perf-report__bh_p100_dlv3.csv")
    assert main(["diff", f, f, "--format", "tui"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "diff --format tui needs a terminal" in err, err
    assert started == []


@pytest.mark.parametrize("where", ["LayerNormDeviceOperation", "MinimalMatmulOp"])
def test_an_oversized_attributes_cell_affects_only_its_own_op(tmp_path, where):
    """One 3 MB ATTRIBUTES cell anywhere in the candidate turned off every attribute cause
    (the re-read of the column failed as a whole): 0 of the 384 matmuls named K_block_size.
    Now only the op holding it has no attribute cause, and the diff says how many."""
    def big_cell(df):
        df = smaller_k_block(df)
        at = df.index[ops_of(df, where)][3]
        df.loc[at, "ATTRIBUTES"] = "{'x': '" + "a" * 3_000_000 + "'}"
        return df

    n_mm = int(ops_of(pd.read_csv(real_dir() / WH, dtype=str), "MinimalMatmulOp").sum())
    b = edited(tmp_path, "big", big_cell)
    doc = run_json(real_dir() / WH, b)
    cause = "config.K_block_size 8 -> 4"
    named = [o for o in doc["ops"] if o["cause"] == cause]
    lost = 1 if where == "MinimalMatmulOp" else 0
    assert len(named) == n_mm - lost
    assert sum(o["cause"] is not None for o in doc["ops"]) == n_mm - lost
    assert doc["attributes_too_large"] == {"baseline": 0, "candidate": 1}
    table = run_ttdash("diff", str(real_dir() / WH), str(b), "--top", "1").stdout
    assert ("Attributes: 1 op in the candidate: ATTRIBUTES cell over 1 MiB, too large to read; "
            "those ops get no attribute cause (the others do)") in table
    assert run_json(real_dir() / WH, real_dir() / WH)["attributes_too_large"] == {
        "baseline": 0, "candidate": 0}


def test_a_piped_candidate_keeps_its_attribute_causes(tmp_path, capsys):
    """`diff A <(cmd)`: the pipe cannot be read a second time for its ATTRIBUTES (as a file's
    are, after the analysis read): they are kept from the one read, so the cause is named."""
    import os
    import threading

    from ttdash.cli import main

    b = edited(tmp_path, "k_block", smaller_k_block)
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as fh:
            fh.write(b.read_bytes())

    t = threading.Thread(target=write, daemon=True)
    t.start()
    try:
        assert main(["diff", str(real_dir() / WH), f"/dev/fd/{r}", "-f", "json"]) == 0
    finally:
        os.close(r)
    t.join(10)
    doc = json.loads(capsys.readouterr().out)
    assert "attributes" in doc["compared"]
    assert {o["cause"] for o in doc["ops"] if o["op_code"] == "MinimalMatmulOp"} == {
        "config.K_block_size 8 -> 4"}
