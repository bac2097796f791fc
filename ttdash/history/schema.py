"""The history store's file schema, declared once: the fields and types of a run row (`RUNS`) and
of an op row (`OPS`), the version written in every file, and how a file of an older version is
read (docs/history-schema.md says the same for people and other engines).

The store keeps its own fields: `report --format csv`'s column list (model.columns.CSV_FIELDS)
may change without changing a stored file. A stored op field the model stops computing fails
the add loudly (history.opcols finds no such column) instead of vanishing from the store.

Versions (the integer under VERSION_KEY in each Parquet file's key-value metadata):
    1  no key: ttdash before the schema was declared. The op fields were the csv fields of the
       day (the same 26 as version 2 since the store exists), the run fields those of RUNS
       (the first stores, 2026-11-24, had no window_spec).
    2  the fields below; the same layout as version 1's last form, now fixed here.
A file is read by name into the current schema: fields renamed since its version (RENAMED) are
taken under their old name, fields it does not have are null, others it has are left out. A
file of a version above SCHEMA_VERSION is refused (NewerSchema): its fields may mean something
this ttdash does not know.

Reading needs only pyarrow (pandas and the model are imported by `op_batches`, the writer).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..model.errors import TraceError

#: The version this ttdash writes, and the newest it reads.
SCHEMA_VERSION = 2
#: The key of the version in each file's Parquet key-value metadata (its value: "2").
VERSION_KEY = b"ttdash.schema_version"

#: Per op code / per signpost region sums kept in a run row (what `trend` and `check` read).
GROUP = pa.struct([("name", pa.string()), ("ops", pa.int64()), ("device_us", pa.float64()),
                   ("steady_us", pa.float64())])
TELEMETRY = pa.struct([("readings", pa.int64()), ("throttled", pa.int64()),
                       ("temp_c_max", pa.float64()), ("power_w_max", pa.float64()),
                       ("aiclk_mhz_min", pa.float64())])
_UTC = pa.timestamp("us", tz="UTC")
#: `runs/arch=ARCH/run-RUN_ID.parquet`: one row per run (arch is the hive partition, not a
#: column of the file).
RUNS = pa.schema([
    ("run_id", pa.string()), ("added_at", _UTC), ("run_at", _UTC), ("file", pa.string()),
    ("sha256", pa.string()), ("size_bytes", pa.int64()), ("arch_detected", pa.bool_()),
    ("clock_mhz", pa.float64()), ("devices", pa.list_(pa.int32())), ("window", pa.string()),
    ("window_spec", pa.string()), ("per_device", pa.bool_()), ("pause_above_us", pa.float64()),
    ("ops", pa.int64()), ("device_ops", pa.int64()), ("host_ops", pa.int64()),
    ("signposts", pa.int64()), ("corrupt_rows", pa.int64()), ("device_time_us", pa.float64()),
    ("dispatch_us", pa.float64()), ("pauses_us", pa.float64()), ("pauses", pa.int64()),
    ("steady_us", pa.float64()), ("wall_us", pa.float64()),
    ("labels", pa.map_(pa.string(), pa.string())), ("op_codes", pa.list_(GROUP)),
    ("regions", pa.list_(GROUP)), ("telemetry", TELEMETRY), ("ttdash_version", pa.string()),
])
#: `ops/arch=ARCH/run_id=RUN_ID/ops.parquet`: one row per op, in report order (arch and run_id
#: are the hive partitions). All but the last two are the op's fields as the model computes
#: them (model.columns keys, typed by export_frame); signature and is_host are the store's.
OPS = pa.schema([
    ("id", pa.int64()), ("op_code", pa.string()), ("op_type", pa.string()),
    ("device", pa.int64()), ("device_time_us", pa.float64()), ("op_to_op_us", pa.float64()),
    ("total_pct", pa.float64()), ("cores", pa.int64()), ("dram_gbps", pa.float64()),
    ("dram_pct", pa.float64()), ("flops", pa.float64()), ("flops_pct", pa.float64()),
    ("bound", pa.string()), ("math_fidelity", pa.string()), ("signpost", pa.string()),
    ("category", pa.string()), ("size", pa.string()), ("config", pa.string()),
    ("fidelity_desc", pa.string()), ("io_dram_gbps", pa.float64()),
    ("io_dram_pct", pa.float64()), ("corrupt", pa.bool_()), ("global_call_count", pa.int64()),
    ("overlap_us", pa.float64()), ("busy_us", pa.float64()), ("gap_signed_us", pa.float64()),
    ("signature", pa.string()), ("is_host", pa.bool_()),
])
TABLES: dict[str, pa.Schema] = {"runs": RUNS, "ops": OPS}
#: Op fields the store computes itself (the others come from the model's op rows).
OWN_OP_FIELDS = ("signature", "is_host")
#: Fields renamed by a version: {version: {table: {old name: new name}}}. A file older than
#: `version` has the old name. (None yet: version 2 renamed nothing.)
RENAMED: dict[int, dict[str, dict[str, str]]] = {}
#: Rows per Parquet row group / per batch handed to the writer.
BATCH = 65_536


class NewerSchema(TraceError):
    """A file written by a newer ttdash: refused, in one line naming it (exit 2)."""

    def __init__(self, path: str, version: int) -> None:
        super().__init__(path, f"written by a newer ttdash (schema {version}, this one reads "
                         f"up to {SCHEMA_VERSION}): upgrade ttdash")
        self.version = version


def stamped(schema: pa.Schema) -> pa.Schema:
    """`schema` with this version in its metadata (written into the file's key-value
    metadata by pyarrow)."""
    return schema.with_metadata({**(schema.metadata or {}),
                                 VERSION_KEY: str(SCHEMA_VERSION).encode()})


def file_version(metadata: Mapping[bytes, bytes] | None) -> int:
    """The schema version of a file from its key-value metadata: 1 without the key;
    ValueError when the value is not a positive integer."""
    raw = (metadata or {}).get(VERSION_KEY)
    if raw is None:
        return 1
    text = raw.decode("utf-8", "replace").strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"schema version {text[:20]!r} is not a positive integer")
    return int(text)


def check_version(metadata: Mapping[bytes, bytes] | None, path: str) -> int:
    """file_version, refusing (NewerSchema naming `path`) one newer than SCHEMA_VERSION."""
    version = file_version(metadata)
    if version > SCHEMA_VERSION:
        raise NewerSchema(path, version)
    return version


def names_in(table: str, version: int) -> dict[str, str]:
    """{current name: its name in a file of `version`} for the fields of `table` renamed since
    (a field renamed twice is followed back through both)."""
    out = {f: f for f in TABLES[table].names}
    for v in sorted(RENAMED, reverse=True):
        if v <= version:
            break
        back = {new: old for old, new in RENAMED[v].get(table, {}).items()}
        out = {cur: back.get(name, name) for cur, name in out.items()}
    return {cur: name for cur, name in out.items() if cur != name}


def source_columns(table: str, version: int, columns: list[str], present: set[str]
                   ) -> list[str]:
    """The file's own names of the `columns` (current names) it has."""
    renamed = names_in(table, version)
    return [n for c in columns if (n := renamed.get(c, c)) in present]


def missing(table: str, version: int, present: set[str], required: tuple[str, ...] = ()
            ) -> list[str]:
    """The fields (current names) a file of `version` lacks among those it must have: every
    declared field when it is of this version (the layout is fixed; a footer byte changed on
    disk can rename a column, and no page checksum covers the footer), else the `required`
    ones (older files may lack fields added since)."""
    names = TABLES[table].names if version == SCHEMA_VERSION else list(required)
    return [c for c in names if not source_columns(table, version, [c], present)]


def conform(data: pa.Table, table: str, version: int, columns: list[str] | None = None
            ) -> pa.Table:
    """`data` (read from a file of `version`) as the current schema of `table` (or its
    `columns`): renamed fields under their new names, missing ones null, each cast to its
    declared type (pa.ArrowInvalid / ArrowNotImplementedError / ValueError when a field
    holds another type)."""
    schema = TABLES[table]
    renamed = names_in(table, version)
    fields = [schema.field(c) for c in (columns or schema.names)]
    target = pa.schema(fields)
    if not renamed and all(f.name in data.column_names for f in fields):
        return data.select(target.names).cast(target)  # (the usual case, and the quickest)
    arrays = []
    for f in fields:
        name = renamed.get(f.name, f.name)
        if name in data.column_names:
            arrays.append(data[name].cast(f.type))
        else:
            arrays.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(arrays, schema=target)


def conform_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of op rows as OPS (its declared fields in order; anything else left out)."""
    arrays = [batch.column(batch.schema.get_field_index(f.name)).cast(f.type)
              if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
              for f in OPS]
    return pa.RecordBatch.from_arrays(arrays, schema=OPS)


def op_batches(view: Any) -> Iterator[pa.RecordBatch]:
    """The ops of `view` as OPS rows in report order, BATCH rows at a time (history.opcols:
    built from the view's columns as Arrow arrays; a million ops never exist twice in
    memory)."""
    from .opcols import op_batches as batches

    return batches(view)


def duckdb_type(t: pa.DataType) -> str:
    """The DuckDB type of a declared field (a typed NULL for a field no file of the store has)."""
    simple = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER",
              pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", _UTC: "TIMESTAMPTZ"}
    if t in simple:
        return simple[t]
    if pa.types.is_map(t):
        return f"MAP({duckdb_type(t.key_type)}, {duckdb_type(t.item_type)})"
    if pa.types.is_list(t):
        return f"{duckdb_type(t.value_type)}[]"
    if pa.types.is_struct(t):
        parts = (t.field(i) for i in range(t.num_fields))
        return "STRUCT(" + ", ".join(f'"{f.name}" {duckdb_type(f.type)}' for f in parts) + ")"
    raise ValueError(f"no DuckDB type for {t}")
