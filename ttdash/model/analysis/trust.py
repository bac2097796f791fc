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

from ...format import plural
from ..arch import ArchSpec, arch_from_clock
from ..read.counters import RISC_NAMES, counter_columns, counter_values
from .metrics import HOST_MARKER, MAX_DEVICE_ID, contains, num, text, whole
from .progcache import HASH, HIT, REPLAY, programs

#: a profiler that ran out of device buffer drops every later op: at least this many device
#: op rows without device data at the end of the trace (one is counted with the scattered ones)
TAIL_MIN_ROWS = 2
CLOCK_TOLERANCE = 0.02
#: the device-buffer-cap signature: every device has the same number of op rows with device
#: data, and that is at most this share of the ops the host issued to a device
CAP_SHARE = 0.9
#: a utilisation percentage above this is beyond the hardware (1 point above 100 for rounding)
UTIL_LIMIT_PCT = 101.0
#: the columns trace_warnings reads, besides the counter columns (read_columns): a table the
#: analysis cache stored reads back only these (Trace.warnings)
READ = ("ID", "OP CODE", "OP TYPE", "DEVICE ID", "GLOBAL CALL COUNT",
        "DEVICE KERNEL DURATION [ns]", "METAL TRACE ID", REPLAY, HASH, HIT)


def read_columns(labels: Any) -> list[str]:
    """Of a table's column labels, those trace_warnings reads."""
    return [*READ, *counter_columns(list(labels))]


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
    # a replayed trace's capture rows (trace id, no session): recorded by the host, never run
    # as such (their device time is the replay rows'), so no device data is expected
    missing &= ~(~np.isnan(traced) & np.isnan(session))

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

    if not any(w.kind == "device_data_missing_tail" for w in out):
        out += _buffer_cap(ordered, device_op & ~in_unreplayed, missing)

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
    with_data = device_op & ~np.isnan(num(ordered, "DEVICE KERNEL DURATION [ns]"))
    out += _beyond_limits(ordered, with_data)
    out += _partial_counters(ordered, with_data)
    out += _stale_cache_flag(ordered)
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


def _buffer_cap(ordered: pd.DataFrame, device_op: np.ndarray,
                missing: np.ndarray) -> list[DataWarning]:
    """The device-buffer-cap signature anywhere in the trace (tt-metal PR #46710: 1,972 rows
    on each of 32 devices for about 10,800 ops a device): every device has the same number of
    op rows with device data, well under the ops the host issued to a device. The host's count
    is a device's op rows, with or without device data, or, where GLOBAL CALL COUNT numbers the
    ops ((op id << 10) | device), the span of a device's op ids (a report or a device log
    without the host's rows for the dropped ops)."""
    cap = _flat_cap(ordered, device_op & ~missing)
    if not cap:
        return []
    dev = whole(num(ordered, "DEVICE ID"), 0, MAX_DEVICE_ID)
    on = device_op & ~np.isnan(dev)
    _, rows = np.unique(dev[on], return_counts=True)
    issued = int(rows.max())
    gcc = num(ordered, "GLOBAL CALL COUNT")
    both = on & ~np.isnan(gcc)
    if both.any():
        g, d = np.nan_to_num(gcc[both]).astype(np.int64), dev[both].astype(np.int64)
        if ((g & 1023) == d).all():
            frame = pd.DataFrame({"d": d, "op": g >> 10}).groupby("d", observed=True)["op"]
            issued = max(issued, int((frame.max() - frame.min() + 1).max()))
    if cap > CAP_SHARE * issued or issued - cap < TAIL_MIN_ROWS:
        return []
    devices = len(np.unique(dev[device_op & ~missing & ~np.isnan(dev)]))
    return [DataWarning(
        "device_buffer_cap",
        f"every one of the {devices} devices has device data for exactly {cap:,} op rows, but "
        f"the host issued about {issued:,} ops to a device: the profiler's device buffer "
        f"capped the capture ({cap / issued:.0%} of the ops are timed; totals cover only "
        "them); raise TT_METAL_PROFILER_PROGRAM_SUPPORT_COUNT or read the buffer out mid-run "
        "(TT_METAL_PROFILER_MID_RUN_DUMP=1, ttnn.ReadDeviceProfiler)",
        (("rows_per_device", cap), ("ops_per_device", issued), ("devices", devices)))]


def _beyond_limits(ordered: pd.DataFrame, rows: np.ndarray) -> list[DataWarning]:
    """Utilisation percentages (PM FPU UTIL (%) and the counters' "(%)" columns) above 100%
    (UTIL_LIMIT_PCT) or below 0 on device op rows: not physical. PM FPU UTIL is PM COMPUTE over
    the kernel's duration, so above 100% the performance model's compute time is longer than
    the whole op: the model is wrong for that op."""
    out = []
    codes = text(ordered, "OP CODE")
    for name in counter_columns(list(ordered.columns)):
        if "(%)" not in name:
            continue
        v = counter_values(ordered[name]).astype("float64", copy=False)
        with np.errstate(invalid="ignore"):
            bad = rows & ((v > UTIL_LIMIT_PCT) | (v < 0))
        if not bad.any():
            continue
        worst = float(np.max(np.abs(v[bad])))
        top = codes[bad].value_counts()
        most = str(top.index[0]) if len(top) else ""
        why = ("the performance model's compute time (PM COMPUTE) is longer than the op ran, so "
               "its model (PM IDEAL, Eff%, recoverable time) is wrong for them"
               if name.startswith("PM ") else "a counter beyond what the hardware can do: not a "
               "measurement to trust")
        out.append(DataWarning(
            "values_beyond_limits",
            f"{name} is outside 0-100% on {plural(int(bad.sum()), 'op row')} (up to "
            f"{worst:,.0f}%; most: {most}): {why}",
            (("column", name), ("rows", int(bad.sum())), ("max", round(worst, 3)),
             ("op_code", most))))
    return out


def _partial_counters(ordered: pd.DataFrame, rows: np.ndarray) -> list[DataWarning]:
    """Counter columns with values on only part of the device ops with device data: an
    incomplete capture (a NoC-trace buffer that filled, a multipass counter capture short of
    passes, a device left out). Per-RISC times (empty where an op has no such kernel) and the
    performance model's PM FPU UTIL are not counters of a capture."""
    total = int(rows.sum())
    dev = whole(num(ordered, "DEVICE ID"), 0, MAX_DEVICE_ID)
    partial = []
    for name in counter_columns(list(ordered.columns)):
        if name in RISC_NAMES or name.startswith("PM "):
            continue
        has = rows & ~np.isnan(counter_values(ordered[name]).astype("float64", copy=False))
        if 0 < int(has.sum()) < total:
            partial.append((name, has))
    if not partial:
        return []
    name, has = partial[0]
    where = f"{int(has.sum()):,} of {total:,} device ops"
    with_values = np.unique(dev[has & ~np.isnan(dev)])
    without = np.unique(dev[rows & ~has & ~np.isnan(dev)])
    if len(with_values) and len(without) and not np.isin(with_values, without).any():
        where += (f": device{'s' if len(with_values) > 1 else ''} "
                  f"{', '.join(str(int(d)) for d in with_values)} only")
    more = f" (and {plural(len(partial) - 1, 'more column')})" if len(partial) > 1 else ""
    return [DataWarning(
        "counters_incomplete",
        f"{name} has values on {where}{more}: an incomplete counter capture (a NoC-trace "
        "buffer that filled, a multipass capture short of passes, a device left out); ops "
        "without them are not comparable",
        (("columns", [{"column": n, "ops": int(h.sum())} for n, h in partial]),
         ("device_ops", total)))]


def _stale_cache_flag(ordered: pd.DataFrame) -> list[DataWarning]:
    """PROGRAM CACHE HIT never True although programs ran again on their device
    (model.progcache): the flag is the first run's, repeated; no miss is counted from it."""
    p = programs(ordered)
    repeats = p.stale_repeats if p is not None else 0
    if not repeats:
        return []
    return [DataWarning(
        "program_cache_flag_stale",
        f"PROGRAM CACHE HIT is False on all {plural(repeats, 'run')} of programs that had "
        "already run on their device: the profiler repeats each program's first flag (its "
        "op-info cache; TT_METAL_PROFILER_NO_CACHE_OP_INFO=1 or tracy --no-op-info-cache "
        "records each run's own), unless the program cache was off; no miss is counted from it",
        (("rows", repeats),))]


def corrupt_warning(corrupt_rows: int) -> list[DataWarning]:
    """The profiler's impossible timings in a view (left out of its totals)."""
    if not corrupt_rows:
        return []
    return [DataWarning(
        "corrupt_timing",
        f"{plural(corrupt_rows, 'op')} with an impossible profiler timing (kernel ~6.9e9 ns, "
        "op-to-op ~ -6.9e9 ns): shown, left out of totals",
        (("ops", corrupt_rows),))]
