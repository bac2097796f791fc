"""Small hand-made profiler reports for the iterations and findings tests: each is a few dozen
rows written with pandas, in the compact header the edge fixtures use (every column optional,
parsed by name), Wormhole at 1000 MHz. Each builder writes `path` and returns it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

EAGER_SETUP = ["ToDevice", "Tilize", "Typecast", "Embedding", "Reshape", "Transpose",
               "Concat", "Slice", "Pad", "Permute", "Repeat"]  # 11 ops before the decode
DECODE = ["LayerNorm", "Matmul", "CreateQKVHeads", "RotaryEmbedding", "RotaryEmbedding",
          "PagedUpdateCache", "PagedUpdateCache", "SdpaDecode", "ConcatHeads", "Matmul",
          "BinaryNg", "LayerNorm", "Matmul", "Matmul", "BinaryNg", "Matmul", "FastReduceNC",
          "Matmul", "BinaryNg", "Sampling", "Untilize", "ToLayout"]  # 22 ops, one decode step
#: the replayed ops' kernel times, ns: 10 us + 2 us per position, op 5 104 us more (786 us)
REPLAY_NS = [10_000 + 2_000 * j + (104_000 if j == 5 else 0) for j in range(len(DECODE))]


def _row(code: str, gcc: int, host_ts: int, dur_ns: float | None, gap_ns: float | None,
         y: int, trace_id: int | None = None, session: int | None = None) -> dict:
    return {"OP CODE": f"{code}DeviceOperation", "OP TYPE": "tt_dnn_device",
            "GLOBAL CALL COUNT": gcc << 10, "DEVICE ID": 0, "DEVICE ARCH": "wormhole_b0",
            "CORE COUNT": 64, "HOST START TS": host_ts, "DEVICE KERNEL DURATION [ns]": dur_ns,
            "OP TO OP LATENCY [ns]": gap_ns, "INPUT_0_W": 1, "INPUT_0_Z": 1, "INPUT_0_Y": y,
            "INPUT_0_X": 2048, "INPUT_0_DATATYPE": "BFLOAT16",
            "METAL TRACE ID": trace_id, "METAL TRACE REPLAY SESSION ID": session}


def one_replay_session(path: Path) -> Path:
    """A Wormhole decode trace with one metal-trace replay session: 33 eager ops (11 set-up
    ops, then one decode step run eagerly, compiling: 2-5 ms gaps), the 22 capture rows (METAL
    TRACE ID 1, no session, no device data), then the 22 replayed ops (session 1, 786 us of
    kernel time, capture-time HOST START TS as real replay rows carry)."""
    rows, gcc, ts = [], 1, 1_000_000_000
    for j, code in enumerate(EAGER_SETUP + DECODE):
        rows.append(_row(code, gcc, ts, 30_000 + 500 * j, 2_000_000 + 100_000 * j, 32 + j))
        gcc, ts = gcc + 1, ts + 3_000_000
    capture_ts = ts
    for j, code in enumerate(DECODE):
        rows.append(_row(code, gcc, ts, None, None, 32 + len(EAGER_SETUP) + j, trace_id=1))
        gcc, ts = gcc + 1, ts + 9_000
    for j, code in enumerate(DECODE):
        rows.append(_row(code, gcc, capture_ts + 9_000 * j, REPLAY_NS[j], 600 + 10 * j,
                         32 + len(EAGER_SETUP) + j, trace_id=1, session=1))
        gcc += 1
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def six_matmuls(path: Path) -> Path:
    """Six matmuls on five input shapes (the first shape again last): no op runs twice on the
    same shapes next to itself, nothing repeats."""
    ys = [32, 64, 128, 256, 512, 32]
    rows = [_row("Matmul", i + 1, 1_000_000_000 + 1_000_000 * i, 20_000 * (i + 1),
                 5_000 + 1_000 * i, y) for i, y in enumerate(ys)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def identical_ops(path: Path, n: int = 8) -> Path:
    """One matmul on one shape, `n` times: n iterations of one op (period 1). The first run is
    cold (5 ms of kernel time), the others 30 us, 4 us apart: iteration 1 is the warm-up."""
    rows = [_row("Matmul", i + 1, 1_000_000_000 + 50_000 * i, 5_000_000 if i == 0 else
                 30_000 + 10 * i, 0 if i == 0 else 4_000, 64) for i in range(n)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path
