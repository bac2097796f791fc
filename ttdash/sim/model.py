"""A transformer-like workload described as a list of op templates.

An *op template* is everything about an op that stays the same each time the
op runs (op code, attributes, shapes, dtypes, memory, core count, a modelled
base kernel duration). The generator tiles one *iteration* (a prologue, the
decoder layers, an epilogue) of template ids to the requested op count and adds
per-run noise, so large traces stay cheap to build.

The duration model is a small roofline: FLOPs against the per-core peak of the
op's math fidelity, DRAM bytes (counted the way tt-perf-report counts them)
against the DRAM peak, plus L1/SFPU work, divided by an efficiency drawn per
template and plus a launch overhead. Efficiencies are drawn so that a run has
DRAM-bound, FLOP-bound and slow matmuls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .archspec import SimArch

__all__ = [
    "TensorSpec",
    "OpTemplate",
    "ModelConfig",
    "Program",
    "build_program",
    "dtype_bytes",
]

# Kinds of op, used by the duration model and the per-RISC breakdown.
MATMUL, SDPA, NORM, ELTWISE, DATA_MOVEMENT, CCL = "matmul", "sdpa", "norm", "eltwise", "dm", "ccl"

_TILE = 32


def _pad(n: int) -> int:
    """Round ``n`` up to a whole tile."""
    return max(_TILE, -(-n // _TILE) * _TILE)


def dtype_bytes(dtype: str) -> float:
    """Bytes per element the way tt-perf-report counts them.

    The first integer in the name divided by 8 (BFLOAT16 -> 2, BFLOAT8_B -> 1,
    BFLOAT4_B -> 0.5, UINT32 -> 4), else 4.
    """
    m = re.search(r"\d+", dtype)
    return int(m.group()) / 8 if m else 4.0


@dataclass(frozen=True)
class TensorSpec:
    """One tensor as the report lists it."""

    shape: tuple[int, int, int, int]
    """Padded W, Z, Y, X."""
    logical: tuple[int, int, int, int]
    """Logical W, Z, Y, X."""
    layout: str = "TILE"
    dtype: str = "BFLOAT16"
    memory: str = "DRAM_INTERLEAVED"
    """Memory without the ``DEV_n_`` prefix, e.g. ``L1_WIDTH_SHARDED``."""

    @property
    def elements(self) -> int:
        w, z, y, x = self.shape
        return w * z * y * x

    @property
    def nbytes(self) -> float:
        """Padded size in bytes (tt-perf-report's dtype rule)."""
        return self.elements * dtype_bytes(self.dtype)

    @property
    def in_dram(self) -> bool:
        return "DRAM" in self.memory

    def dims(self) -> list[str]:
        """The four ``padded[logical]`` shape cells."""
        return [f"{p}[{lg}]" for p, lg in zip(self.shape, self.logical)]


def tensor(
    w: int,
    z: int,
    y: int,
    x: int,
    *,
    dtype: str = "BFLOAT16",
    memory: str = "DRAM_INTERLEAVED",
    layout: str = "TILE",
    logical_y: int | None = None,
    logical_x: int | None = None,
) -> TensorSpec:
    """Build a :class:`TensorSpec`; TILE tensors get Y/X padded to 32."""
    ly = y if logical_y is None else logical_y
    lx = x if logical_x is None else logical_x
    if layout == "TILE":
        py, px = _pad(y), _pad(x)
    else:
        py, px = y, x
    return TensorSpec((w, z, py, px), (w, z, ly, lx), layout, dtype, memory)


@dataclass
class OpTemplate:
    """Static description of one op of the workload (see module docstring)."""

    op_code: str
    kind: str
    attributes: str
    fidelity: str | None
    cores: int
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    flops: float = 0.0
    work_ns: float = 0.0
    """Non-matmul compute time at 100% efficiency (SFPU/FPU eltwise, reductions)."""
    ccl_bytes: float = 0.0
    """Bytes sent over Ethernet (CCL ops)."""
    dram_traffic: float | None = None
    """DRAM bytes actually moved when not every DRAM tensor is read whole (embedding lookups)."""
    dram_sharded: bool = False
    compute_kernels: tuple[str, ...] = ()
    dm_kernels: tuple[str, ...] = ()
    efficiency: float = 0.5
    overhead_ns: float = 1000.0
    # filled by finalize()
    ideal_compute_ns: float = 0.0
    ideal_dram_ns: float = 0.0
    base_ns: float = 0.0
    program_hash: int = 0
    kernel_hashes: tuple[str, ...] = ()
    dm_kernel_hashes: tuple[str, ...] = ()
    kernel_sizes: tuple[int, ...] = ()

    @property
    def dram_bytes(self) -> float:
        """DRAM traffic: every input and output tensor that lives in DRAM."""
        return float(sum(t.nbytes for t in self.inputs + self.outputs if t.in_dram))

    @property
    def l1_bytes(self) -> float:
        return float(sum(t.nbytes for t in self.inputs + self.outputs if not t.in_dram))

    @property
    def has_compute(self) -> bool:
        return bool(self.compute_kernels)

    def finalize(self, arch: SimArch, rng: np.random.Generator) -> None:
        """Compute the modelled base kernel duration and the per-template ids."""
        peak_cores = arch.dram_sharded_cores if self.dram_sharded and arch.dram_sharded_cores else self.cores
        fid = self.fidelity or "HiFi4"
        compute_ns = 0.0
        if self.flops:
            compute_ns = self.flops / (arch.tflops_per_core[fid] * 1e12 * peak_cores) * 1e9
        traffic = self.dram_bytes if self.dram_traffic is None else self.dram_traffic
        dram_ns = traffic / (arch.dram_gb_s * 1e9) * 1e9
        # L1 / NOC: ~32 B per cycle per core.
        l1_ns = self.l1_bytes / (32.0 * arch.clock_ghz * max(1, self.cores))
        eth_ns = 0.0
        if self.kind == CCL and arch.eth_gb_s:
            links = 2
            eth_ns = self.ccl_bytes / (arch.eth_gb_s * links)  # bytes / (GB/s) == ns
        self.ideal_compute_ns = compute_ns
        self.ideal_dram_ns = dram_ns
        ideal = max(compute_ns, dram_ns, l1_ns, self.work_ns, eth_ns)
        self.base_ns = ideal / self.efficiency + self.overhead_ns
        self.program_hash = int(rng.integers(1 << 40, 1 << 63, dtype=np.int64))
        self.kernel_hashes = tuple(f"{_stem(k)}/{int(rng.integers(1 << 50, 1 << 63, dtype=np.int64))}/" for k in self.compute_kernels)
        self.dm_kernel_hashes = tuple(f"{_stem(k)}/{int(rng.integers(1 << 50, 1 << 63, dtype=np.int64))}/" for k in self.dm_kernels)
        comp = [int(rng.integers(900, 4200)) if self.has_compute else 0 for _ in range(3)]
        dm = [int(rng.integers(700, 7400)) for _ in range(2)]
        self.kernel_sizes = (dm[0], dm[1], comp[0], comp[1], comp[2], 0, 0, 0, 0)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


# --------------------------------------------------------------------------- attribute strings


def _attrs(**kv: str) -> str:
    """Format attributes like the profiler: sorted keys, ``;`` instead of commas."""
    return "{" + "; ".join(f"'{k}': '{v}'" for k, v in sorted(kv.items())) + "}"


def _grid_str(cores: int, gx: int) -> str:
    rows, rem = divmod(cores, gx)
    if cores <= gx:
        return f"{{[(x=0;y=0) - (x={cores - 1};y=0)]}}"
    if rem == 0:
        return f"{{[(x=0;y=0) - (x={gx - 1};y={rows - 1})]}}"
    return f"{{[(x=0;y=0) - (x={gx - 1};y={rows - 1})]; [(x=0;y={rows}) - (x={rem - 1};y={rows})]}}"


def _mem_cfg(t: TensorSpec, cores: int, gx: int) -> str:
    buffer, _, layout = t.memory.partition("_")
    if "SHARDED" not in layout:
        shard = "std::nullopt"
    else:
        _, _, y, x = t.shape
        w, z = t.shape[0], t.shape[1]
        rows = w * z * y
        if layout == "WIDTH_SHARDED":
            shape = (rows, _pad(-(-x // cores)))
        elif layout == "HEIGHT_SHARDED":
            shape = (_pad(-(-rows // cores)), x)
        else:
            shape = (_pad(-(-rows // max(1, cores // gx))), _pad(-(-x // gx)))
        shard = (
            f"ShardSpec(grid={_grid_str(cores, gx)};shape={{{shape[0]}; {shape[1]}}};"
            f"orientation=ShardOrientation::ROW_MAJOR)"
        )
    return (
        f"MemoryConfig(memory_layout=TensorMemoryLayout::{layout};buffer_type=BufferType::{buffer};"
        f"shard_spec={shard};nd_shard_spec=std::nullopt;created_with_nd_shard_spec=0)"
    )


def _compute_cfg(arch: SimArch, fid: str, *, approx: bool = False, fp32: bool = False, l1acc: bool = True) -> str:
    if arch.name == "grayskull":
        return f"{arch.compute_config_name}(math_fidelity={fid};math_approx_mode={int(approx)})"
    return (
        f"{arch.compute_config_name}(math_fidelity={fid};math_approx_mode={int(approx)};"
        f"fp32_dest_acc_en={int(fp32)};packer_l1_acc={int(l1acc)};dst_full_sync_en=0;"
        f"throttle_level=ThrottleLevel::NO_THROTTLE)"
    )


_K = "ttnn/cpp/ttnn/operations"
_MM_COMPUTE = f"{_K}/matmul/device/kernels/compute/bmm_large_block_zm_fused_bias_activation.cpp"
_KERNELS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mm2d": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_receiver.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_receiver_writer_padding.cpp",
        ),
    ),
    "mm1d": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
        ),
    ),
    "mmdram": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_dram_sharded.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_dram_sharded.cpp",
        ),
    ),
    "layernorm": (
        (f"{_K}/normalization/layernorm/device/kernels/compute/layernorm.cpp",),
        (
            f"{_K}/normalization/layernorm/device/kernels/dataflow/reader_unary_interleaved_ln.cpp",
            f"{_K}/normalization/layernorm/device/kernels/dataflow/writer_unary_interleaved_start_id_blocked.cpp",
        ),
    ),
    "binary": (
        (f"{_K}/eltwise/binary_ng/device/kernels/compute/eltwise_binary_no_bcast.cpp",),
        (
            f"{_K}/eltwise/binary_ng/device/kernels/dataflow/reader_interleaved_no_bcast.cpp",
            f"{_K}/eltwise/binary_ng/device/kernels/dataflow/writer_interleaved_no_bcast.cpp",
        ),
    ),
    "rotary": (
        (f"{_K}/experimental/transformer/rotary_embedding_llama/device/kernels/compute/rotary_embedding_llama.cpp",),
        (
            f"{_K}/experimental/transformer/rotary_embedding_llama/device/kernels/dataflow/reader_rotary_embedding_llama_interleaved_start_id.cpp",
            f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp",
        ),
    ),
    "sdpa": (
        (f"{_K}/transformer/sdpa/device/kernels/compute/sdpa.cpp",),
        (
            f"{_K}/transformer/sdpa/device/kernels/dataflow/reader_interleaved.cpp",
            f"{_K}/transformer/sdpa/device/kernels/dataflow/writer_interleaved.cpp",
        ),
    ),
    "sdpa_decode": (
        (f"{_K}/transformer/sdpa_decode/device/kernels/compute/sdpa_flash_decode.cpp",),
        (
            f"{_K}/transformer/sdpa_decode/device/kernels/dataflow/reader_decode_all.cpp",
            f"{_K}/transformer/sdpa_decode/device/kernels/dataflow/writer_decode_all.cpp",
        ),
    ),
    "create_heads": (
        (),
        (f"{_K}/experimental/transformer/nlp_create_qkv_heads/device/kernels/dataflow/reader_tm_tile_layout_nlp_create_qkv_heads.cpp",
         f"{_K}/experimental/transformer/nlp_create_qkv_heads/device/kernels/dataflow/writer_tm_tile_layout_nlp_create_qkv_heads.cpp"),
    ),
    "create_heads_decode": (
        (),
        (f"{_K}/experimental/transformer/nlp_create_qkv_heads_decode/device/kernels/reader_tm_tile_layout_nlp_create_qkv_heads_decode.cpp",),
    ),
    "concat_heads": (
        (),
        (f"{_K}/experimental/transformer/nlp_concat_heads/device/kernels/dataflow/reader_tm_tile_layout_nlp_concat_heads.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "concat_heads_decode": (
        (),
        (f"{_K}/experimental/transformer/nlp_concat_heads_decode/device/kernels/dataflow/reader_tm_tile_layout_nlp_concat_heads_decode.cpp",),
    ),
    "update_cache": (
        (f"{_K}/kv_cache/device/kernels/compute/update_cache.cpp",),
        (f"{_K}/experimental/paged_cache/device/kernels/dataflow/reader_update_cache_interleaved_start_id.cpp",
         f"{_K}/experimental/paged_cache/device/kernels/dataflow/writer_update_cache_interleaved_start_id.cpp"),
    ),
    "i2s": (
        (),
        (f"{_K}/data_movement/sharded/device/kernels/dataflow/reader_unary_sharded_blocks_interleaved_start_id.cpp",),
    ),
    "s2i": (
        (),
        (f"{_K}/data_movement/sharded/device/kernels/dataflow/writer_unary_sharded_blocks_interleaved_start_id.cpp",),
    ),
    "reshape": (
        (),
        (f"{_K}/data_movement/reshape_view/device/device/dataflow/reader_reshape_tiled.cpp",
         f"{_K}/data_movement/reshape_view/device/device/dataflow/writer_reshape_tiled.cpp"),
    ),
    "typecast": (
        (f"{_K}/copy/typecast/device/kernels/compute/eltwise_typecast.cpp",),
        (f"{_K}/eltwise/unary/device/kernels/dataflow/reader_unary_interleaved_start_id.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "embeddings": (
        (),
        (f"{_K}/embedding/device/kernels/dataflow/embeddings.cpp",),
    ),
    "tilize": (
        (f"{_K}/data_movement/tilize/device/kernels/compute/tilize.cpp",),
        (f"{_K}/data_movement/tilize_with_val_padding/device/kernels/dataflow/reader_unary_pad_dims_split_rows_multicore.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "untilize": (
        (f"{_K}/data_movement/untilize/device/kernels/compute/pack_untilize_variable_num_blocks.cpp",),
        (f"{_K}/data_movement/untilize/device/kernels/dataflow/reader_unary_start_id.cpp",
         f"{_K}/data_movement/untilize/device/kernels/dataflow/writer_unary_stick_layout_split_rows_multi_core.cpp"),
    ),
    "slice": (
        (),
        (f"{_K}/data_movement/slice/device/kernels/dataflow/reader_unary_unpad_dims_interleaved_start_id.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "all_gather": (
        (),
        ("tt_metal/fabric/impl/kernels/tt_fabric_mux.cpp",
         f"{_K}/experimental/ccl/all_gather_async/device/kernels/minimal_default_writer.cpp",
         f"{_K}/experimental/ccl/all_gather_async/device/kernels/minimal_default_reader.cpp"),
    ),
    "reduce_scatter": (
        (f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduction.cpp",),
        ("tt_metal/fabric/impl/kernels/tt_fabric_mux.cpp",
         f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduce_scatter_minimal_async_writer.cpp",
         f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduce_scatter_minimal_async_reader.cpp"),
    ),
}


# --------------------------------------------------------------------------- model config


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and choices of the simulated transformer (per device shapes derive from it)."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    seq: int
    """Padded sequence rows (multiple of 32); 32 means a decode step for ``users`` users."""
    seq_logical: int
    layers: int
    style: str
    """``gpt`` (GELU MLP) or ``llama`` (SiLU-gated MLP, rotary)."""
    weight_dtype: str
    mlp_dtype: str
    vocab: int = 32000
    kv_len: int = 1024
    """KV-cache length for decode steps."""
    has_bias: bool = False

    @property
    def decode(self) -> bool:
        return self.seq == 32

    @classmethod
    def random(cls, rng: np.random.Generator, *, layers: int | None = None) -> ModelConfig:
        """Draw a plausible model (hidden 768..4096, seq 32..2048)."""
        hidden = int(rng.choice([768, 1024, 1280, 2048, 3072, 4096]))
        head_dim = 64 if hidden <= 1280 else 128
        heads = hidden // head_dim
        style = str(rng.choice(["gpt", "llama"]))
        kv_heads = heads if style == "gpt" else max(1, heads // 4)
        ffn = 4 * hidden if style == "gpt" else _pad(int(hidden * 8 / 3 / 256 + 0.999) * 256)
        seq = int(rng.choice([32, 128, 256, 512, 1024, 2048]))
        if seq == 32:
            seq_logical = int(rng.choice([32, 32, 16, 8, 1]))
        else:
            seq_logical = seq - int(rng.choice([0, 0, 0, rng.integers(1, 32)]))
        if layers is None:
            layers = int(rng.integers(2, 13))
        return cls(
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            ffn=ffn,
            seq=seq,
            seq_logical=seq_logical,
            layers=max(1, int(layers)),
            style=style,
            weight_dtype=str(rng.choice(["BFLOAT8_B", "BFLOAT8_B", "BFLOAT16"])),
            mlp_dtype=str(rng.choice(["BFLOAT8_B", "BFLOAT4_B"])),
            kv_len=int(rng.choice([256, 1024, 2048, 4096])),
            has_bias=style == "gpt" and bool(rng.random() < 0.5),
        )


@dataclass
class Program:
    """The op templates plus one iteration expressed as template ids."""

    config: ModelConfig
    templates: list[OpTemplate]
    iteration: np.ndarray
    """Template id of each op of one iteration."""
    layer_of: np.ndarray
    """Decoder-layer index of each op of one iteration (-1 for prologue/epilogue)."""

    @property
    def max_inputs(self) -> int:
        return max(len(t.inputs) for t in self.templates)

    @property
    def max_outputs(self) -> int:
        return max(len(t.outputs) for t in self.templates)


# --------------------------------------------------------------------------- builder


class _Builder:
    """Creates templates, de-duplicating identical ops so repeated layers share ids."""

    def __init__(self, cfg: ModelConfig, arch: SimArch, devices: int, rng: np.random.Generator) -> None:
        self.cfg = cfg
        self.arch = arch
        self.devices = devices
        self.rng = rng
        self.templates: list[OpTemplate] = []
        self._index: dict[str, int] = {}
        self.gx, self.gy = arch.grid
        self.workers = arch.worker_cores
        # matmul efficiency plan: guarantee both bound and slow matmuls
        self._mm_plan = [0.82, 0.35, 0.9, 0.45, 0.75]

    # ---------------------------------------------------------------- helpers
    def add(self, key: str, make: Callable[[], OpTemplate]) -> int:
        """Return the id of template ``key``, creating it with ``make()`` the first time."""
        if key not in self._index:
            t = make()
            t.finalize(self.arch, self.rng)
            self._index[key] = len(self.templates)
            self.templates.append(t)
        return self._index[key]

    def eff(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def mm_eff(self) -> float:
        if self._mm_plan:
            base = self._mm_plan.pop(0)
            return float(np.clip(base + self.rng.normal(0, 0.03), 0.15, 0.95))
        if self.rng.random() < 0.5:
            return self.eff(0.7, 0.93)
        return self.eff(0.18, 0.55)

    def cores_for_tiles(self, tiles: int) -> int:
        return int(max(1, min(self.workers, tiles)))

    def overhead(self) -> float:
        return float(self.rng.uniform(500.0, 1600.0))

    # ---------------------------------------------------------------- op kinds
    def matmul(
        self,
        key: str,
        a: TensorSpec,
        b: TensorSpec,
        out: TensorSpec,
        *,
        fidelity: str,
        bias: TensorSpec | None = None,
        activation: str | None = None,
        dram_sharded: bool = False,
        batched: bool = False,
    ) -> int:
        def make() -> OpTemplate:
            arch, gx, gy = self.arch, self.gx, self.gy
            M, K, N = a.shape[2], a.shape[3], b.shape[3]
            batch = max(a.shape[0] * a.shape[1], b.shape[0] * b.shape[1])
            Mt, Kt, Nt = M // _TILE, K // _TILE, N // _TILE
            fp32 = fidelity == "HiFi4"
            dst = 4 if fp32 else 8
            act = "std::nullopt"
            if activation:
                param = "{1}" if activation == "GELU" else "{}"
                act = f"BasicUnaryWithParam<float>(op_type=UnaryOpType::{activation};param={param})"
            if dram_sharded and arch.dram_sharded_cores:
                cores = int(min(self.workers, max(arch.dram_sharded_cores, gx * max(1, min(gy, Kt // 8)))))
                per_core_n = -(-Nt // cores)
                in0_bw = _largest_divisor(Kt // max(1, cores) or 1, (8, 6, 4, 3, 2, 1)) or 1
                pc = (
                    f"MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(in0_block_w={in0_bw};"
                    f"per_core_M={max(1, Mt)};per_core_N={per_core_n};fused_activation={act})"
                )
                kernels = _KERNELS["mmdram"]
            elif batched or self.rng.random() < 0.15:
                # no program config: the op picks one itself
                cores = self.cores_for_tiles(Mt * Nt * batch // 4 or 1)
                pc = "std::nullopt"
                kernels = _KERNELS["mm2d"]
            elif Mt <= 8:
                cores = self.cores_for_tiles(Nt)
                per_core_n = -(-Nt // cores)
                in0_bw = _largest_divisor(Kt, (8, 6, 4, 3, 2, 1))
                sw = _largest_divisor(per_core_n, (8, 4, 2, 1) if dst == 8 else (4, 2, 1))
                sh = _largest_divisor(Mt, tuple(h for h in (4, 2, 1) if h * sw <= dst))
                pc = (
                    f"MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=(x={gx};y={gy});"
                    f"in0_block_w={in0_bw};out_subblock_h={sh};out_subblock_w={sw};out_block_h={Mt};"
                    f"out_block_w={per_core_n};per_core_M={Mt};per_core_N={per_core_n};fuse_batch=1;"
                    f"fused_activation={act};mcast_in0=1;gather_in0=0;hop_cores={{}};"
                    f"num_global_cb_receivers=1;untilize_out=0)"
                )
                kernels = _KERNELS["mm1d"]
            else:
                per_core_m = -(-Mt // gy)
                per_core_n = -(-Nt // gx)
                cores = min(gy, -(-Mt // per_core_m)) * min(gx, -(-Nt // per_core_n))
                in0_bw = _largest_divisor(Kt, (4, 3, 2, 1) if self.rng.random() < 0.7 else (1,))
                sw = _largest_divisor(per_core_n, (4, 2, 1))
                sh = _largest_divisor(per_core_m, tuple(h for h in (4, 2, 1) if h * sw <= dst))
                pc = (
                    f"MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=(x={gx};y={gy});"
                    f"in0_block_w={in0_bw};out_subblock_h={sh};out_subblock_w={sw};out_block_h={per_core_m};"
                    f"out_block_w={per_core_n};per_core_M={per_core_m};per_core_N={per_core_n};"
                    f"transpose_mcast=0;fused_activation={act};fuse_batch=1)"
                )
                kernels = _KERNELS["mm2d"]
            attrs = _attrs(
                bcast_batch="1" if batched else "0",
                compute_kernel_config=_compute_cfg(arch, fidelity, fp32=fp32),
                global_cb="std::nullopt",
                output_dtype=f"DataType::{out.dtype}",
                output_mem_config=_mem_cfg(out, cores, gx),
                output_tile="Tile(tile_shape={32; 32};face_shape={16; 16};num_faces=4)",
                program_config=pc,
                sub_device_id="std::nullopt",
                transpose_a="false",
                transpose_b="false",
                untilize_out="false",
                user_core_coord="std::nullopt",
                user_fused_activation="std::nullopt" if pc != "std::nullopt" or not activation else f"UnaryOpType::{activation}",
                user_run_batched="true" if batched else "false",
            )
            ins = [a, b] + ([bias] if bias is not None else [])
            return OpTemplate(
                op_code="MatmulDeviceOperation",
                kind=MATMUL,
                attributes=attrs,
                fidelity=fidelity,
                cores=int(cores),
                inputs=ins,
                outputs=[out],
                flops=2.0 * M * K * N * batch,
                dram_sharded=bool(dram_sharded and arch.dram_sharded_cores),
                compute_kernels=kernels[0],
                dm_kernels=kernels[1],
                efficiency=self.mm_eff(),
                overhead_ns=self.overhead(),
            )

        return self.add(key, make)

    def simple(
        self,
        key: str,
        op_code: str,
        kind: str,
        kernels: str,
        ins: list[TensorSpec],
        outs: list[TensorSpec],
        *,
        attrs: dict[str, str],
        fidelity: str | None = None,
        cores: int | None = None,
        cycles_per_tile: float = 0.0,
        flops: float = 0.0,
        eff: tuple[float, float] = (0.3, 0.75),
        ccl_bytes: float = 0.0,
        dram_traffic: float | None = None,
    ) -> int:
        def make() -> OpTemplate:
            tiles = max(1, int(sum(o.elements for o in outs) // (_TILE * _TILE)))
            c = cores if cores is not None else self.cores_for_tiles(tiles)
            work = tiles * cycles_per_tile / (self.arch.clock_ghz * c) if cycles_per_tile else 0.0
            if flops:
                fid = fidelity or "HiFi4"
                work = max(work, flops / (self.arch.tflops_per_core[fid] * 1e12 * c) * 1e9)
            k = _KERNELS[kernels]
            return OpTemplate(
                op_code=op_code,
                kind=kind,
                attributes=_attrs(**attrs),
                fidelity=fidelity,
                cores=int(c),
                inputs=ins,
                outputs=outs,
                work_ns=work,
                ccl_bytes=ccl_bytes,
                dram_traffic=dram_traffic,
                compute_kernels=k[0],
                dm_kernels=k[1],
                efficiency=self.eff(*eff),
                overhead_ns=self.overhead(),
            )

        return self.add(key, make)


def _largest_divisor(n: int, choices: tuple[int, ...]) -> int:
    for c in choices:
        if c and n % c == 0:
            return c
    return 1


def build_program(cfg: ModelConfig, arch: SimArch, devices: int, rng: np.random.Generator) -> Program:
    """Lay out one iteration of the model as op templates (shapes are per device)."""
    b = _Builder(cfg, arch, devices, rng)
    d = max(1, devices)
    gx = arch.grid[0]
    H, hd = cfg.hidden, cfg.head_dim
    nh = -(-cfg.heads // d)
    nkv = -(-cfg.kv_heads // d)
    qkv_n = (nh + 2 * nkv) * hd
    ffn = _pad(-(-cfg.ffn // d))
    M, m = cfg.seq, cfg.seq_logical
    decode = cfg.decode
    dec_mem = "L1_WIDTH_SHARDED"
    act_mem = dec_mem if decode else "DRAM_INTERLEAVED"
    w_mem = "DRAM_WIDTH_SHARDED" if decode and arch.dram_sharded_cores else "DRAM_INTERLEAVED"
    use_dram_sharded = decode and bool(arch.dram_sharded_cores)
    wdt, mdt = cfg.weight_dtype, cfg.mlp_dtype
    fid_w = "HiFi2" if wdt != "BFLOAT4_B" else "LoFi"
    fid_mlp = "LoFi" if mdt == "BFLOAT4_B" else "HiFi2"
    fid_attn = "HiFi4" if rng.random() < 0.5 else "HiFi2"

    def act(x: int, mem: str = act_mem, dtype: str = "BFLOAT16", rows: int = M, lrows: int | None = None) -> TensorSpec:
        return tensor(1, 1, rows, x, dtype=dtype, memory=mem, logical_y=m if lrows is None else lrows)

    def weight(k: int, n: int, dtype: str = wdt) -> TensorSpec:
        return tensor(1, 1, k, n, dtype=dtype, memory=w_mem)

    seq_tiles = M // _TILE
    norm_cores = min(b.workers, max(8, H // _TILE // 4)) if decode else b.cores_for_tiles(seq_tiles)
    dram_out = {"output_mem_config": _mem_cfg(act(H), norm_cores, gx)}

    iteration: list[int] = []
    layer_of: list[int] = []

    def emit(tid: int, layer: int) -> None:
        iteration.append(tid)
        layer_of.append(layer)

    # ---------------------------------------------------------------- prologue
    if not decode:
        emb_out = tensor(1, 1, M, H, layout="ROW_MAJOR", logical_y=m)
        emit(
            b.simple(
                "embeddings",
                "EmbeddingsDeviceOperation",
                DATA_MOVEMENT,
                "embeddings",
                [
                    tensor(1, 1, 1, M, layout="ROW_MAJOR", dtype="UINT32", logical_x=m),
                    tensor(1, 1, cfg.vocab, H, layout="ROW_MAJOR"),
                ],
                [emb_out],
                attrs={
                    "embeddings_type": "EmbeddingsType::GENERIC",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": _mem_cfg(emb_out, 1, gx),
                    "pad_token": "std::nullopt",
                    "tilized": "false",
                },
                cycles_per_tile=200,
                dram_traffic=4.0 * M * H,
            ),
            -1,
        )
        emit(
            b.simple(
                "tilize",
                "TilizeWithValPaddingDeviceOperation",
                DATA_MOVEMENT,
                "tilize",
                [emb_out],
                [act(H)],
                attrs={
                    "enough_space_height": "true",
                    "enough_space_width": "true",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": _mem_cfg(act(H), 1, gx),
                    "output_padded_shape": f"Shape([1; 1; {M}; {H}])",
                    "pad_value": "0",
                    "sub_core_grids": "std::nullopt",
                    "use_multicore": "true",
                },
                fidelity="HiFi4",
                cycles_per_tile=150,
            ),
            -1,
        )
    else:
        emb_out = tensor(1, 1, M, H, logical_y=m)
        emit(
            b.simple(
                "embeddings",
                "EmbeddingsDeviceOperation",
                DATA_MOVEMENT,
                "embeddings",
                [
                    tensor(1, 1, 1, M, layout="ROW_MAJOR", dtype="UINT32", logical_x=m),
                    tensor(1, 1, cfg.vocab, H, layout="ROW_MAJOR"),
                ],
                [emb_out],
                attrs={
                    "embeddings_type": "EmbeddingsType::GENERIC",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": _mem_cfg(emb_out, 1, gx),
                    "pad_token": "std::nullopt",
                    "tilized": "true",
                },
                cycles_per_tile=200,
                dram_traffic=4.0 * M * H,
            ),
            -1,
        )
        emit(
            b.simple(
                "i2s_embed",
                "InterleavedToShardedDeviceOperation",
                DATA_MOVEMENT,
                "i2s",
                [emb_out],
                [act(H)],
                attrs={
                    "keep_l1_aligned": "false",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": _mem_cfg(act(H), norm_cores, gx),
                },
                cores=norm_cores,
            ),
            -1,
        )

    # ---------------------------------------------------------------- layers
    extras_p = rng.uniform(0.15, 0.45)

    def layernorm(key: str, layer: int) -> None:
        emit(
            b.simple(
                key,
                "LayerNormDeviceOperation",
                NORM,
                "layernorm",
                [act(H), tensor(1, 1, 32, H, logical_y=1)],
                [act(H)],
                attrs={
                    "compute_kernel_config": _compute_cfg(arch, "HiFi4", fp32=True),
                    "distributed_norm_stage": "DistributedLayerNormStage::NOT_DISTRIBUTED",
                    "dtype": "std::nullopt",
                    "eps": "1e-05",
                    "norm_type": "LayerNormType::RMSNORM" if cfg.style == "llama" else "LayerNormType::LAYERNORM",
                    **dram_out,
                    "program_config": "LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(x=8;y=4);subblock_w=4;block_h=1;block_w=2;inplace=0;legacy_reduction=0;legacy_rsqrt=0;use_welford=0)"
                    if decode
                    else "LayerNormDefaultProgramConfig(legacy_reduction=0;legacy_rsqrt=0;use_welford=0)",
                },
                fidelity="HiFi4",
                cores=norm_cores,
                cycles_per_tile=700,
                eff=(0.35, 0.8),
            ),
            layer,
        )

    def binary(key: str, layer: int, op: str = "ADD", x: int = H) -> None:
        emit(
            b.simple(
                key,
                "BinaryNgDeviceOperation",
                ELTWISE,
                "binary",
                [act(x), act(x)],
                [act(x)],
                attrs={
                    "binary_op_type": f"BinaryOpType::{op}",
                    "compute_kernel_config": "std::nullopt",
                    "dtype": "DataType::BFLOAT16",
                    "input_dtype": "DataType::BFLOAT16",
                    "is_quant_op": "false",
                    "is_sfpu": "false",
                    "is_where_op": "false",
                    "lhs_activations": "SmallVector([])",
                    "memory_config": _mem_cfg(act(x), norm_cores, gx),
                    "post_activations": "SmallVector([])",
                    "rhs_activations": "SmallVector([])",
                    "scalar": "std::nullopt",
                    "sub_core_grids": "std::nullopt",
                    "subtile_broadcast_type": "SubtileBroadcastType::NONE",
                    "worker_grid": _grid_str(b.workers, gx),
                },
                fidelity="HiFi4",
                cycles_per_tile=64,
                eff=(0.3, 0.8),
            ),
            layer,
        )

    def ccl_pair(key: str, layer: int) -> None:
        if d <= 1:
            return
        full = act(H, mem="DRAM_INTERLEAVED")
        part = act(H // d if H % (32 * d) == 0 else _pad(H // d), mem="DRAM_INTERLEAVED")
        ccl_common = {
            "barrier_semaphore": f"GlobalSemaphore(cores={_grid_str(b.workers, gx)};buffer_type=BufferType::L1)",
            "chunks_per_sync": "std::nullopt",
            "cluster_axis": "1",
            "dim": "3",
            "num_buffers_per_channel": "std::nullopt",
            "num_links": "2",
            "num_workers_per_link": "std::nullopt",
            "output_mem_config": _mem_cfg(full, 1, gx),
            "ring_size": str(d),
            "sub_device_id": "std::nullopt",
            "topology": "Topology::Linear" if d <= 2 else "Topology::Ring",
        }
        moved = full.nbytes * (d - 1) / d
        emit(
            b.simple(
                key + "_rs",
                "ReduceScatterMinimalAsyncDeviceOperation",
                CCL,
                "reduce_scatter",
                [full],
                [part],
                attrs={**ccl_common, "compute_kernel_config": "std::nullopt", "optional_intermediate_mem_config": "std::nullopt"},
                fidelity="HiFi4",
                cores=int(rng.choice([18, 20])),
                ccl_bytes=moved,
                eff=(0.55, 0.85),
            ),
            layer,
        )
        emit(
            b.simple(
                key + "_ag",
                "AllGatherAsyncDeviceOperation",
                CCL,
                "all_gather",
                [part],
                [full],
                attrs={**ccl_common, "reverse_order": "false", "use_optimal_ccl_for_llama": "false"},
                cores=int(rng.choice([18, 20])),
                ccl_bytes=moved,
                eff=(0.55, 0.85),
            ),
            layer,
        )

    def layer_ops(li: int, extras: dict[str, bool]) -> None:
        layernorm("ln_attn", li)
        a_in = act(H)
        if extras["i2s"] and not decode:
            shard = act(H, mem="L1_BLOCK_SHARDED")
            emit(
                b.simple(
                    "i2s_qkv",
                    "InterleavedToShardedDeviceOperation",
                    DATA_MOVEMENT,
                    "i2s",
                    [a_in],
                    [shard],
                    attrs={
                        "keep_l1_aligned": "false",
                        "output_dtype": "DataType::BFLOAT16",
                        "output_mem_config": _mem_cfg(shard, b.workers, gx),
                    },
                    cores=b.workers,
                ),
                li,
            )
            a_in = shard
        qkv_out = act(qkv_n, mem="L1_BLOCK_SHARDED" if a_in.memory == "L1_BLOCK_SHARDED" else act_mem)
        bias = tensor(1, 1, 32, qkv_n, logical_y=1) if cfg.has_bias else None
        emit(
            b.matmul(
                f"qkv_{a_in.memory}",
                a_in,
                weight(H, qkv_n),
                qkv_out,
                fidelity=fid_w,
                bias=bias,
                dram_sharded=use_dram_sharded,
            ),
            li,
        )
        if qkv_out.memory == "L1_BLOCK_SHARDED":
            back = act(qkv_n)
            emit(
                b.simple(
                    "s2i_qkv",
                    "ShardedToInterleavedDeviceOperation",
                    DATA_MOVEMENT,
                    "s2i",
                    [qkv_out],
                    [back],
                    attrs={
                        "is_l1_aligned": "false",
                        "num_slices": "1",
                        "output_dtype": "DataType::BFLOAT16",
                        "output_mem_config": _mem_cfg(back, 1, gx),
                    },
                    cores=b.workers,
                ),
                li,
            )
            qkv_out = back
        if extras["reshape"] and not decode:
            emit(
                b.simple(
                    "reshape_qkv",
                    "ReshapeDeviceOperation",
                    DATA_MOVEMENT,
                    "reshape",
                    [qkv_out],
                    [qkv_out],
                    attrs={
                        "logical_output_shape": f"Shape([1; 1; {m}; {qkv_n}])",
                        "output_mem_config": _mem_cfg(qkv_out, 1, gx),
                        "padded_output_shape": f"Shape([1; 1; {M}; {qkv_n}])",
                        "recreate_mapping_tensor": "false",
                        "sub_core_grid": "std::nullopt",
                    },
                ),
                li,
            )
        if decode:
            users = M
            q = tensor(1, users, _pad(nh), hd, logical_y=nh, memory="L1_HEIGHT_SHARDED")
            k = tensor(1, users, _pad(nkv), hd, logical_y=nkv, memory="L1_HEIGHT_SHARDED")
            emit(
                b.simple(
                    "create_heads",
                    "NLPCreateQKVHeadsDecodeDeviceOperation",
                    DATA_MOVEMENT,
                    "create_heads_decode",
                    [qkv_out],
                    [q, k, k],
                    attrs={
                        "head_dim": str(hd),
                        "num_kv_heads": str(nkv),
                        "num_q_heads": str(nh),
                        "output_mem_config": _mem_cfg(q, users, gx),
                        "overlap_qk_coregrid": "true",
                        "slice_size": "std::nullopt",
                    },
                    cores=users,
                ),
                li,
            )
        else:
            q = tensor(1, nh, M, hd, logical_y=m)
            k = tensor(1, nkv, M, hd, logical_y=m)
            emit(
                b.simple(
                    "create_heads",
                    "NlpCreateHeadsDeviceOperation",
                    DATA_MOVEMENT,
                    "create_heads",
                    [qkv_out],
                    [q, k, k],
                    attrs={
                        "head_dim": str(hd),
                        "num_kv_heads": str(nkv),
                        "num_q_heads": str(nh),
                        "output_mem_config": _mem_cfg(q, 1, gx),
                        "transpose_k_heads": "false",
                    },
                ),
                li,
            )
        # rotary position embeddings on Q and K
        cos = tensor(1, 1, M if not decode else 32, hd, logical_y=m if not decode else 32)
        trans = tensor(1, 1, 32, 32)
        for name, t in (("rot_q", q), ("rot_k", k)):
            emit(
                b.simple(
                    name,
                    "RotaryEmbeddingLlamaDeviceOperation",
                    ELTWISE,
                    "rotary",
                    [t, cos, cos, trans],
                    [t],
                    attrs={
                        "compute_kernel_config": _compute_cfg(arch, "HiFi4", approx=True),
                        "is_decode_mode": "true" if decode else "false",
                        "output_mem_config": _mem_cfg(t, t.shape[1] if decode else 1, gx),
                    },
                    fidelity="HiFi4",
                    cycles_per_tile=320,
                ),
                li,
            )
        out_heads = tensor(1, nh, M, hd, logical_y=m) if not decode else q
        if decode:
            cache = tensor(M, nkv, cfg.kv_len, hd, dtype="BFLOAT8_B")
            for name in ("update_k", "update_v"):
                emit(
                    b.simple(
                        name,
                        "PagedUpdateCacheDeviceOperation",
                        DATA_MOVEMENT,
                        "update_cache",
                        [tensor(M, nkv, 32, hd, dtype="BFLOAT8_B", memory="DRAM_INTERLEAVED"), k],
                        [tensor(1, M, 32, hd, dtype="BFLOAT8_B", memory="DRAM_INTERLEAVED")],
                        attrs={
                            "batch_offset": "0",
                            "compute_kernel_config": _compute_cfg(arch, "HiFi4"),
                            "op_type": "PagedUpdateCacheOpType::UPDATE",
                            "share_cache": "false",
                        },
                        fidelity="HiFi4",
                        cores=M,
                        cycles_per_tile=400,
                    ),
                    li,
                )
            pos = int(cfg.kv_len * 0.6)
            sdpa_flops = 4.0 * M * nh * pos * hd
            emit(
                b.simple(
                    "sdpa",
                    "SdpaDecodeDeviceOperation",
                    SDPA,
                    "sdpa_decode",
                    [q, cache, cache, tensor(1, 1, 1, M, layout="ROW_MAJOR", dtype="INT32")],
                    [q],
                    attrs={
                        "compute_kernel_config": _compute_cfg(arch, fid_attn),
                        "is_causal": "true",
                        "k_chunk_size": "256",
                        "output_mem_config": _mem_cfg(q, M, gx),
                        "paged_attention": "false",
                        "program_config": f"SDPAProgramConfig(compute_with_storage_grid_size=(x={gx};y={arch.grid[1]});sub_core_grids=std::nullopt;q_chunk_size=32;k_chunk_size=256;exp_approx_mode=0;max_cores_per_head_batch=16)",
                        "scale": f"{1 / math.sqrt(hd):.9f}",
                    },
                    fidelity=fid_attn,
                    cores=b.workers,
                    flops=sdpa_flops,
                    eff=(0.25, 0.55),
                ),
                li,
            )
        else:
            sdpa_flops = 4.0 * nh * M * M * hd / 2
            emit(
                b.simple(
                    "sdpa",
                    "SDPAOperation",
                    SDPA,
                    "sdpa",
                    [q, k, k],
                    [out_heads],
                    attrs={
                        "compute_kernel_config": _compute_cfg(arch, fid_attn),
                        "is_causal": "true",
                        "output_mem_config": _mem_cfg(out_heads, 1, gx),
                        "program_config": f"SDPAProgramConfig(compute_with_storage_grid_size=(x={gx};y={arch.grid[1]});sub_core_grids=std::nullopt;q_chunk_size={min(M, 256)};k_chunk_size={min(M, 256)};exp_approx_mode=0;max_cores_per_head_batch=16)",
                        "scale": f"{1 / math.sqrt(hd):.9f}",
                    },
                    fidelity=fid_attn,
                    cores=b.workers,
                    flops=sdpa_flops,
                    eff=(0.3, 0.6),
                ),
                li,
            )
        attn_cat = act(nh * hd)
        emit(
            b.simple(
                "concat_heads",
                "NLPConcatHeadsDecodeDeviceOperation" if decode else "NLPConcatHeadsDeviceOperation",
                DATA_MOVEMENT,
                "concat_heads_decode" if decode else "concat_heads",
                [out_heads],
                [attn_cat],
                attrs={
                    "num_heads": str(nh),
                    "output_mem_config": _mem_cfg(attn_cat, norm_cores, gx),
                }
                if decode
                else {"output_mem_config": _mem_cfg(attn_cat, 1, gx)},
                cores=nh if decode else None,
            ),
            li,
        )
        emit(
            b.matmul("attn_out", attn_cat, weight(nh * hd, H), act(H), fidelity=fid_w, dram_sharded=use_dram_sharded),
            li,
        )
        ccl_pair("ccl_attn", li)
        binary("residual_attn", li)
        layernorm("ln_mlp", li)
        if cfg.style == "llama":
            gate = act(ffn)
            emit(
                b.matmul("mlp_w1", act(H), weight(H, ffn, mdt), gate, fidelity=fid_mlp, activation="SILU", dram_sharded=use_dram_sharded),
                li,
            )
            emit(
                b.matmul("mlp_w3", act(H), weight(H, ffn, mdt), gate, fidelity=fid_mlp, dram_sharded=use_dram_sharded),
                li,
            )
            binary("mlp_mul", li, op="MUL", x=ffn)
        else:
            emit(
                b.matmul(
                    "mlp_up",
                    act(H),
                    weight(H, ffn, mdt),
                    act(ffn),
                    fidelity=fid_mlp,
                    activation="GELU",
                    bias=tensor(1, 1, 32, ffn, logical_y=1) if cfg.has_bias else None,
                    dram_sharded=use_dram_sharded,
                ),
                li,
            )
        down_in = act(ffn)
        if extras["typecast"]:
            down_in = act(ffn, dtype="BFLOAT8_B")
            emit(
                b.simple(
                    "typecast_mlp",
                    "TypecastDeviceOperation",
                    ELTWISE,
                    "typecast",
                    [act(ffn)],
                    [down_in],
                    attrs={
                        "bfp8_pack_precise": "false",
                        "fp32_dest_acc_en": "false",
                        "input_dtype": "DataType::BFLOAT16",
                        "output_dtype": "DataType::BFLOAT8_B",
                        "output_memory_config": _mem_cfg(down_in, norm_cores, gx),
                        "preserve_fp32_precision": "false",
                        "sub_core_grids": "std::nullopt",
                    },
                    fidelity="HiFi4",
                    cycles_per_tile=90,
                ),
                li,
            )
        emit(
            b.matmul(
                f"mlp_down_{down_in.dtype}",
                down_in,
                weight(ffn, H, mdt),
                act(H),
                fidelity=fid_mlp,
                dram_sharded=use_dram_sharded,
            ),
            li,
        )
        ccl_pair("ccl_mlp", li)
        binary("residual_mlp", li)

    for li in range(cfg.layers):
        extras = {
            "i2s": bool(rng.random() < extras_p),
            "reshape": bool(rng.random() < extras_p),
            "typecast": bool(rng.random() < extras_p * 0.6),
        }
        layer_ops(li, extras)

    # ---------------------------------------------------------------- epilogue
    last = act(H, rows=32, lrows=min(m, 32), mem="DRAM_INTERLEAVED") if not decode else act(H)
    if not decode:
        emit(
            b.simple(
                "slice_last",
                "SliceDeviceOperation",
                DATA_MOVEMENT,
                "slice",
                [act(H)],
                [last],
                attrs={
                    "output_mem_config": _mem_cfg(last, 1, gx),
                    "slice_end": f"Shape([1; 1; {m}; {H}])",
                    "slice_start": f"Shape([0; 0; {max(0, m - 32)}; 0])",
                    "step": "Shape([1; 1; 1; 1])",
                    "sub_core_grids": "std::nullopt",
                    "use_tensor_args": "false",
                },
            ),
            -1,
        )
    layernorm("ln_final", -1)
    vocab_local = _pad(-(-cfg.vocab // d))
    lm_in = tensor(1, 1, 32, H, logical_y=min(m, 32), memory="L1_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    logits = tensor(1, 1, 32, vocab_local, logical_y=min(m, 32), memory="L1_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    lm_w = tensor(1, 1, H, vocab_local, dtype="BFLOAT8_B", memory="DRAM_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    emit(b.matmul("lm_head", lm_in, lm_w, logits, fidelity="HiFi2", dram_sharded=bool(arch.dram_sharded_cores)), -1)
    if d > 1:
        full = tensor(1, 1, 32, _pad(cfg.vocab), logical_y=min(m, 32), memory="DRAM_INTERLEAVED")
        emit(
            b.simple(
                "ag_logits",
                "AllGatherAsyncDeviceOperation",
                CCL,
                "all_gather",
                [logits],
                [full],
                attrs={"cluster_axis": "1", "dim": "3", "num_links": "2", "ring_size": str(d), "topology": "Topology::Linear"},
                cores=int(rng.choice([18, 20])),
                ccl_bytes=full.nbytes * (d - 1) / d,
                eff=(0.5, 0.8),
            ),
            -1,
        )
        logits = full
    rm = tensor(1, 1, 32, logits.shape[3], layout="ROW_MAJOR", logical_y=min(m, 32))
    emit(
        b.simple(
            "untilize",
            "UntilizeDeviceOperation",
            DATA_MOVEMENT,
            "untilize",
            [logits],
            [rm],
            attrs={
                "enough_space_height": "true",
                "enough_space_width": "true",
                "fp32_dest_acc_en": "false",
                "output_mem_config": _mem_cfg(rm, 1, gx),
                "sub_core_grids": "std::nullopt",
                "use_multicore": "true",
                "use_pack_untilize": "true",
            },
            fidelity="HiFi4",
            cycles_per_tile=120,
        ),
        -1,
    )
    return Program(cfg, b.templates, np.asarray(iteration, dtype=np.int64), np.asarray(layer_of, dtype=np.int64))
