"""What every guide rule builds on (model.guides runs the rules, model.guide_rules has most of
them): the rules' input and the entries frame they return. Apart from guides so that the rules
and the list of rules do not import each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..columns import PAUSE_ABOVE_US

#: The columns every entries frame has, in this order (a rule adds its own figures after them).
ENTRY_COLUMNS = ("id", "kind", "message", "device_us", "gap_us", "at_stake_us", "saving_us")


@dataclass(frozen=True)
class GuideInput:
    """What a rule reads: the op rows (signposts left out), the raw rows behind them (same
    positions; shapes, memory and datatypes of every tensor), whether the rows are one per op
    across devices (merged), and the arch's peak DRAM bandwidth (GB/s)."""
    ops: pd.DataFrame
    rows: pd.DataFrame
    merged: bool
    dram_gbps: float
    pause_above_us: float = PAUSE_ABOVE_US  # longer gaps are host pauses, not at stake
    #: what the input was made from (a View): for rules that read more than the ops (the
    #: warm-up rule reads the trace's iterations)
    source: object = field(default=None, compare=False, repr=False)
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


Finder = Callable[[GuideInput], pd.DataFrame]


def empty_entries() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("kind", "message") else
                                      "Int64" if c == "id" else "float64")
                         for c in ENTRY_COLUMNS})


def dispatch_gaps(g: GuideInput) -> np.ndarray:
    """Each op's op-to-op gap when it is a dispatch gap (up to the pause threshold), else 0:
    a host pause (compile, warm-up, Python) is not a gap the op adds."""
    if "gaps" not in g.cache:  # (each rule's entries read it; a chunked rule, per chunk)
        gap = g.ops["op_to_op_us"].to_numpy(dtype="float64", na_value=np.nan)
        with np.errstate(invalid="ignore"):
            g.cache["gaps"] = np.where(np.isnan(gap) | (gap < 0) | (gap > g.pause_above_us),
                                       0.0, gap)
    gaps: np.ndarray = g.cache["gaps"]
    return gaps


def make_entries(g: GuideInput, pos: np.ndarray, kind: str | np.ndarray, message: Any,
                 saving_us: Any = np.nan, **extra: Any) -> pd.DataFrame:
    """An entries frame for the ops at positions `pos` (time at stake: their device time and
    the dispatch gap before each); `kind`: theirs, or each one's (an object array)."""
    ops = g.ops
    dev = np.nan_to_num(ops["device_time_us"].to_numpy(dtype="float64", na_value=np.nan)[pos])
    gap = dispatch_gaps(g)[pos]
    n = len(pos)
    # each column its own array (copy=False), not the floats and the texts copied into a block
    # each: ~50 MB more at once of a million ops' padding entries
    frame = pd.DataFrame({
        "id": pd.array(ops["id"].to_numpy()[pos], dtype="Int64"),
        "kind": pd.Series(kind if isinstance(kind, np.ndarray) else filled(n, kind),
                          dtype=object, copy=False),
        "message": pd.Series(np.asarray(message, dtype=object) if np.ndim(message) else
                             filled(n, message), dtype=object, copy=False),
        "device_us": dev, "gap_us": gap, "at_stake_us": dev + gap,
        "saving_us": np.asarray(saving_us, dtype="float64") if np.ndim(saving_us) else
        np.full(n, saving_us, dtype="float64")}, copy=False)
    for k, v in extra.items():
        frame[k] = v
    return frame


def kinds_of(runs: list[tuple[int, str]]) -> np.ndarray:
    """The kinds of entries made in runs of (count, kind), in order: one str per kind."""
    return np.concatenate([filled(n, kind) for n, kind in runs]) if runs else filled(0, "")


def filled(n: int, value: object) -> np.ndarray:
    """An object array of `n` references to `value` (np.full makes a new str per element: 61
    bytes an entry, 61 MB of a million-op trace's padding entries)."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out
