"""A transformer-like workload described as a list of op templates: the data model.

An *op template* is everything about an op that stays the same each time the
op runs (op code, attributes, shapes, dtypes, memory, core count, a modelled
base kernel duration). The generator tiles one *iteration* (a prologue, the
decoder layers, an epilogue) of template ids to the requested op count and adds
per-run noise, so large traces stay cheap to build. :mod:`.builder` makes the
templates of each op kind, :mod:`.program` lays out one iteration.

The duration model is a small roofline: FLOPs against the per-core peak of the
op's math fidelity, DRAM bytes (counted the way tt-perf-report counts them)
against the DRAM peak, plus L1/SFPU work, divided by an efficiency drawn per
template and plus a launch overhead. Efficiencies are drawn so that a run has
DRAM-bound, FLOP-bound and slow matmuls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .archspec import SimArch

__all__ = [
    "TensorSpec",
    "OpTemplate",
    "ModelConfig",
    "Program",
    "dtype_bytes",
    "tensor",
]

# Kinds of op, used by the duration model and the per-RISC breakdown.
MATMUL, SDPA, NORM, ELTWISE, DATA_MOVEMENT, CCL = "matmul", "sdpa", "norm", "eltwise", "dm", "ccl"

TILE = 32


def pad(n: int) -> int:
    """Round ``n`` up to a whole tile."""
    return max(TILE, -(-n // TILE) * TILE)


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
        py, px = pad(y), pad(x)
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
        ffn = 4 * hidden if style == "gpt" else pad(int(hidden * 8 / 3 / 256 + 0.999) * 256)
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
