"""Advice from the Tenstorrent tuning guides: rules tt-perf-report does not have.

Each rule reads the trace's op rows (their shapes, datatypes, fidelity and order) and names ops
with a stable ``kind``, the time at stake (the ops' device time plus the op-to-op gaps before
them) and the guide it follows (`Guide`: title and URL of the tt-metal tech report):

* ``padding_tile`` / ``padding_tilize``: ops computing on tiles padded beyond the logical shape,
  and the TilizeWithValPadding ops that pad (model.guide_rules.find_padding);
* ``fusion_matmul`` / ``fusion_eltwise``: eltwise ops on the output of a matmul or of another
  eltwise op, which a fused kernel would absorb (find_fusion);
* ``format_float32`` / ``format_fidelity``: matmuls and convs with FLOAT32 operands or at HiFi4
  (find_formats).

`RULES` is the list of rule finders, run in order; a new rule is a function from `GuideInput`
to an entries frame (ENTRY_COLUMNS, plus its own figures) added to it, with its kinds in
`KINDS`. Everything is computed on arrays over the ops; the entries are frames (no Python
object per op); `summarise_guides` groups them per kind for the first answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...memory import settle
from ..columns import PAUSE_ABOVE_US, shared_columns, without_signposts
from ..read.readback import LaterFrames
from .guide_base import ENTRY_COLUMNS as ENTRY_COLUMNS  # (and below: still importable from here)
from .guide_base import Finder as Finder
from .guide_base import GuideInput as GuideInput
from .guide_base import dispatch_gaps as dispatch_gaps
from .guide_base import empty_entries as empty_entries
from .guide_base import filled as filled
from .guide_base import make_entries as make_entries
from .guide_rules import find_formats, find_fusion, find_padding
from .iterations import find_iterations, warmup_message

#: Figures a rule may add to its entries, summed per kind in the summary.
EXTRA_FIGURES = ("dram_bytes", "flop_bound_us")
#: Op IDs named per rule in the summary (the ops with most time at stake).
EXAMPLES = 3
#: Kinds of one entry whose message the summary shows (first, before the rules per op).
DETAIL_KINDS = ("warmup",)

TECH = "https://github.com/tenstorrent/tt-metal/blob/main/tech_reports/"


@dataclass(frozen=True)
class Guide:
    """A Tenstorrent document a rule follows (read for these rules; see docs/advice.md)."""
    title: str
    url: str
    section: str


TENSOR_LAYOUTS = Guide("Tensor and Memory Layouts", TECH + "tensor_layouts/tensor_layouts.md",
                       "3.2 Tiled layout")
MATRIX_ENGINE = Guide("Matrix Engine", TECH + "matrix_engine/matrix_engine.md",
                      "Matrix Mult; Math Fidelity")
LLMS_OP_CONFIGS = Guide("LLMs in TT-NN", TECH + "LLMs/llms.md",
                        "4.3.2 Program Configs (fused_activation); 4.5.5 Reducing OP-to-OP Gap")
LLMS_TIPS = Guide("LLMs in TT-NN", TECH + "LLMs/llms.md", "4.6.2 Specific tips")
ADVANCED = Guide("Advanced Performance Optimizations for Models",
                 TECH + "AdvancedPerformanceOptimizationsForModels/"
                 "AdvancedPerformanceOptimizationsForModels.md",
                 "1.3.1 (a first run compiles the model; capture and measure after it)")


@dataclass(frozen=True)
class Kind:
    """One advice kind: what it says to do (the summary's line), its guide, and what its
    saving estimate is (None: the rule gives no estimate)."""
    kind: str
    advice: str
    guide: Guide
    estimate: str | None


KINDS: dict[str, Kind] = {k.kind: k for k in (
    Kind("padding_tile", "computing on tiles padded beyond the logical shape: sizes that are "
         "multiples of 32 waste no tile rows or columns", TENSOR_LAYOUTS,
         "the padded share of each op's device time (time taken as proportional to work)"),
    Kind("padding_tilize", "TilizeWithValPadding ops padding tensors to whole 32x32 tiles: "
         "tile-aligned inputs need no padding pass", TENSOR_LAYOUTS, None),
    Kind("fusion_matmul", "eltwise ops (bias, activation) on a matmul's output: fuse them into "
         "the matmul (ttnn.linear's bias/activation, the program config's fused_activation)",
         LLMS_OP_CONFIGS,
         "each fused op's op-to-op gap plus its intermediate's DRAM write and read at the "
         "arch's peak DRAM bandwidth"),
    Kind("fusion_eltwise", "consecutive eltwise ops on one tensor: one fused kernel would "
         "read and write it once", LLMS_OP_CONFIGS,
         "each fused op's op-to-op gap plus its intermediate's DRAM write and read at the "
         "arch's peak DRAM bandwidth"),
    Kind("format_float32", "matmuls and convs with FLOAT32 operands: the guides use bfloat16 "
         "activations and bfloat8_b (or bfloat4_b) weights, where the model's accuracy tests "
         "allow", LLMS_TIPS,
         "half the FLOAT32 operands' DRAM traffic at the arch's peak DRAM bandwidth "
         "(bfloat16 is 2 bytes)"),
    Kind("format_fidelity", "matmuls and convs at HiFi4: the guides use HiFi2 for bfloat8_b "
         "weights and LoFi for bfloat4_b (2x and 4x the math throughput of HiFi4), where the "
         "model's accuracy tests allow", MATRIX_ENGINE,
         "half the op's FLOP-bound time (its FLOPs at HiFi4's peak), what HiFi2 would take "
         "off"),
    Kind("warmup", "the first iterations are warm-up (kernels compile, the program cache "
         "fills): measure the steady state (--steady-state), not the whole trace", ADVANCED,
         "the warm-up iterations' wall time above as many steady iterations (what a "
         "measurement of the whole trace overstates)"),
)}


_TENSORS = ("INPUT_", "OUTPUT_")


def guide_columns(labels: Any) -> list[str]:
    """Of the trace's column `labels`, those guide_input reads: "ID" and the tensors'."""
    return [c for c in labels if c == "ID" or c.startswith(_TENSORS)]


def guide_input(ops: pd.DataFrame, ordered: pd.DataFrame, merged: bool, dram_gbps: float,
                pause_above_us: float = PAUSE_ABOVE_US, source: object = None) -> GuideInput:
    """The rules' input for a view's ops (`ordered`: the trace's rows, with "ID"; only its
    guide_columns are read)."""
    ops = without_signposts(ops)
    tensors = [c for c in ordered.columns if c.startswith(_TENSORS)]
    if not len(ordered) or "ID" not in ordered.columns or "id" not in ops.columns:
        rows = _renumbered(ordered, tensors) if len(ordered) == len(ops) else \
            pd.DataFrame(index=pd.RangeIndex(len(ops)))
        return GuideInput(_renumbered(ops), rows, merged, float(dram_gbps),
                          float(pause_above_us), source)
    ids = pd.Index(ordered["ID"].to_numpy())
    if not ids.is_unique:  # (merged multi-file runs) the first row of an ID
        first = ~ids.duplicated()
        ids, ordered = ids[first], ordered[first]
    at = ids.get_indexer(ops["id"].to_numpy())  # every op is one of the trace's rows
    if len(at) == len(ordered) and np.array_equal(at, np.arange(len(at))):
        rows = _renumbered(ordered, tensors)  # the whole file, one row per op
    elif (at >= 0).all():
        rows = ordered[tensors].iloc[at].reset_index(drop=True)
    else:  # ops that are no row of `ordered`: nothing known of their tensors
        rows = ordered[tensors].iloc[np.maximum(at, 0)].reset_index(drop=True)
        rows.loc[at < 0, :] = np.nan
    return GuideInput(_renumbered(ops), rows, merged, float(dram_gbps),
                      float(pause_above_us), source)


def _renumbered(frame: pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """`frame` (its `columns`) indexed 0..n-1, its columns' memory shared, not copied (pandas
    2's reset_index and column selection copy: ~600 MB of a million ops, where pandas 3 shares
    them until written; the rules only read)."""
    out = shared_columns(frame, frame.columns if columns is None else columns)
    out.index = pd.RangeIndex(len(out))
    return out


def guide_frames(g: GuideInput, keep: Callable[[pd.DataFrame], Any] | None = None
                 ) -> Iterator[Any]:
    """Each rule's entries (a frame per rule with any), in RULES order; `keep`: what each
    frame is given to as it is made, what it returns yielded instead."""
    for find in RULES:
        frame = find(g)
        found = len(frame) > 0
        if found and keep is not None:
            frame = keep(frame)
        settle(len(g.ops))  # (what the rule freed given back before the next one runs)
        if not found:
            continue
        yield frame
        del frame  # (not held while the next rule runs)
        settle(len(g.ops))  # (nor what using its entries freed)


def rule_frames(g: GuideInput) -> Sequence[pd.DataFrame]:
    """guide_frames' frames, found once per input and kept apart: no frame of every entry
    (a million-op trace has 1.5 million; their concatenation would double them at its peak).
    Each kind is one rule's, so a kind's rows are in one frame, in the order entries has
    them. With g.cache["keep"] (the analysis cache's Entry.spilled: a frame written to its
    folder, read back when used), each frame is handed to it as it is made: every earlier
    rule's entries were ~160 MB of a million ops' first json run, held while the later rules
    ran."""
    if "frames" not in g.cache:
        keep = g.cache.get("keep")
        made = list(guide_frames(g, keep))
        g.cache["frames"] = made if keep is None else LaterFrames(made)
    frames: Sequence[pd.DataFrame] = g.cache["frames"]
    return frames


def entries(g: GuideInput) -> pd.DataFrame:
    """Every guide entry as one frame (ENTRY_COLUMNS and the rules' figures; made on each call,
    from rule_frames)."""
    frames = rule_frames(g)
    return pd.concat(frames, ignore_index=True) if frames else empty_entries()


# ------------------------------------------------------------------ the summary
@dataclass(frozen=True)
class GuideRule:
    """One kind's entries aggregated: ops, their device time, gaps, time at stake, the
    estimate (None when the kind has none) and the figures its rule adds, heaviest IDs."""
    kind: Kind
    ops: int
    device_us: float
    gap_us: float
    at_stake_us: float
    share_pct: float  # of the window's steady state (device time + dispatch gaps)
    saving_us: float | None
    figures: dict[str, float]
    ids: tuple[int, ...]
    detail: str | None = None  # a kind of one entry (warmup): that entry's message

    def as_dict(self) -> dict[str, Any]:
        k = self.kind
        return {"kind": k.kind,
                "message": k.advice + (f": {self.detail}" if self.detail else ""),
                "ops": self.ops,
                "device_time_us": round(self.device_us, 6), "gap_us": round(self.gap_us, 6),
                "at_stake_us": round(self.at_stake_us, 6),
                "at_stake_steady_pct": round(self.share_pct, 6),
                "saving_us": None if self.saving_us is None else round(self.saving_us, 6),
                "saving_basis": k.estimate,
                **{f: round(v, 6) for f, v in self.figures.items()},
                "ids": list(self.ids),
                "guide": {"title": k.guide.title, "url": k.guide.url,
                          "section": k.guide.section}}


@dataclass(frozen=True)
class GuideSummary:
    entries: int = 0
    rules: tuple[GuideRule, ...] = ()  # kinds with entries: the warm-up, then by saving (rank_key)

    def as_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "rules": [r.as_dict() for r in self.rules]}


def summarise_guides(g: GuideInput) -> GuideSummary:
    """The guide entries per kind (arrays; no object per op). A rule at a time: the entries
    found here are summed and dropped (a million ops have 1.5 million; holding every rule's
    at once, with their figures concatenated, was ~240 MiB of a million-op table's peak),
    unless they are kept already (rule_frames). A kind is one rule's, and its sums are exact
    (_exact_sum): the same from kept entries or from entries made here."""
    kept = g.cache.get("frames")
    dev = np.nansum(g.ops["device_time_us"].to_numpy(dtype="float64", na_value=np.nan))
    total = float(dev + dispatch_gaps(g).sum())  # the steady state: device + dispatch gaps
    out, entries = [], 0
    for frame in kept if kept is not None else guide_frames(g):
        entries += len(frame)
        out += _summarise(frame, total)
        del frame  # (not held while the next rule runs)
    # the warm-up first: it says what a measurement of the whole trace is worth; then the
    # rules by their estimated saving (what following them is worth), those without an
    # estimate last, by time at stake
    out.sort(key=rank_key)
    return GuideSummary(entries, tuple(out))


def _summarise(frame: pd.DataFrame, total: float) -> list[GuideRule]:
    """The kinds of one rule's entries, each summed (`total`: the steady state, the basis of
    each share)."""
    figures = [f for f in EXTRA_FIGURES if f in frame.columns]
    summed = ["device_us", "gap_us", "at_stake_us", "saving_us", *figures]
    codes, kinds = pd.factorize(frame["kind"].to_numpy(dtype=object))
    values = {c: frame[c].to_numpy(dtype="float64", na_value=np.nan) for c in summed}
    stake = values["at_stake_us"]
    counts = np.bincount(codes, minlength=len(kinds))
    ids = frame["id"].to_numpy(dtype=np.int64)
    out = []
    for code in range(len(kinds)):  # (a kind or two)
        kind = str(kinds[code])
        at = np.flatnonzero(codes == code)
        s = {c: _exact_sum(v if len(kinds) == 1 else v[at]) for c, v in values.items()}
        heavy = ids[at[np.argsort(-stake[at], kind="stable")[:EXAMPLES]]].tolist()  # ties: order
        kk = KINDS[kind]
        saving = s["saving_us"]
        detail = str(frame["message"].to_numpy(dtype=object)[at[0]]) \
            if kind in DETAIL_KINDS else None  # the kind's first entry's message
        out.append(GuideRule(
            kk, int(counts[code]), s["device_us"], s["gap_us"],
            s["at_stake_us"], s["at_stake_us"] / total * 100 if total > 0 else 0.0,
            None if kk.estimate is None or math.isnan(saving) else saving,
            {f: s[f] for f in figures if not math.isnan(s[f])},
            tuple(int(i) for i in heavy), detail))
    return out


def _exact_sum(values: np.ndarray) -> float:
    """The sum of the values that are not NaN, correctly rounded (math.fsum: the same bits in
    any order and however the entries are split or stored); NaN when every value is."""
    known = values[~np.isnan(values)]
    return math.fsum(known) if len(known) else math.nan


def rank_key(r: GuideRule) -> tuple[bool, bool, float, float, str]:
    """The summary's order: the warm-up (DETAIL_KINDS) first, then most saving first, then the
    rules without an estimate (most time at stake first)."""
    return (r.kind.kind not in DETAIL_KINDS, r.saving_us is None, -(r.saving_us or 0.0),
            -r.at_stake_us, r.kind.kind)


def find_warmup(g: GuideInput) -> pd.DataFrame:
    """One ``warmup`` entry when the trace's first iterations are warm-up (model.iterations;
    the message of iterations.warmup_advice without its source: the kind names the guide),
    named by K, the first steady op; its time at stake and estimate are the warm-up's excess
    over as many steady iterations. None in a window without the warm-up (--steady-state, a
    signpost region, a replay session)."""

    view: Any = g.source
    if view is None or view.window.mode != "all":
        return empty_entries()
    found = find_iterations(view.trace, view)
    ids = g.ops["id"].to_numpy()
    at = np.flatnonzero(ids == found.steady_from_id)[:1] if found.found and found.warmup \
        else np.zeros(0, dtype=np.int64)
    if not len(at):
        return empty_entries()
    frame = make_entries(g, at, "warmup", warmup_message(found), saving_us=found.excess_us)
    # nothing of the steady state is at stake: the warm-up is time a whole-trace measurement
    # counts on top of it (its estimate)
    frame["device_us"], frame["gap_us"], frame["at_stake_us"] = 0.0, 0.0, 0.0
    return frame


#: The guide rules, run in this order.
RULES: list[Finder] = [find_padding, find_fusion, find_formats, find_warmup]
