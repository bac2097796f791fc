"""Per-op derived metrics, vectorised, with tt-perf-report 1.4.1's rules (FORMATS.md).

Input: raw rows (a DataFrame as the loader returns it) already put in report order, windowed and
device-merged. Output: a DataFrame with one row per input row and the derived columns.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from ..arch import ArchSpec
from ..columns import BOUND_THRESHOLD_PCT
from ..progress import step
from ..read.cells import by_unique, by_unique_rows, interned
from ..read.readers import HOST_MARKER as HOST_MARKER  # (and below: still importable from here)
from ..read.readers import (
    INVALID_GAP_MIN_NS,
    MAX_CORES,
    dtype_bytes,
    io_dtype_size,
    tensor_dim,
    tensor_names,
)
from ..read.readers import MAX_DEVICE_ID as MAX_DEVICE_ID
from ..read.readers import contains as contains
from ..read.readers import invalid_duration as invalid_duration
from ..read.readers import num as num
from ..read.readers import text as text
from ..read.readers import whole as whole
from .ccl import ccl_columns
from .imbalance import DISPATCH_CQ, GO_WAIT, PER_CORE_AVG, PER_CORE_MAX, imbalance_columns
from .perfmodel import pm_columns

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BOUND_THRESHOLD = BOUND_THRESHOLD_PCT  # tt-perf-report's 65% rule, named once in columns


@lru_cache(maxsize=1)
def _categories() -> dict[str, str]:
    data = tomllib.loads(resources.files("ttdash").joinpath("data/categories.toml").read_text())
    table: dict[str, str] = {}
    for category, ops in data.items():
        for op in ops:
            table[op] = category
            table[f"{op}DeviceOperation"] = category
    return table


def categorize(op_code: pd.Series, is_signpost: np.ndarray) -> np.ndarray:
    table = _categories()
    codes, uniques = pd.factorize(op_code, use_na_sentinel=True)
    names = []
    for u in uniques:
        first = (str(u).split(maxsplit=1) or [""])[0]
        names.append("Host" if HOST_MARKER in str(u) else table.get(first, "Other"))
    cat = np.array(names + ["Other"], dtype=object)[codes]
    cat[is_signpost] = None
    return cat


# ---------------------------------------------------------------- the analysis

OUTPUT_COLUMNS = (
    "id", "op_code", "op_type", "device", "global_call_count", "host_start_ts",
    "device_time_us", "op_to_op_us", "total_pct", "cores", "available_cores", "dram_gbps",
    "dram_pct", "flops", "flops_pct", "bound", "math_fidelity", "fidelity_desc", "category",
    "size", "config", "analysis", "is_signpost", "is_host", "corrupt", "dram_sharded",
    "io_dram_gbps",
    "io_dram_pct", "io_dram_capped", "io_dram_basis", "in0_dtype", "in1_dtype", "out_dtype",
    "in0_memory", "raw_kernel_ns", "pm_ideal_ns", "dram_bytes", "in0_block_w", "out_subblock_h",
    "out_subblock_w", "sparse_nnz_missing", "gap_signed_us", "overlap_us", "busy_us", "fw_end_us",
    "pm_eff_pct", "recoverable_us", "pm_bound", "core_skew", "grid_pct", "dispatch_cq_us",
    "go_wait_us", "ccl_bytes", "ccl_gbps", "ccl_link_pct",
)

SHORT_DTYPE = {"FLOAT32": "FP32", "BFLOAT16": "BF16", "BFLOAT8_B": "BFP8", "BFLOAT4_B": "BFP4"}


def _us_or_blank(ns: np.ndarray, skip: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(skip | ~(ns > 0), np.nan, ns / 1000.0)


#: Rows analysed at a time: the analysis's temporaries (a few dozen arrays a row) stay bounded
#: whatever the trace's size; only the result grows with it.
CHUNK_ROWS = 1 << 17


def analyze(rows: pd.DataFrame, arch: ArchSpec) -> pd.DataFrame:
    """Derived metrics for rows already in report order (after windowing and merging).

    Rows are analysed in chunks: every metric is the row's own except the op-to-op gap, which
    looks back at the previous non-signpost row (carried across chunks), and the share of the
    total, computed over the whole result. Overflow or invalid arithmetic on absurd cells
    (1e300, inf) gives inf/NaN, handled below; numpy's warnings about it must not reach the
    user's stderr.
    """
    out, texts, n = _analysed(rows, arch)
    return pd.DataFrame({c: texts[c].series() if c in texts else _dense(v, n)
                         for c, v in out.items()}, copy=False)


def analyze_columns(rows: pd.DataFrame, arch: ArchSpec) -> dict[str, np.ndarray]:
    """`analyze`'s columns as numpy arrays, text as objects (NaN where missing, as a
    categorical's `to_numpy(dtype=object)` gives): a live table's blocks go into numpy
    buffers, and a frame of categoricals built for each block cost more than its analysis."""
    out, texts, n = _analysed(rows, arch)
    return {c: texts[c].objects() if c in texts else _dense(v, n) for c, v in out.items()}


def _analysed(rows: pd.DataFrame, arch: ArchSpec
              ) -> tuple[dict[str, Any], dict[str, TextCodes], int]:
    """The columns of `analyze` (None: a float column the file lacks), the text ones as
    TextCodes, and the number of rows."""
    n = len(rows)
    out: dict[str, Any] = {}
    texts: dict[str, TextCodes] = {}
    carry: tuple[bool, bool] = (False, False)
    with np.errstate(all="ignore"):
        for start in range(0, max(n, 1), CHUNK_ROWS):
            step("analysing", start, n)
            part, carry = _analyze(rows.iloc[start:start + CHUNK_ROWS], arch, carry)
            for c, values in part.items():  # into the whole result; the chunk is dropped
                if c == "total_pct":
                    continue
                if values.dtype == object:  # text: codes into its categories
                    texts.setdefault(c, TextCodes(n)).add(start, values)
                    out.setdefault(c, None)
                elif values.dtype.kind == "f" and out.get(c) is None and np.isnan(values).all():
                    out.setdefault(c, None)  # none yet: a column the file lacks stays unmade
                else:
                    if out.get(c) is None:
                        out[c] = np.full(n, np.nan) if values.dtype.kind == "f" \
                            else np.empty(n, dtype=values.dtype)
                    out[c][start:start + len(values)] = values
            del part
    out["total_pct"] = total_share_pct(_dense(out["device_time_us"], n),
                                       _dense(out["op_to_op_us"], n))
    return out, texts, n


#: A float column with no value (a column the file lacks, on every row): one NaN, not n.
def _dense(values: np.ndarray | None, n: int) -> np.ndarray:
    return np.broadcast_to(np.float64(np.nan), (n,)) if values is None else values


class TextCodes:
    """A text column built a chunk at a time as a categorical: an int code a row (the narrowest
    that holds the categories) and each distinct str once, the categories in lexical order
    (sorting the column sorts the text, not first appearance); missing is code -1."""

    def __init__(self, n: int) -> None:
        self.codes = np.full(n, -1, dtype=np.int8)  # widened when the categories outgrow it
        self.index: dict[str, int] = {}

    def add(self, start: int, values: np.ndarray) -> None:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        local = np.array([self.index.setdefault(str(u), len(self.index)) for u in uniques]
                         + [-1], dtype=np.int64)
        if len(self.index) > np.iinfo(self.codes.dtype).max:
            self.codes = self.codes.astype(np.int16 if len(self.index) < 32767 else np.int32)
        self.codes[start:start + len(values)] = local[codes]

    def series(self) -> pd.Series:
        return text_category(self.codes, list(self.index))

    def objects(self) -> np.ndarray:
        return np.array(list(self.index) + [np.nan], dtype=object)[self.codes]


def column_values(s: pd.Series) -> np.ndarray:
    """A column's values as an array, a categorical text column's as its str objects with None
    where missing (its to_numpy() gives NaN there, which a text cell would show)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return np.asarray(s.to_numpy(dtype=object, na_value=None))
    return np.asarray(s.to_numpy())


def text_category(codes: np.ndarray, names: list[str]) -> pd.Series:
    """A categorical of `codes` into `names` (-1 missing), its categories sorted lexically and
    its codes the narrowest int that holds them."""
    order = np.argsort(np.array(names, dtype=object), kind="stable") if names else \
        np.zeros(0, np.intp)
    remap = np.empty(len(names) + 1, dtype=np.int64)
    remap[order] = np.arange(len(names))
    remap[-1] = -1
    width = np.int8 if len(names) < 127 else np.int16 if len(names) < 32767 else np.int32
    new = remap[codes].astype(width)
    cats = pd.Index(np.array(names, dtype=object)[order], dtype=object)
    return pd.Series(pd.Categorical.from_codes(new, dtype=pd.CategoricalDtype(cats)), copy=False)


def split_gaps(gap: np.ndarray, pause: np.ndarray | float) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Op-to-op gaps split into dispatch gaps and host pauses: (dispatch, pauses, pause mask),
    each array NaN where the gap is in the other part or unknown. `pause`: a threshold (a gap
    above it is a host pause) or the mask itself (the diff decides on both sides at once)."""
    gap = np.asarray(gap, dtype="float64")
    if np.ndim(pause) == 0:
        with np.errstate(invalid="ignore"):
            pause = gap > pause
    mask = np.asarray(pause, dtype=bool)
    return np.where(mask, np.nan, gap), np.where(mask, gap, np.nan), mask


def total_share_pct(device_time: np.ndarray, op_to_op: np.ndarray) -> np.ndarray:
    """tt-perf-report's "Total %": (device time + op-to-op gap) of each op over their sum over
    all ops (NaN where both are missing or the sum is 0)."""
    numerator, total = share_parts(device_time, op_to_op)
    return share_pct(numerator, total)


def share_parts(device_time: np.ndarray, op_to_op: np.ndarray) -> tuple[np.ndarray, float]:
    """The "Total %" of some ops in two parts: each op's device time + gap (NaN where both are
    missing) and their sum (a live table adds each block's sum to a running total)."""
    device_time = np.asarray(device_time, dtype="float64")
    op_to_op = np.asarray(op_to_op, dtype="float64")
    numerator = np.where(np.isnan(device_time) & np.isnan(op_to_op), np.nan,
                         np.nan_to_num(device_time) + np.nan_to_num(op_to_op))
    return numerator, float(np.nansum(device_time) + np.nansum(op_to_op))


def share_pct(numerator: np.ndarray, total: float) -> np.ndarray:
    """Each numerator as a % of `total` (all NaN when the total is 0)."""
    if total == 0:
        return np.full(len(numerator), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerator / total * 100


def _analyze(rows: pd.DataFrame, arch: ArchSpec, carry: tuple[bool, bool]
             ) -> tuple[dict[str, np.ndarray], tuple[bool, bool]]:
    """One chunk's columns, and the carry for the next: (a non-signpost row seen, its
    duration invalid)."""
    n = len(rows)
    op_code = text(rows, "OP CODE").fillna("")
    op_type = text(rows, "OP TYPE")
    is_signpost = (op_type == "signpost").fillna(False).to_numpy(dtype=bool)
    is_host = contains(op_code, HOST_MARKER) & ~is_signpost
    dur = num(rows, "DEVICE KERNEL DURATION [ns]")
    gap = num(rows, "OP TO OP LATENCY [ns]")
    bad = invalid_duration(dur, gap)

    device_time = np.where(bad | is_signpost | is_host, np.nan, dur / 1000.0)

    # Gap: needs a previous non-signpost row; blank when negative or when either neighbour is
    # corrupt and the gap exceeds 1 ms.
    idx = np.arange(n)
    last_ns = np.maximum.accumulate(np.where(~is_signpost, idx, -1)) if n else idx
    prev = np.concatenate([[-1], last_ns[:-1]]) if n else idx
    has_prev = (prev >= 0) | carry[0]
    prev_bad = np.where(prev >= 0, bad[np.maximum(prev, 0)], carry[1])
    if n and last_ns[-1] >= 0:
        carry = (True, bool(bad[last_ns[-1]]))
    with np.errstate(invalid="ignore"):
        ok_gap = (has_prev & ~np.isnan(gap) & (gap >= 0)
                  & ~((bad | prev_bad) & (np.abs(gap) > INVALID_GAP_MIN_NS)))
    op_to_op = np.where(ok_gap, gap / 1000.0, np.nan)
    with np.errstate(invalid="ignore"):  # tt-perf-report main keeps a negative gap (shown only)
        ok_signed = (has_prev & ~np.isnan(gap)
                     & ~((bad | prev_bad) & (np.abs(gap) > INVALID_GAP_MIN_NS)))
    gap_signed = np.where(ok_signed, gap / 1000.0, np.nan)

    cores_raw = whole(num(rows, "CORE COUNT"), 1, MAX_CORES)
    grid = whole(num(rows, "AVAILABLE WORKER CORE COUNT"), 1, MAX_CORES)  # the file's own
    avail = np.where(np.isnan(grid), float(arch.worker_cores), grid)
    fidelity = text(rows, "MATH FIDELITY")
    per_core = by_unique(fidelity, lambda f: arch.tflops_per_core.get(f, np.nan))

    is_matmul = contains(op_code, "Matmul") & ~is_signpost
    is_conv = (contains(op_code, "OptimizedConvNew") | contains(op_code, "Conv2d")) & ~is_matmul \
        & ~is_signpost
    dram_sharded = is_matmul & (num(rows, "_ATTR_DRAM_SHARDED") == 1)
    cores = np.where(dram_sharded, float(arch.dram_sharded_matmul_cores), cores_raw)
    dur_s = np.where(~bad & (dur > 0), dur * 1e-9, np.nan)
    peak_flops = per_core * 1e12 * cores

    mem = {t: text(rows, f"{t}_MEMORY") for t in ("INPUT_0", "INPUT_1", "OUTPUT_0")}
    dts = {t: text(rows, f"{t}_DATATYPE") for t in ("INPUT_0", "INPUT_1", "OUTPUT_0")}
    dims = {(t, d): tensor_dim(rows, t, d) for t in ("INPUT_0", "INPUT_1", "OUTPUT_0")
            for d in "WZYX"}

    # --- matmul: DRAM and FLOPs (dense; sparse matmuls need nnz from ATTRIBUTES)
    vol = {t: dims[(t, "W")] * dims[(t, "Z")] * dims[(t, "Y")] * dims[(t, "X")]
           for t in ("INPUT_0", "INPUT_1", "OUTPUT_0")}
    all_dims = np.all([~np.isnan(v) for v in dims.values()], axis=0) if n else np.zeros(0, bool)
    M, K, N = dims[("INPUT_0", "Y")], dims[("INPUT_0", "X")], dims[("INPUT_1", "X")]
    W = np.fmax(dims[("INPUT_0", "W")], dims[("INPUT_1", "W")])
    Z = np.fmax(dims[("INPUT_0", "Z")], dims[("INPUT_1", "Z")])
    mm_bytes = np.zeros(n)
    for t in ("INPUT_0", "INPUT_1", "OUTPUT_0"):
        mm_bytes += np.where(contains(mem[t], "DRAM"), vol[t] * dtype_bytes(dts[t]), 0.0)
    mm_flops = 2.0 * M * K * N * W * Z
    sparse = is_matmul & contains(op_code, "SparseMatmul")
    nnz_missing = np.zeros(n, dtype=bool)
    if sparse.any():
        nnz = num(rows, "_ATTR_NNZ")
        nnz_missing = sparse & np.isnan(nnz)
        sp_bytes = np.zeros(n)
        for t, a, b in (("INPUT_0", M, K), ("INPUT_1", K, N), ("OUTPUT_0", M, N)):
            sp_bytes += np.where(contains(mem[t], "DRAM"), a * b * dtype_bytes(dts[t]) * nnz, 0.0)
        mm_bytes = np.where(sparse, sp_bytes, mm_bytes)
        mm_flops = np.where(sparse, 2.0 * M * K * N * nnz, mm_flops)
    mm_ok = is_matmul & all_dims & ~np.isnan(dur_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        dram_gbps = np.where(mm_ok & (mm_bytes > 0), mm_bytes / dur_s / 1e9, np.nan)
        flops = np.where(mm_ok, mm_flops / dur_s, np.nan)
        dram_pct = dram_gbps / arch.dram_gbps * 100
        # --- conv: FLOPs only, M = output NHW, K = C_in * window, N = C_out
        wh, ww = num(rows, "_ATTR_WINDOW_H"), num(rows, "_ATTR_WINDOW_W")
        conv_flops = 2.0 * dims[("OUTPUT_0", "Y")] * dims[("INPUT_0", "X")] * wh * ww \
            * dims[("INPUT_1", "X")] / dur_s
        flops = np.where(is_conv, conv_flops, flops)
        flops_pct = np.where(peak_flops > 0, flops / peak_flops * 100, np.nan)
        flops_pct = np.where(is_matmul | is_conv, flops_pct, np.nan)

    bound = np.full(n, "", dtype=object)
    has_both = is_matmul & ~np.isnan(dram_pct) & ~np.isnan(flops_pct)
    d_hi, f_hi = dram_pct >= BOUND_THRESHOLD, flops_pct >= BOUND_THRESHOLD
    bound[has_both] = "SLOW"
    bound[has_both & f_hi] = "FLOP"
    bound[has_both & d_hi] = "DRAM"
    bound[has_both & d_hi & f_hi] = "BOTH"
    bound[is_host & ~is_matmul] = "HOST"

    # --- beyond tt-perf-report: DRAM traffic estimate for every op with shapes
    io_gbps, io_pct, io_capped, io_basis = _io_dram(rows, op_code, dur_s, is_signpost, arch)

    size = _size_strings(is_matmul & all_dims, is_conv, M, K, N, W * Z, rows, wh, ww)
    analysis = np.array(["none", "full", "flops_only"], dtype=object)[  # one str per value
        np.where(is_matmul, 1, np.where(is_conv, 2, 0))]
    fid_desc = _fidelity_desc(fidelity, dts, is_matmul | is_conv)
    is_halo = contains(op_code, "HaloDeviceOperation") & ~is_matmul & ~is_conv & ~is_signpost
    config = np.full(n, "", dtype=object)
    for mask, feature in ((is_conv, "_ATTR_CONV_CONFIG"), (is_halo, "_ATTR_HALO_CONFIG")):
        if mask.any() and feature in rows.columns:
            values = text(rows, feature).to_numpy(dtype=object, na_value="")
            config[mask] = values[mask]

    out = {
        "id": rows["ID"].to_numpy(),
        "op_code": interned(op_code),
        "op_type": interned(op_type),
        "device": whole(num(rows, "DEVICE ID"), 0, MAX_DEVICE_ID),
        "global_call_count": num(rows, "GLOBAL CALL COUNT"),
        "host_start_ts": num(rows, "HOST START TS"),
        "device_time_us": device_time,
        "op_to_op_us": op_to_op,
        "total_pct": np.empty(0),  # over the whole result, in analyze()
        "cores": np.where(is_signpost, np.nan, cores),
        "available_cores": np.where(is_signpost, np.nan, avail),
        "dram_gbps": dram_gbps,
        "dram_pct": dram_pct,
        "flops": flops / 1e12,
        "flops_pct": flops_pct,
        "bound": bound,
        "math_fidelity": interned(fidelity),
        "fidelity_desc": fid_desc,
        "category": categorize(op_code, is_signpost),
        "size": size,
        "config": config,
        "analysis": analysis,
        "is_signpost": is_signpost,
        "is_host": is_host,
        # an impossible timing; a row without one is "no device data" (model.trust), not corrupt
        "corrupt": bad & ~np.isnan(dur) & ~is_signpost & ~is_host,
        "dram_sharded": dram_sharded,
        "io_dram_gbps": io_gbps,
        "io_dram_pct": io_pct,
        "io_dram_capped": io_capped,
        "io_dram_basis": io_basis,
        "in0_dtype": interned(dts["INPUT_0"]),
        "in1_dtype": interned(dts["INPUT_1"]),
        "out_dtype": interned(dts["OUTPUT_0"]),
        "in0_memory": interned(mem["INPUT_0"]),
        "raw_kernel_ns": dur,
        "pm_ideal_ns": num(rows, "PM IDEAL [ns]"),
        # tt-perf-report's "DRAM Bytes" (matmuls with shapes and a valid duration), for the
        # overall DRAM roofline; program_config fields and a sparse matmul without nnz, for advice
        "dram_bytes": np.where(mm_ok, mm_bytes, np.nan),
        "in0_block_w": num(rows, "_ATTR_IN0_BLOCK_W"),
        "out_subblock_h": num(rows, "_ATTR_OUT_SUBBLOCK_H"),
        "out_subblock_w": num(rows, "_ATTR_OUT_SUBBLOCK_W"),
        "sparse_nnz_missing": nnz_missing,
        # beyond 1.4.1 (tt-perf-report main): signed gap, sub-device overlap (blank when 0)
        "gap_signed_us": gap_signed,
        "overlap_us": _us_or_blank(num(rows, "_OVERLAP_NS"), is_signpost | is_host),
        "busy_us": np.where(is_signpost | is_host, np.nan, num(rows, "_BUSY_NS") / 1000.0),
        # where the op's kernel ended on its device's clock (us; per device, for the timeline)
        "fw_end_us": np.where(is_signpost | is_host, np.nan, num(rows, "_END_NS") / 1000.0),
        # against the profiler's performance model (model.perfmodel)
        **pm_columns(dur, num(rows, "PM IDEAL [ns]"), num(rows, "PM COMPUTE [ns]"),
                     num(rows, "PM BANDWIDTH [ns]"), bad | is_signpost | is_host),
        # core spread, grid use, dispatch (model.imbalance); collectives (model.ccl)
        **imbalance_columns(num(rows, PER_CORE_MAX), num(rows, PER_CORE_AVG), cores_raw, grid,
                            num(rows, DISPATCH_CQ), num(rows, GO_WAIT),
                            bad | is_signpost | is_host),
        **ccl_columns(rows, op_code, dur, bad | is_signpost | is_host, arch),
    }
    return out, carry


# ---------------------------------------------------------------- DRAM traffic (ttdash's own)
#
# io_dram_gbps / io_dram_pct: an ESTIMATE of the bytes an op moves to and from DRAM over its device
# time, against the arch's DRAM peak. Not tt-perf-report's DRAM figure (dram_gbps / dram_pct,
# matmuls only, left exactly as tt-perf-report computes it).
#
# Bytes counted (io_dram_basis says which rule applied):
# - only tensors whose buffer is DRAM (`DEV_<n>_DRAM_*` in INPUT_n/OUTPUT_n_MEMORY); L1 tensors
#   are never counted; padded sizes; block floats at their real tile size (BFLOAT8_B 1088 B per
#   1024 elements, BFLOAT4_B 576, BFLOAT2_B 320), other dtypes as tt-perf-report sizes them;
# - "whole": every DRAM tensor counted whole, once (inputs read, outputs written);
# - "read_part" (Slice, PaddedSlice, InterleavedToShardedPartial, ...): the op reads only the part
#   of INPUT_0 it outputs, so INPUT_0 counts as min(its elements, OUTPUT_0's elements);
# - "write_part" (SliceWrite, ShardedToInterleavedPartial): INPUT_0 is written into a region of a
#   destination tensor that is both INPUT_1 and OUTPUT_0; the destination counts once, as
#   min(its elements, INPUT_0's elements);
# - "gather" (Embeddings): only the table rows gathered are read: INPUT_1 counts as
#   min(its elements, OUTPUT_0's elements);
# - "cache_update" (UpdateCache, PagedUpdateCache, (Paged)FillCache, UpdateKVCache): the cache
#   (INPUT_0, returned again as OUTPUT_0) is written only where the update (INPUT_1) goes: it
#   counts once, as min(its elements, INPUT_1's elements).
#
# Physical bound: no op moves DRAM data faster than the peak. An estimate above it (the model
# over-counts, e.g. SdpaDecode reading a KV cache only up to the current position, or the timing
# is off) is NOT shown as a fact: io_dram_gbps is clipped to the arch peak, io_dram_pct to 100.0,
# and io_dram_capped is True. So io_dram_pct is always NaN or in [0, 100], and
# io_dram_pct == io_dram_gbps / peak * 100 on every row.

IO_READ_PART = ("Slice", "PaddedSlice", "StridedSlice", "InterleavedToShardedPartial",
                "NlpKVCacheLoadSlice")
IO_WRITE_PART = ("SliceWrite", "ShardedToInterleavedPartial")
IO_GATHER = ("Embeddings", "Embedding")
IO_CACHE_UPDATE = ("UpdateCache", "PagedUpdateCache", "FillCache", "PagedFillCache",
                   "UpdateKVCache")
IO_BASIS = ("whole", "read_part", "write_part", "gather", "cache_update")
_DRAM_BUFFER = re.compile(r"(?:DEV_\d+_)?DRAM(?:_|$)")
_OP_SUFFIXES = ("DeviceOperation", "Operation", "Op")


def _io_rule(op: object) -> float:
    """Index into IO_BASIS for an op code (first word, without a DeviceOperation suffix)."""
    base = (str(op).split(maxsplit=1) or [""])[0]
    for suffix in _OP_SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
            break
    for i, names in enumerate((IO_READ_PART, IO_WRITE_PART, IO_GATHER, IO_CACHE_UPDATE), 1):
        if base in names:
            return float(i)
    return 0.0


def _is_dram_buffer(memory: object) -> float:
    return float(bool(_DRAM_BUFFER.match(str(memory).strip().upper())))


def _io_dram(rows: pd.DataFrame, op_code: pd.Series, dur_s: np.ndarray, is_signpost: np.ndarray,
             arch: ArchSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(io_dram_gbps, io_dram_pct, io_dram_capped, io_dram_basis); see the comment above."""
    n = len(rows)
    rule = by_unique(op_code, _io_rule, 0.0).astype(np.int64)
    names = tensor_names(rows)
    dims = {t: [tensor_dim(rows, t, d) for d in "WZYX"] for t in names}
    elems = {t: dims[t][0] * dims[t][1] * dims[t][2] * dims[t][3] for t in names}
    nan = np.full(n, np.nan)

    def el(t: str) -> np.ndarray:
        return elems.get(t, nan)

    def same_shape(a: str, b: str) -> np.ndarray:
        if a not in dims or b not in dims:
            return np.zeros(n, dtype=bool)
        return np.all([x == y for x, y in zip(dims[a], dims[b])], axis=0)

    # Elements of each tensor the op moves (NaN = not counted); np.fmin ignores a missing bound.
    moved = dict(elems)
    read_part, write_part, gather, cache = (rule == i for i in range(1, 5))
    if "INPUT_0" in moved:
        moved["INPUT_0"] = np.where(read_part, np.fmin(el("INPUT_0"), el("OUTPUT_0")),
                                    moved["INPUT_0"])
        moved["INPUT_0"] = np.where(cache, np.fmin(el("INPUT_0"), el("INPUT_1")),
                                    moved["INPUT_0"])
    if "INPUT_1" in moved:
        moved["INPUT_1"] = np.where(gather, np.fmin(el("INPUT_1"), el("OUTPUT_0")),
                                    moved["INPUT_1"])
        moved["INPUT_1"] = np.where(write_part, np.fmin(el("INPUT_1"), el("INPUT_0")),
                                    moved["INPUT_1"])
        # the destination passed in as INPUT_1 is OUTPUT_0 itself: count it once, as the output
        moved["INPUT_1"] = np.where(write_part & same_shape("INPUT_1", "OUTPUT_0"), np.nan,
                                    moved["INPUT_1"])
    if "OUTPUT_0" in moved:
        moved["OUTPUT_0"] = np.where(write_part, np.fmin(el("OUTPUT_0"), el("INPUT_0")),
                                     moved["OUTPUT_0"])
        # the updated cache comes back as OUTPUT_0: counted once, as INPUT_0
        moved["OUTPUT_0"] = np.where(cache & same_shape("OUTPUT_0", "INPUT_0"), np.nan,
                                     np.where(cache, np.fmin(el("OUTPUT_0"), el("INPUT_1")),
                                              moved["OUTPUT_0"]))

    io_bytes = np.zeros(n)
    any_tensor = np.zeros(n, dtype=bool)
    for t in names:
        in_dram = by_unique(text(rows, f"{t}_MEMORY"), _is_dram_buffer, 0.0).astype(bool)
        size = by_unique(text(rows, f"{t}_DATATYPE"), io_dtype_size, 4.0)
        counted = in_dram & ~np.isnan(moved[t])
        io_bytes += np.where(counted, moved[t] * size, 0.0)
        any_tensor |= ~np.isnan(elems[t])

    has = any_tensor & (io_bytes > 0) & ~np.isnan(dur_s) & ~is_signpost
    raw = np.where(has, io_bytes / dur_s / 1e9, np.nan)
    peak = float(arch.dram_gbps)
    if np.isfinite(peak) and peak > 0:
        capped = raw > peak  # NaN compares False
        gbps = np.where(capped, peak, raw)
        pct = gbps / peak * 100
    else:  # no usable peak: nothing to compare with, so no percentage either
        capped = np.zeros(n, dtype=bool)
        gbps, pct = raw, np.full(n, np.nan)
    basis = np.array(IO_BASIS, dtype=object)[rule]
    basis[np.isnan(gbps)] = None
    return gbps, pct, capped, basis


def text_column(values: np.ndarray) -> pd.Series:
    """An object column (not pandas' inferred str): equal strings stay one shared object and
    widgets get them back with a zero-copy to_numpy()."""
    return pd.Series(values, dtype=object, copy=False)


def _size_strings(mm: np.ndarray, conv: np.ndarray, M: Any, K: Any, N: Any, batch: Any,
                  rows: Any, wh: Any, ww: Any) -> np.ndarray:
    out = np.full(len(mm), "", dtype=object)
    if mm.any():
        m, k, nn, b = (np.nan_to_num(x[mm]).astype(np.int64) for x in (M, K, N, batch))
        s = pd.Series(m).astype(str) + " x " + pd.Series(k).astype(str) + " x " + \
            pd.Series(nn).astype(str)
        pre = np.where(b > 1, "b={" + pd.Series(b).astype(str) + "} x ", "")
        out[mm] = interned(pd.Series(pre) + s)  # equal sizes share one str
    if conv.any():
        nhw = tensor_dim(rows, "OUTPUT_0", "Y")[conv]
        ok = ~np.isnan(nhw) & ~np.isnan(wh[conv])
        kk = tensor_dim(rows, "INPUT_0", "X")[conv] * wh[conv] * ww[conv]
        nn = tensor_dim(rows, "INPUT_1", "X")[conv]
        s = [f"{int(a)} x {int(b)} x {int(c)}" if o else "unknown shape"
             for a, b, c, o in zip(np.nan_to_num(nhw), np.nan_to_num(kk), np.nan_to_num(nn), ok)]
        out[conv] = interned(pd.Series(s, dtype=object))
    return out


def _fidelity_desc(fidelity: pd.Series, dts: dict[str, pd.Series],
                   compute: np.ndarray) -> np.ndarray:
    """tt-perf-report's "Math Fidelity" cell: a matmul or conv with a fidelity gets it with its
    dtypes ("HiFi2 BF16 x BFP8 => BF16"); every other op its dtypes ("BF16, BF16 => BF16").
    Built once per distinct (fidelity, dtypes, compute) tuple, in plain Python (a few hundred
    tuples even in a million rows; a pandas step per column cost more than that)."""
    # each text column's codes and distinct values (None: missing): a tuple's cells are taken
    # from those, not from the column (a take from an Arrow string column per key was most
    # of a live refresh's fidelity cells)
    parts = [pd.factorize(s, use_na_sentinel=True)
             for s in (fidelity, *(dts[k] for k in ("INPUT_0", "INPUT_1", "OUTPUT_0")))]
    distinct = [np.array([*uniques, None], dtype=object) for _, uniques in parts]

    def cells(at: np.ndarray) -> np.ndarray:
        values = [*(d[codes[at]].tolist() for (codes, _), d in zip(parts, distinct)),
                  compute[at].tolist()]
        return np.array([_fidelity_cell(*row) for row in zip(*values)], dtype=object)
    return by_unique_rows([codes for codes, _ in parts] + [compute], cells)


def _fidelity_cell(fidelity: Any, a: Any, b: Any, o: Any, compute: bool) -> str:
    """One "Math Fidelity" cell from its fidelity and the input 0, input 1 and output dtypes."""
    a, b, o = (None if pd.isna(v) else SHORT_DTYPE.get(str(v), str(v)) for v in (a, b, o))
    if compute:
        if pd.isna(fidelity) or str(fidelity) == "":
            return ""
        a, b, o = ("nan" if v is None else v for v in (a, b, o))
        return f"{fidelity} {a} x {b} => {o}".strip()
    return ((a or "") + (f", {b}" if b is not None else "")
            + (f" => {o}" if o is not None else "")).strip()
