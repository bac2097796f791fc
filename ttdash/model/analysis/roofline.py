"""Ops on a roofline: arithmetic intensity (FLOPs per DRAM byte) against achieved TFLOP/s, with
the arch's DRAM roof (intensity x DRAM GB/s) and compute roof (the whole grid's peak at a math
fidelity). An op is placed when the model has both its FLOPs (matmul/conv with shapes) and its
DRAM bytes (tt-perf-report's "DRAM Bytes": matmuls with shapes); the rest are counted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..arch import ArchSpec
from ..columns import aggregated


@dataclass(frozen=True)
class Points:
    label: np.ndarray  # op code (per op) or group name
    intensity: np.ndarray  # FLOP / byte
    tflops: np.ndarray  # achieved TFLOP/s
    pos: np.ndarray  # per op: row in the view's ops; per group: -1
    order: np.ndarray  # per op: its place in `rows` (ascending); per group: -1
    fidelity: np.ndarray
    unplaced: int  # device ops that could not be placed (no FLOPs or no DRAM bytes)
    device_ops: int


def points(ops: pd.DataFrame, rows: np.ndarray | None = None,
           by_op_code: bool = False) -> Points:
    """The ops at `rows` (default: all, in order) that can be placed, per op or per op code.
    Reads only the columns it needs, at `rows`: no copy of the frame."""
    rows = np.arange(len(ops)) if rows is None else np.asarray(rows)

    def col(name: str, dtype: str | None = None) -> np.ndarray:
        c = ops[name]
        return (c.to_numpy(dtype) if dtype else c.astype(object).to_numpy())[rows]

    secs = col("device_time_us", "float64") / 1e6
    dev = ~col("is_signpost", "bool") & ~col("is_host", "bool") & np.isfinite(secs)
    tflops, nbytes = col("flops", "float64"), col("dram_bytes", "float64")
    ok = dev & np.isfinite(tflops) & (tflops > 0) & np.isfinite(nbytes) & (nbytes > 0) \
        & (secs > 0)
    at = np.flatnonzero(ok)
    flop = tflops[at] * 1e12 * secs[at]
    codes, fid = col("op_code")[at], col("math_fidelity")[at]
    unplaced, n_dev = int(dev.sum() - len(at)), int(dev.sum())
    if not by_op_code:
        return Points(codes, flop / nbytes[at], tflops[at], rows[at], at, fid, unplaced, n_dev)
    g = pd.DataFrame({"code": codes, "flop": flop, "bytes": nbytes[at], "s": secs[at],
                      "fid": fid}).groupby("code", sort=False, observed=True)
    s = aggregated(g, flop=("flop", "sum"), nbytes=("bytes", "sum"), secs=("s", "sum"),
                   fid=("fid", lambda f: f.mode().iloc[0] if f.notna().any() else None))
    none = np.full(len(s), -1)
    return Points(s.index.to_numpy(object), (s.flop / s.nbytes).to_numpy(),
                  (s.flop / s.secs / 1e12).to_numpy(), none, none, s.fid.to_numpy(object),
                  unplaced, n_dev)


def roofs(arch: ArchSpec, fidelity: str | None) -> tuple[float, float | None]:
    """(DRAM TFLOP/s per FLOP/byte, i.e. GB/s / 1000; the compute roof in TFLOP/s of the whole
    worker grid at `fidelity`, None when the arch has no figure for it)."""
    per_core = arch.tflops_per_core.get(fidelity or "")
    return arch.dram_gbps / 1000.0, (per_core * arch.worker_cores if per_core else None)
