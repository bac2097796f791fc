"""`ttdash history list|trend|check|sql` as text: table, csv, json or markdown. Labels, paths and
op codes come from files and users: made inert for the terminal (clean_text), markdown (md_cell)
and spreadsheets (formula prefixes)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

from ..format import fmt_us, signed_pct
from ..history.query import labels_text
from ..model.text import clean_text
from ..schemas import SCHEMA_VERSION
from .safe import md_cell, md_table, neutralise_formula

#: (key, title, kind) of `list` and `trend` rows; kind: us, pct, int, num, text, time, labels
RUN_FIELDS = (("added_at", "Added (UTC)", "time"), ("run_id", "Run", "text"),
              ("arch", "Arch", "text"), ("ops", "Ops", "int"),
              ("device_time_us", "Device", "us"), ("steady_us", "Steady", "us"),
              ("change_pct", "Change", "pct"), ("labels", "Labels", "labels"))
NUMERIC = ("us", "pct", "int", "num")
CULPRIT_FIELDS = (("op_code", "Op code", "text"), ("ops", "Ops", "int"),
                  ("steady_us", "Steady", "us"), ("median_us", "Median", "us"),
                  ("delta_us", "Delta", "us"), ("pct", "Change", "pct"))


def _json_value(v: Any) -> Any:
    """A value for json/csv: times as ISO text, text and labels made inert (a store may have
    been written by another tool)."""
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, dict):
        return {str(clean_text(k)): _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None  # strict JSON has no NaN
    return clean_text(v)


def _cell(v: Any, kind: str) -> str:
    if v is None:
        return ""
    if kind == "us":
        return fmt_us(v)
    if kind == "pct":
        return signed_pct(v)
    if kind == "int":
        return f"{int(v):,}"
    if kind == "num":
        return f"{v:,g}"
    if kind == "time":
        return v.strftime("%Y-%m-%d %H:%M") if isinstance(v, datetime) else str(v)
    if kind == "labels":
        return labels_text(v)
    return str(v)


def rows_table(rows: Sequence[dict], fields: Sequence[tuple[str, str, str]], out: TextIO,
               fmt: str) -> None:
    """rows as an aligned text table, markdown or csv (times in UTC, ISO in csv)."""
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow([k for k, _, _ in fields])
        for r in rows:
            w.writerow([neutralise_formula(_json_value(
                _cell(r.get(k), kind) if kind == "labels" else r.get(k))) for k, _, kind in fields])
        return
    cells = [[str(clean_text(_cell(r.get(k), kind))) for k, _, kind in fields] for r in rows]
    if fmt == "markdown":
        left = tuple(i for i, (_, _, kind) in enumerate(fields) if kind not in NUMERIC)
        out.write(md_table([t for _, t, _ in fields], cells, left))
        return
    titles = [t for _, t, _ in fields]
    widths = [max([len(t)] + [len(c[i]) for c in cells]) for i, t in enumerate(titles)]
    right = [kind in NUMERIC for _, _, kind in fields]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if r else v.ljust(w)
                         for v, w, r in zip(values, widths, right)).rstrip()

    out.write(line(titles) + "\n")
    for c in cells:
        out.write(line(c) + "\n")


def runs_json(rows: Sequence[dict], out: TextIO, extra: dict | None = None) -> None:
    """{"runs": [{"run_id", "added_at", "file", "arch", "ops", "device_time_us", ...}]}."""
    keep = ("run_id", "added_at", "file", "arch", "window", "ops", "device_time_us",
            "steady_us", "change_pct", "labels")
    doc = _json_value({"schema_version": SCHEMA_VERSION, **(extra or {}),
                       "runs": [{k: r[k] for k in keep if k in r} for r in rows]})
    json.dump(doc, out, allow_nan=False)
    out.write("\n")


def render_runs(rows: Sequence[dict], fmt: str, out: TextIO, title: str = "",
                extra: dict | None = None) -> None:
    if fmt == "json":
        runs_json(rows, out, extra)
        return
    if title and fmt == "table":
        out.write(str(clean_text(title)) + "\n")
    rows_table(rows, RUN_FIELDS, out, fmt)


#: op codes shown as columns of `trend --by` (the largest by device time per sample; json and
#: csv have every one)
BY_OP_CODES = 4


def by_fields(rows: Sequence[dict], label: str, every: bool = False
              ) -> list[tuple[str, str, str]]:
    """Columns of `trend --by LABEL`: the label's value, runs, ops, device and steady time per
    sample, the change against the first row, then op codes' device time per sample (the
    BY_OP_CODES largest at the largest value, or `every` one)."""
    fields = [("samples", str(label), "num"), ("runs", "Runs", "int"), ("ops", "Ops", "int"),
              ("device_time_us", "Device", "us"),
              ("device_us_per_sample", "Device/sample", "us"),
              ("steady_us_per_sample", "Steady/sample", "us"),
              ("vs_first_pct", "vs first", "pct")]
    codes = dict(rows[-1]["op_codes"]) if rows else {}
    names = sorted(codes, key=lambda c: (-codes[c], c))
    for name in names if every else names[:BY_OP_CODES]:
        fields.append((f"op:{name}", f"{name}/sample", "us"))
    return fields


def render_by(rows: Sequence[dict], label: str, fmt: str, out: TextIO, title: str = "",
              extra: dict | None = None, used: Sequence[dict] = ()) -> None:
    """`history trend --by LABEL`: one row per label value. json: the trend document with
    "by" and "by_values" (and "runs": the runs used, oldest first)."""
    if fmt == "json":
        keep = ("value", "samples", "runs", "run_ids", "ops", "device_time_us", "steady_us",
                "device_us_per_sample", "steady_us_per_sample", "vs_first_pct", "op_codes")
        run_keep = ("run_id", "added_at", "file", "arch", "window", "ops", "device_time_us",
                    "steady_us", "change_pct", "labels")
        doc = _json_value({"schema_version": SCHEMA_VERSION, **(extra or {}), "by": label,
                           "runs": [{k: r[k] for k in run_keep if k in r} for r in used],
                           "by_values": [{k: r[k] for k in keep} for r in rows]})
        json.dump(doc, out, allow_nan=False)
        out.write("\n")
        return
    flat = [{**r, **{f"op:{k}": v for k, v in r["op_codes"].items()}} for r in rows]
    fields = by_fields(rows, label, every=fmt == "csv")
    if title and fmt == "table":
        out.write(str(clean_text(title)) + "\n")
    rows_table(flat, fields, out, fmt)


def render_check(check, fmt: str, out: TextIO) -> None:
    """The verdict of `history check` with its baseline runs and culprits."""
    if fmt == "json":
        json.dump(_json_value({"schema_version": SCHEMA_VERSION, **check.as_dict()}), out,
                  allow_nan=False)
        out.write("\n")
        return
    if fmt == "csv":
        rows_table(check.culprits, CULPRIT_FIELDS, out, fmt)
        return
    verdict = check.verdict()
    out.write((md_cell(verdict) if fmt == "markdown" else str(clean_text(verdict))) + "\n")
    if check.culprits:
        out.write("\nOp codes above their median:\n" if fmt == "table"
                  else "\n**Op codes above their median**\n\n")
        rows_table(check.culprits, CULPRIT_FIELDS, out, fmt)


def render_sql(columns: list[str], rows: list[tuple], fmt: str, out: TextIO) -> None:
    """A query's result (DuckDB), every column as text except numbers in json."""
    if fmt == "json":
        json.dump(_json_value({"schema_version": SCHEMA_VERSION, "columns": columns,
                               "rows": [list(r) for r in rows]}), out,
                  default=str, allow_nan=False)
        out.write("\n")
        return
    fields = [(c, c, "text") for c in columns]
    rows_table([dict(zip(columns, r)) for r in rows], fields, out, fmt)
