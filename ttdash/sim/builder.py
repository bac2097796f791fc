"""Op templates of each kind (matmul, layernorm, eltwise, CCL, data movement), de-duplicated.

Every template draws its efficiency, launch overhead and ids from the run's RNG when it is
first made, so the order of the calls is part of the (seeded) output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .archspec import SimArch
from .attrs import KERNELS, compute_cfg, format_attrs, grid_str, mem_cfg
from .model import CCL, ELTWISE, MATMUL, NORM, TILE, ModelConfig, OpTemplate, TensorSpec, tensor

__all__ = ["OpBuilder"]


class OpBuilder:
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
            Mt, Kt, Nt = M // TILE, K // TILE, N // TILE
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
                kernels = KERNELS["mmdram"]
            elif batched or self.rng.random() < 0.15:
                # no program config: the op picks one itself
                cores = self.cores_for_tiles(Mt * Nt * batch // 4 or 1)
                pc = "std::nullopt"
                kernels = KERNELS["mm2d"]
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
                kernels = KERNELS["mm1d"]
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
                kernels = KERNELS["mm2d"]
            attrs = format_attrs(
                bcast_batch="1" if batched else "0",
                compute_kernel_config=compute_cfg(arch, fidelity, fp32=fp32),
                global_cb="std::nullopt",
                output_dtype=f"DataType::{out.dtype}",
                output_mem_config=mem_cfg(out, cores, gx),
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
            tiles = max(1, int(sum(o.elements for o in outs) // (TILE * TILE)))
            c = cores if cores is not None else self.cores_for_tiles(tiles)
            work = tiles * cycles_per_tile / (self.arch.clock_ghz * c) if cycles_per_tile else 0.0
            if flops:
                fid = fidelity or "HiFi4"
                work = max(work, flops / (self.arch.tflops_per_core[fid] * 1e12 * c) * 1e9)
            k = KERNELS[kernels]
            return OpTemplate(
                op_code=op_code,
                kind=kind,
                attributes=format_attrs(**attrs),
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


    def layernorm(self, key: str, x: TensorSpec, *, cores: int, rms: bool, sharded: bool) -> int:
        """A LayerNorm (RMSNorm if ``rms``) of ``x`` on ``cores`` cores, sharded or interleaved."""
        return self.simple(
            key,
            "LayerNormDeviceOperation",
            NORM,
            "layernorm",
            [x, tensor(1, 1, 32, x.logical[3], logical_y=1)],
            [x],
            attrs={
                "compute_kernel_config": compute_cfg(self.arch, "HiFi4", fp32=True),
                "distributed_norm_stage": "DistributedLayerNormStage::NOT_DISTRIBUTED",
                "dtype": "std::nullopt",
                "eps": "1e-05",
                "norm_type": "LayerNormType::RMSNORM" if rms else "LayerNormType::LAYERNORM",
                "output_mem_config": mem_cfg(x, cores, self.gx),
                "program_config": "LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(x=8;y=4);subblock_w=4;block_h=1;block_w=2;inplace=0;legacy_reduction=0;legacy_rsqrt=0;use_welford=0)"
                if sharded
                else "LayerNormDefaultProgramConfig(legacy_reduction=0;legacy_rsqrt=0;use_welford=0)",
            },
            fidelity="HiFi4",
            cores=cores,
            cycles_per_tile=700,
            eff=(0.35, 0.8),
        )

    def binary(self, key: str, x: TensorSpec, *, op: str, mem_cores: int) -> int:
        """An eltwise ``BinaryOpType::op`` of two tensors shaped like ``x``."""
        return self.simple(
            key,
            "BinaryNgDeviceOperation",
            ELTWISE,
            "binary",
            [x, x],
            [x],
            attrs={
                "binary_op_type": f"BinaryOpType::{op}",
                "compute_kernel_config": "std::nullopt",
                "dtype": "DataType::BFLOAT16",
                "input_dtype": "DataType::BFLOAT16",
                "is_quant_op": "false",
                "is_sfpu": "false",
                "is_where_op": "false",
                "lhs_activations": "SmallVector([])",
                "memory_config": mem_cfg(x, mem_cores, self.gx),
                "post_activations": "SmallVector([])",
                "rhs_activations": "SmallVector([])",
                "scalar": "std::nullopt",
                "sub_core_grids": "std::nullopt",
                "subtile_broadcast_type": "SubtileBroadcastType::NONE",
                "worker_grid": grid_str(self.workers, self.gx),
            },
            fidelity="HiFi4",
            cycles_per_tile=64,
            eff=(0.3, 0.8),
        )

    def ccl_pair(self, key: str, full: TensorSpec, part: TensorSpec) -> tuple[int, int]:
        """A reduce-scatter of ``full`` into ``part`` across the devices and the all-gather back."""
        d, gx = max(1, self.devices), self.gx
        ccl_common = {
            "barrier_semaphore": f"GlobalSemaphore(cores={grid_str(self.workers, gx)};buffer_type=BufferType::L1)",
            "chunks_per_sync": "std::nullopt",
            "cluster_axis": "1",
            "dim": "3",
            "num_buffers_per_channel": "std::nullopt",
            "num_links": "2",
            "num_workers_per_link": "std::nullopt",
            "output_mem_config": mem_cfg(full, 1, gx),
            "ring_size": str(d),
            "sub_device_id": "std::nullopt",
            "topology": "Topology::Linear" if d <= 2 else "Topology::Ring",
        }
        moved = full.nbytes * (d - 1) / d
        rs = self.simple(
            key + "_rs",
            "ReduceScatterMinimalAsyncDeviceOperation",
            CCL,
            "reduce_scatter",
            [full],
            [part],
            attrs={**ccl_common, "compute_kernel_config": "std::nullopt", "optional_intermediate_mem_config": "std::nullopt"},
            fidelity="HiFi4",
            cores=int(self.rng.choice([18, 20])),
            ccl_bytes=moved,
            eff=(0.55, 0.85),
        )
        ag = self.simple(
            key + "_ag",
            "AllGatherAsyncDeviceOperation",
            CCL,
            "all_gather",
            [part],
            [full],
            attrs={**ccl_common, "reverse_order": "false", "use_optimal_ccl_for_llama": "false"},
            cores=int(self.rng.choice([18, 20])),
            ccl_bytes=moved,
            eff=(0.55, 0.85),
        )
        return rs, ag


def _largest_divisor(n: int, choices: tuple[int, ...]) -> int:
    for c in choices:
        if c and n % c == 0:
            return c
    return 1
