"""Realistic synthetic Tenstorrent profiler output.

``generate_ops`` builds an ``ops_perf_results`` table in the V2.1 layout for a
transformer-like workload (see :mod:`ttdash.sim.model` and :mod:`ttdash.sim.program`),
with timing that is self-consistent the way real files are:

* ``(FW END CYCLE - FW START CYCLE) * 1000 / FW DURATION [ns]`` is the arch clock;
* ``OP TO OP LATENCY [ns]`` is the gap between one op's FW end and the next op's
  FW start on the same device (0 for a device's first op);
* ``HOST START TS`` strictly increases in row order (except for metal-trace
  replay rows, which carry capture-time timestamps, as real ones do);
* ``GLOBAL CALL COUNT = (op_id << 10) | device_id``; host-fallback ops set bit 31.

Everything is vectorised with numpy so 100k ops take well under a second or two.
Writing the table and the profiler's other files: :mod:`ttdash.sim.writers`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .archspec import get_arch
from .columns import INT_COLUMNS, KERNEL_SIZE_COLUMNS, report_columns, tensor_columns
from .model import CCL, MATMUL, SDPA, ModelConfig, Program
from .program import build_program

__all__ = ["generate_ops", "CORRUPT_OFFSET_NS"]

#: Size of the profiler bug's bogus offset (kernel ~ +6.9e9 ns, op-to-op ~ -6.9e9 ns).
CORRUPT_OFFSET_NS = 6_924_428_000

#: Host-fallback op names the profiler shows for torch ops run on the host.
_FALLBACK_NAMES = ("(torch) argmax", "(torch) __get__", "(torch) contiguous", "(torch) to", "(torch) softmax")

# Row slots inside one op's block of rows (smaller sorts first).
_SLOT_STOP, _SLOT_START, _SLOT_LAYER, _SLOT_DEVICE = 0, 1, 2, 3


# --------------------------------------------------------------------------- column storage


class _Columns:
    """Column arrays for ``n`` rows, filled by position, turned into a DataFrame at the end."""

    def __init__(self, n: int, names: list[str]) -> None:
        self.n = n
        self.names = names
        self._data: dict[str, np.ndarray] = {}
        self._mask: dict[str, np.ndarray] = {}

    def put(self, name: str, pos: np.ndarray, values) -> None:
        """Set column ``name`` at row positions ``pos`` (ignored if the layout lacks it)."""
        if name not in self.names:
            return
        if name in INT_COLUMNS:
            if name not in self._data:
                self._data[name] = np.zeros(self.n, dtype=np.int64)
                self._mask[name] = np.ones(self.n, dtype=bool)
            self._data[name][pos] = values
            self._mask[name][pos] = False
        elif name == "PM FPU UTIL (%)":
            if name not in self._data:
                self._data[name] = np.full(self.n, np.nan)
            self._data[name][pos] = values
        else:
            if name not in self._data:
                self._data[name] = np.full(self.n, np.nan, dtype=object)
            self._data[name][pos] = values

    def frame(self) -> pd.DataFrame:
        cols: dict[str, object] = {}
        for name in self.names:
            if name in INT_COLUMNS:
                if name in self._data:
                    cols[name] = pd.arrays.IntegerArray(self._data[name], self._mask[name])
                else:
                    cols[name] = pd.arrays.IntegerArray(np.zeros(self.n, dtype=np.int64), np.ones(self.n, dtype=bool))
            elif name == "PM FPU UTIL (%)":
                cols[name] = self._data.get(name, np.full(self.n, np.nan))
            else:
                cols[name] = pd.Series(self._data.get(name, np.full(self.n, np.nan, dtype=object)), dtype=object)
        return pd.DataFrame(cols, copy=False)


# --------------------------------------------------------------------------- template tables


def _template_table(prog: Program, n_in: int, n_out: int) -> dict[str, np.ndarray]:
    """Per-template values of every static column (index = template id)."""
    ts = prog.templates
    T = len(ts)
    tab: dict[str, list] = {}

    def col(name: str) -> list:
        return tab.setdefault(name, [np.nan] * T)

    for i, t in enumerate(ts):
        col("OP CODE")[i] = t.op_code
        col("ATTRIBUTES")[i] = t.attributes
        col("MATH FIDELITY")[i] = t.fidelity if t.fidelity else np.nan
        col("CORE COUNT")[i] = t.cores
        for prefix, tensors, count in (("INPUT", t.inputs, n_in), ("OUTPUT", t.outputs, n_out)):
            for j in range(count):
                names = tensor_columns(prefix, j)
                if j < len(tensors):
                    tt = tensors[j]
                    values = tt.dims() + [tt.layout, tt.dtype, f"DEV_0_{tt.memory}"]
                else:
                    values = [np.nan] * len(names)
                for name, v in zip(names, values):
                    col(name)[i] = v
        col("COMPUTE KERNEL SOURCE")[i] = _list_cell(t.compute_kernels)
        col("COMPUTE KERNEL HASH")[i] = _list_cell(t.kernel_hashes)
        col("DATA MOVEMENT KERNEL SOURCE")[i] = _list_cell(t.dm_kernels)
        col("DATA MOVEMENT KERNEL HASH")[i] = _list_cell(t.dm_kernel_hashes)
        col("PROGRAM HASH")[i] = t.program_hash
        for name, v in zip(KERNEL_SIZE_COLUMNS, t.kernel_sizes):
            col(name)[i] = v
        if t.kind in (MATMUL, SDPA):
            pc = max(1, round(t.ideal_compute_ns))
            pb = max(1, round(t.ideal_dram_ns))
            ideal = max(pc, pb)
            col("PM IDEAL [ns]")[i] = ideal
            col("PM COMPUTE [ns]")[i] = pc
            col("PM BANDWIDTH [ns]")[i] = pb
            col("PM REQ I BW")[i] = "[" + "; ".join(repr(float(np.float32(x.nbytes / ideal))) for x in t.inputs) + "]"
            col("PM REQ O BW")[i] = "[" + "; ".join(repr(float(np.float32(x.nbytes / ideal))) for x in t.outputs) + "]"
        else:
            col("PM IDEAL [ns]")[i] = 1
            col("PM COMPUTE [ns]")[i] = 1
            col("PM BANDWIDTH [ns]")[i] = 1
            col("PM REQ I BW")[i] = "[]"
            col("PM REQ O BW")[i] = "[]"
    out = {k: np.asarray(v, dtype=object) for k, v in tab.items()}
    for k in list(out):
        if k in INT_COLUMNS:
            out[k] = np.asarray(tab[k], dtype=np.int64)
    return out


def _list_cell(items: tuple[str, ...]) -> str:
    return "[" + "; ".join(f"'{x}'" for x in items) + "]"


# --------------------------------------------------------------------------- main generator


def generate_ops(
    n_ops: int,
    *,
    arch: str = "wormhole_b0",
    devices: int = 1,
    seed: int = 0,
    signposts: bool = True,
    layers: int | None = None,
    host_fallback_every: int | None = None,
    corrupt_every: int | None = None,
    trace_replay: bool = False,
    header: str = "v2.1",
    model: ModelConfig | None = None,
) -> pd.DataFrame:
    """Generate a realistic ``ops_perf_results`` table.

    Args:
        n_ops: number of device ops (each produces one row per device). Signpost
            and host-fallback rows come on top.
        arch: ``wormhole_b0``, ``blackhole`` or ``grayskull``.
        devices: number of devices; > 1 adds CCL ops (ReduceScatter/AllGather).
        seed: RNG seed; the same arguments always give the same table.
        signposts: add ``start`` / ``layer_<i>`` / ``stop`` signpost rows
            (names repeat every iteration).
        layers: decoder layers per iteration (default: drawn from the seed).
        host_fallback_every: insert a ``(torch) ...`` python_fallback row after
            every N-th op.
        corrupt_every: give every N-th op the profiler's corrupt timing
            (kernel ~ +6.9e9 ns, op-to-op ~ -6.9e9 ns).
        trace_replay: iterations after the first are metal-trace replays
            (``METAL TRACE ID`` 0, ``METAL TRACE REPLAY SESSION ID`` = iteration);
            their rows carry capture-time ``HOST START TS`` values.
        header: ``"v2.1"`` (default) or ``"v2"`` (no DEVICE ARCH and friends).
        model: a fixed :class:`~ttdash.sim.model.ModelConfig` instead of a drawn one.

    Returns:
        A DataFrame whose columns are the profiler header in order; integer
        columns use the nullable ``Int64`` dtype, text columns ``object``.
    """
    if n_ops < 0:
        raise ValueError("n_ops must be >= 0")
    if devices < 1:
        raise ValueError("devices must be >= 1")
    rng = np.random.default_rng(seed)
    a = get_arch(arch)
    cfg = model if model is not None else ModelConfig.random(rng, layers=layers)
    prog = build_program(cfg, a, devices, rng)
    D = devices
    clk = a.clock_ghz
    L = len(prog.iteration)
    reps = max(1, -(-n_ops // L))

    op_t = np.tile(prog.iteration, reps)[:n_ops]
    op_layer = np.tile(prog.layer_of, reps)[:n_ops]
    op_pos = np.tile(np.arange(L), reps)[:n_ops]
    op_iter = np.repeat(np.arange(reps), L)[:n_ops]
    replay = (op_iter > 0) if trace_replay else np.zeros(n_ops, dtype=bool)

    # ---------------------------------------------------------------- per template arrays
    base_ns = np.array([t.base_ns for t in prog.templates])
    is_ccl = np.array([t.kind == CCL for t in prog.templates])
    has_compute = np.array([t.has_compute for t in prog.templates])
    pm_compute = np.array([t.ideal_compute_ns if t.kind in (MATMUL, SDPA) else 0.0 for t in prog.templates])
    fpu_small = np.round(rng.uniform(0.001, 0.02, len(prog.templates)), 3)

    # ---------------------------------------------------------------- kernel durations [n, D]
    noise = rng.lognormal(0.0, 0.035, n_ops)
    slow = rng.random(n_ops) < 0.006
    noise[slow] *= rng.uniform(2.0, 6.0, int(slow.sum()))
    jitter = 1.0 + rng.normal(0.0, 0.01, (n_ops, D))
    ccl_rows = is_ccl[op_t]
    if ccl_rows.any():
        jitter[ccl_rows] = 1.0 + np.abs(rng.normal(0.0, 0.06, (int(ccl_rows.sum()), D)))
    kernel = np.maximum(300, np.rint(base_ns[op_t][:, None] * noise[:, None] * jitter)).astype(np.int64)
    fw_over = rng.integers(400, 2600, (n_ops, D))
    fw_ns = kernel + fw_over

    # ---------------------------------------------------------------- gaps and stalls
    gap = np.clip(rng.lognormal(math.log(3000.0), 0.45, n_ops), 700, 10_000)
    extra = np.zeros(n_ops)
    first_seen = np.zeros(n_ops, dtype=bool)
    if n_ops:
        _, first_idx = np.unique(op_t, return_index=True)
        first_seen[first_idx] = True
    extra[first_seen] += rng.uniform(300_000, 3_000_000, int(first_seen.sum()))  # program compile
    stall = rng.random(n_ops) < 0.004
    extra[stall] += rng.uniform(200_000, 40_000_000, int(stall.sum()))  # host stalls
    boundary = (op_pos == 0) & (op_iter > 0)
    extra[boundary] += rng.uniform(1_000_000, 6_000_000, int(boundary.sum()))
    if trace_replay:
        gap[replay] = rng.uniform(300, 1200, int(replay.sum()))
        extra[replay & ~boundary] = 0.0
    gap_d = np.rint(gap + extra)[:, None].astype(np.int64) + rng.integers(0, 400, (n_ops, D))

    # ---------------------------------------------------------------- device timeline (cycles)
    step = gap_d.copy()
    step[1:] += fw_ns[:-1]
    start_ns = np.cumsum(step, axis=0) + rng.integers(1_000_000_000, 5_000_000_000, D)[None, :]
    start_c = a.cycle_base + np.rint(start_ns * clk).astype(np.int64)
    end_c = start_c + np.rint(fw_ns * clk).astype(np.int64)
    true_k = kernel.copy()  # per-RISC durations stay sane on corrupt rows
    corrupt = np.zeros(n_ops, dtype=bool)
    if corrupt_every:
        corrupt[corrupt_every - 1 :: corrupt_every] = True
        corrupt[0] = False
        n_bad = int(corrupt.sum())
        off = CORRUPT_OFFSET_NS + rng.integers(-600_000, 600_000, (n_bad, D))
        start_c[corrupt] -= np.rint(off * clk).astype(np.int64)
        kernel[corrupt] += off
    fw_c = end_c - start_c
    fw_rep = np.rint(fw_c / clk).astype(np.int64)
    o2o = np.zeros((n_ops, D), dtype=np.int64)
    if n_ops > 1:
        o2o[1:] = np.rint((start_c[1:] - end_c[:-1]) / clk).astype(np.int64)
    o2o_br = o2o + rng.integers(0, 300, (n_ops, D))
    o2o_br[0] = 0

    # ---------------------------------------------------------------- per-RISC breakdown (true kernel)
    ftl = np.minimum(rng.integers(80, 600, (n_ops, D)), true_k // 3)
    dm_start = true_k - rng.integers(0, 40, (n_ops, D))
    dm_start = np.where(corrupt[:, None], kernel - rng.integers(0, 40, (n_ops, D)), dm_start)
    brisc = np.rint(true_k * rng.uniform(0.86, 0.995, (n_ops, D))).astype(np.int64)
    trisc0 = true_k - np.rint(ftl * rng.uniform(0.3, 1.0, (n_ops, D))).astype(np.int64)
    trisc1 = np.minimum(true_k, trisc0 + rng.integers(5, 60, (n_ops, D)))
    trisc2 = np.minimum(true_k, trisc1 + rng.integers(5, 200, (n_ops, D)))

    # ---------------------------------------------------------------- row layout
    S = _SLOT_DEVICE + D + 1
    perm = np.argsort(rng.random((n_ops, D)), axis=1) if D > 1 else np.zeros((n_ops, 1), dtype=np.int64)
    n_dev = n_ops * D
    dev_key = (np.arange(n_ops)[:, None] * S + _SLOT_DEVICE + np.arange(D)[None, :]).ravel()

    sp_key: list[np.ndarray] = []
    sp_name: list[np.ndarray] = []
    sp_msg: list[np.ndarray] = []
    if signposts and n_ops:
        starts = np.flatnonzero(op_pos == 0)
        sp_key.append(starts * S + _SLOT_START)
        sp_name.append(np.full(len(starts), "start", dtype=object))
        sp_msg.append(np.array([f"iteration={k}" for k in op_iter[starts]], dtype=object))
        stops = starts[1:]
        stop_keys = stops * S + _SLOT_STOP
        if n_ops % L == 0:
            stop_keys = np.append(stop_keys, n_ops * S + _SLOT_STOP)
        sp_key.append(stop_keys)
        sp_name.append(np.full(len(stop_keys), "stop", dtype=object))
        sp_msg.append(np.full(len(stop_keys), np.nan, dtype=object))
        prev_layer = np.concatenate(([-1], op_layer[:-1]))
        new_layer = (op_layer >= 0) & ((op_layer != prev_layer) | (op_pos == 0)) & ~replay
        lidx = np.flatnonzero(new_layer)
        sp_key.append(lidx * S + _SLOT_LAYER)
        sp_name.append(np.array([f"layer_{k}" for k in op_layer[lidx]], dtype=object))
        sp_msg.append(np.full(len(lidx), np.nan, dtype=object))
    sp_key_a = np.concatenate(sp_key) if sp_key else np.zeros(0, dtype=np.int64)
    sp_name_a = np.concatenate(sp_name) if sp_name else np.zeros(0, dtype=object)
    sp_msg_a = np.concatenate(sp_msg) if sp_msg else np.zeros(0, dtype=object)

    fb_ops = np.zeros(0, dtype=np.int64)
    if host_fallback_every:
        fb_ops = np.arange(host_fallback_every - 1, n_ops, host_fallback_every)
    fb_key = fb_ops * S + _SLOT_DEVICE + D

    keys = np.concatenate([dev_key, sp_key_a, fb_key])
    order = np.argsort(keys, kind="stable")
    N = len(keys)
    inv = np.empty(N, dtype=np.int64)
    inv[order] = np.arange(N)
    pos_dev = inv[:n_dev]
    pos_sp = inv[n_dev : n_dev + len(sp_key_a)]
    pos_fb = inv[n_dev + len(sp_key_a) :]

    # ---------------------------------------------------------------- host timeline (final order)
    dev_op = np.repeat(np.arange(n_ops), D)
    host_dur = np.zeros(N, dtype=np.int64)
    miss = np.repeat(first_seen, D)
    hd = np.clip(rng.lognormal(math.log(9000.0), 0.5, n_dev), 3000, 60_000)
    hd[miss] = rng.uniform(60_000, 180_000, int(miss.sum()))
    host_dur[pos_dev] = np.rint(hd).astype(np.int64)
    host_dur[pos_fb] = rng.integers(5_000, 90_000, len(pos_fb))
    host_dur[pos_sp] = rng.integers(2_000, 15_000, len(pos_sp))
    host_gap = rng.integers(800, 4000, N)
    # host stalls happen before the op's first row
    first_rank = np.zeros((n_ops, D), dtype=bool)
    first_rank[:, 0] = True
    op_first_pos = pos_dev[first_rank.ravel()]
    host_gap[op_first_pos] += np.rint(extra).astype(np.int64)
    if trace_replay and replay.any():
        cap_first = int(np.flatnonzero(replay)[0])
        cap_pos = op_first_pos[cap_first]
        # the capture happened here: leave room for it on the host timeline
        host_gap[cap_pos] += (L * D) * 9_000 + 1_000_000
    host_start = int(rng.integers(2_000_000_000, 20_000_000_000)) + np.cumsum(
        np.concatenate(([0], (host_dur + host_gap)[:-1]))
    )
    if trace_replay and replay.any():
        # replay rows report the timestamp of the captured op, not of the replay
        cap_base = host_start[cap_pos] - (L * D) * 9_000 - 500_000
        rep_rows = np.repeat(replay, D)
        slot = (op_pos[:, None] * D + np.arange(D)[None, :]).ravel()
        host_start[pos_dev[rep_rows]] = cap_base + slot[rep_rows] * 9_000
    host_end = host_start + host_dur

    # ---------------------------------------------------------------- assemble columns
    n_in = max(prog.max_inputs, 1)
    n_out = max(prog.max_outputs, 1)
    names = report_columns(n_in, n_out, header=header)
    C = _Columns(N, names)
    tab = _template_table(prog, n_in, n_out)
    t_rows = np.repeat(op_t, D)

    def take(arr2d: np.ndarray) -> np.ndarray:
        """Values of an [op, device] array in device-row order (devices permuted per op)."""
        return np.take_along_axis(arr2d, perm, axis=1).ravel()

    for name, tv in tab.items():
        C.put(name, pos_dev, tv[t_rows])
    C.put("OP TYPE", pos_dev, "tt_dnn_device")
    dev_id = perm.ravel()
    C.put("DEVICE ID", pos_dev, dev_id)
    C.put("GLOBAL CALL COUNT", pos_dev, ((dev_op + 1) << 10) | dev_id)
    C.put("DEVICE ARCH", pos_dev, a.name)
    C.put("AVAILABLE WORKER CORE COUNT", pos_dev, a.worker_cores)
    C.put("HOST START TS", pos_dev, host_start[pos_dev])
    C.put("HOST END TS", pos_dev, host_end[pos_dev])
    C.put("HOST DURATION [ns]", pos_dev, host_dur[pos_dev])
    C.put("DEVICE FW START CYCLE", pos_dev, take(start_c))
    C.put("DEVICE FW END CYCLE", pos_dev, take(end_c))
    C.put("OP TO OP LATENCY [ns]", pos_dev, take(o2o))
    C.put("OP TO OP LATENCY BR/NRISC START [ns]", pos_dev, take(o2o_br))
    C.put("DEVICE FW DURATION [ns]", pos_dev, take(fw_rep))
    k_rows = take(kernel)
    C.put("DEVICE KERNEL DURATION [ns]", pos_dev, k_rows)
    C.put("DEVICE KERNEL DURATION DM START [ns]", pos_dev, take(dm_start))
    C.put("DEVICE KERNEL FIRST TO LAST START [ns]", pos_dev, take(ftl))
    C.put("DEVICE BRISC KERNEL DURATION [ns]", pos_dev, take(brisc))
    C.put("DEVICE NCRISC KERNEL DURATION [ns]", pos_dev, take(dm_start))
    comp_rows = has_compute[t_rows]
    pc_pos = pos_dev[comp_rows]
    C.put("DEVICE TRISC0 KERNEL DURATION [ns]", pc_pos, take(trisc0)[comp_rows])
    C.put("DEVICE TRISC1 KERNEL DURATION [ns]", pc_pos, take(trisc1)[comp_rows])
    C.put("DEVICE TRISC2 KERNEL DURATION [ns]", pc_pos, take(trisc2)[comp_rows])
    cache_hit = np.where(np.repeat(first_seen, D), "False", "True").astype(object)
    C.put("PROGRAM CACHE HIT", pos_dev, cache_hit)
    fpu = np.where(
        pm_compute[t_rows] > 0,
        np.round(pm_compute[t_rows] / np.maximum(k_rows, 1) * 100.0, 3),
        fpu_small[t_rows],
    )
    C.put("PM FPU UTIL (%)", pos_dev, fpu)
    if trace_replay:
        rep_rows = np.repeat(replay, D)
        C.put("METAL TRACE ID", pos_dev[rep_rows], 0)
        C.put("METAL TRACE REPLAY SESSION ID", pos_dev[rep_rows], np.repeat(op_iter, D)[rep_rows])

    # signposts: name in OP CODE, optional message in ATTRIBUTES, only HOST START TS otherwise
    C.put("OP CODE", pos_sp, sp_name_a)
    C.put("OP TYPE", pos_sp, "signpost")
    C.put("ATTRIBUTES", pos_sp, sp_msg_a)
    C.put("HOST START TS", pos_sp, host_start[pos_sp])

    # host fallbacks: no DEVICE ID, bit 31 in GLOBAL CALL COUNT
    if len(pos_fb):
        C.put("OP CODE", pos_fb, np.array([_FALLBACK_NAMES[i % len(_FALLBACK_NAMES)] for i in range(len(pos_fb))], dtype=object))
        C.put("OP TYPE", pos_fb, "python_fallback")
        C.put("GLOBAL CALL COUNT", pos_fb, (1 << 31) | (np.arange(len(pos_fb)) + 1))
        C.put("HOST START TS", pos_fb, host_start[pos_fb])
        C.put("HOST END TS", pos_fb, host_end[pos_fb])
        C.put("HOST DURATION [ns]", pos_fb, host_dur[pos_fb])
    df = C.frame()
    df.attrs["ttdash_sim"] = {
        "arch": a.name,
        "clock_mhz": a.clock_mhz,
        "devices": D,
        "seed": seed,
        "model": cfg,
        "ops_per_iteration": L,
    }
    return df
