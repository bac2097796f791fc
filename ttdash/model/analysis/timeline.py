"""When ops ran: one lane per device, ops as intervals on a time axis, signposts as instants.

Shared by the timeline view and the Perfetto export. Times are microseconds from the lane's first
op. They come from the device FW end cycles converted with the device's own clock (devices.
annotate_overlap: each device's counter is its own, so each lane starts at its own first op), or,
where a lane has no cycle data (live rows, old CSVs), from its ops' cumulative device time + gaps.
A merged view of several devices has one row per op from different devices' counters: it is one
lane on the cumulative clock (`ttdash open --per-device` has a lane per device).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..columns import Bound

if TYPE_CHECKING:
    from ..trace import View

CYCLES = "device FW cycles"
CUMULATIVE = "cumulative device time + gaps"

#: Bound classes (columns.Bound); index = the code `binned` returns (-1: not modelled).
BOUNDS = tuple(b.value for b in Bound)


@dataclass(frozen=True)
class Timeline:
    """Ops with a device time, as intervals. Arrays are aligned and sorted by (lane, start)."""

    lanes: tuple[str, ...]
    lane: np.ndarray  # lane index per op
    start_us: np.ndarray
    end_us: np.ndarray
    pos: np.ndarray  # the op's row position in the view's ops
    bound: np.ndarray  # index into BOUNDS, -1 when not modelled
    source: str  # CYCLES, CUMULATIVE, or both joined when lanes differ
    signpost_us: np.ndarray  # where each signpost falls (first lane's clock)
    signpost_pos: np.ndarray
    breaks_us: np.ndarray  # where a host pause was cut (first lane's clock); empty: real time
    cut_us: float  # idle time taken out by the cuts (all lanes)
    unplaced: int = 0  # ops with a device time that cannot be placed (absurd, overflowing times)

    @property
    def span_us(self) -> float:
        return float(self.end_us.max()) if len(self.end_us) else 0.0

    def __len__(self) -> int:
        return len(self.pos)

    def lane_slice(self, lane: int) -> slice:
        """Where `lane`'s ops are in the arrays (sorted by lane): no scan of the other lanes."""
        a, b = np.searchsorted(self.lane, (lane, lane + 1))
        return slice(int(a), int(b))

    def lane_ops(self, lane: int, shown: np.ndarray | None = None) -> np.ndarray:
        """Indexes of `lane`'s ops (those `shown`, a mask over all ops), in start order."""
        sl = self.lane_slice(lane)
        idx = np.arange(sl.start, sl.stop)
        return idx if shown is None else idx[shown[sl]]


def build(ops: pd.DataFrame, *, merged_devices: bool,
          cut_pauses_above: float | None = None) -> Timeline:
    with np.errstate(all="ignore"):  # absurd cells (1e308 us) overflow: those ops are unplaced
        return _build(ops, merged_devices, cut_pauses_above)


def _build(ops: pd.DataFrame, merged_devices: bool,
           cut_pauses_above: float | None) -> Timeline:
    """The timeline of a view's ops (`View.ops`); `merged_devices`: one row per op merged from
    several devices (one cumulative lane). `cut_pauses_above`: idle stretches on a lane longer
    than this (us; host pauses: compile, sync, the host's own work) are shortened to it, so the
    device work is not a few specks on an empty axis; `breaks_us` says where."""
    dur = ops["device_time_us"].to_numpy(dtype="float64")
    gap = np.nan_to_num(ops["op_to_op_us"].to_numpy(dtype="float64"), nan=0.0)
    gap = np.maximum(gap, 0.0)
    is_sp = ops["is_signpost"].to_numpy(dtype=bool)
    on_device = ~is_sp & np.isfinite(dur)
    dev = ops["device"].to_numpy(dtype="float64")
    fw_end = (ops["fw_end_us"].to_numpy(dtype="float64") if "fw_end_us" in ops.columns
              else np.full(len(ops), np.nan))
    if merged_devices:
        lane_keys: list[float] = [np.nan]
        lane_of = np.where(on_device, 0, -1)
        labels = ["all devices (merged)"]
    else:
        keyed = np.where(np.isnan(dev), -1.0, dev)
        lane_keys = sorted(np.unique(keyed[on_device]).tolist())
        lane_of = np.where(on_device, np.searchsorted(lane_keys, keyed), -1)
        labels = ["dev ?" if k < 0 else f"dev {int(k)}" for k in lane_keys]
    start = np.full(len(ops), np.nan)
    sources = set()
    members = [np.flatnonzero(lane_of == i) for i in range(len(lane_keys))]
    for on in members:
        if not len(on):
            continue
        ends = fw_end[on]
        if not merged_devices and np.isfinite(ends).all():
            s = ends - dur[on]
            start[on] = s - s.min()
            sources.add(CYCLES)
        else:  # op i starts after every earlier op's time and gap and its own gap
            t = np.cumsum(gap[on] + dur[on]) - dur[on]
            start[on] = t - t[0]
            sources.add(CUMULATIVE)
    breaks: list[float] = []
    cut = 0.0
    if cut_pauses_above is not None:
        for i, on in enumerate(members):
            if not len(on):  # a merged view whose window has no device op
                continue
            on = on[np.argsort(start[on], kind="stable")]
            s, e = start[on], start[on] + dur[on]
            reach = np.concatenate([[0.0], np.maximum.accumulate(e)[:-1]])
            excess = np.maximum(s - reach - cut_pauses_above, 0.0)
            excess[0] = 0.0
            shift = np.cumsum(excess)
            start[on] = s - shift
            cut += float(shift[-1]) if len(shift) else 0.0
            if i == 0:
                breaks = (start[on][excess > 0] - cut_pauses_above / 2).tolist()
    placed = np.isfinite(start) & np.isfinite(start + dur)
    keep = np.flatnonzero((lane_of >= 0) & placed)
    unplaced = int(((lane_of >= 0) & ~placed).sum())
    order = keep[np.lexsort((start[keep], lane_of[keep]))]
    bound_txt = ops["bound"].astype(object).to_numpy()[order]
    bound = np.full(len(order), -1, dtype=np.int8)
    for b, name in enumerate(BOUNDS):
        bound[bound_txt == name] = b
    # a signpost sits where the next op of the first lane starts
    first = np.sort(np.flatnonzero(lane_of == 0))
    sp_pos = np.flatnonzero(is_sp)
    nxt = np.searchsorted(first, sp_pos)
    lane0_end = float(np.nanmax(start[first] + dur[first])) if len(first) else 0.0
    sp_us = np.where(nxt < len(first), start[first[np.minimum(nxt, len(first) - 1)]]
                     if len(first) else 0.0, lane0_end)
    return Timeline(
        lanes=tuple(labels), lane=lane_of[order].astype(np.int32), start_us=start[order],
        end_us=start[order] + dur[order], pos=order, bound=bound,
        source=" / ".join(s for s in (CYCLES, CUMULATIVE) if s in sources) or CUMULATIVE,
        signpost_us=np.asarray(sp_us, dtype="float64"), signpost_pos=sp_pos,
        breaks_us=np.asarray(breaks, dtype="float64"), cut_us=cut, unplaced=unplaced)


def binned(tl: Timeline, lane: int, t0: float, t1: float, width: int,
           shown: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One lane downsampled to `width` columns over [t0, t1): per column the busy fraction
    (0..1) and the bound code with the most time in it (-1: none, -2: busy but not modelled).
    `shown`: a mask over the timeline's ops (e.g. the table's filter); hidden ops are idle.
    Vectorised (bincount and a difference array): the cost is the visible ops', not the
    columns' or the ops' lengths."""
    width = max(int(width), 0)
    busy = np.zeros(width)
    by_bound = np.zeros((len(BOUNDS) + 1, width))
    if width == 0 or not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        return busy, np.full(width, -1)
    sel = tl.lane_ops(lane, shown)
    s, e, b = tl.start_us[sel], tl.end_us[sel], tl.bound[sel]
    vis = (e > t0) & (s < t1)
    s, e, b = np.maximum(s[vis], t0), np.minimum(e[vis], t1), b[vis].astype(np.int64)
    col = (t1 - t0) / width
    c0 = np.minimum(((s - t0) / col).astype(np.int64), width - 1)
    c1 = np.minimum(((e - t0) / col).astype(np.int64), width - 1)
    row = np.where(b < 0, len(BOUNDS), b)
    size = by_bound.size

    def add(cells: np.ndarray, weights: np.ndarray) -> None:
        nonlocal by_bound
        by_bound += np.bincount(cells, weights=weights, minlength=size).reshape(by_bound.shape)

    inside = c0 == c1
    add((row * width + c0)[inside], (e - s)[inside])
    # an op crossing column edges: its first and last columns in part, those between in full
    # (a difference array along each bound's row, summed once)
    x = ~inside
    r, a, z = row[x], c0[x], c1[x]
    add(r * width + a, t0 + (a + 1) * col - s[x])
    add(r * width + z, e[x] - (t0 + z * col))
    full = np.zeros((len(BOUNDS) + 1, width + 1))
    np.add.at(full, (r, a + 1), col)
    np.add.at(full, (r, z), -col)
    by_bound += np.cumsum(full, axis=1)[:, :width]
    busy = np.minimum(by_bound.sum(axis=0) / col, 1.0)
    top = by_bound.argmax(axis=0)
    code = np.where(top == len(BOUNDS), -2, top)
    return busy, np.where(busy > 0, code, -1)


def op_at(tl: Timeline, lane: int, t: float, shown: np.ndarray | None = None) -> int | None:
    """Index (into the timeline's arrays) of the last op on `lane` (among the `shown` ones)
    that started by `t` (the lane's first op when none did)."""
    on = tl.lane_ops(lane, shown)
    if not len(on):
        return None
    i = int(np.searchsorted(tl.start_us[on], t, side="right")) - 1
    return int(on[max(i, 0)])


def for_view(view: View, cut_pauses_above: float | None = None) -> Timeline:
    """The timeline of a View: one lane per device unless the view merged several devices."""
    return build(view.ops, merged_devices=view.merged and len(view.trace.devices) > 1,
                 cut_pauses_above=cut_pauses_above)
