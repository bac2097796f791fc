"""The rules, as small examples: read this file as the spec of what ttdash (and tt-perf-report,
whose rules these are) calls DRAM-bound, a host gap, or a merged multi-device op. Each example
builds a tiny report CSV and loads it the way `ttdash open` does."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ttdash.model import Trace, Window
from ttdash.model.analysis.advice import op_advice
from ttdash.model.columns import BOUND_THRESHOLD_PCT, BY_KEY, GAP_LIMIT_US, LOW_CORES, Severity

HEADER = ["OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "DEVICE ID", "DEVICE ARCH", "ATTRIBUTES",
          "MATH FIDELITY", "CORE COUNT", "AVAILABLE WORKER CORE COUNT", "HOST START TS",
          "OP TO OP LATENCY [ns]", "DEVICE KERNEL DURATION [ns]"] + [
    f"{t}_{f}" for t in ("INPUT_0", "INPUT_1", "OUTPUT_0")
    for f in ("W_PAD[LOGICAL]", "Z_PAD[LOGICAL]", "Y_PAD[LOGICAL]", "X_PAD[LOGICAL]", "LAYOUT",
              "DATATYPE", "MEMORY")]


def op(code: str, ns: float, *, device: int = 0, gap_ns: float = 1000, cores: int = 64,
       m: int = 0, k: int = 0, n: int = 0, call: int = 1) -> dict[str, object]:
    """One device op row; a matmul when m, k, n are given (bf16, DRAM-interleaved, HiFi2)."""
    row: dict[str, object] = {
        "OP CODE": code, "OP TYPE": "tt_dnn_device", "GLOBAL CALL COUNT": call,
        "DEVICE ID": device, "DEVICE ARCH": "wormhole_b0", "ATTRIBUTES": "{}",
        "MATH FIDELITY": "HiFi2", "CORE COUNT": cores, "AVAILABLE WORKER CORE COUNT": 64,
        "HOST START TS": 1000 + call, "OP TO OP LATENCY [ns]": gap_ns,
        "DEVICE KERNEL DURATION [ns]": ns}
    if m:
        for t, (y, x) in (("INPUT_0", (m, k)), ("INPUT_1", (k, n)), ("OUTPUT_0", (m, n))):
            row.update({f"{t}_W_PAD[LOGICAL]": "1[1]", f"{t}_Z_PAD[LOGICAL]": "1[1]",
                        f"{t}_Y_PAD[LOGICAL]": f"{y}[{y}]", f"{t}_X_PAD[LOGICAL]": f"{x}[{x}]",
                        f"{t}_LAYOUT": "TILE", f"{t}_DATATYPE": "BFLOAT16",
                        f"{t}_MEMORY": "DEV_0_DRAM_INTERLEAVED"})
    return row


def load(tmp_path: Path, rows: list[dict[str, object]], merge: bool = True):
    path = tmp_path / "ops_perf_results.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, HEADER)
        w.writeheader()
        w.writerows(rows)
    return Trace.load(path).view(Window("all"), merge=merge).op_rows.reset_index(drop=True)


# ------------------------------------------------------------------ bound classes

def scaled_to(tmp_path: Path, pct: float, m: int, k: int, n: int, key: str) -> dict:
    """The matmul's derived row with its duration set so that `key` is `pct` percent."""
    probe = load(tmp_path, [op("Matmul", 10_000, m=m, k=k, n=n)]).iloc[0]
    ns = 10_000 * probe[key] / pct  # utilisation is inversely proportional to the time
    return dict(load(tmp_path, [op("Matmul", ns, m=m, k=k, n=n)]).iloc[0])


def test_bound_threshold_is_65_percent_of_a_peak() -> None:
    assert BOUND_THRESHOLD_PCT == 65.0


@pytest.mark.parametrize("pct,bound", [(65.5, "DRAM"), (64.5, "SLOW")])
def test_a_thin_matmul_is_dram_bound_from_65_percent_of_dram_peak(tmp_path, pct, bound) -> None:
    # 32 x 4096 @ 4096 x 4096: the weights dominate the bytes; the math is light.
    row = scaled_to(tmp_path, pct, 32, 4096, 4096, "dram_pct")
    assert row["dram_pct"] == pytest.approx(pct)
    assert row["flops_pct"] < BOUND_THRESHOLD_PCT
    assert row["bound"] == bound


@pytest.mark.parametrize("pct,bound", [(65.5, "FLOP"), (64.5, "SLOW")])
def test_a_square_matmul_is_flop_bound_from_65_percent_of_math_peak(tmp_path, pct, bound) -> None:
    # 4096^3: a lot of math per byte moved.
    row = scaled_to(tmp_path, pct, 4096, 4096, 4096, "flops_pct")
    assert row["flops_pct"] == pytest.approx(pct)
    assert row["dram_pct"] < BOUND_THRESHOLD_PCT
    assert row["bound"] == bound


def test_a_matmul_over_both_thresholds_is_both(tmp_path) -> None:
    # 512 x 4096 @ 4096 x 4096 moves about as many bytes as it does math: at 100% of DRAM
    # peak it is also near 90% of the math peak.
    row = scaled_to(tmp_path, 100.0, 512, 4096, 4096, "dram_pct")
    assert row["dram_pct"] >= BOUND_THRESHOLD_PCT and row["flops_pct"] >= BOUND_THRESHOLD_PCT
    assert row["bound"] == "BOTH"


def test_ops_without_a_model_get_no_bound(tmp_path) -> None:
    row = load(tmp_path, [op("LayerNormDeviceOperation", 10_000)]).iloc[0]
    assert row["bound"] == "" and row["dram_pct"] != row["dram_pct"]  # NaN: not modelled


# ------------------------------------------------------------------ gaps and cores

@pytest.mark.parametrize("gap_us,flagged", [(6.4, False), (6.6, True)])
def test_an_op_to_op_gap_above_6_5_us_is_a_host_gap(tmp_path, gap_us, flagged) -> None:
    assert GAP_LIMIT_US == 6.5
    rows = load(tmp_path, [op("A", 5_000, call=1), op("B", 5_000, gap_ns=gap_us * 1000, call=2)])
    second = dict(rows.iloc[1])
    assert second["op_to_op_us"] == pytest.approx(gap_us)
    assert (BY_KEY["op_to_op_us"].severity(second["op_to_op_us"]) is Severity.BAD) == flagged
    assert any(a.kind == "gap" for a in op_advice(second)) == flagged


@pytest.mark.parametrize("cores,flagged", [(LOW_CORES - 1, True), (LOW_CORES, False)])
def test_fewer_than_10_cores_is_flagged(cores, flagged) -> None:
    assert LOW_CORES == 10
    assert (BY_KEY["cores"].severity(cores) is Severity.BAD) == flagged


# ------------------------------------------------------------------ multi-device merge

def test_merge_keeps_the_slowest_device_for_ordinary_ops(tmp_path) -> None:
    rows = load(tmp_path, [op("Matmul", 100_000, device=0, call=1),
                           op("Matmul", 300_000, device=1, call=1),
                           op("Matmul", 200_000, device=2, call=1)])
    assert len(rows) == 1
    assert rows.loc[0, "device_time_us"] == pytest.approx(300.0)
    assert rows.loc[0, "device"] == 1


def test_merge_averages_ccl_ops_across_devices(tmp_path) -> None:
    rows = load(tmp_path, [op("AllGatherAsync", 100_000, device=0, call=1),
                           op("AllGatherAsync", 300_000, device=1, call=1),
                           op("AllGatherAsync", 200_000, device=2, call=1)])
    assert len(rows) == 1
    assert rows.loc[0, "device_time_us"] == pytest.approx(200.0)


def test_no_merge_keeps_one_row_per_device(tmp_path) -> None:
    rows = load(tmp_path, [op("Matmul", 100_000, device=0), op("Matmul", 300_000, device=1)],
                merge=False)
    assert sorted(rows["device_time_us"]) == [100.0, 300.0]


# ------------------------------------------------------------------ advice

def test_a_dram_bound_matmul_gets_the_dram_sharded_and_fidelity_advice(tmp_path) -> None:
    """No real fixture has a DRAM-bound matmul: this one is built, and tt-perf-report prints the
    same two bullets for it (a DRAM-sharded config; HiFi2 with BF16 activations is too low
    while FLOPs % < 40)."""
    from oracle import perf_report_printed

    row = scaled_to(tmp_path, 80.0, 32, 4096, 4096, "dram_pct")
    assert row["bound"] == "DRAM" and row["flops_pct"] < 40
    # the fidelity bullet asks for HiFi4 (slower): labelled accuracy, not a speed rule
    assert [a.kind for a in op_advice(row)] == ["matmul_dram_sharded", "matmul_accuracy"]
    assert op_advice(row)[1].message.startswith("accuracy, not speed: fidelity: unless "
                                                "FLOP-bound, use HiFi4")
    ref = perf_report_printed(tmp_path / "ops_perf_results.csv", "wormhole", tracing=False)
    assert ref["matmul"] == {int(row["id"]): 2}


def test_a_fidelity_bullet_for_a_lower_fidelity_stays_a_speed_rule(tmp_path) -> None:
    """The same DRAM-bound matmul at HiFi4 with BFP8 inputs: "HiFi2 suffices (2x faster)" is
    speed advice (matmul_fidelity), not accuracy."""
    row = scaled_to(tmp_path, 80.0, 32, 4096, 4096, "dram_pct")
    row.update(math_fidelity="HiFi4", in0_dtype="BFLOAT8_B", in1_dtype="BFLOAT8_B")
    kinds = {a.kind: a.message for a in op_advice(row)}
    assert "matmul_accuracy" not in kinds
    assert kinds["matmul_fidelity"] == "fidelity: HiFi2 suffices for BFP8 weights (2x faster " \
                                       "than HiFi4)"


def test_json_total_pct_keeps_a_tiny_share(tmp_path) -> None:
    """A 1 ns op beside a 10 s one is a 1e-8 % share: JSON keeps its digits (it used to be
    rounded to 6 decimals, i.e. to 0)."""
    import json

    from ttdash.report.single import render_to_string

    path = tmp_path / "ops_perf_results.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, HEADER)
        w.writeheader()
        w.writerows([op("Big", 10e9, gap_ns=0, call=1), op("Tiny", 1, gap_ns=0, call=2)])
    view = Trace.load(path).view(Window("all"))
    tiny = json.loads(render_to_string(view, "json"))["ops"][1]
    assert tiny["op_code"] == "Tiny"
    assert tiny["total_pct"] == pytest.approx(1e-9 / 10 * 100, rel=1e-6)


# ------------------------------------------------------------------ sub-device overlap (tt-perf-report main)

CYCLES_PER_NS = 1.35


def timed(ops: list[tuple[int, float, float]]):
    """Device ops as (device, kernel start us, kernel us): FW span from 1 us before the kernel
    to its end, cycles at 1.35 per ns."""
    import pandas as pd

    return pd.DataFrame({
        "OP CODE": [f"Op{i}" for i in range(len(ops))], "OP TYPE": "tt_dnn_device",
        "DEVICE ID": [d for d, _, _ in ops],
        "DEVICE FW START CYCLE": [(s - 1) * 1000 * CYCLES_PER_NS for _, s, _ in ops],
        "DEVICE FW END CYCLE": [(s + k) * 1000 * CYCLES_PER_NS for _, s, k in ops],
        "DEVICE FW DURATION [ns]": [(k + 1) * 1000 for _, _, k in ops],
        "DEVICE KERNEL DURATION [ns]": [k * 1000 for _, _, k in ops],
        "OP TO OP LATENCY [ns]": 0.0})


@pytest.mark.parametrize("second,overlap", [
    ((1100, 50), 0), ((1200, 50), 0),  # back to back, apart
    ((1020, 50), 50), ((1080, 50), 20),  # inside the first, partly over its end
])
def test_overlap_is_the_part_of_an_op_an_earlier_op_still_covered(second, overlap) -> None:
    from ttdash.model.analysis.devices import annotate_overlap

    got = annotate_overlap(timed([(0, 1000, 100), (0, *second)]))
    assert got["_OVERLAP_NS"].tolist() == [0, overlap * 1000]
    assert got["_BUSY_NS"].tolist() == [100_000, (50 - overlap) * 1000]


def test_overlap_walks_by_start_per_device_and_needs_cycles() -> None:
    from ttdash.model.analysis.devices import annotate_overlap

    # a contained op does not extend the cover; row order does not matter
    got = annotate_overlap(timed([(0, 1000, 100), (0, 1010, 10), (0, 1050, 100)]))
    assert got["_OVERLAP_NS"].tolist() == [0, 10_000, 50_000]
    got = annotate_overlap(timed([(0, 1080, 50), (0, 1000, 100)]))
    assert got["_OVERLAP_NS"].tolist() == [20_000, 0]
    # cycle counters are per device: the same times on two devices do not overlap
    assert annotate_overlap(timed([(0, 1000, 100), (1, 1000, 100)]))["_OVERLAP_NS"].tolist() == [0, 0]
    no_cycles = timed([(0, 1000, 100), (0, 1000, 100)]).drop(columns="DEVICE FW END CYCLE")
    assert annotate_overlap(no_cycles)["_OVERLAP_NS"].isna().all()


def test_overlap_reaches_the_report_and_busy_time(tmp_path) -> None:
    """Through a report: the Overlap column, busy time in the totals (tt-perf-report main), the
    1.4.1 numbers untouched (device time summed, Total % over summed time)."""
    import json

    from ttdash.report.single import render_to_string

    rows = timed([(0, 1000, 100), (0, 1080, 50), (0, 2000, 10)])
    rows["GLOBAL CALL COUNT"] = [1, 2, 3]
    rows["HOST START TS"] = [1, 2, 3]
    path = tmp_path / "ops_perf_results.csv"
    rows.to_csv(path, index=False)
    view = Trace.load(path).view(Window("all"))
    tot = view.totals()
    assert tot["device_time_us"] == pytest.approx(160) and tot["busy_us"] == pytest.approx(140)
    assert tot["overlap_us"] == pytest.approx(20)
    doc = json.loads(render_to_string(view, "json"))
    assert doc["totals"]["overlap_us"] == pytest.approx(20)
    table = render_to_string(view, "table")
    assert "Overlap" in table.splitlines()[table.splitlines().index("") + 1]
    assert "busy 140 us (overlap 20.0 us" in table


def test_a_negative_gap_is_kept_signed_and_left_out_of_totals(tmp_path) -> None:
    rows = load(tmp_path, [op("A", 5_000, call=1), op("B", 5_000, gap_ns=-3_000, call=2)])
    second = rows.iloc[1]
    assert second["op_to_op_us"] != second["op_to_op_us"]  # NaN: as tt-perf-report 1.4.1
    assert second["gap_signed_us"] == pytest.approx(-3.0)  # shown, as its main does
    assert rows["total_pct"].sum() == pytest.approx(100.0)
