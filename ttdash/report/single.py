"""Non-interactive outputs of one trace: json, csv, markdown, table."""

from __future__ import annotations

import io
import json
import math
from typing import TextIO

import pandas as pd

from ..format import fmt_int, fmt_num, fmt_pct, fmt_us
from ..model import View
from .safe import md_cell, write_csv

JSON_OP_FIELDS = ("id", "op_code", "op_type", "device", "device_time_us", "op_to_op_us",
                  "total_pct", "cores", "dram_gbps", "dram_pct", "flops", "flops_pct", "bound",
                  "math_fidelity", "signpost")
CSV_FIELDS = JSON_OP_FIELDS + ("category", "size", "io_dram_gbps", "io_dram_pct", "corrupt",
                               "global_call_count")
INT_FIELDS = {"id", "device", "cores", "global_call_count"}


def select(view: View, top: int | None, rows=None) -> pd.DataFrame:
    """The ops to print: all in report order, or the `top` ones by share of total time, or the
    given positions (`rows`: what a TUI view shows, in its order)."""
    if rows is not None:
        ops = view.ops.iloc[rows]
        return ops[~ops["is_signpost"].to_numpy(dtype=bool)]
    ops = view.op_rows
    if top:
        ops = ops.sort_values("total_pct", ascending=False, na_position="last",
                              kind="stable").head(top)
    return ops


def export_frame(ops: pd.DataFrame, fields: tuple[str, ...]) -> pd.DataFrame:
    """The ops with machine-friendly types: ints as Int64, "" bound as missing."""
    out = ops[list(fields)].copy()
    for f in fields:
        if f in INT_FIELDS:
            out[f] = out[f].astype("Float64").round().astype("Int64")
        elif f == "bound":
            out[f] = out[f].replace("", None)
        elif out[f].dtype == "float64":
            out[f] = out[f].round(6)
    return out


def summary_dict(view: View) -> dict:
    t = view.trace
    return {
        "file": str(t.path),
        "arch": t.arch.name,
        "arch_source": t.arch_source,
        "clock_mhz": t.clock_mhz,
        "devices": len(t.devices) or None,
        "window": view.description,
        "merged_devices": view.merged,
        "signposts": [
            {"index": int(r.index), "name": r.name, "occurrence": int(r.occurrence),
             "label": r.label, "id": int(r.id), "ops": int(r.ops),
             "device_time_us": round(float(r.device_time_us), 6)}
            for r in t.signposts.itertuples(index=False)
        ],
        "totals": view.totals(),
        "bound_share_pct": {k: round(v, 3) for k, v in view.bound_shares().items()},
    }


def to_json(view: View, out: TextIO, top: int | None = None, rows=None) -> None:
    doc = summary_dict(view)
    head = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    ops = export_frame(select(view, top, rows), JSON_OP_FIELDS)
    out.write(head[:-1] + ',"ops":[')
    step = 20_000  # bounded memory for 100k+ ops
    for start in range(0, len(ops), step):
        chunk = ops.iloc[start:start + step].to_json(orient="records", double_precision=6,
                                                     force_ascii=False)
        out.write(("," if start else "") + chunk[1:-1])
    out.write("]}\n")


def to_csv(view: View, out: TextIO, top: int | None = None, rows=None) -> None:
    write_csv(export_frame(select(view, top, rows), CSV_FIELDS),
              ("op_code", "signpost", "op_type", "math_fidelity", "category", "size"), out)


MD_COLUMNS = (("ID", "id"), ("Total %", "total_pct"), ("Bound", "bound"), ("Op code", "op_code"),
              ("Dev", "device"), ("Device time", "device_time_us"), ("Op-to-op gap", "op_to_op_us"),
              ("Cores", "cores"), ("DRAM GB/s", "dram_gbps"), ("DRAM %", "dram_pct"),
              ("TFLOP/s", "flops"), ("FLOPs %", "flops_pct"), ("Fidelity", "fidelity_desc"))


def _cell(field: str, v: object) -> str:
    if field in ("device_time_us", "op_to_op_us"):
        return fmt_us(v)
    if field in ("total_pct", "dram_pct", "flops_pct"):
        return fmt_pct(v)
    if field in ("id", "device", "cores"):
        return fmt_int(v)
    if field == "dram_gbps":
        return fmt_num(v, 0)
    if field == "flops":
        return fmt_num(v, 1)
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _op_label(row: dict) -> str:
    return f"{row['op_code']} {row['size']}".strip() if row.get("size") else str(row["op_code"])


def summary_lines(view: View) -> list[str]:
    t, tot = view.trace, view.totals()
    dev = f"{len(t.devices)} ({', '.join(str(d) for d in t.devices)})" if t.devices else "none"
    clock = f"{t.clock_mhz:g} MHz" if t.clock_mhz else "unknown clock"
    lines = [
        f"File: {t.path}",
        f"Arch: {t.arch.name} ({t.arch_source}), {clock}; devices: {dev}"
        + ("" if view.merged or len(t.devices) < 2 else " (per device)"),
        f"Window: {view.description}; {tot['ops']} ops, device time {fmt_us(tot['device_time_us'])}"
        f", op-to-op gaps {fmt_us(tot['op_to_op_us'])}",
    ]
    shares = view.bound_shares()
    if shares:
        lines.append("Device time by bound: " + ", ".join(
            f"{k} {v:.1f}%" for k, v in shares.items()))
    if tot["corrupt_rows"]:
        lines.append(f"Corrupt timing: {tot['corrupt_rows']} rows flagged and left out of totals")
    if tot["host_ops"]:
        lines.append(f"Host fallback ops: {tot['host_ops']}")
    if len(t.signposts):
        labels = ", ".join(t.signposts["label"].head(6).tolist())
        more = len(t.signposts) - 6
        lines.append(f"Signposts ({len(t.signposts)}): {labels}" + (f", +{more} more" if more > 0
                                                                      else ""))
    return lines


def to_markdown(view: View, out: TextIO, top: int | None = None, rows=None) -> None:
    out.write("## ttdash report\n\n")
    for line in summary_lines(view):
        key, _, rest = line.partition(": ")
        out.write(f"- **{md_cell(key)}**: {md_cell(rest)}\n")
    out.write("\n| " + " | ".join(h for h, _ in MD_COLUMNS) + " |\n")
    out.write("|" + "|".join("---:" if f not in ("op_code", "bound", "fidelity_desc") else "---"
                             for _, f in MD_COLUMNS) + "|\n")
    for row in select(view, top, rows).to_dict(orient="records"):
        cells = [md_cell(_op_label(row)) if f == "op_code" else md_cell(_cell(f, row[f]))
                 for _, f in MD_COLUMNS]
        out.write("| " + " | ".join(cells) + " |\n")


BOUND_STYLE = {"DRAM": "green", "FLOP": "green", "BOTH": "green", "SLOW": "yellow", "HOST": "red"}


def to_table(view: View, out: TextIO, top: int | None = None, color: bool = False,
             width: int | None = None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, force_terminal=color, no_color=not color, width=width or 200,
                      highlight=False, emoji=False, markup=False, soft_wrap=False)
    for line in summary_lines(view):
        console.print(Text(line))
    table = Table(show_edge=False, pad_edge=False, header_style="bold", box=None)
    for h, f in MD_COLUMNS:
        table.add_column(h, justify="left" if f in ("op_code", "bound", "fidelity_desc")
                         else "right", no_wrap=True, overflow="ellipsis",
                         max_width=60 if f == "op_code" else None)
    for row in select(view, top).to_dict(orient="records"):
        cells = []
        for _, f in MD_COLUMNS:
            s = _op_label(row) if f == "op_code" else _cell(f, row[f])
            style = ""
            if f == "bound":
                style = BOUND_STYLE.get(s, "")
            elif f == "op_to_op_us" and (row[f] or 0) > 6.5:
                style = "red"
            elif f == "cores" and row[f] == row[f] and row[f] is not None and row[f] < 10:
                style = "red"
            cells.append(Text(s, style=style))  # Text: never parsed as markup
        table.add_row(*cells)
    console.print(table)


def render(view: View, fmt: str, out: TextIO, top: int | None = None, color: bool = False) -> None:
    if fmt == "json":
        to_json(view, out, top)
    elif fmt == "csv":
        to_csv(view, out, top)
    elif fmt == "markdown":
        to_markdown(view, out, top)
    else:
        to_table(view, out, top, color=color)


def render_to_string(view: View, fmt: str, top: int | None = None) -> str:
    buf = io.StringIO()
    render(view, fmt, buf, top)
    return buf.getvalue()
