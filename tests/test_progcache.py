"""The program cache (#34 item 5): recompiles (a miss for a program already run on its device),
programs first run inside the steady state, the stale-flag signature; on traces built from the
DeepSeek file (26 ops x 8 devices, each its program's first run) run twice."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from cli_inproc import run_main
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.model.analysis import whyslow
from ttdash.model.analysis.progcache import programs

DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
HIT, HASH = "PROGRAM CACHE HIT", "PROGRAM HASH"


def _twice(tmp_path, second=lambda it2: None, signpost: bool = False):
    """DeepSeek's 208 rows, then the same 26 ops again (op ids 27-52, later host times), with
    `second` applied to the second run's rows; optionally a signpost between the two."""
    df = pd.read_csv(real_dir() / DEEPSEEK, dtype=str, keep_default_na=False)
    it2 = df.copy()
    ts = pd.to_numeric(df["HOST START TS"])
    it2["HOST START TS"] = (ts + int(ts.max() - ts.min()) + 1000).astype(str)
    gcc = pd.to_numeric(df["GLOBAL CALL COUNT"])
    it2["GLOBAL CALL COUNT"] = (gcc + (26 << 10)).astype(str)
    second(it2)
    parts = [df]
    if signpost:
        sp = {c: "" for c in df.columns}
        sp.update({"OP CODE": "warmup_done", "OP TYPE": "signpost",
                   "HOST START TS": str(int(ts.max()) + 500)})
        parts.append(pd.DataFrame([sp]))
    parts.append(it2)
    out = pd.concat(parts, ignore_index=True)
    path = tmp_path / "twice.csv"
    out.to_csv(path, index=False)
    return path, out.assign(id=np.arange(len(out)) + 2)


def test_deepseek_runs_every_program_once():
    view = Trace.load(real_dir() / DEEPSEEK).view(Window("all"))
    p = whyslow.program_cache(view)
    raw = pd.read_csv(real_dir() / DEEPSEEK)
    assert (p.programs, p.devices, p.flag) == (raw[HASH].nunique(), 8, "no_repeats")
    assert p.repeats == 0 and p.misses == 0 and p.steady_from_id is None
    assert not [w for w in view.warnings() if w.kind == "program_cache_flag_stale"]


def test_a_flag_that_is_never_true_on_repeats_is_stale(tmp_path):
    """Run twice, every flag False (what tt-metal's op-info cache writes): 208 repeats, a
    data-trust warning, no miss counted."""
    path, _ = _twice(tmp_path)
    view = Trace.load(path).view(Window("all"))
    w = {x.kind: x.as_dict() for x in view.warnings()}
    assert w["program_cache_flag_stale"]["rows"] == 208
    assert "TT_METAL_PROFILER_NO_CACHE_OP_INFO=1" in w["program_cache_flag_stale"]["message"]
    p = whyslow.program_cache(view)
    assert (p.flag, p.misses, p.repeats, len(p.recompiles)) == ("stale", 0, 208, 0)
    out = run_main("report", str(path), "--advice", "none").stdout
    assert "PROGRAM CACHE HIT repeats each program's first flag" in out
    assert "the last new program ran at op 209" in out  # the first run's last op (line 209)


def test_live_flags_count_recompiles_per_op_code(tmp_path):
    """The second run hits the cache except two ops (on all 8 devices): two recompiles, counted
    once per op (not per device), named with the first row of each."""
    def second(it2):
        it2[HIT] = "True"
        it2.loc[it2["OP CODE"] == "LayerNormDeviceOperation", HIT] = "False"  # two ops
        first_mm = it2.index[it2["OP CODE"] == "MatmulDeviceOperation"][:8]
        it2.loc[first_mm, HIT] = "False"  # the first matmul, 8 devices

    path, raw = _twice(tmp_path, second)
    view = Trace.load(path).view(Window("all"))
    assert not [w for w in view.warnings() if w.kind == "program_cache_flag_stale"]
    p = whyslow.program_cache(view)
    # independent: second-run rows flagged False whose (device, hash) ran in the first run
    it2 = raw.iloc[208:]
    missed = it2[it2[HIT] == "False"]
    op_id = pd.to_numeric(missed["GLOBAL CALL COUNT"]) // 1024
    want = missed.assign(op=op_id).groupby("OP CODE").agg(ops=("op", "nunique"),
                                                          first_id=("id", "min"))
    got = p.recompiles.set_index("op_code")
    assert int(want["ops"].sum()) == 3
    first_runs = raw.iloc[:208]  # every first-run row is a miss: 26 ops
    assert p.flag == "live" and p.misses == 3 + first_runs["GLOBAL CALL COUNT"].nunique() // 8
    assert got["ops"].to_dict() == want["ops"].to_dict()
    assert got["first_id"].to_dict() == want["first_id"].to_dict()
    out = run_main("report", str(path), "--advice", "none").stdout
    assert "29 ops missed the cache inside the window: 26 first runs (compiles), 3 recompiles " \
        "of a program already run on their device" in out
    first = int(want.loc["LayerNormDeviceOperation", "first_id"])
    assert f"LayerNormDeviceOperation: 2 recompiles (program cache missed at op {first}: a " \
           "recompile)" in out


def test_new_programs_inside_the_steady_state(tmp_path):
    """A signpost after the first run makes the second the window (tt-perf-report's default):
    an op whose hash changed there ran a new program inside the steady state."""
    def second(it2):
        sdpa = it2["OP CODE"] == "RingJointSDPADeviceOperation"
        it2.loc[sdpa, HASH] = "123456789"

    path, raw = _twice(tmp_path, second, signpost=True)
    view = Trace.load(path).view(Window())
    p = whyslow.program_cache(view)
    assert p.steady_from_id == 211  # the first op after the signpost (line 210)
    got = p.new_programs.set_index("op_code")
    want_first = int(raw[(raw[HASH] == "123456789")]["id"].min())
    assert got.to_dict("index") == {"RingJointSDPADeviceOperation": {"ops": 1,
                                                                     "first_id": want_first}}
    doc = json.loads(run_main("report", str(path), "-f", "json", "--advice", "none",
                              "--perf-report-window").stdout)
    assert doc["program_cache"]["new_programs"] == [
        {"op_code": "RingJointSDPADeviceOperation", "ops": 1, "first_id": want_first}]
    out = run_main("report", str(path), "--advice", "none", "--perf-report-window").stdout
    assert "Steady state (the window, from op 211): 1 op ran a new program" in out


def test_replays_and_files_without_hashes_are_left_out():
    """Replay rows carry the capture's hash and flag: not lookups. wh_clip has no hash."""
    name = "tt-perf-report__bh_invalid_trace_decode_window.csv"
    trace = Trace.load(real_dir() / name)
    p = programs(trace.ordered)
    assert p is not None and not p.usable.any()  # every op row is a replay
    assert whyslow.program_cache(trace.view(Window("all"))) is None
    clip = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    assert programs(clip.ordered) is None
    doc = json.loads(run_main("report", str(real_dir() / name), "-f", "json").stdout)
    assert doc["program_cache"] is None
