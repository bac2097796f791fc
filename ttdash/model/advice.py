"""Advice for one op: tt-perf-report 1.4.1's rules (matmul fidelity, grid, program config, gaps,
host fallback), worded for a detail pane."""

from __future__ import annotations

import math
import re
from typing import Any

from .columns import GAP_LIMIT_US

__all__ = ["GAP_LIMIT_US", "advise", "fidelity_verdict"]

MANTISSA = {"FLOAT32": 23, "BFLOAT16": 8, "BFLOAT8_B": 7, "BFLOAT4_B": 3}
INTEGER_TYPES = {"UINT8", "UINT16", "INT32", "UINT32"}


def fidelity_verdict(in0: object, in1: object, out: object, fidelity: object) -> tuple[str, str]:
    """("sufficient"|"too_high"|"too_low"|"unknown"|"not_applicable", advice)."""
    if {in0, in1, out} & INTEGER_TYPES:
        return "not_applicable", ""
    try:
        a, w, o = MANTISSA[str(in0)], MANTISSA[str(in1)], MANTISSA[str(out)]
    except KeyError:
        return "unknown", ""
    f = str(fidelity)
    if a == 8 and o >= 7:  # BF16 activations, wide output
        return {"HiFi4": ("sufficient", "HiFi2 may do: it drops the lowest activation bit and "
                          "runs 2x faster than HiFi4"),
                "HiFi3": ("too_low", "use HiFi4 with BF16 activations for full accuracy (unless "
                          "FLOP-bound)"),
                "HiFi2": ("too_low", "use HiFi4 with BF16 activations for full accuracy (unless "
                          "FLOP-bound)"),
                "LoFi": ("too_low", "use HiFi2 or HiFi4 with BF16 activations for accuracy")
                }.get(f, ("unknown", ""))
    if a == 8 and o == 3:
        return {"HiFi4": ("too_high", "HiFi2 very likely suffices for a BFP4 output (2x faster)"),
                "HiFi3": ("too_high", "HiFi2 very likely suffices for a BFP4 output"),
                "HiFi2": ("sufficient", "LoFi may suffice for a BFP4 output (almost 2x faster)"),
                "LoFi": ("too_low", "HiFi2 may be more accurate for large accumulations")
                }.get(f, ("unknown", ""))
    if w >= 7:
        if f in ("HiFi4", "HiFi3"):
            return "too_high", "HiFi2 suffices for BFP8 weights and is faster"
        if f == "HiFi2":
            return "sufficient", ("LoFi may suffice for a BFP4 output (almost 2x faster)"
                                  if o == 3 else "")
        if f == "LoFi":
            return "too_low", "HiFi2 is recommended: LoFi drops the lowest 2 weight bits"
        return "unknown", ""
    if w == 3:
        return (("sufficient", "") if f == "LoFi"
                else ("too_high", "LoFi suffices with BFP4 weights and is much faster"))
    return "unknown", ""


def _int_attr(attrs: str, name: str) -> int | None:
    m = re.search(rf"{name}=(\d+)", attrs)
    return int(m.group(1)) if m else None


def _number(v: object) -> float | None:
    """The value as a float; None when missing (None, NaN, pd.NA) or not a number."""
    try:
        x = float(v)  # type: ignore[arg-type]  # anything else raises, and is missing
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def advise(op: dict[str, Any], attributes: str = "") -> list[str]:
    """Advice lines for one derived op row (a dict of a View's ops columns)."""
    out: list[str] = []
    if op.get("is_host"):
        out.append("Host fallback op: move it to the device.")
    gap = _number(op.get("op_to_op_us"))
    if gap is not None and gap > GAP_LIMIT_US:
        out.append(f"Op-to-op gap {gap:,.1f} us > {GAP_LIMIT_US} us: the device waited for the "
                   "host; metal trace or compile-time args could remove it.")
    if op.get("analysis") != "full":
        return out
    verdict, fid_advice = fidelity_verdict(op.get("in0_dtype"), op.get("in1_dtype"),
                                           op.get("out_dtype"), op.get("math_fidelity"))
    bound, sharded = op.get("bound"), bool(op.get("dram_sharded"))
    flops_pct = _number(op.get("flops_pct"))
    if bound in ("DRAM", "BOTH"):
        if not sharded and "SparseMatmul" not in str(op.get("op_code")):
            out.append("DRAM-bound: try a DRAM-sharded program config "
                       "(MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig).")
        if verdict == "too_low" and flops_pct is not None and flops_pct < 40:
            out.append(f"Fidelity: {fid_advice}.")
        if verdict == "too_high":
            out.append(f"Fidelity: {fid_advice}.")
    elif bound == "FLOP":
        cores, avail = _number(op.get("cores")), _number(op.get("available_cores"))
        if not sharded and cores is not None and avail is not None and cores < avail:
            out.append(f"FLOP-bound on {int(cores)} of {int(avail)} cores: use a bigger grid.")
        if verdict == "too_high":
            out.append(f"Fidelity: {fid_advice}.")
    elif bound == "SLOW":
        mem = op.get("in0_memory")
        if mem and "L1" not in str(mem):
            out.append(f"Neither DRAM- nor FLOP-bound: put input 0 in L1 if possible (now {mem}).")
        block = _int_attr(attributes, "in0_block_w") if "program_config" in attributes else None
        sub_h = _int_attr(attributes, "out_subblock_h") if "program_config" in attributes else None
        sub_w = _int_attr(attributes, "out_subblock_w") if "program_config" in attributes else None
        if not sharded and block is None and sub_h is None and sub_w is None:
            out.append("No program_config: set one to choose in0_block_w and out_subblock_h/w.")
        else:
            if block is not None and block < 2:
                out.append(f"in0_block_w={block} is small: try 2 or more.")
            if not sharded and sub_h is not None and sub_w is not None and sub_h * sub_w < 2:
                out.append(f"Output subblock {sub_h}x{sub_w} is small: aim for h*w >= 2.")
            if fid_advice:
                out.append(f"Fidelity: {fid_advice}.")
    return out
