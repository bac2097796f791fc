"""The findings table (#46, "how to know it stays true"): for each real profiler file, what a
careful engineer reads off the raw CSV, and every finding of `ttdash report -f json` checked
against it: the iterations and their unit, the replay sessions, warm-up or not, the steady
state's ops (GLOBAL CALL COUNTs), the top op code by device time and its bound class.

The expected side is built here from the file's columns with pandas (`read_by_hand`), by
rules that hold for any file, never from ttdash's output:

* an iteration is a repeat of the same work. Replay sessions (`METAL TRACE REPLAY SESSION
  ID`) are iterations, one each, and one session is the steady state; else a repeated
  signpost name whose blocks (to its `_end` partner, else to its next occurrence) hold the
  same (op code, input shapes) key sequence, two or more and half or more; else one
  device's ops (host fallbacks left out) repeat when some block of consecutive keys is
  followed by a copy of itself, the copies covering half the ops or more (the shortest
  block among those covering the most);
* an iteration's time is its ops' kernel time plus their op-to-op gaps (the file's first op
  has none; corrupt rows, kernel over 1e9 ns, count nothing); the leading iterations above
  1.25x the median of the second half are warm-up;
* the top op code sums DEVICE KERNEL DURATION over every row of the code (corrupt rows left
  out); its bound class is the one tt-perf-report 1.4.1 gives most of that code's device
  time (`tests/oracle.py`: its recorded output for the real files).

`TABLE` holds those readings written out by hand for the files in ../shared/fixtures/real, and
the rules must reproduce them (so a rule cannot drift to agree with ttdash). Files of that
directory not in the table (held-out ones) are checked against the rules alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_REAL, real_dir, run_ttdash

WARMUP_RATIO = 1.25  # documented in docs/steady-state.md (the reader's rule, not ttdash's code)
CORRUPT_NS = 1e9
SHAPE = re.compile(r"INPUT_\d+_[WZYX](_PAD\[LOGICAL\])?$")


@dataclass(frozen=True)
class Reading:
    """What a careful engineer reads off one file. `steady`: the first and last op number
    (GLOBAL CALL COUNT, >> 10 on several devices) of the steady state; None without it. On
    one device the count is (op << 10) | 0 in the newer files, so 937 << 10 is op 937."""

    kind: str  # "replay", "sequence", "signpost" or "" (no iterations); "not a report"
    iterations: int = 0
    period: int | None = None  # ops per iteration (sequence)
    sessions: int = 0
    warmup: int = 0
    steady: tuple[int, int] | None = None
    top_op: str | None = None
    bound: str = ""  # tt-perf-report's class of the top op ("" blank), None: not read


#: by hand, per file: the columns read (with the rules above) and why
TABLE: dict[str, Reading] = {
    # the encoder twice (2 x 936 same codes and shapes); run 1 compiles (16 s of pauses)
    "tt-perf-report__wh_clip_encoder_2.csv": Reading(
        "sequence", 2, 936, 0, 1, (937 << 10, 1872 << 10), "MinimalMatmulOp", "SLOW"),
    # the same model on Blackhole: 2 x 330
    "tt-perf-report__bh_64_clip_encoder_1.csv": Reading(
        "sequence", 2, 330, 0, 1, (331 << 10, 660 << 10), "MinimalMatmulOp", "SLOW"),
    # one replay session (20 ops, no eager run in the file): the steady state
    "tt-perf-report__bh_invalid_trace_decode_window.csv": Reading(
        "replay", 1, None, 1, 0, (171 << 10, 190 << 10), "SdpaDecodeDeviceOperation", ""),
    # 3 x integral_image: three input sizes, three calls, not a loop
    "tt-perf-report__bh20_oft_integral_image_trace.csv": Reading(
        "", top_op="PermuteDeviceOperation", bound=""),
    # 'OFT block started' x 3: three scales (other codes and shapes)
    "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv": Reading(
        "", top_op="ReshapeDeviceOperation", bound=""),
    "tt-perf-report__bh20_oft.csv": Reading("", top_op="GridSampleOperation", bound=""),
    "tt-perf-report__bh_p100_dlv3.csv": Reading("", top_op="Conv2dDeviceOperation", bound=""),
    # 8 devices x 26 ops, each op once
    "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv": Reading(
        "", top_op="RingJointSDPADeviceOperation", bound=""),
    # 398 device ops, no block repeats on the same shapes (the 156 x 5 repeat is host ops)
    "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv": Reading(
        "", top_op="OptimizedConvNew", bound=""),
    "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv": Reading(
        "", top_op="Untilize", bound=""),
    # device logs (profile_log_device.csv): no ops table to read
    "ttnn-visualizer__smoke_profile_log_device__EXCERPT_first20lines.csv": Reading(
        "not a report"),
    "xkuze-Tenstorrent__profile_log_device__EXCERPT_first18lines.csv": Reading("not a report"),
}


# ------------------------------------------------------------------ the rules, by hand
def _ordered(path: Path) -> pd.DataFrame | None:
    """The rows in tt-perf-report's order with their IDs (line numbers); None: no OP CODE."""
    try:
        raw = pd.read_csv(path, low_memory=False)
    except (pd.errors.ParserError, UnicodeDecodeError):
        return None
    if "OP CODE" not in raw.columns:
        return None
    raw["ID"] = np.arange(len(raw)) + 2
    traced = "METAL TRACE ID" in raw.columns and raw["METAL TRACE ID"].notna().any()
    if "HOST START TS" in raw.columns and not traced:  # replay rows carry capture times
        raw = raw.sort_values("HOST START TS", kind="stable")
    return raw.reset_index(drop=True)


def _col(raw: pd.DataFrame, name: str) -> pd.Series:
    if name in raw.columns:
        return pd.to_numeric(raw[name], errors="coerce")
    return pd.Series(np.nan, index=raw.index)


def _longest_run(eq: np.ndarray) -> tuple[int, int]:
    best, start, run = (0, 0), 0, 0
    for i, v in enumerate(eq):
        run = run + 1 if v else 0
        if run == 1:
            start = i
        if run > best[1]:
            best = (start, run)
    return best


def _repeat(keys: list) -> tuple[int, int, int] | None:
    """(start, period, copies) of the consecutive copies of one block covering the most keys
    (the shortest block of those), at least half of them; None. Every period tried."""
    n = len(keys)
    x = pd.factorize(pd.Series(keys, dtype=object))[0]
    best = None
    for p in range(1, n // 2 + 1):
        start, run = _longest_run(x[p:] == x[:-p])
        copies = (run + p) // p
        if copies >= 2 and (best is None or copies * p > best[2] * best[1]):
            best = (start, p, copies)
    return best if best is not None and best[1] * best[2] * 2 >= n else None


def _signpost_blocks(raw: pd.DataFrame, code: pd.Series, is_sp: np.ndarray, one: np.ndarray,
                     shape: list[str]) -> np.ndarray | None:
    """Iteration labels from a repeated signpost name (the most frequent first; ties: seen
    first) whose blocks are the same work. Block k runs from the name's k-th occurrence to
    the k-th occurrence of its partner (another name found once between each two of its
    occurrences, as many times or once less: `..._start` / `..._end`; the latest such),
    else to its next occurrence (the last one to the end of the file)."""
    if not shape:
        return None
    names = code[is_sp]
    counts = names.value_counts()
    first_seen = {nm: i for i, nm in reversed(list(enumerate(names)))}
    for name in sorted(counts.index, key=lambda nm: (-counts[nm], first_seen[nm])):
        if counts[name] < 2:
            break
        at = np.flatnonzero(is_sp & (code == name).to_numpy())
        nxt = np.append(at[1:], len(raw))
        partner = None
        for other in counts.index:
            if other == name or counts[other] not in (len(at), len(at) - 1):
                continue
            ot = np.flatnonzero(is_sp & (code == other).to_numpy())
            inside = all(at[k] < ot[k] < nxt[k] for k in range(len(ot)))
            if inside and (partner is None or ot[0] > partner[0]):
                partner = ot
        ends = nxt.copy()
        if partner is not None:
            ends[:len(partner)] = partner
        label = np.zeros(len(raw), dtype=np.int64)
        blocks = []
        for k, (a, b) in enumerate(zip(at, ends)):
            label[a:b] = k + 1
            blocks.append(tuple(tuple(r) for r in raw.iloc[a:b].loc[one[a:b],
                                                                ["OP CODE", *shape]]
                                .astype(str).to_numpy()))
        most = pd.Series([b for b in blocks if b], dtype=object).value_counts()
        if len(most) and most.iloc[0] >= 2 and most.iloc[0] * 2 >= len(blocks):
            return label
    return None


def read_by_hand(path: Path) -> Reading:
    raw = _ordered(path)
    if raw is None:
        return Reading("not a report")
    code = raw["OP CODE"].astype(str)
    is_sp = (raw["OP TYPE"].astype(str) == "signpost").to_numpy() if "OP TYPE" in raw \
        else np.zeros(len(raw), dtype=bool)
    host = code.str.contains("(torch)", regex=False).to_numpy()
    dev = _col(raw, "DEVICE ID")
    is_op = ~is_sp & ~host & dev.notna().to_numpy()
    devices = sorted(dev[is_op].unique())
    dur = _col(raw, "DEVICE KERNEL DURATION [ns]").to_numpy(dtype="float64")
    gap = _col(raw, "OP TO OP LATENCY [ns]").to_numpy(dtype="float64").copy()
    bad = dur > CORRUPT_NS
    gap[0] = np.nan
    gap[bad | (gap < 0)] = np.nan
    if len(gap) > 1:
        gap[1:][bad[:-1]] = np.nan  # the op after a corrupt one: its gap too
    wall = np.where(bad, 0, np.nan_to_num(dur)) + np.nan_to_num(gap)
    gcc = _col(raw, "GLOBAL CALL COUNT").to_numpy(dtype="float64")
    op_no = np.where(np.isnan(gcc), -1, gcc).astype(np.int64)
    if len(devices) > 1:
        op_no = op_no >> 10
    session = _col(raw, "METAL TRACE REPLAY SESSION ID").to_numpy(dtype="float64")
    traced = _col(raw, "METAL TRACE ID").to_numpy(dtype="float64")
    sessions = sorted(np.unique(session[~np.isnan(session) & is_op]))

    # top op code and its time (every device's rows)
    t = pd.Series(np.where(bad, 0, np.nan_to_num(dur)), index=raw.index)[is_op]
    by_code = t.groupby(code[is_op]).sum()
    top = str(by_code.idxmax()) if len(by_code) and by_code.max() > 0 else None

    one = is_op & (dev.to_numpy() == (devices[0] if devices else -1))
    shape = [c for c in raw.columns if SHAPE.match(c)]
    keys = [tuple(r) for r in raw.loc[one, ["OP CODE", *shape]].astype(str).to_numpy()]
    rows = np.flatnonzero(one)
    label = np.zeros(len(raw), dtype=np.int64)  # iteration of each row (one device's)
    kind, period = "", None
    if sessions:
        kind = "replay"
        for k, s in enumerate(sessions):
            label[session == s] = k + 1
        first = int(np.argmax(~np.isnan(session)))
        eager = one & np.isnan(session) & np.isnan(traced) & (np.arange(len(raw)) < first)
        per = [int((one & (label == k + 1)).sum()) for k in range(len(sessions))]
        if eager.any() and int(eager.sum()) == max(set(per), key=per.count):
            label = np.where(label > 0, label + 1, 0)
            label[eager] = 1
    elif (found_sp := _signpost_blocks(raw, code, is_sp, one, shape)) is not None:
        kind, label = "signpost", found_sp
    elif shape and len(keys) >= 2 and (found := _repeat(keys)) is not None:
        start, period, copies = found
        kind = "sequence"
        for k in range(copies):
            label[rows[start + k * period:start + (k + 1) * period]] = k + 1
    n = int(label.max())
    if not kind or (kind != "replay" and n < 2):
        return Reading("", sessions=len(sessions), top_op=top)
    it_wall = np.array([wall[one & (label == k)].sum() for k in range(1, n + 1)])
    ref = np.median(it_wall[n // 2:]) if n >= 2 else 0.0
    warm = 0
    while n >= 2 and ref > 0 and warm < n - 1 and it_wall[warm] > WARMUP_RATIO * ref:
        warm += 1
    steady = op_no[one & (label > warm)]
    return Reading(kind, n, period, len(sessions), warm, (int(steady.min()), int(steady.max())),
                   top)


def tt_perf_report_bound(path: Path, top: str | None, tmp: Path) -> str:
    """tt-perf-report's bound class with the most device time among the top op code's rows
    (its recorded output for the whole file; "" when blank)."""
    import os

    from oracle import perf_report_csv

    from ttdash.model import Trace

    if top is None:
        return ""
    trace = Trace.load(path)
    args = (path, tmp / "ref.csv", trace.arch.perf_report_name, trace.trace_mode)
    try:
        ref = perf_report_csv(*args, ignore_signposts=True)
    except AssertionError as e:  # a file with no recorded run (a held-out one): run it
        if "no recorded" not in str(e):
            raise
        before = os.environ.get("TTDASH_ORACLE")
        os.environ["TTDASH_ORACLE"] = "run"  # neither golden, record nor live: just run
        try:
            ref = perf_report_csv(*args, ignore_signposts=True)
        finally:
            if before is None:
                os.environ.pop("TTDASH_ORACLE")
            else:
                os.environ["TTDASH_ORACLE"] = before
    mine = ref[ref["OP Code"].astype(str).str.split(" ").str[0] == top]
    if not len(mine):
        return ""
    t = pd.to_numeric(mine["Device Time"], errors="coerce").fillna(0)
    bound = mine["Bound"].astype(object).where(mine["Bound"].notna(), "").astype(str)
    return str(t.groupby(bound).sum().idxmax())


# ------------------------------------------------------------------ what ttdash says
def said_by_ttdash(path: Path) -> tuple[Reading, dict]:
    """ttdash's findings as a Reading: report -f json (iterations, replay sessions, top op by
    summed device time, its bound) and the --steady-state window's op numbers."""
    r = run_ttdash("report", str(path), "-f", "json")
    if r.returncode != 0:
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert str(path) in r.stderr and "Traceback" not in r.stderr
        return Reading("not a report"), {}
    doc = json.loads(r.stdout)
    ops = pd.DataFrame(doc["ops"])
    is_op = (ops["op_type"] != "signpost") & ~ops["op_code"].astype(str).str.contains(
        "(torch)", regex=False)
    ops = ops[is_op]
    t = ops["device_time_us"].astype("float64").fillna(0)
    by_code = t.groupby(ops["op_code"]).sum()
    top = str(by_code.idxmax()) if len(by_code) and by_code.max() > 0 else None
    bound = ""
    if top is not None:
        mine = ops["op_code"] == top
        b = t[mine].groupby(ops.loc[mine, "bound"].fillna("").astype(str)).sum()
        bound = str(b.idxmax())
    sessions = len(doc["replay_sessions"] or [])
    it = doc["iterations"]
    steady = run_ttdash("report", str(path), "--steady-state", "-f", "json")
    if it is None:
        assert steady.returncode == 2 and steady.stderr.count("\n") == 1
        assert "no repeated iterations found" in steady.stderr
        return Reading("", sessions=sessions, top_op=top, bound=bound), doc
    assert steady.returncode == 0, steady.stderr
    ids = [o["id"] for o in json.loads(steady.stdout)["ops"] if o["op_type"] != "signpost"
           and "(torch)" not in str(o["op_code"])]
    raw = pd.read_csv(path, low_memory=False)
    gcc = pd.to_numeric(raw["GLOBAL CALL COUNT"], errors="coerce").to_numpy()[
        np.asarray(ids) - 2].astype(np.int64)
    if pd.to_numeric(raw.get("DEVICE ID"), errors="coerce").nunique() > 1:
        gcc = gcc >> 10
    return Reading(it["source"], it["count"], it["period"], sessions, it["warmup"],
                   (int(gcc.min()), int(gcc.max())), top, bound), doc


# ------------------------------------------------------------------ the table
def _real_files() -> list[str]:
    found = sorted(p.name for p in SHARED_REAL.glob("*.csv")) if SHARED_REAL.is_dir() else []
    return sorted(set(found) | set(TABLE))


def test_the_table_covers_every_real_file():
    names = {p.name for p in real_dir().glob("*.csv")}
    assert set(TABLE) <= names  # a row per file the table was written for
    assert len(TABLE) == 12


@pytest.mark.parametrize("name", _real_files())
def test_findings_agree_with_the_raw_columns(name, tmp_path):
    path = real_dir() / name
    if not path.exists():
        pytest.skip(f"{name} is not in {real_dir()}")
    hand = read_by_hand(path)
    if name in TABLE:  # the rules reproduce what was read off the file by hand
        want = TABLE[name]
        assert hand == Reading(want.kind, want.iterations, want.period, want.sessions,
                               want.warmup, want.steady, want.top_op, hand.bound)
    got, _ = said_by_ttdash(path)
    if hand.kind == "not a report":
        assert got.kind == "not a report"
        return
    bound = tt_perf_report_bound(path, hand.top_op, tmp_path)
    if name in TABLE:
        assert bound == TABLE[name].bound
    assert got == Reading(hand.kind, hand.iterations, hand.period, hand.sessions,
                          hand.warmup, hand.steady, hand.top_op, bound)


# ------------------------------------------------------------------ synthetic rows
SYNTHETIC = {
    # six matmuls, five shapes: nothing repeats (was: 3 iterations)
    "six_matmuls": Reading("", top_op="MatmulDeviceOperation"),
    # one replay session after 33 eager ops and 22 capture rows: the steady state is the
    # session's 22 ops, GLOBAL CALL COUNT 56-77 (was: no sessions, the capture rows)
    "one_replay_session": Reading("replay", 1, None, 1, 0, (56 << 10, 77 << 10),
                                  "MatmulDeviceOperation"),
    # eight identical ops: eight iterations of one op, the cold first one warm-up
    "identical_ops": Reading("sequence", 8, 1, 0, 1, (2 << 10, 8 << 10),
                             "MatmulDeviceOperation"),
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_findings_on_synthetic_files(name, tmp_path):
    import synthetic_traces

    path = getattr(synthetic_traces, name)(tmp_path / f"{name}.csv")
    want = SYNTHETIC[name]
    assert read_by_hand(path) == want
    got, _ = said_by_ttdash(path)
    assert got == Reading(want.kind, want.iterations, want.period, want.sessions,
                          want.warmup, want.steady, want.top_op, got.bound)


#: generated runs (ttdash.sim): the rules and ttdash must agree beyond the real files too
GENERATED = {
    "signposts_cut_short": dict(n_ops=300, seed=1, layers=2, signposts=True),
    "four_devices_signposts": dict(n_ops=300, seed=3, layers=2, signposts=True, devices=4),
    "host_fallbacks": dict(n_ops=300, seed=4, layers=2, signposts=False,
                           host_fallback_every=7),
    "replay_two_devices": dict(n_ops=200, seed=5, layers=2, trace_replay=True, devices=2,
                               signposts=False),
    "corrupt_rows": dict(n_ops=300, seed=6, layers=2, signposts=False, corrupt_every=11),
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_findings_on_generated_runs(name, tmp_path):
    from ttdash.sim import generate_ops, write_report_csv

    path = write_report_csv(generate_ops(**GENERATED[name]), tmp_path / f"{name}.csv")
    hand = read_by_hand(path)
    assert hand.kind and hand.iterations >= 2  # every one of them repeats
    got, _ = said_by_ttdash(path)
    assert got == Reading(hand.kind, hand.iterations, hand.period, hand.sessions,
                          hand.warmup, hand.steady, hand.top_op, got.bound)
