"""The DuckDB views of `history sql` over a store's files (Store.sql_source / sql_view call
these): each declared field under its current or older name, partitions from the path below the
store's root, each run once and with its REQUIRED fields, ops only of a listed run."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from . import schema as sch

#: The column naming each row's file in `sql_source` (not in the views).
FILE_COLUMN = "__ttdash_file"
#: Fields a row must have to be a run (a row another tool wrote without them is skipped).
REQUIRED = ("run_id", "added_at", "ops", "device_time_us", "steady_us")


def sql_source(files: list[str]) -> str:
    """DuckDB's read of `files` (of one table) with each row's file in FILE_COLUMN and no
    hive partitioning (it would read every `k=v` folder of the path, above the store too)."""
    listed = ", ".join(_sql_text(f) for f in files)
    return (f"read_parquet([{listed}], filename={_sql_text(FILE_COLUMN)}, "
            "hive_partitioning=false, union_by_name=true)")


def sql_view(store: Any, table: str, files: list[str], columns: list[str]) -> str:
    """The DuckDB view "runs" or "ops" over `files` (`columns`: the names sql_source reads)
    on which every reader agrees: the declared fields of the table (schema.RUNS / OPS; a
    field renamed since a file's version taken under its old name, one no file has as a
    typed NULL, undeclared columns left out), partitions from the path below the root (a
    table of one row per file, as `runs` reads them), each run once and only with REQUIRED
    fields (as `runs`), ops only of a listed run (view "runs" made first)."""
    keys = ("arch",) if table == "runs" else ("arch", "run_id")
    name = _sql_name(FILE_COLUMN)
    values = ", ".join("(" + ", ".join(_sql_text(v) for v in (
        f, *(store._partitions(f).get(k, "") for k in keys))) + ")" for f in files)
    parts = f"(VALUES {values}) p({name}, {', '.join(keys)})"
    own = [f.name for f in sch.TABLES[table] if f.name not in keys]
    fields = ", ".join(_sql_field(table, f, columns) for f in sch.TABLES[table]
                       if f.name in own)
    source = f"(SELECT {fields}, {name} FROM {sql_source(files)})"
    select = ", ".join([f"src.{_sql_name(c)}" for c in own] + [f"p.{k}" for k in keys])
    if table == "ops":
        return (f"CREATE VIEW ops AS SELECT {select} FROM {source} src JOIN (SELECT * FROM "
                f"{parts} WHERE EXISTS (SELECT 1 FROM runs r WHERE r.arch = p.arch AND "
                f"r.run_id = p.run_id)) p USING ({name})")
    rank = _sql_name(FILE_COLUMN + "_n")
    whole = " AND ".join(f"{_sql_name(c)} IS NOT NULL" for c in REQUIRED)
    return (f"CREATE VIEW runs AS SELECT {select} FROM (SELECT *, row_number() OVER "
            f"(PARTITION BY run_id ORDER BY added_at, {name}) AS {rank} FROM {source} "
            f"WHERE {whole}) src JOIN {parts} USING ({name}) WHERE {rank} = 1")


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_field(table: str, field: pa.Field, columns: list[str]) -> str:
    """The select expression of a declared field over files of any version: its current or
    older names among `columns` (the newest first), else a NULL of its type."""
    names = [field.name, *(sch.names_in(table, v).get(field.name, field.name)
                           for v in range(sch.SCHEMA_VERSION - 1, 0, -1))]
    found = [_sql_name(n) for n in dict.fromkeys(names) if n in columns]
    if not found:
        return f"CAST(NULL AS {sch.duckdb_type(field.type)}) AS {_sql_name(field.name)}"
    if found == [_sql_name(field.name)]:
        return found[0]
    expr = found[0] if len(found) == 1 else f"COALESCE({', '.join(found)})"
    return f"{expr} AS {_sql_name(field.name)}"
