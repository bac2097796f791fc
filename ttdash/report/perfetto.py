"""`report --format perfetto`: Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing
open. One process track per timeline lane (a device, or the merged devices), a complete event
(`ph: X`) per op with its device time as `dur` (us) and its metrics as args, signposts as global
instant events. Times are the timeline's (model.timeline): real time, no pause cut."""

from __future__ import annotations

import json
from typing import TextIO

from ..model import View
from ..model.columns import export_frame
from ..model.timeline import for_view
from .safe import records_json

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
    # one JSON object per op from pandas (its number formatting, nulls for missing cells);
    # the event around it is a format string: a dict per op and json.dump cost 3x more
    args = records_json(export_frame(ops.iloc[tl.pos], fields), double_precision=15,
                        lines=True).splitlines()
    names = ops["op_code"].astype(object).to_numpy()  # ops' and signposts' names
    codes = names[tl.pos]
    cats = ops["category"].astype(object).to_numpy()[tl.pos]
    pids = (tl.lane + 1).tolist()
    ts, dur = tl.start_us.tolist(), (tl.end_us - tl.start_us).tolist()
    x_events = [
        f'{{"ph":"X","name":{json.dumps(str(c), ensure_ascii=False)},'
        f'"cat":{json.dumps(k if isinstance(k, str) and k else "op", ensure_ascii=False)},'
        f'"pid":{p},"tid":1,"ts":{t!r},"dur":{d!r},"args":{a}}}'
        for c, k, p, t, d, a in zip(codes, cats, pids, ts, dur, args)]
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
    out.write(",".join([*(json.dumps(e, ensure_ascii=False) for e in events), *x_events]))
    out.write("]}\n")
