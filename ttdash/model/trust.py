"""Data-trust warnings: what in a trace makes its numbers doubtful, found once per trace.

Each warning has a `kind` (stable, for machines), a one-line `message` (for people) and the
facts it rests on (counts, IDs). Every front end shows them: JSON `"warnings"`, a line in the
text formats (stderr beside CSV), a marker in the TUI header.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..format import plural
from .arch import ArchSpec, arch_from_clock
from .metrics import HOST_MARKER, MAX_DEVICE_ID, contains, num, text, whole

#: a profiler that ran out of device buffer drops every later op: at least this many device
#: op rows without device data at the end of the trace (one is counted with the scattered ones)
TAIL_MIN_ROWS = 2
CLOCK_TOLERANCE = 0.02


@dataclass(frozen=True)
class DataWarning:
    kind: str
    message: str
    facts: tuple[tuple[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **dict(self.facts)}


def trace_warnings(ordered: pd.DataFrame, arch: ArchSpec, arch_source: str,
                   clock_mhz: float | None) -> list[DataWarning]:
    """What the rows of a whole file (report order) say about the data's completeness."""
    out: list[DataWarning] = []
    n = len(ordered)
    if not n:
        return out
    is_sp = (text(ordered, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    is_host = contains(text(ordered, "OP CODE"), HOST_MARKER) & ~is_sp
    device_op = ~is_sp & ~is_host
    missing = np.isnan(num(ordered, "DEVICE KERNEL DURATION [ns]")) & device_op
    ids = ordered["ID"].to_numpy() if "ID" in ordered else np.arange(2, n + 2)

    # a metal trace captured and never replayed: its rows are the capture's, not a run's
    traced = num(ordered, "METAL TRACE ID")
    session = num(ordered, "METAL TRACE REPLAY SESSION ID")
    in_unreplayed = np.zeros(n, dtype=bool)
    for t in np.unique(traced[~np.isnan(traced)]):
        rows = traced == t
        if np.isnan(session[rows]).all():
            in_unreplayed |= rows
            out.append(DataWarning(
                "trace_not_replayed",
                f"metal trace {int(t)} was captured but never replayed: its "
                f"{plural(int((rows & device_op).sum()), 'op')} are the capture's, not a run's",
                (("trace_id", int(t)), ("ops", int((rows & device_op).sum())))))
    missing &= ~in_unreplayed

    # device data missing for the ops at the end: the profiler's device buffer filled up
    dev_pos = np.flatnonzero(device_op & ~in_unreplayed)
    has = ~missing[dev_pos]
    tail = 0
    if len(dev_pos) and has.any():
        tail = int(len(has) - 1 - np.flatnonzero(has)[-1])
    if tail >= TAIL_MIN_ROWS:
        first = int(ids[dev_pos[len(dev_pos) - tail]])
        facts: list[tuple[str, Any]] = [("rows", tail), ("first_id", first)]
        cap = _flat_cap(ordered, device_op & ~missing)
        per_device = f"; every device stops at {cap:,} rows" if cap else ""
        if cap:
            facts.append(("rows_per_device", cap))
        out.append(DataWarning(
            "device_data_missing_tail",
            f"no device data for the last {plural(tail, 'op row')} (from ID {first}){per_device}: "
            "the profiler's device buffer probably filled up (1,000 programs by default) and "
            "dropped them; raise TT_METAL_PROFILER_PROGRAM_SUPPORT_COUNT or read it out "
            "mid-run (TT_METAL_PROFILER_MID_RUN_DUMP=1, ttnn.ReadDeviceProfiler)",
            tuple(facts)))
        missing[dev_pos[len(dev_pos) - tail:]] = False

    scattered = int(missing.sum())
    if scattered:
        first = int(ids[np.flatnonzero(missing)[0]])
        out.append(DataWarning(
            "no_device_data",
            f"{plural(scattered, 'device op row')} without device data (first ID {first}): "
            "the host recorded the op but the device log has no row for it; shown without a "
            "device time, not counted in totals",
            (("rows", scattered), ("first_id", first))))

    if clock_mhz and arch_source in ("DEVICE ARCH column", "profile_log_device.csv"):
        by_clock = arch_from_clock(clock_mhz)
        if abs(clock_mhz - arch.clock_mhz) > CLOCK_TOLERANCE * arch.clock_mhz:
            seen = f" ({by_clock.name}'s)" if by_clock is not None else ""
            out.append(DataWarning(
                "clock_mismatch",
                f"the {arch_source} says {arch.name} ({arch.clock_mhz:g} MHz) but the cycle "
                f"counts give a {clock_mhz:g} MHz clock{seen}: the peaks used are "
                f"{arch.name}'s",
                (("arch", arch.name), ("arch_clock_mhz", arch.clock_mhz),
                 ("clock_mhz", clock_mhz))))
    return out


def _flat_cap(ordered: pd.DataFrame, with_data: np.ndarray) -> int | None:
    """The row count every device stops at, when there are several devices and it is the same
    for all (a per-device buffer cap rather than a run that ended)."""
    dev = whole(num(ordered, "DEVICE ID"), 0, MAX_DEVICE_ID)[with_data]
    dev = dev[~np.isnan(dev)]
    if not len(dev):
        return None
    _, counts = np.unique(dev, return_counts=True)
    return int(counts[0]) if len(counts) > 1 and (counts == counts[0]).all() else None


def corrupt_warning(corrupt_rows: int) -> list[DataWarning]:
    """The profiler's impossible timings in a view (left out of its totals)."""
    if not corrupt_rows:
        return []
    return [DataWarning(
        "corrupt_timing",
        f"{plural(corrupt_rows, 'op')} with an impossible profiler timing (kernel ~6.9e9 ns, "
        "op-to-op ~ -6.9e9 ns): shown, left out of totals",
        (("ops", corrupt_rows),))]
