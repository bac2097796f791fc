"""What to try for an op code, from its reason class (model.reasons), in the words of the
Tenstorrent guides the tuning advice already cites (model.guides); each line names the guide
section it follows. One set of lines per op code (a few hundred at most): plain Python."""

from __future__ import annotations

from .guides import LLMS_OP_CONFIGS, LLMS_TIPS, MATRIX_ENGINE, TECH, TENSOR_LAYOUTS, Guide
from .reason_classes import (
    DISPATCH,
    PM_COMPUTE,
    PM_DRAM,
    PM_OTHER,
    ROOF_COMPUTE,
    ROOF_DRAM,
    SKEW,
    SLOW,
    UNDER,
)

_LLMS = ("LLMs in TT-NN", TECH + "LLMs/llms.md")
MEMORY_CONFIGS = Guide(*_LLMS, "4.3.1 Memory Configs")
PROGRAM_CONFIGS = Guide(*_LLMS, "4.3.2 Program Configs and Picking the Right Matmul")
DRAM_SHARDED = Guide(*_LLMS, "4.3.2.2 DRAM-Sharded Matmul")
TRACING = Guide(*_LLMS, "4.1 Tracing")

#: Op codes that exist to pad or unpad to whole tiles.
PADDING_OPS = ("TilizeWithValPadding", "UntilizeWithUnpadding", "Pad")
_LOW_PRECISION = ("BFLOAT8_B", "BFLOAT4_B", "BFLOAT2_B")
_HIGH_FIDELITY = ("HiFi4", "HiFi3")


def line(advice: str, guide: Guide) -> str:
    return f"{advice} ({guide.title}, {guide.section})"


def try_lines(group: str, cls: int, fidelity: object, in1_dtype: object, sharded: bool,
              has_dram: bool) -> list[str]:
    """What to try for op code `group` whose reason class is `cls` (`has_dram`: its ops have
    DRAM tensors)."""
    name = str(group)
    matmul = "Matmul" in name or "Linear" in name
    conv = "Conv" in name
    out: list[str] = []
    if cls == UNDER:
        out.append(line("more cores: a multicore matmul program config over the whole grid "
                        "(compute_with_storage_grid_size; sweep it for the fastest grid)",
                        PROGRAM_CONFIGS) if matmul else
                    line("more cores: shard its tensors over the whole core grid (a sharded "
                         "memory config's core_grid) or use the op's multicore variant",
                         MEMORY_CONFIGS))
    elif cls == SKEW:
        out.append(line("even shards: a core grid that divides the tensor evenly (padded or "
                        "uneven shards keep the other cores waiting)", MEMORY_CONFIGS))
    elif cls in (PM_DRAM, ROOF_DRAM) or (cls in (SLOW, PM_OTHER) and has_dram):
        out.append(line("fewer DRAM round trips: keep activations and outputs sharded in L1 "
                        "(L1_WIDTH_SHARDED_MEMORY_CONFIG) between ops", MEMORY_CONFIGS))
        out.append(line("fuse it with its neighbours (fused_activation, fused ops): "
                        "intermediates are not written to DRAM and read back", LLMS_OP_CONFIGS))
        if matmul and not sharded:
            out.append(line("in decode (M = 32), a DRAM-sharded matmul: weights sharded over "
                            "the DRAM banks, activations width-sharded in L1", DRAM_SHARDED))
    elif cls in (SLOW, PM_OTHER) and matmul:
        out.append(line("below both roofs with its tensors in L1: larger in0_block_w and "
                        "out_subblock_h/w in the program config (higher is better)",
                        PROGRAM_CONFIGS))
    elif cls == DISPATCH:
        out.append(line("capture the steady state in a metal trace: a replay does not wait "
                        "for the host to dispatch each op", TRACING))
        out.append(line("fuse small ops into their neighbours: fewer ops, fewer gaps",
                        LLMS_OP_CONFIGS))
    if (matmul or conv) and cls in (PM_DRAM, ROOF_DRAM, PM_COMPUTE, ROOF_COMPUTE, SLOW,
                                    PM_OTHER):
        if isinstance(in1_dtype, str) and in1_dtype and \
                not any(p in in1_dtype.upper() for p in _LOW_PRECISION):
            out.append(line(f"bfloat8_b (or bfloat4_b) weights where the model's accuracy "
                            f"allows (now {in1_dtype})", LLMS_TIPS))
        if cls in (PM_COMPUTE, ROOF_COMPUTE) and fidelity in _HIGH_FIDELITY:
            out.append(line(f"a lower math fidelity where accuracy allows (now {fidelity}; "
                            "HiFi2 for bfloat8_b weights, LoFi for bfloat4_b)", MATRIX_ENGINE))
        elif cls in (PM_COMPUTE, ROOF_COMPUTE) and sharded and fidelity == "HiFi2":
            out.append(line("its math runs on one core per DRAM bank: more cores do not help; "
                            "LoFi with bfloat4_b weights where accuracy allows (2x HiFi2's "
                            "math, half the weight bytes)", LLMS_TIPS))
    if name.startswith(PADDING_OPS):
        out.append(line("shapes in multiples of 32 (whole tiles) need no padding pass",
                        TENSOR_LAYOUTS))
    return out
