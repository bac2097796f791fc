#!/usr/bin/env python3
"""Generate the table parts of ttdash/schemas/*.schema.json from the column specs.

Every table's rows are declared once, as a present.table spec (`TableSpec`: its columns and the
JSON-only fields its rows carry besides them): a column's kind gives its JSON type
(present.table.JSON_TYPES, the one map: integers stay integers), its meaning the description,
`nullable` whether null is allowed. Each entry of TABLES names a schema, the place of a table's
row object in it (a path of keys), its columns (the output's fields, looked up in the spec: a
field no spec declares is a KeyError) and the keys a row may lack; this script rewrites that
object and leaves the rest of the schema (the hand-written summary keys) as it is.
tests/test_docs.py fails while a committed schema differs from what this writes;
scripts/gen_docs.py runs it.

Usage: python scripts/gen_schemas.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "ttdash" / "schemas"

#: What a schema says of an object or array kind's values besides its type (JSON_TYPES).
KIND_SHAPES: dict[str, dict[str, Any]] = {
    "labels": {"additionalProperties": {"type": "string"}},
    "lines": {"items": {"type": "string"}},
    "changes": {"additionalProperties": {
        "type": "object", "properties": {"baseline": {}, "candidate": {}},
        "required": ["baseline", "candidate"], "additionalProperties": False}},
}


def enums() -> dict[tuple[str, str], list[str]]:
    """(kind, key) -> the only values a column takes (model.compare.pairs' names): a diff's
    status, and what a pair matched on ("" for an added or removed op)."""
    from ttdash.model.compare.pairs import (
        MATCH_KINDS,
        STATUS_ADDED,
        STATUS_MATCHED,
        STATUS_REMOVED,
    )

    return {("status", "status"): [STATUS_MATCHED, STATUS_ADDED, STATUS_REMOVED],
            ("text", "match"): [*MATCH_KINDS, ""]}


class ColumnSpec(Protocol):
    """What a schema needs of a column (present.table.Column)."""
    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def meaning(self) -> str: ...
    @property
    def nullable(self) -> bool: ...


def column_schema(c: ColumnSpec) -> dict[str, Any]:
    """One column: its JSON type (present.table.JSON_TYPES; with null when nullable), what its
    kind says of the values (KIND_SHAPES; enums(): the values of a closed set) and its meaning."""
    from ttdash.present.table import JSON_TYPES

    t = JSON_TYPES[c.kind]
    node: dict[str, Any] = {"type": [t, "null"] if c.nullable else t}
    values = enums().get((c.kind, c.key))
    if values is not None:
        node["enum"] = values
    node.update(KIND_SHAPES.get(c.kind, {}))
    node["description"] = c.meaning
    return node


@dataclass(frozen=True)
class Table:
    """The rows of one table in one schema: `path` the keys down to the row object
    (("properties", "ops", "items")), `columns` its columns in order (a spec's, through
    TableSpec.json_columns), `optional` the keys a row may lack (every other is required),
    `extra` what else the row object says (patternProperties, a description), kept in this order
    after the generated keys."""
    schema: str
    path: tuple[str, ...]
    columns: Callable[[], Sequence[ColumnSpec]]
    optional: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def node(self) -> dict[str, Any]:
        cols = list(self.columns())
        node: dict[str, Any] = {"type": "object",
                                "properties": {c.key: column_schema(c) for c in cols},
                                "required": [c.key for c in cols if c.key not in self.optional]}
        node.update(self.extra)
        node.setdefault("additionalProperties", False)
        return node


def op_columns() -> tuple[ColumnSpec, ...]:
    """The op rows of `report --format json`: model.columns' JSON_FIELDS, then what op_fields
    adds when the file has it (the slowest RISC, the tt-run rank)."""
    from ttdash.model.columns import JSON_FIELDS
    from ttdash.present.table import OPS

    return OPS.json_columns((*JSON_FIELDS, "slowest_risc", "rank"))


def diff_pairs(top: bool = False) -> Callable[[], tuple[ColumnSpec, ...]]:
    """A diff's pairs (report.diff.JSON_OP_FIELDS, the `changed` object and --per-device's
    device), or its top regressions and improvements (`top`)."""
    def columns() -> tuple[ColumnSpec, ...]:
        from ttdash.present.table import DIFF_PAIRS
        from ttdash.report.diff import JSON_OP_FIELDS

        keys = TOP_FIELDS if top else (*JSON_OP_FIELDS, "changed", "device")
        return DIFF_PAIRS.json_columns(keys)
    return columns


#: The top regressions' and improvements' fields (report.diff.to_json's top_fields).
TOP_FIELDS = ("baseline_id", "candidate_id", "op_code", "baseline_us", "candidate_us",
              "delta_us", "delta_pct", "region", "match", "cause", "changed")


def diff_groups(key: str) -> Callable[[], tuple[ColumnSpec, ...]]:
    """A diff's groups by op code or by region (report.diff.GROUP_FIELDS; no cause by region)."""
    def columns() -> tuple[ColumnSpec, ...]:
        from ttdash.present.table import diff_groups
        from ttdash.report.diff import GROUP_FIELDS

        fields = GROUP_FIELDS if key == "op_code" else GROUP_FIELDS[:-1]
        return diff_groups(key).json_columns((key, *fields))
    return columns


def spec_columns(name: str, keys: tuple[str, ...] | None = None
                 ) -> Callable[[], tuple[ColumnSpec, ...]]:
    """present.table's spec `name`: `keys` of it (its columns and JSON-only ones) or its
    columns."""
    def columns() -> tuple[ColumnSpec, ...]:
        from ttdash.present import table

        spec = getattr(table, name)
        return spec.json_columns(spec.keys() if keys is None else keys)
    return columns


#: The history runs' JSON fields (`history list`; `trend` has no window).
RUN_KEYS = ("run_id", "added_at", "file", "arch", "window", "ops", "device_time_us",
            "steady_us", "change_pct", "labels")
#: The why section's op codes (model.analysis.reasons.contract's by_op_code).
WHY_KEYS = ("op_code", "ops", "device_us", "share_pct", "class", "basis", "reason",
            "saving_us", "dispatch_gap_us", "assumes", "try")
SUMMARY_KEYS = ("name", "device", "op_count", "device_time_us", "total_pct", "category",
                "flops_pct_min", "flops_pct_max", "flops_pct_mean", "flops_pct_std",
                "flops_pct_weighted_mean")

#: Every generated table: Table(schema, path, columns, optional keys, extra).
TABLES: tuple[Table, ...] = (
    Table("report", ("properties", "ops", "items"), op_columns, ("device", "slowest_risc",
                                                                 "rank"), {
        "patternProperties": {"^[A-Z]": {
            "type": ["number", "null"],
            "description": "a counter or per-RISC column, under the file's own name"}},
        "additionalProperties": False,
        "description": "one op; the fixed fields are the column glossary's, then (when the file "
                       "has them) `rank`, `slowest_risc` and counter columns named after the "
                       "file's own columns (upper case: `DEVICE BRISC KERNEL DURATION [ns]`, "
                       "`PM FPU UTIL (%)`), number or null"}),
    Table("report", ("properties", "why", "properties", "by_op_code", "items"),
          spec_columns("WHY_GROUPS", WHY_KEYS)),
    Table("report-summary", ("properties", "groups", "items"),
          spec_columns("SUMMARY_GROUPS", SUMMARY_KEYS),
          ("device", "category", "flops_pct_min", "flops_pct_max", "flops_pct_mean",
           "flops_pct_std", "flops_pct_weighted_mean")),
    Table("diff", ("properties", "ops", "items"), diff_pairs(), ("device",)),
    Table("diff", ("properties", "by_op_code", "items"), diff_groups("op_code")),
    Table("diff", ("properties", "by_region", "items"), diff_groups("region")),
    Table("diff", ("properties", "top_regressions", "items"), diff_pairs(top=True)),
    Table("diff", ("properties", "top_improvements", "items"), diff_pairs(top=True)),
    Table("history-list", ("properties", "runs", "items"), spec_columns("RUNS", RUN_KEYS),
          ("file", "arch", "window")),
    Table("history-trend", ("properties", "runs", "items"),
          spec_columns("RUNS", tuple(k for k in RUN_KEYS if k != "window")), ("file", "arch")),
    Table("history-check", ("properties", "culprits", "items"),
          spec_columns("CULPRITS", ("op_code", "steady_us", "median_us", "delta_us", "ops",
                                    "pct"))),
)


def dumps(schema: dict[str, Any]) -> str:
    """A schema file's text (as the committed files are written)."""
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def generate() -> dict[str, str]:
    """schema file name -> its text with every generated table in place."""
    out: dict[str, dict[str, Any]] = {}
    for t in TABLES:
        name = f"{t.schema}.schema.json"
        schema = out.setdefault(name, json.loads((SCHEMAS / name).read_text(encoding="utf-8")))
        parent = schema
        for key in t.path[:-1]:
            parent = parent[key]
        parent[t.path[-1]] = t.node()
    return {name: dumps(s) for name, s in out.items()}


def stale() -> list[str]:
    """The committed schema files that differ from what generate() writes."""
    return [n for n, text in generate().items()
            if (SCHEMAS / n).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if a.check:
        for n in stale():
            print(f"ttdash/schemas/{n} is stale: run python scripts/gen_schemas.py",
                  file=sys.stderr)
        return 1 if stale() else 0
    for name, text in generate().items():
        (SCHEMAS / name).write_text(text, encoding="utf-8")
        print("wrote", SCHEMAS / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
