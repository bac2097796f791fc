"""Advice: tt-perf-report 1.4.1's "Advice" section, as data.

The same ops and the same conditions as tt-perf-report (one entry per bullet it prints), in
ttdash's own words:

* ``host``: a host fallback op ("Fallback" section), one entry per op;
* ``gap``: an op whose op-to-op gap is above GAP_LIMIT_US ("High Op-to-Op Gap"), one entry per
  op, plus one whole-trace ``gap_saving`` entry: what running with metal trace could save
  (each listed gap less 6 us, as tt-perf-report counts it), in us and % of device + gap time,
  and how much of it is host pauses, which tracing does not remove (ttdash's split);
* ``matmul_*``: one entry per bullet of "Matmul Optimization" (every op whose code contains
  "Matmul"; ``matmul_ok`` where it prints "Optimized"). Its fidelity bullets that ask for a
  *higher* fidelity (the verdict "too_low": "use HiFi4 ... for full accuracy") are
  ``matmul_accuracy``: following them makes the op slower, so they are accuracy advice, never
  a saving (ACCURACY_KINDS); the other fidelity bullets (a lower fidelity would do, and is
  faster) stay ``matmul_fidelity``.

`advice(ops)` lists them for a table of ops (report order); `op_advice(op)` is one op's (the
details pane), from the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...format import fmt_us
from ..columns import GAP_LIMIT_US, PAUSE_ABOVE_US

__all__ = ["ACCURACY_KINDS", "GAP_LIMIT_US", "Advice", "advice", "fidelity_verdict", "gap_saving",
           "op_advice"]

#: tt-perf-report subtracts 6 us (not the 6.5 us limit) from each listed gap for the saving.
GAP_FLOOR_US = 6.0
MANTISSA = {"FLOAT32": 23, "BFLOAT16": 8, "BFLOAT8_B": 7, "BFLOAT4_B": 3}
INTEGER_TYPES = {"UINT8", "UINT16", "INT32", "UINT32"}
#: Advice kinds about accuracy, not speed: following them costs time (never ranked as a saving).
ACCURACY_KINDS = ("matmul_accuracy",)
#: The label an accuracy bullet's message starts with.
ACCURACY_LABEL = "accuracy, not speed"


@dataclass(frozen=True)
class Advice:
    id: int | None  # the op's ID; None for whole-trace advice
    kind: str
    message: str
    saving_us: float | None = None
    saving_pct: float | None = None
    host_pauses_us: float | None = None  # gap_saving: the part tracing does not remove
    dispatch_us: float | None = None  # gap_saving: the part it can

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()
                if v is not None or k in ("id", "kind", "message")}


# ------------------------------------------------------------------ fidelity
_BF16_WIDE = {"HiFi4": ("sufficient", "HiFi2 may do: it drops the lowest activation bit and runs "
                        "2x faster than HiFi4"),
              "HiFi3": ("too_low", "unless FLOP-bound, use HiFi4 with BF16 activations for full "
                        "accuracy"),
              "HiFi2": ("too_low", "unless FLOP-bound, use HiFi4 with BF16 activations for full "
                        "accuracy"),
              "LoFi": ("too_low", "use HiFi2 or HiFi4 with BF16 activations for accuracy")}
_BF16_BFP4 = {"HiFi4": ("too_high", "HiFi2 very likely suffices for a BFP4 output (2x faster)"),
              "HiFi3": ("too_high", "HiFi2 very likely suffices for a BFP4 output and is faster"),
              "HiFi2": ("sufficient", "LoFi may suffice for a BFP4 output (almost 2x faster)"),
              "LoFi": ("too_low", "HiFi2 may be more accurate for large accumulations")}
_BFP8_WIDE = {"HiFi4": ("too_high", "HiFi2 suffices for BFP8 weights (2x faster than HiFi4)"),
              "HiFi3": ("too_high", "HiFi2 suffices for BFP8 weights and is faster than HiFi3"),
              "HiFi2": ("sufficient", ""),
              "LoFi": ("too_low", "HiFi2 is recommended: LoFi drops the lowest 2 weight bits")}
_BFP8_BFP4 = {**_BFP8_WIDE,
              "HiFi2": ("sufficient", "LoFi may suffice for a BFP4 output (almost 2x faster)"),
              "LoFi": ("too_low", "HiFi2 may be slightly more accurate for large accumulations")}


def fidelity_verdict(in0: object, in1: object, out: object, fidelity: object) -> tuple[str, str]:
    """("sufficient"|"too_high"|"too_low"|"unknown"|"not_applicable", advice or "").

    tt-perf-report's cases; where it stops on an assertion (a fidelity it does not know) or
    says a datatype is unsupported, this says "unknown" with a message."""
    if {in0, in1, out} & INTEGER_TYPES:
        return "not_applicable", "fidelity is not evaluated for integer datatypes"
    missing = [str(d) for d in (in0, in1, out) if str(d) not in MANTISSA]
    if missing:
        return "unknown", f"fidelity is not evaluated for datatype {missing[0]}"
    a, w, o = (MANTISSA[str(d)] for d in (in0, in1, out))
    f = str(fidelity)
    unknown = ("unknown", f"fidelity {f} is not one tt-perf-report knows")
    if a == 8 and o >= 7:
        return _BF16_WIDE.get(f, unknown)
    if a == 8 and o == 3:
        return _BF16_BFP4.get(f, unknown)
    if w >= 7 and o >= 7:
        return _BFP8_WIDE.get(f, unknown)
    if w >= 7 and o == 3:
        return _BFP8_BFP4.get(f, unknown)
    if w == 3:
        return ("sufficient", "") if f == "LoFi" else \
            ("too_high", "LoFi suffices with BFP4 weights and is much faster")
    return "unknown", f"{f} with {in0}/{in1} inputs and a {out} output is not evaluated"


# ------------------------------------------------------------------ one op
def _number(v: object) -> float | None:
    """The value as a float; None when missing (None, NaN, pd.NA) or not a number."""
    try:
        x = float(v)  # type: ignore[arg-type]  # anything else raises, and is missing
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _text(v: object) -> str | None:
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) \
        else str(v)


def is_matmul(op: dict[str, Any]) -> bool:
    """The model marks matmuls (op code contains "Matmul", not a signpost) as fully analysed."""
    return op.get("analysis") == "full"


def matmul_advice(op: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, message) for each bullet tt-perf-report prints under a matmul ("matmul_ok" for
    its "Optimized")."""
    if op.get("sparse_nnz_missing"):
        return [("matmul_sparse", "sparse matmul: utilisation not modelled (the row has no "
                 "numeric nnz in its attributes)")]
    fidelity = _text(op.get("math_fidelity"))
    fidelity = fidelity.split()[0] if fidelity and fidelity.split() else None
    verdict, fid = fidelity_verdict(_text(op.get("in0_dtype")), _text(op.get("in1_dtype")),
                                    _text(op.get("out_dtype")), fidelity)
    bound, sharded = op.get("bound"), bool(op.get("dram_sharded"))
    # a higher fidelity is slower: that bullet is about accuracy, and says so
    fid_bullet = (("matmul_accuracy", f"{ACCURACY_LABEL}: fidelity: {fid} (a higher fidelity "
                   "is slower)") if verdict == "too_low" else ("matmul_fidelity",
                                                               f"fidelity: {fid}"))
    out: list[tuple[str, str]] = []
    if bound in ("DRAM", "BOTH"):
        if not sharded and "SparseMatmul" not in str(op.get("op_code")):
            out.append(("matmul_dram_sharded", "DRAM-bound: try a DRAM-sharded program config "
                        "(MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig)"))
        flops_pct = _number(op.get("flops_pct"))
        if verdict == "too_low" and flops_pct is not None and flops_pct < 40:
            out.append(fid_bullet)
        if verdict == "too_high":
            out.append(fid_bullet)
    elif bound == "FLOP":
        cores, avail = _number(op.get("cores")), _number(op.get("available_cores"))
        if not sharded and cores is not None and avail is not None and cores < avail:
            out.append(("matmul_grid", f"FLOP-bound on {cores:g} of {avail:g} cores: use a "
                        "bigger grid"))
        if verdict == "too_high":
            out.append(fid_bullet)
    elif bound == "SLOW":
        mem = _text(op.get("in0_memory"))
        if mem and "L1" not in mem:
            out.append(("matmul_in0_l1", f"neither DRAM- nor FLOP-bound: put input 0 in L1 if "
                        f"possible (now {mem})"))
        block = _number(op.get("in0_block_w"))
        sub_h, sub_w = _number(op.get("out_subblock_h")), _number(op.get("out_subblock_w"))
        if not sharded and block is None and sub_h is None and sub_w is None:
            out.append(("matmul_program_config", "no program_config: set one to choose "
                        "in0_block_w and out_subblock_h/w"))
        else:
            good = True
            if block is None:
                out.append(("matmul_in0_block_w", "no in0_block_w in the program config"))
                good = False
            elif block < 2:
                out.append(("matmul_in0_block_w", f"in0_block_w={block:g} is small: try 2 or "
                            "more"))
                good = False
            if not sharded:
                if sub_h is None or sub_w is None:
                    out.append(("matmul_subblock", "no output subblock in the program config"))
                    good = False
                elif sub_h * sub_w < 2:
                    out.append(("matmul_subblock", f"output subblock {sub_h:g}x{sub_w:g} is "
                                "small: aim for h*w >= 2"))
                    good = False
            if good:
                what = (f"in0_block_w={block:g}" if sharded else
                        f"in0_block_w={block:g} and output subblock {sub_h:g}x{sub_w:g}")
                out.append(("matmul_config_ok", f"{what} look reasonable; no rule applies"))
            if fid:
                out.append(fid_bullet)
    return out or [("matmul_ok", "optimised: no rule applies")]


HOST_MESSAGE = "host fallback op: move it to the device"


def gap_message(gap: float) -> str:
    return (f"op-to-op gap {gap:,.1f} us > {GAP_LIMIT_US:g} us: the device waited for the host "
            "(metal trace, or runtime args made compile-time args, could remove it)")


def op_advice(op: dict[str, Any]) -> list[Advice]:
    """Advice for one derived op row (a dict of a View's ops columns)."""
    op_id = _number(op.get("id"))
    ident = int(op_id) if op_id is not None else None
    out: list[Advice] = []
    if op.get("is_host"):
        out.append(Advice(ident, "host", HOST_MESSAGE))
    gap = _number(op.get("op_to_op_us"))
    if gap is not None and gap > GAP_LIMIT_US:
        out.append(Advice(ident, "gap", gap_message(gap)))
    if is_matmul(op):
        out.extend(Advice(ident, k, m) for k, m in matmul_advice(op))
    return out


# ------------------------------------------------------------------ a table of ops
@dataclass(frozen=True)
class Saving:
    """tt-perf-report's tracing estimate (each gap above GAP_LIMIT_US less GAP_FLOOR_US, as a
    share of device + gap time) and its split: the part in host pauses (gaps above the pause
    threshold: compile, warm-up, Python between iterations, which tracing does not remove) and
    the part in dispatch gaps (which it can), that one also as a share of the steady state
    (device time + dispatch gaps)."""
    saving_us: float
    saving_pct: float
    pauses_us: float
    dispatch_us: float
    ops: int
    pause_ops: int
    pause_above_us: float
    steady_pct: float

    def message(self) -> str:
        head = (f"running with metal trace could save {fmt_us(self.saving_us)} "
                f"({self.saving_pct:.1f}% of device + gap time, tt-perf-report's estimate): "
                f"{self.ops:,} ops waited over {GAP_LIMIT_US:g} us for the host")
        if not self.pause_ops:
            return head
        pauses = (f"{head}; {fmt_us(self.pauses_us)} of it "
                  f"{'is' if self.pause_ops == 1 else 'are'} {self.pause_ops:,} host "
                  f"pause{'' if self.pause_ops == 1 else 's'} over {fmt_us(self.pause_above_us)} "
                  "(compile, warm-up, Python), which tracing does not remove")
        if self.dispatch_us < 0.005:  # never "0.00 us" to remove: say there is nothing
            return f"{pauses}; no dispatch gap is left for it to remove"
        return (f"{pauses}; the dispatch gaps it can remove are {fmt_us(self.dispatch_us)} "
                f"({self.steady_pct:.1f}% of the steady state)")


def gap_saving(ops: pd.DataFrame, pause_above_us: float = PAUSE_ABOVE_US) -> Saving | None:
    """The tracing saving over the ops whose gap is above GAP_LIMIT_US, split at
    `pause_above_us`; None when no gap is above the limit."""
    gap = ops["op_to_op_us"].to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore"):
        high = gap > GAP_LIMIT_US
        pause = gap > pause_above_us
    if not high.any():
        return None
    part = np.where(high, gap - GAP_FLOOR_US, 0.0)
    saving, pauses = float(part.sum()), float(part[pause].sum())
    device = float(np.nansum(ops["device_time_us"].to_numpy(dtype="float64", na_value=np.nan)))
    total = device + float(np.nansum(gap))
    steady = device + float(np.nansum(np.where(pause, np.nan, gap)))
    dispatch = saving - pauses
    return Saving(saving, saving / total * 100 if total > 0 else math.nan, pauses, dispatch,
                  int(high.sum()), int((high & pause).sum()), pause_above_us,
                  dispatch / steady * 100 if steady > 0 else math.nan)


#: What the matmul rules read of an op (its advice is a function of these alone).
MATMUL_FIELDS = ("op_code", "is_signpost", "sparse_nnz_missing", "math_fidelity", "in0_dtype",
                 "in1_dtype", "out_dtype", "bound", "dram_sharded", "flops_pct", "cores",
                 "available_cores", "in0_memory", "in0_block_w", "out_subblock_h",
                 "out_subblock_w")


MATMUL_CHUNK = 1 << 17
#: advice_frames' frames have at most this many entries: each holds its own copy of its
#: messages' text (a chunk of 131,072 matmuls has ~260,000 entries, ~100 MB of text as one)
FRAME_ROWS = 1 << 15


def advice(ops: pd.DataFrame, pause_above_us: float = PAUSE_ABOVE_US) -> list[Advice]:
    """Every entry for these ops (iter_advice's, as a list)."""
    return list(iter_advice(ops, pause_above_us))


def iter_advice(ops: pd.DataFrame, pause_above_us: float = PAUSE_ABOVE_US) -> Iterator[Advice]:
    """Every entry for these ops, in tt-perf-report's order: host fallbacks, high gaps (then the
    whole-trace saving), matmuls; made as they are read (a million-op trace has hundreds of
    thousands). Only the rows that can have advice are visited, and a matmul's rules run once
    per distinct combination of the fields they read (repeated layers repeat them: 26,900
    matmuls of a 93,600-op trace have a few dozen)."""
    ids = ops["id"].to_numpy()
    host = ops["is_host"].to_numpy(dtype=bool)
    yield from (Advice(int(i), "host", HOST_MESSAGE) for i in ids[host])
    saving = gap_saving(ops, pause_above_us)
    if saving is not None:
        gap = ops["op_to_op_us"].to_numpy(dtype="float64", na_value=np.nan)
        with np.errstate(invalid="ignore"):
            high = gap > GAP_LIMIT_US
        for i, g in zip(ids[high], gap[high]):
            yield from (a for a in op_advice({"id": i, "op_to_op_us": g}) if a.kind == "gap")
        yield Advice(None, "gap_saving", saving.message(), saving_us=saving.saving_us,
                     saving_pct=saving.saving_pct, host_pauses_us=saving.pauses_us,
                     dispatch_us=saving.dispatch_us)
    for pos, group, by_group in matmul_rule_chunks(ops):
        for ident, g in zip(ids[pos], group):
            yield from (Advice(int(ident), k, m) for k, m in by_group[int(g)])


Bullets = list[tuple[str, str]]  # (kind, message) of each rule that applies


def advice_frames(ops: pd.DataFrame, pause_above_us: float = PAUSE_ABOVE_US
                  ) -> Iterator[pd.DataFrame]:
    """iter_advice's entries as frames (id, kind, message; the saving's frame adds its figures),
    in the same order, a section or at most FRAME_ROWS entries of matmuls at a time: what JSON
    writes with no Python object per entry (a 93,600-op trace has 55,000 entries)."""
    ids = ops["id"].to_numpy()
    host = ops["is_host"].to_numpy(dtype=bool)

    def frame(i: np.ndarray, kind: object, message: object) -> pd.DataFrame:
        return pd.DataFrame({"id": pd.array(i, dtype="Int64"), "kind": kind, "message": message})

    if host.any():
        yield frame(ids[host], "host", HOST_MESSAGE)
    saving = gap_saving(ops, pause_above_us)
    if saving is not None:
        gap = ops["op_to_op_us"].to_numpy(dtype="float64", na_value=np.nan)
        with np.errstate(invalid="ignore"):
            high = gap > GAP_LIMIT_US
        yield frame(ids[high], "gap", [gap_message(g) for g in gap[high].tolist()])
        yield pd.DataFrame([{"id": None, "kind": "gap_saving", "message": saving.message(),
                             "saving_us": saving.saving_us, "saving_pct": saving.saving_pct,
                             "host_pauses_us": saving.pauses_us,
                             "dispatch_us": saving.dispatch_us}])
    for pos, group, by_group in matmul_rule_chunks(ops):
        # each op's bullets, in op order: the group's bullets repeated per op of the group
        size = np.zeros(int(group.max()) + 1, dtype=np.int64)
        kinds: list[str] = []
        messages: list[str] = []
        start = np.zeros_like(size)
        for g in sorted(by_group):
            start[g], size[g] = len(kinds), len(by_group[g])
            kinds += [k for k, _ in by_group[g]]
            messages += [m for _, m in by_group[g]]
        n = size[group]
        first = np.repeat(start[group], n)
        within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        flat = first + within
        del first, within
        at_ids = np.repeat(ids[pos], n)
        kind_of, message_of = np.asarray(kinds, dtype=object), np.asarray(messages, dtype=object)
        for lo in range(0, len(flat), FRAME_ROWS):  # (a frame's text is its own copy)
            part = flat[lo:lo + FRAME_ROWS]
            yield frame(at_ids[lo:lo + FRAME_ROWS], kind_of[part], message_of[part])


def matmul_rule_chunks(ops: pd.DataFrame
                       ) -> Iterator[tuple[np.ndarray, np.ndarray, dict[int, Bullets]]]:
    """The matmuls' rules a chunk at a time (bounded memory): (positions of the chunk's matmuls,
    the group of each, each group's (kind, message) bullets). The rules run once per distinct
    combination of the fields they read (repeated layers repeat them: 26,900 matmuls of a
    93,600-op trace have a few dozen)."""
    mm = np.flatnonzero((ops["analysis"] == "full").to_numpy(dtype=bool))
    fields = [f for f in MATMUL_FIELDS if f in ops.columns]
    memo: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    for start in range(0, len(mm), MATMUL_CHUNK):
        pos = mm[start:start + MATMUL_CHUNK]
        sub = ops[fields].iloc[pos]
        group = sub.groupby(fields, dropna=False, sort=False, observed=True).ngroup().to_numpy()
        first = np.unique(group, return_index=True)[1]
        bullets = {}
        for i, r in zip(first, sub.iloc[first].to_dict("records")):
            key = tuple(None if isinstance(v, float) and math.isnan(v) else v for v in r.values())
            if key not in memo:
                memo[key] = matmul_advice(r)
            bullets[int(group[i])] = memo[key]
        yield pos, group, bullets
