"""`report --format perfetto`: Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing
open. One process track per timeline lane (a device, or the merged devices), a complete event
(`ph: X`) per op with its device time as `dur` (us) and its metrics as args, signposts as global
instant events. Times are the timeline's (model.timeline): real time, no pause cut."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format import distinct
from ..model import View
from ..model.analysis.timeline import for_view
from ..model.columns import export_frame
from ..model.progress import step
from .export import put_behind
from .safe import float_reprs, joined_later, record_parts, records_json

CHUNK = 20_000  # op events per block: bounded memory for a million ops

#: Op fields carried as event args (when not missing).
ARG_FIELDS = ("id", "device", "op_to_op_us", "total_pct", "cores", "dram_gbps", "dram_pct",
              "flops", "flops_pct", "bound", "math_fidelity", "size", "signpost",
              "global_call_count")


def to_perfetto(view: View, out: TextIO, shown: object = None) -> None:
    tl = for_view(view)
    ops = view.ops
    events: list[dict] = []
    for i, name in enumerate(tl.lanes):
        events.append({"ph": "M", "name": "process_name", "pid": i + 1,
                       "args": {"name": name if name.startswith("all") else
                                f"Device {name.removeprefix('dev ')}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": i + 1,
                       "args": {"sort_index": i}})
    fields = tuple(f for f in ARG_FIELDS if f in ops.columns)
    names = ops["op_code"].astype(object).to_numpy()  # ops' and signposts' names
    for t, p in zip(tl.signpost_us, tl.signpost_pos):
        events.append({"ph": "i", "s": "g", "name": str(names[p]), "cat": "signpost",
                       "pid": 1, "tid": 1, "ts": float(t)})
    sm = view.summary()
    meta = {"source": str(view.trace.path), "arch": sm.arch, "clock": tl.source,
            "window": sm.window,
            "device_time_us": view.totals()["device_time_us"],
            "host_ops_not_shown": int(ops["is_host"].sum()),
            "ops_not_placed": tl.unplaced}
    out.write('{"displayTimeUnit":"ns","metadata":' + json.dumps(meta, ensure_ascii=False)
              + ',"traceEvents":[')
    out.write(",".join(json.dumps(e, ensure_ascii=False) for e in events))
    sep = "," if events else ""
    # the op events a block at a time (a million ops' events held at once took 2.4 GB), each
    # event's text joined from its columns' texts in pyarrow (no Python string per event):
    # its args one JSON object per op as `report -f json` makes them (pandas' number format,
    # nulls for missing cells), names and categories encoded once per distinct value, times
    # as Python writes a float (repr); a block's texts joined (its args' pieces among the
    # event's: one join) and written by a thread while the next block's are made
    name_at, name_texts = _distinct_json(names, str)
    cat_at, cat_texts = _distinct_json(ops["category"].astype(object).to_numpy(),
                                       lambda k: k if isinstance(k, str) and k else "op")
    with put_behind(out) as send:
        for start in range(0, len(tl.pos), CHUNK):
            step("writing perfetto", start, len(tl.pos))
            pos = tl.pos[start:start + CHUNK]
            frame = export_frame(ops.iloc[pos], fields)
            args = record_parts(frame, double_precision=15)
            if args is None:  # a column the column path does not write: pandas' encoder
                args = [pa.array(records_json(frame, double_precision=15, lines=True)
                                 .split("\n")[:-1], pa.string())]  # (a string's newline is
                #                                                    escaped)
            del frame
            lane = tl.lane[start:start + CHUNK] + 1
            t0, t1 = tl.start_us[start:start + CHUNK], tl.end_us[start:start + CHUNK]
            pieces = [
                '{"ph":"X","name":', pc.take(name_texts, pa.array(name_at[pos])),
                ',"cat":', pc.take(cat_texts, pa.array(cat_at[pos])),
                ',"pid":', pc.cast(pa.array(lane), pa.string()),
                ',"tid":1,"ts":', float_reprs(t0), ',"dur":', float_reprs(t1 - t0),
                ',"args":', *args, "},"]
            send(sep, joined_later(pieces))
            sep = ","
            del pieces, args
        send("]}\n")


def _distinct_json(values: np.ndarray, text: Callable[[object], object]
                   ) -> tuple[np.ndarray, pa.Array]:
    """Each value's position among the distinct values (format.distinct), and each distinct
    value's json.dumps(text(value))."""
    at, uniques = distinct(values)
    return at, pa.array([json.dumps(text(v), ensure_ascii=False) for v in uniques], pa.string())

