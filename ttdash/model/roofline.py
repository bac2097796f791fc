"""Ops on a roofline: arithmetic intensity (FLOPs per DRAM byte) against achieved TFLOP/s, with
the arch's DRAM roof (intensity x DRAM GB/s) and compute roof (the whole grid's peak at a math
fidelity). An op is placed when the model has both its FLOPs (matmul/conv with shapes) and its
DRAM bytes (tt-perf-report's "DRAM Bytes": matmuls with shapes); the rest are counted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .arch import ArchSpec


@dataclass(frozen=True)
class Points:
    label: np.ndarray  # op code (per op) or group name
    intensity: np.ndarray  # FLOP / byte
    tflops: np.ndarray  # achieved TFLOP/s
    pos: np.ndarray  # per op: row in the view's ops; per group: -1
    fidelity: np.ndarray
    unplaced: int  # device ops that could not be placed (no FLOPs or no DRAM bytes)
    device_ops: int


def points(ops: pd.DataFrame, by_op_code: bool = False) -> Points:
    dev = ~ops["is_signpost"].to_numpy(bool) & ~ops["is_host"].to_numpy(bool) \
        & np.isfinite(ops["device_time_us"].to_numpy("float64"))
    tflops = ops["flops"].to_numpy("float64")
    nbytes = ops["dram_bytes"].to_numpy("float64")
    secs = ops["device_time_us"].to_numpy("float64") / 1e6
    ok = dev & np.isfinite(tflops) & (tflops > 0) & np.isfinite(nbytes) & (nbytes > 0) \
        & (secs > 0)
    pos = np.flatnonzero(ok)
    flop = tflops[pos] * 1e12 * secs[pos]
    codes = ops["op_code"].astype(object).to_numpy()[pos]
    fid = ops["math_fidelity"].astype(object).to_numpy()[pos]
    unplaced = int(dev.sum() - len(pos))
    if not by_op_code:
        return Points(codes, flop / nbytes[pos], tflops[pos], pos, fid, unplaced, int(dev.sum()))
    g = pd.DataFrame({"code": codes, "flop": flop, "bytes": nbytes[pos], "s": secs[pos],
                      "fid": fid}).groupby("code", sort=False)
    s = g.agg(flop=("flop", "sum"), nbytes=("bytes", "sum"), secs=("s", "sum"),
              fid=("fid", lambda f: f.mode().iloc[0] if f.notna().any() else None))
    return Points(s.index.to_numpy(object), (s.flop / s.nbytes).to_numpy(),
                  (s.flop / s.secs / 1e12).to_numpy(), np.full(len(s), -1), s.fid.to_numpy(object),
                  unplaced, int(dev.sum()))


def roofs(arch: ArchSpec, fidelity: str | None) -> tuple[float, float | None]:
    """(DRAM TFLOP/s per FLOP/byte, i.e. GB/s / 1000; the compute roof in TFLOP/s of the whole
    worker grid at `fidelity`, None when the arch has no figure for it)."""
    per_core = arch.tflops_per_core.get(fidelity or "")
    return arch.dram_gbps / 1000.0, (per_core * arch.worker_cores if per_core else None)
