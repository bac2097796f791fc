"""Warm-up and steady state (#39 item 4): the iterations model.iterations finds (replay sessions,
a repeated signpost, a repeating op sequence), the warm-up verdict, `--steady-state` through
the CLI, warmup_advice, and the report header's iterations line and JSON."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash

from ttdash.model import Trace, Window
from ttdash.model.analysis.iterations import (
    WARMUP_RATIO,
    find_iterations,
    find_period,
    warmup_advice,
    warmup_count,
)
from ttdash.schemas import load as load_schema

BLOCK = ["Matmul", "BinaryNg", "Unary", "LayerNorm", "Matmul", "Softmax"]
SETUP = ["Tilize", "ToDevice", "Typecast"]  # before the loop: not an iteration
WARM_GAP_NS, STEADY_GAP_NS = 40_000_000, 4_000  # compile on the first runs vs dispatch


def synthetic(tmp_path, *, iterations: int = 8, warmup: int = 2, signposts: bool = False,
              replay: bool = False, name: str = "t.csv", slow: tuple[int, ...] = ()):
    """A trace of SETUP then `iterations` copies of BLOCK; the first `warmup` copies have a
    40 ms op-to-op gap before every op (compiles), as have the (0-based) iterations in `slow`;
    the rest 4 us. Returns (path, expected K:
    the ID of the first op of the first steady iteration, per-iteration wall us)."""
    rows: list[dict] = []

    def op(code: str, dur_ns: int, gap_ns: int, session: int | None = None,
           y: int = 32) -> None:
        rows.append({"OP CODE": code, "OP TYPE": "tt_dnn_device", "DEVICE ID": 0,
                     "DEVICE KERNEL DURATION [ns]": dur_ns, "OP TO OP LATENCY [ns]": gap_ns,
                     "INPUT_0_W": 1, "INPUT_0_Z": 1, "INPUT_0_Y": y, "INPUT_0_X": 1024,
                     "METAL TRACE ID": 0 if session else None,
                     "METAL TRACE REPLAY SESSION ID": session})

    for code in SETUP:
        op(code, 2_000, STEADY_GAP_NS)
    k_id, walls = None, []
    for it in range(iterations):
        if signposts:
            rows.append({"OP CODE": "step", "OP TYPE": "signpost"})
        if it == warmup:
            k_id = len(rows) + 2  # the next row's ID (the header is line 1)
        gap = WARM_GAP_NS if it < warmup or it in slow else STEADY_GAP_NS
        wall = 0.0
        for j, code in enumerate(BLOCK):
            dur = 10_000 + 1_000 * j + 7 * it
            op(code, dur, gap, session=it + 1 if replay else None, y=32 * (j + 1))
            wall += (dur + gap) / 1000
        walls.append(wall)
        if signposts:
            rows.append({"OP CODE": "step_end", "OP TYPE": "signpost"})
    for code in SETUP[:2]:  # after the loop
        op(code, 2_000, STEADY_GAP_NS)
    df = pd.DataFrame(rows)
    df.insert(0, "GLOBAL CALL COUNT", np.arange(len(df)) * 1024)
    df["HOST START TS"] = np.arange(len(df)) * 1_000_000
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p, k_id, walls


# ------------------------------------------------------------------ the detector, synthetic
@pytest.mark.parametrize("kind", ["sequence", "signpost", "replay"])
def test_synthetic_warmup_found_exactly(tmp_path, kind):
    path, k_id, walls = synthetic(tmp_path, signposts=kind == "signpost",
                                  replay=kind == "replay")
    it = find_iterations(Trace.load(path))
    assert it.source == kind
    assert it.count == 8 and it.warmup == 2
    assert it.steady_from_id == k_id
    assert it.table["warmup"].tolist() == [True, True] + [False] * 6
    assert it.table["ops"].tolist() == [len(BLOCK)] * 8
    if kind == "sequence":
        assert it.period == len(BLOCK)
    # each iteration's time: its ops' device time and gaps (the file's first op has none)
    got = it.table["wall_us"].to_numpy()
    assert got[1:] == pytest.approx(walls[1:], rel=1e-9)
    assert "iterations 1-2 are warm-up" in it.verdict()
    assert f"steady state from op {k_id}" in it.verdict()


def test_synthetic_without_warmup_and_one_slow_later(tmp_path):
    path, _, _ = synthetic(tmp_path, warmup=0, slow=(4,))
    it = find_iterations(Trace.load(path))
    assert it.count == 8 and it.warmup == 0 and it.steady_from_id == it.table["first_id"][0]
    assert "no warm-up" in it.verdict() and it.slow_later == 1
    assert "1 later iteration is also above 1.25x the median" in it.verdict()
    path, _, _ = synthetic(tmp_path, warmup=1, slow=(3, 5), name="t2.csv")
    it = find_iterations(Trace.load(path))
    assert (it.warmup, it.slow_later) == (1, 2) and it.as_dict()["slow_later"] == 2


def test_generator_trace_first_iteration_compiles(tmp_path):
    """The simulator compiles every op the first time it runs (0.3-3 ms gaps): iteration 1 is
    the warm-up; the period is the program's length, found here by brute force."""
    from ttdash.sim.generator import generate_ops

    df = generate_ops(1980, seed=3, layers=2, signposts=False)
    p = tmp_path / "gen.csv"
    df.to_csv(p, index=False)
    codes = df["OP CODE"].astype(str).to_numpy()
    period = next(q for q in range(1, len(codes))
                  if (codes[q:] == codes[:-q]).all())  # O(n^2), independent
    it = find_iterations(Trace.load(p))
    assert it.source == "sequence" and it.period == period
    assert it.count == len(codes) // period and it.warmup == 1
    assert it.steady_from_id == period + 2  # line number of the first op of iteration 2


def test_find_period_is_exact_and_refuses_noise():
    rng = np.random.default_rng(7)
    block = rng.integers(0, 30, 97)
    x = np.concatenate([rng.integers(30, 40, 11), np.tile(block, 40), rng.integers(30, 40, 5)])
    assert find_period(x) == (11, 97, 40)
    assert find_period(rng.integers(0, 30, 50_000)) is None
    assert find_period(np.arange(10)) is None


def test_warmup_rule():
    """The leading iterations above WARMUP_RATIO x the median of the second half; a slow one
    after a fast one is not warm-up; at least one iteration stays steady."""
    assert warmup_count(np.array([50.0, 30.0, 10, 10, 11, 10])) == (2, 10.0)
    assert warmup_count(np.array([10.0, 50.0, 10, 10])) == (0, 10.0)
    assert warmup_count(np.array([WARMUP_RATIO * 10, 10, 10, 10])) == (0, 10.0)
    assert warmup_count(np.array([100.0, 100.0, 1.0, 1.0]))[0] == 2
    assert warmup_count(np.array([5.0, 4.0]))[0] == 0
    assert warmup_count(np.array([9.0, 4.0]))[0] == 1


# ------------------------------------------------------------------ real traces
def _ordered(path) -> pd.DataFrame:
    df = pd.read_csv(path, low_memory=False)
    df["ID"] = np.arange(len(df)) + 2
    return df.sort_values("HOST START TS", kind="stable").reset_index(drop=True)


def test_real_repeated_sequence_clip_encoder():
    """wh_clip_encoder_2 holds the encoder twice: 936 ops each; the first run compiles (16 s
    of host pauses), the second takes 355 ms. Times checked against the raw columns."""
    path = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    it = find_iterations(Trace.load(path))
    assert (it.source, it.count, it.period, it.warmup) == ("sequence", 2, 936, 1)
    raw = _ordered(path)
    codes = raw["OP CODE"].to_numpy()
    assert (codes[:936] == codes[936:]).all()  # the repetition, independently
    dur = raw["DEVICE KERNEL DURATION [ns]"].to_numpy(dtype="float64") / 1000
    gap = raw["OP TO OP LATENCY [ns]"].to_numpy(dtype="float64") / 1000
    gap[0] = np.nan  # tt-perf-report: no gap for the first op
    assert it.steady_from_id == int(raw["ID"][936]) == 938
    for k, part in enumerate((slice(0, 936), slice(936, 1872))):
        assert it.table["device_time_us"][k] == pytest.approx(dur[part].sum(), rel=1e-9)
        assert it.table["wall_us"][k] == pytest.approx(dur[part].sum() + np.nansum(gap[part]),
                                                       rel=1e-9)
    assert it.table["wall_us"][0] > 40 * it.table["wall_us"][1]


@pytest.mark.parametrize(("name", "start", "end"), [
    # integral_image_start/_end three times, 7 ops each: the same op codes on three input sizes
    # (12x64, 24x96, 48x160 rows): three calls, not a loop (was: 3 iterations, a "slow later
    # iteration" that is only the largest input)
    ("tt-perf-report__bh20_oft_integral_image_trace.csv", "integral_image_start",
     "integral_image_end"),
    # 'OFT block started' x 3 (43-44 ops): the OFT at three scales, other op codes and shapes
    # (was: 3 iterations, "iterations 1-2 are warm-up")
    ("tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv", "OFT block started",
     "OFT block ended"),
    ("tt-perf-report__bh20_oft.csv", "OFT block started", "OFT block ended")])
def test_real_signposts_around_different_work_are_not_iterations(name, start, end):
    """A repeated signpost marks iterations only around the same work: the blocks' op codes
    and input shapes, read here from the raw columns, differ in each of these files."""
    path = real_dir() / name
    raw = _ordered(path)
    is_sp = (raw["OP TYPE"] == "signpost").to_numpy()
    k = np.cumsum(is_sp & (raw["OP CODE"] == start).to_numpy())
    inside = (np.cumsum(is_sp & (raw["OP CODE"] == end).to_numpy()) < k) & ~is_sp
    shape = [c for c in raw.columns if c.startswith("INPUT_0_") and c[8] in "WZYX"]
    blocks = [tuple(map(tuple, raw.loc[inside & (k == i), ["OP CODE", *shape]]
                        .astype(str).to_numpy())) for i in (1, 2, 3)]
    assert len(set(blocks)) == 3  # three different blocks of work
    it = find_iterations(Trace.load(path))
    assert not it.found and it.verdict() == "no repeated iterations found"
    assert warmup_advice(Trace.load(path).view(Window("all"))) == []


@pytest.mark.parametrize("name", [
    "tt-perf-report__bh_p100_dlv3.csv",
    # 156 x 5 host fallback ops repeat, with no device time to warm up: not iterations
    "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"])
def test_trace_without_iterations(name):
    it = find_iterations(Trace.load(real_dir() / name))
    assert not it.found and it.verdict() == "no repeated iterations found"


# ------------------------------------------------------------------ --steady-state, the CLI
def test_steady_state_window_through_the_cli():
    clip = str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    r = run_ttdash("report", clip, "--steady-state", "-f", "json", "--advice", "none")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["window"].startswith("steady state: iteration 2 of 2")
    assert "from op 938" in doc["window"]
    assert "warm-up iteration 1" in doc["window_note"]
    assert doc["totals"]["ops"] == 936 and doc["ops"][0]["id"] == 938
    table = run_ttdash("report", clip, "--steady-state").stdout
    assert "Window: steady state" in table and "Note: warm-up iteration 1 (16.34 s)" in table
    d = run_ttdash("diff", clip, clip, "--steady-state", "-f", "json")
    assert d.returncode == 0, d.stderr
    assert "steady state" in json.dumps(json.loads(d.stdout))


def test_steady_state_without_iterations_is_one_line_exit_2():
    r = run_ttdash("report", str(real_dir() / "tt-perf-report__bh_p100_dlv3.csv"),
                   "--steady-state")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no repeated iterations found" in r.stderr


def test_open_and_diff_take_the_option():
    from ttdash.cli import parse

    for argv in (["open", "x.csv", "--steady-state"], ["diff", "a.csv", "b.csv",
                                                        "--steady-state"]):
        _, opts = parse(argv)
        assert opts.window.steady_state and opts.window.explicit
        assert opts.window.window(None) == Window("steady")


# ------------------------------------------------------------------ advice, header, JSON
def test_warmup_advice():
    t = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    view = t.view(Window("all"))
    (a,) = warmup_advice(view)
    table = find_iterations(t).table
    assert a.kind == "warmup" and a.id == 938
    assert a.saving_us == pytest.approx(table["wall_us"][0] - table["wall_us"][1])
    assert a.saving_pct == pytest.approx(a.saving_us / table["wall_us"].sum() * 100)
    assert "iteration 1 is warm-up" in a.message and "--steady-state" in a.message
    quiet = Trace.load(real_dir() / "tt-perf-report__bh20_oft_integral_image_trace.csv")
    assert warmup_advice(quiet.view(Window("all"))) == []


def test_header_line_and_json_key_match_the_schema():
    from ttdash.report.header import iterations_dict, iterations_line

    t = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    view = t.view(Window("all"))
    line = iterations_line(view)
    assert line and line.startswith("Iterations: 2 iterations") and "16.34 s" in line
    doc = iterations_dict(view)
    sub = load_schema("report")["properties"]["iterations"]
    jsonschema.validate(doc, sub)
    assert [r["first_id"] for r in doc["iterations"]] == [2, 938]
    assert iterations_line(t.view(Window("replay", region=1)) if t.replay_sessions
                           else t.view(Window("default"))) is None  # no second pass


async def test_open_shows_the_steady_state_window():
    from conftest import screen_text

    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_app

    view = load_view(str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"),
                     WindowOptions(steady_state=True), columns="lazy")
    app = open_app(view)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
        assert "936 ops" in text and "steady state: iteration 2 of 2" in text
        assert any("warm-up iteration 1" in str(n.message) for n in app._notifications)


def test_generator_four_devices_iterations_hold_whole_ops(tmp_path):
    """Four devices: an op's rows sit around its device-0 row in report order; each iteration
    still holds every device's rows of its ops (the merged ops: one period each)."""
    from ttdash.sim.generator import generate_ops

    df = generate_ops(1500, seed=5, layers=2, devices=4, signposts=False)
    p = tmp_path / "gen4.csv"
    df.to_csv(p, index=False)
    t = Trace.load(p)
    it = find_iterations(t)
    assert it.source == "sequence" and it.warmup == 1
    assert (it.table["ops"] == it.period).all()
    op = pd.to_numeric(t.ordered["GLOBAL CALL COUNT"]).to_numpy() >> 10
    per_op = pd.Series(it.labels).groupby(op).nunique()
    assert (per_op == 1).all()  # no op split between two iterations
    steady = t.view(Window("steady"))
    assert len(steady.op_rows) == (it.count - 1) * it.period


# ------------------------------------------------------------------ the work, not op codes
def test_six_matmuls_of_five_shapes_are_not_iterations(tmp_path):
    """Six matmuls, five input shapes: op codes alone made "3 iterations" and --steady-state
    dropped two of the six ops; now nothing repeats and --steady-state refuses."""
    from synthetic_traces import six_matmuls

    path = six_matmuls(tmp_path / "six.csv")
    raw = pd.read_csv(path)
    assert raw["OP CODE"].nunique() == 1 and raw["INPUT_0_Y"].nunique() == 5
    assert not find_iterations(Trace.load(path)).found
    r = run_ttdash("report", str(path), "--steady-state")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert str(path) in r.stderr and "no repeated iterations found" in r.stderr


def test_identical_ops_repeat_with_period_one(tmp_path):
    """N identical ops (one op code, one shape): N iterations of one op, not N/2 of two."""
    from synthetic_traces import identical_ops

    path = identical_ops(tmp_path / "same.csv", n=8)
    it = find_iterations(Trace.load(path))
    assert (it.source, it.period, it.count, it.warmup) == ("sequence", 1, 8, 1)
    assert it.unit == "one op repeated" and it.steady_from_id == 3
    doc = json.loads(run_ttdash("report", str(path), "--steady-state", "-f", "json").stdout)
    assert [o["id"] for o in doc["ops"]] == list(range(3, 10))


def test_same_op_codes_on_other_shapes_are_not_iterations(tmp_path):
    """Two blocks with the same op codes on other input shapes (two stages of an encoder, not
    one stage run twice): no iterations, no warm-up advice; the same file with equal shapes
    is two iterations."""
    path, _, _ = synthetic(tmp_path, iterations=2, warmup=1)
    raw = pd.read_csv(path)
    assert find_iterations(Trace.load(path)).count == 2
    second = np.arange(len(raw)) >= len(SETUP) + len(BLOCK)
    raw.loc[second, "INPUT_0_Y"] = raw.loc[second, "INPUT_0_Y"] * 4
    other = tmp_path / "stages.csv"
    raw.to_csv(other, index=False)
    t = Trace.load(other)
    assert not find_iterations(t).found and warmup_advice(t.view(Window("all"))) == []


def test_diff_takes_no_spread_from_signposts_around_different_work():
    """diff's iteration spread and per-op noise read the same rule: integral_image's three
    calls on three input sizes are not iterations (was: "per integral_image_start iteration
    (3 vs 3) ... 95% CI -71% .. +247%"); of 'TTBasicBlock forward started', the 4 blocks of
    one shape are (0.06% apart; with blocks of the same op count but other shapes, 0.77%)."""
    path = str(real_dir() / "tt-perf-report__bh20_oft_integral_image_trace.csv")
    doc = json.loads(run_ttdash("diff", path, path, "-f", "json").stdout)
    assert doc["iteration_spread"] is None and doc["noise"]["iterations"]["baseline"] == {}
    oft = str(real_dir() / "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv")
    doc = json.loads(run_ttdash("diff", oft, oft, "-f", "json").stdout)
    assert doc["noise"]["iterations"]["baseline"] == {"TTBasicBlock forward started": 4}
    assert max(doc["iteration_spread"]["cv_pct"]) < 0.1
