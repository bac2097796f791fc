"""`report --format perfetto`: Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing
open. One process track per timeline lane (a device, or the merged devices), a complete event
(`ph: X`) per op with its device time as `dur` (us) and its metrics as args, signposts as global
instant events. Times are the timeline's (model.timeline): real time, no pause cut."""

from __future__ import annotations

import json
from typing import TextIO

from ..model import View
from ..model.analysis.timeline import for_view
from ..model.columns import export_frame
from ..model.progress import step
from .safe import records_json

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
    # the op events a block at a time (a million ops' events held at once took 2.4 GB): one
    # JSON object per op from pandas (its number formatting, nulls for missing cells); the event
    # around it a format string (a dict per op and json.dump cost 3x more); names and categories
    # encoded once per distinct value
    cats = ops["category"].astype(object).to_numpy()
    code_json: dict[object, str] = {}
    cat_json: dict[object, str] = {}
    for start in range(0, len(tl.pos), CHUNK):
        step("writing perfetto", start, len(tl.pos))
        pos = tl.pos[start:start + CHUNK]
        args = records_json(export_frame(ops.iloc[pos], fields), double_precision=15,
                            lines=True).splitlines()
        codes = [code_json.get(c) or code_json.setdefault(
            c, json.dumps(str(c), ensure_ascii=False)) for c in names[pos]]
        kinds = [cat_json.get(k) or cat_json.setdefault(
            k, json.dumps(k if isinstance(k, str) and k else "op", ensure_ascii=False))
            for k in cats[pos]]
        pids = (tl.lane[start:start + CHUNK] + 1).tolist()
        ts = tl.start_us[start:start + CHUNK].tolist()
        dur = (tl.end_us[start:start + CHUNK] - tl.start_us[start:start + CHUNK]).tolist()
        out.write(sep + ",".join(
            f'{{"ph":"X","name":{c},"cat":{k},"pid":{p},"tid":1,"ts":{t!r},"dur":{d!r},'
            f'"args":{a}}}' for c, k, p, t, d, a in zip(codes, kinds, pids, ts, dur, args)))
        sep = ","
    out.write("]}\n")
