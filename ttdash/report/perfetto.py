"""`report --format perfetto`: Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing
open. One process track per timeline lane (a device, or the merged devices), a complete event
(`ph: X`) per op with its device time as `dur` (us) and its metrics as args, signposts as global
instant events. Times are the timeline's (model.timeline): real time, no pause cut."""

from __future__ import annotations

import json
from typing import TextIO

from ..model import View
from ..model.timeline import for_view
from .single import export_frame

#: Op fields carried as event args (when not missing).
ARG_FIELDS = ("id", "device", "op_to_op_us", "total_pct", "cores", "dram_gbps", "dram_pct",
              "flops", "flops_pct", "bound", "math_fidelity", "size", "signpost",
              "global_call_count")


def to_perfetto(view: View, out: TextIO) -> None:
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
    args = json.loads(export_frame(ops.iloc[tl.pos], fields)
                      .to_json(orient="records", double_precision=15, force_ascii=False))
    codes = ops["op_code"].to_numpy(dtype=object)
    cats = ops["category"].to_numpy(dtype=object)
    for k in range(len(tl)):
        p = int(tl.pos[k])
        arg = {f: v for f, v in args[k].items() if v is not None and v != ""}
        cat = cats[p] if isinstance(cats[p], str) and cats[p] else "op"
        events.append({"ph": "X", "name": str(codes[p]), "cat": cat,
                       "pid": int(tl.lane[k]) + 1, "tid": 1, "ts": float(tl.start_us[k]),
                       "dur": float(tl.end_us[k] - tl.start_us[k]), "args": arg})
    labels = ops["op_code"].to_numpy(dtype=object)
    for t, p in zip(tl.signpost_us, tl.signpost_pos):
        events.append({"ph": "i", "s": "g", "name": str(labels[p]), "cat": "signpost",
                       "pid": 1, "tid": 1, "ts": float(t)})
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "metadata": {"source": str(view.trace.path), "arch": view.summary().arch,
                        "clock": tl.source, "window": view.summary().window,
                        "device_time_us": view.totals()["device_time_us"],
                        "host_ops_not_shown": int(ops["is_host"].sum())}}
    json.dump(doc, out, allow_nan=False)
    out.write("\n")
