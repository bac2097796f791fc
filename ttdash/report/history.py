"""`ttdash history list|trend|check|sql` as text: table, csv, json or markdown. Labels, paths and
op codes come from files and users: made inert for the terminal (clean_text), markdown (md_cell)
and spreadsheets (formula prefixes)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TextIO

import pandas as pd

from ..model.read.text import clean_text
from ..present.formats import write
from ..present.table import CULPRITS, RUNS, TableSpec, cells, history_spec
from ..schemas import SCHEMA_VERSION
from .safe import md_cell, md_table, neutralise_formula

NUMERIC = ("us", "dpct", "count", "gnum")  # right-aligned kinds
#: The runs and culprits tables: present.table.RUNS and CULPRITS.
RUN_FIELDS, CULPRIT_FIELDS = RUNS, CULPRITS


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


def rows_table(rows: Sequence[dict], fields: TableSpec | Sequence[tuple[str, str, str]],
               out: TextIO, fmt: str) -> None:
    """rows as an aligned text table, markdown or csv (times in UTC, ISO in csv); `fields`: a
    spec (present.table) or (key, title, kind) tuples."""
    spec = fields if isinstance(fields, TableSpec) else history_spec("rows", fields)
    cols = spec.columns
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow([c.key for c in cols])
        for r in rows:
            w.writerow([neutralise_formula(_json_value(
                c.format_one(r.get(c.key)) if c.kind == "labels" else r.get(c.key)))
                for c in cols])
        return
    frame = pd.DataFrame({c.key: pd.Series([r.get(c.key) for r in rows], dtype=object)
                          for c in cols})
    texts, _ = cells(frame, spec, severity=False)
    cells_ = [[str(clean_text(texts[c.key][i])) for c in cols] for i in range(len(rows))]
    if fmt == "markdown":
        left = tuple(i for i, c in enumerate(cols) if c.kind not in NUMERIC)
        out.write(md_table([c.title for c in cols], cells_, left))
        return
    titles = [c.title for c in cols]
    widths = [max([len(t)] + [len(c[i]) for c in cells_]) for i, t in enumerate(titles)]
    right = [c.kind in NUMERIC for c in cols]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if r else v.ljust(w)
                         for v, w, r in zip(values, widths, right)).rstrip()

    out.write(line(titles) + "\n")
    for c in cells_:
        out.write(line(c) + "\n")


def runs_json(rows: Sequence[dict], out: TextIO, title: str = "", extra: dict | None = None
              ) -> None:
    """{"runs": [{"run_id", "added_at", "file", "arch", "ops", "device_time_us", ...}]}."""
    keep = ("run_id", "added_at", "file", "arch", "window", "ops", "device_time_us",
            "steady_us", "change_pct", "labels")
    doc = _json_value({"schema_version": SCHEMA_VERSION, **(extra or {}),
                       "runs": [{k: r[k] for k in keep if k in r} for r in rows]})
    json.dump(doc, out, allow_nan=False)
    out.write("\n")


def runs_table(rows: Sequence[dict], out: TextIO, title: str = "", extra: dict | None = None
               ) -> None:
    if title:
        out.write(str(clean_text(title)) + "\n")
    rows_table(rows, RUN_FIELDS, out, "table")


def runs_csv(rows: Sequence[dict], out: TextIO, title: str = "", extra: dict | None = None
             ) -> None:
    rows_table(rows, RUN_FIELDS, out, "csv")


def runs_markdown(rows: Sequence[dict], out: TextIO, title: str = "",
                  extra: dict | None = None) -> None:
    rows_table(rows, RUN_FIELDS, out, "markdown")


def render_runs(rows: Sequence[dict], fmt: str, out: TextIO, title: str = "",
                extra: dict | None = None) -> None:
    """`history list` in `fmt` (present.formats' writer of (runs, fmt))."""
    write("runs", fmt, rows, out, title, extra)


def render_trend(rows: Sequence[dict], fmt: str, out: TextIO, title: str = "",
                 extra: dict | None = None) -> None:
    """`history trend` in `fmt` (present.formats' writer of (trend, fmt))."""
    write("trend", fmt, rows, out, title, extra)


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
    """`history trend --by LABEL`: one row per label value, in `fmt` (present.formats' writer
    of (trend, fmt), given the label). json: the trend document with "by" and "by_values" (and
    "runs": the runs used, oldest first)."""
    write("trend", fmt, rows, out, title, extra, label=label, used=used)


def trend_json(rows: Sequence[dict], out: TextIO, title: str = "", extra: dict | None = None,
               label: str | None = None, used: Sequence[dict] = ()) -> None:
    if label is None:
        runs_json(rows, out, title, extra)
        return
    keep = ("value", "samples", "runs", "run_ids", "ops", "device_time_us", "steady_us",
            "device_us_per_sample", "steady_us_per_sample", "vs_first_pct", "op_codes")
    run_keep = ("run_id", "added_at", "file", "arch", "window", "ops", "device_time_us",
                "steady_us", "change_pct", "labels")
    doc = _json_value({"schema_version": SCHEMA_VERSION, **(extra or {}), "by": label,
                       "runs": [{k: r[k] for k in run_keep if k in r} for r in used],
                       "by_values": [{k: r[k] for k in keep} for r in rows]})
    json.dump(doc, out, allow_nan=False)
    out.write("\n")


def _trend_rows(runs: Callable[..., None], fmt: str, every: bool = False, titled: bool = False
                ) -> Callable[..., None]:
    """The trend's writer of a text format: its runs (`runs`), or (with a label) its rows by
    value; `every`: every op code a column (else the BY_OP_CODES largest); `titled`: the title
    first."""
    def write_rows(rows: Sequence[dict], out: TextIO, title: str = "",
                   extra: dict | None = None, label: str | None = None,
                   used: Sequence[dict] = ()) -> None:
        if label is None:
            runs(rows, out, title, extra)
            return
        flat = [{**r, **{f"op:{k}": v for k, v in r["op_codes"].items()}} for r in rows]
        if title and titled:
            out.write(str(clean_text(title)) + "\n")
        rows_table(flat, by_fields(rows, label, every=every), out, fmt)
    return write_rows


trend_table = _trend_rows(runs_table, "table", titled=True)
trend_csv = _trend_rows(runs_csv, "csv", every=True)
trend_markdown = _trend_rows(runs_markdown, "markdown")


def render_check(check, fmt: str, out: TextIO) -> None:
    """The verdict of `history check` with its baseline runs and culprits, in `fmt`
    (present.formats' writer of (check, fmt))."""
    write("check", fmt, check, out)


def check_json(check, out: TextIO) -> None:
    json.dump(_json_value({"schema_version": SCHEMA_VERSION, **check.as_dict()}), out,
              allow_nan=False)
    out.write("\n")


def check_csv(check, out: TextIO) -> None:
    rows_table(check.culprits, CULPRIT_FIELDS, out, "csv")


def check_table(check, out: TextIO) -> None:
    out.write(str(clean_text(check.verdict())) + "\n")
    if check.culprits:
        out.write("\nOp codes above their median:\n")
        rows_table(check.culprits, CULPRIT_FIELDS, out, "table")


def check_markdown(check, out: TextIO) -> None:
    out.write(md_cell(check.verdict()) + "\n")
    if check.culprits:
        out.write("\n**Op codes above their median**\n\n")
        rows_table(check.culprits, CULPRIT_FIELDS, out, "markdown")


def render_sql(columns: list[str], rows: list[tuple], fmt: str, out: TextIO) -> None:
    """A query's result (DuckDB), every column as text except numbers in json, in `fmt`
    (present.formats' writer of (sql, fmt))."""
    write("sql", fmt, columns, rows, out)


def sql_json(columns: list[str], rows: list[tuple], out: TextIO) -> None:
    json.dump(_json_value({"schema_version": SCHEMA_VERSION, "columns": columns,
                           "rows": [list(r) for r in rows]}), out,
              default=str, allow_nan=False)
    out.write("\n")


def _sql_rows(fmt: str) -> Callable[..., None]:
    def write_rows(columns: list[str], rows: list[tuple], out: TextIO) -> None:
        fields = [(c, c, "text") for c in columns]
        rows_table([dict(zip(columns, r)) for r in rows], fields, out, fmt)
    return write_rows


sql_table = _sql_rows("table")
sql_csv = _sql_rows("csv")
sql_markdown = _sql_rows("markdown")
