"""Read an ops_perf_results CSV of any era into a pandas DataFrame, by column name.

pyarrow parses the file (multi-threaded, no per-row Python); the slow paths (finding which line
of a broken file is broken) run only when parsing has already failed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...memory import freed_at_once
from ..errors import TraceError
from ..progress import offer_preview, step, wants_preview
from .badcsv import BLOCK as BLOCK  # (defined with the diagnosis that names its limit)
from .badcsv import locate_bad_line, locate_binary, numeric_error
from .cache import Slot, Writer, open_copy
from .callcount import op_names
from .cells import (
    ATTRIBUTE_FEATURES,
    ATTRIBUTE_OPS,
    ATTRIBUTE_TEXT_FEATURES,
    by_unique,
    compact,
    compact_dims,
    dim_value,
    logical_dim_value,
)
from .counters import counter_columns, is_counter
from .csvfile import decode, is_pipe, open_checked, pipe_copy, read_header, renamed
from .discover import is_live_header, rank_of
from .narrow import narrow_batch, table_of

REQUIRED = ("OP CODE", "DEVICE KERNEL DURATION [ns]")
# Columns whose non-empty cells must be numbers; a text cell there is a clear error.
NUMERIC = (
    "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]", "HOST START TS", "CORE COUNT",
    "DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]", "DEVICE ID",
    "GLOBAL CALL COUNT", "AVAILABLE WORKER CORE COUNT", "METAL TRACE ID",
)
TEXT = ("OP CODE", "OP TYPE", "ATTRIBUTES", "MATH FIDELITY", "DEVICE ARCH", "SUB DEVICE ID")
TENSOR_RE = re.compile(r"^(INPUT|OUTPUT)_(\d+)_(W|Z|Y|X|LAYOUT|DATATYPE|MEMORY)(_PAD\[LOGICAL\])?$")
# Columns the analysis needs; everything else is kept only when all columns are asked for.
ANALYSIS_EXTRA = (
    "METAL TRACE REPLAY SESSION ID", "PM IDEAL [ns]", "PM COMPUTE [ns]", "PM BANDWIDTH [ns]",
    "DEVICE KERNEL START CYCLE", "DEVICE KERNEL END CYCLE",  # a log's clock without FW cycles;
    # core spread and dispatch (model.imbalance), the program cache (model.progcache)
    "DEVICE KERNEL DURATION PER CORE MAX [ns]", "DEVICE KERNEL DURATION PER CORE AVG [ns]",
    "DISPATCH TOTAL CQ CMD OP TIME [ns]", "DISPATCH GO SEND WAIT TIME [ns]",
    "PROGRAM HASH", "PROGRAM CACHE HIT",
)
#: Columns naming a version (tt-metal's, a firmware's): read with the analysis columns when a diff
#: asks ("compare"), which sets the two runs' versions side by side
VERSION_RE = re.compile(r"VERSION", re.I)
PREVIEW_ROWS = 1 << 14  # a long read offers its first rows as a preview once it has this many


@dataclass
class RawTable:
    path: Path
    header: list[str]
    df: pd.DataFrame  # one row per CSV data row, in file order; "ID" = tt-perf-report's ID
    truncated_tail: bool = False  # a cut last line was dropped (only with tolerate_partial)
    wide: WideRows | None = None  # the columns left out of `df`, a row at a time (lazy reads)


def wanted_columns(header: list[str], compare: bool = False) -> list[str]:
    """The analysis columns of `header`; `compare`: the columns naming a version too."""
    keep = set(REQUIRED) | set(NUMERIC) | set(TEXT) | set(ANALYSIS_EXTRA)
    return [h for h in header if h in keep or TENSOR_RE.match(h) or is_counter(h)
            or (compare and VERSION_RE.search(h))]


def version_columns(header: list[str]) -> tuple[str, ...]:
    """The header's columns that name a version."""
    return tuple(h for h in header if VERSION_RE.search(h))


def _check_header(path: Path, header: list[str]) -> None:
    if len(header) < 2:
        raise TraceError(path, "not a profiler CSV (the first line has no comma-separated columns)",
                         line=1)
    seen: dict[str, int] = {}
    for i, name in enumerate(header, 1):
        if name in seen and name in set(REQUIRED) | set(NUMERIC) | set(TEXT):
            raise TraceError(path, f"column {name!r} appears twice (columns {seen[name]} and {i})",
                             line=1, column=i)
        seen.setdefault(name, i)
    for name in REQUIRED:
        if name not in seen:
            raise TraceError(path, f"missing required column {name!r}; is this an "
                             "ops_perf_results CSV?", line=1)


def _parse(path: Path, data: bytes | None, header: list[str], columns: list[str],
           prune: bool, sink: Writer | None = None, keep: list[str] | None = None,
           preview: Callable[[pa.Table], None] | None = None) -> pa.Table:
    """Stream the CSV block by block (bounded memory); `prune` drops unread ATTRIBUTES cells.
    `preview` is given the rows parsed so far (a table) once PREVIEW_ROWS are, when more remain.

    Text columns are read dictionary-encoded (pandas categoricals: a small integer a row and each
    distinct text once; profiler text repeats a handful of values, attributes included). Each
    parsed batch also goes to `sink` (the columnar cache), when given; of each, only the
    columns named in `keep` (default: all) stay in memory, their numbers narrowed as the frame
    will hold them (model.read.narrow: a million rows' table 411 -> 339 MB)."""
    text = pa.dictionary(pa.int32(), pa.string())
    types = {c: text for c in columns if c in TEXT or c.endswith(("LAYOUT", "DATATYPE",
                                                                   "MEMORY"))}
    for c in columns:  # shape cells are "32[2]" in V2+, plain numbers before: read as text
        m = TENSOR_RE.match(c)
        if m and m.group(3) in "WZYX":
            types[c] = text
    # Our own (stripped, de-duplicated) names: the file's header row is skipped, so padded or
    # repeated names and a BOM cannot confuse column selection.
    read = pacsv.ReadOptions(use_threads=True, block_size=BLOCK, column_names=header,
                             skip_rows=1)
    parse = pacsv.ParseOptions(newlines_in_values=True)
    conv = pacsv.ConvertOptions(include_columns=columns, column_types=types,
                                strings_can_be_null=True, quoted_strings_can_be_null=True,
                                null_values=[""], auto_dict_encode=True,
                                auto_dict_max_cardinality=1 << 30)
    # Not closed here, only let go (its last owner closes it): after a parse error the read-ahead
    # threads still read, and a close would hand their descriptor to the next file opened.
    source = pa.BufferReader(data) if data is not None else pa.OSFile(str(path))
    size = source.size()
    reader = pacsv.open_csv(source, read_options=read, parse_options=parse,
                            convert_options=conv)
    features = _AttributeFeatures(keep=not prune)
    batches = []
    rows = 0
    for raw in reader:
        rows += raw.num_rows  # the share of the bytes parsed (and read ahead) is the %
        step(f"reading {path.name}: {rows:,} rows", source.tell(), size)
        batch = features.block(raw)
        if sink is not None:
            sink.write(batch)
        batches.append(narrow_batch(batch if keep is None else batch.select(keep)))
        del raw, batch  # (the wide block: not kept while the next is parsed)
        if preview is not None and rows >= PREVIEW_ROWS and source.tell() < size:
            preview(table_of(batches))
            preview = None
    if sink is not None:
        sink.finish()
    if not batches:
        return reader.schema.empty_table()
    return table_of(batches)


def read_ops_csv(path: str | Path, columns: str = "analysis",
                 tolerate_partial: bool = False) -> RawTable:
    """Load an ops_perf_results CSV.

    columns: "analysis" reads only what the metrics need (fast, small); "compare" those, the
    whole ATTRIBUTES cells and the version columns too (what a diff sets side by side op by op:
    read again from the CSV, a million ops' second parse cost a diff ~1 s a side); "all" keeps
    every column;
    "lazy" keeps the analysis columns in memory and the others in the columnar cache's copy,
    read a row at a time (`RawTable.wide`; "all" when the file is not cached: small, cache off).
    tolerate_partial: drop a cut last line (a report still being written) instead of failing.
    """
    with freed_at_once():  # (the parse's and the conversion's buffers)
        return _read_ops_csv(Path(path), columns, tolerate_partial)


def _read_ops_csv(path: Path, columns: str, tolerate_partial: bool) -> RawTable:
    if is_pipe(path):  # `<(cmd)`, /dev/stdin: read once, then as a file (not cached)
        with pipe_copy(path) as copy:
            try:  # every column: nothing can be read again later (a diff's ATTRIBUTES)
                raw = read_ops_csv(copy, "all", tolerate_partial)
            except TraceError as exc:
                raise renamed(exc, path) from None
        raw.path = path
        return raw
    fh, size = open_checked(path)
    fh.close()
    header = read_header(path)
    device_log = is_device_log(header)
    if device_log:  # .logs/cpp_device_perf_report.csv or a realtime log: OP NAME is the op code
        header = [LOG_RENAME.get(h, h) for h in header]
    _check_header(path, header)
    # Duplicate non-key column names (seen in hostile files) would break by-name selection.
    names = dedupe_header(header)
    wanted = set(wanted_columns(header, compare=columns == "compare"))
    analysis = [n for n, h in zip(names, header) if h in wanted]
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    decode(path, head, "first 64 KiB")
    data: bytes | None = None
    truncated = False
    if tolerate_partial:
        data, truncated = _drop_cut_tail(path.read_bytes())
    slot = Slot.of(path) if data is None else None
    if columns == "lazy" and slot is None:
        columns = "all"
    lazy = columns == "lazy"
    cols = analysis if columns in ("analysis", "compare") else names
    prune = columns == "analysis"
    in_memory = _parsed_names(analysis, True) if lazy else _parsed_names(cols, prune)

    def preview(first: pa.Table) -> None:  # the first rows, while the rest loads
        offer_preview(lambda: RawTable(path=path, header=header, df=_frame(
            path, header, [_binary_to_text(first)], keep_text=columns == "all")))
    table = None
    if slot is not None:
        table = slot.read(in_memory, complete=_parsed_names(cols, prune),
                          first=preview if wants_preview() else None, first_after=PREVIEW_ROWS)
    hit = table is not None
    sink = slot.writer() if slot is not None and table is None else None
    try:
        if table is None:
            table = _read_table(path, data, header, names, cols, prune, sink,
                                keep=in_memory if lazy else None,
                                preview=preview if wants_preview() else None)
        holder = [_binary_to_text(table)]
        del table
        df = _frame(path, header, holder, keep_text=columns == "all")
        if device_log:
            log_as_report(df)
        rank = rank_of(path)
        if rank is not None:  # a multi-host run's rank: every op says which host it ran on
            add_column(df, "_rank", np.full(len(df), rank, dtype=np.int32))
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    kept = sink.commit() if sink is not None else hit
    wide = WideRows(slot.file, path, header) if lazy and kept and slot is not None else None
    return RawTable(path=path, header=header, df=df, truncated_tail=truncated, wide=wide)


#: a device log's column -> the report's (the rest keep their names)
LOG_RENAME = {"OP NAME": "OP CODE"}


def is_device_log(header: list[str]) -> bool:
    """A `.logs` CSV of device rows (cpp_device_perf_report.csv, the realtime logs) rather than
    a report: a live header with OP NAME and no OP CODE."""
    names = {h.strip() for h in header}
    return "OP CODE" not in names and "OP NAME" in names and is_live_header(header)


def log_as_report(df: pd.DataFrame) -> None:
    """A device log's rows as report rows, in place (the live table and a log opened as a
    trace alike): every row a device op, named by OP NAME or else `op #<GLOBAL CALL COUNT>`
    (OP NAME is empty unless the run was under tracy); an op-to-op of 0 marks a dump boundary
    (or the realtime profiler's first record of a chip), not a gap."""
    code = df["OP CODE"].astype(object) if "OP CODE" in df.columns \
        else pd.Series(pd.NA, index=df.index, dtype=object)
    unnamed = code.isna() | (code.astype(str).str.strip() == "")
    if unnamed.any():
        code = code.where(~unnamed, op_names(df))
    df["OP CODE"] = code
    df["OP TYPE"] = "tt_dnn_device"
    if "OP TO OP LATENCY [ns]" in df.columns:
        gap = df["OP TO OP LATENCY [ns]"]
        df["OP TO OP LATENCY [ns]"] = gap.where(gap != 0)


class WideRows:
    """Every column of one row, read from the cached copy of the file on demand (the details
    of one op), processed as a `columns="all"` read would have: an integer column with an
    empty cell anywhere in the file is a float column there, so it is one here too."""

    def __init__(self, copy: Path, path: Path, header: list[str]) -> None:
        self.copy, self.path, self.header = copy, path, header
        self.nullable_ints: list[str] | None = None

    def frame(self, index: int) -> pd.DataFrame | None:
        """Row `index` (0 = the first data row) as a one-row frame; None when the copy is gone
        (evicted by another ttdash) or has no such row."""
        try:
            with open_copy(self.copy) as pf:  # a regular file, its page checksums verified
                meta = pf.metadata
                if self.nullable_ints is None:
                    self.nullable_ints = _nullable_ints(pf)
                start = 0
                for k in range(meta.num_row_groups):
                    n = meta.row_group(k).num_rows
                    if index < start + n:
                        one = pf.read_row_group(k).slice(index - start, 1)
                        break
                    start += n
                else:
                    return None
        except (OSError, pa.ArrowException):
            return None
        for name in self.nullable_ints:
            i = one.schema.get_field_index(name)
            one = one.set_column(i, name, one.column(i).cast(pa.float64()))
        df = _frame(self.path, self.header, [_binary_to_text(one)], keep_text=True)
        df["ID"] = index + 2
        return df


def _nullable_ints(pf: Any) -> list[str]:
    """The integer columns of a Parquet copy with a null anywhere (its null counts)."""
    names = set()
    meta = pf.metadata
    for k in range(meta.num_row_groups):
        group = meta.row_group(k)
        for c in range(group.num_columns):
            col = group.column(c)
            stats = col.statistics
            if stats is not None and stats.has_null_count and stats.null_count > 0:
                names.add(col.path_in_schema)
    schema = pf.schema_arrow
    return [f.name for f in schema if f.name in names and pa.types.is_integer(f.type)]


def _parsed_names(columns: list[str], prune: bool) -> list[str]:
    """The columns a parse of `columns` makes: the attribute facts added, ATTRIBUTES itself
    dropped when pruned."""
    if "ATTRIBUTES" not in columns:
        return columns
    kept = [c for c in columns if not (prune and c == "ATTRIBUTES")]
    return kept + list(ATTRIBUTE_FEATURES) + list(ATTRIBUTE_TEXT_FEATURES)


def _read_table(path: Path, data: bytes | None, header: list[str], names: list[str],
                cols: list[str], prune: bool, sink: Writer | None, keep: list[str] | None = None,
                preview: Callable[[pa.Table], None] | None = None) -> pa.Table:
    """Parse, turning pyarrow's failures into one-line errors naming the line."""
    try:
        return _parse(path, data, names, cols, prune=prune, sink=sink, keep=keep,
                      preview=preview)
    except pa.ArrowInvalid as exc:
        msg = str(exc)
        if "UTF8" in msg:
            if sink is not None:
                sink.abort()  # the cache keeps clean parses only
            raw = data if data is not None else path.read_bytes()
            data = raw.decode("utf-8", errors="replace").encode("utf-8")
            try:
                return _parse(path, data, names, cols, prune=prune, keep=keep)
            except pa.ArrowInvalid:
                raise locate_bad_line(path, len(header)) from None
        elif "columns" in msg:
            raise locate_bad_line(path, len(header)) from None
        elif "conversion error" in msg.lower():
            raise numeric_error(path, header, msg) from None
        raise locate_binary(path) from None
    except (pa.ArrowKeyError, KeyError) as exc:
        raise TraceError(path, f"cannot read column {exc}") from None


def _frame(path: Path, header: list[str], holder: list[pa.Table], keep_text: bool
           ) -> pd.DataFrame:
    """The parsed table as the checked, compact frame the model reads."""
    if len(holder[0]) == 0:
        raise TraceError(path, "header only: the file has no data rows", line=2)
    # an analysis read: a counter column with no value is not carried (nor made)
    skip = frozenset() if keep_text else frozenset(counter_columns(holder[0].column_names))
    cols = _to_columns(holder, skip_empty=skip)
    _check_numeric(path, header, cols)
    _shapes_to_numbers(cols, keep_text=keep_text)  # (every numeric column is `compact` now)
    for c in skip & set(cols):
        if pd.isna(cols[c]).all():
            del cols[c]
    for c, v in cols.items():  # a column with no value: one NaN, not a million (read-only)
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.strides != (0,) \
                and np.isnan(v).all():
            cols[c] = np.broadcast_to(v.dtype.type(np.nan), v.shape)
    # one frame of the finished columns (a column deleted from a frame is an O(columns) step:
    # ~40% of a small file's load); not consolidated (copy=False): no second copy of the data
    df = pd.DataFrame(cols, copy=False)
    add_column(df, "ID", np.arange(2, len(df) + 2, dtype=np.int64), at=0)
    return df


def _to_columns(holder: list[pa.Table], skip_empty: frozenset[str] = frozenset()
                ) -> dict[str, Any]:
    """The table (the only reference to it in `holder`) as pandas columns, one at a time: each
    column's Arrow buffers are let go as soon as it is converted (the peak is the table plus
    one column, not two copies of it). Columns in `skip_empty` with no value are left out.
    Each is a Series, or a numpy array (`compact`'s, or NaNs for a column with no value)."""
    table = holder.pop()
    columns: dict[str, Any] = {}
    names, arrays = table.column_names, table.columns  # (not remove_column: O(columns^2))
    del table
    for k, name in enumerate(names):
        step("converting columns", k, len(names))
        column, arrays[k] = arrays[k], None  # a column with no value: missing numbers, 4 B a row
        if not (pa.types.is_null(column.type) and name in skip_empty):
            columns[name] = np.full(len(column), np.nan, np.float32) \
                if pa.types.is_null(column.type) else _pandas(column)
        del column
        pa.default_memory_pool().release_unused()  # (its Arrow buffers: not kept for later)
    del arrays
    pa.default_memory_pool().release_unused()  # parse buffers back to the OS before analysis
    return columns


def _pandas(column: pa.ChunkedArray) -> Any:
    """A parsed column as `compact` makes it: a column the parse narrowed (int32, float32;
    model.read.narrow) is already so, and is made the numpy array `compact` gives (its own,
    writable: not a view of the Arrow buffers)."""
    values = column.to_pandas()
    if values.dtype in (np.int32, np.float32):
        return values.to_numpy(copy=True)
    return compact(values)


def merge_tables(tables: list[RawTable]) -> RawTable:
    """Several reports of one run (one per host of a multi-host system) as one table, as
    tt-perf-report merges its CSV arguments: every file must have the same number of devices
    (highest DEVICE ID + 1; a file naming none is left as is), file k's device ids are offset by
    k times that number, rows are concatenated in argument order and IDs numbered through
    (2, 3, ... as if one CSV)."""
    if len(tables) == 1:
        return tables[0]
    per_system: int | None = None
    frames = []
    for k, t in enumerate(tables):
        df = t.df
        if "DEVICE ID" not in df.columns:
            raise TraceError(t.path, "no DEVICE ID column: cannot merge it with other reports")
        ids = pd.to_numeric(df["DEVICE ID"], errors="coerce").to_numpy(dtype="float64")
        usable = (ids % 1 == 0) & (ids >= 0)
        if usable.any():
            n = int(ids[usable].max()) + 1
            if per_system is None:
                per_system = n
            elif n != per_system:
                raise TraceError(t.path, f"{n} device(s) (highest DEVICE ID {n - 1}), but "
                                 f"{tables[0].path.name} has {per_system}: reports of one "
                                 "run have the same devices")
        offset = k * (per_system or 0)
        if offset:
            df = df.copy()
            df["DEVICE ID"] = np.where(usable, ids + offset, ids)
        frames.append(df.drop(columns="ID"))
    df = pd.concat(frames, ignore_index=True)
    add_column(df, "ID", np.arange(2, len(df) + 2, dtype=np.int64), at=0)
    header = list(dict.fromkeys(h for t in tables for h in t.header))
    return RawTable(path=tables[0].path, header=header, df=df,
                    truncated_tail=any(t.truncated_tail for t in tables))


# Only these ops' ATTRIBUTES matter to the analysis.
ATTRIBUTE_READERS = "|".join(ATTRIBUTE_OPS)


class _AttributeFeatures:
    """Adds, block by block, the few facts the analysis reads from the matmul/conv ATTRIBUTES
    cells (dropping the KB-long column unless kept), computed once per distinct cell (repeated
    layers repeat their attributes): memory grows with the distinct cells, not the rows."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.memo: dict[str, tuple[Any, ...]] = {}
        self.fields = [pa.field(n, pa.float64()) for n in ATTRIBUTE_FEATURES] + [
            pa.field(n, pa.dictionary(pa.int32(), pa.string())) for n in ATTRIBUTE_TEXT_FEATURES]
        self.blank = tuple([np.nan] * len(ATTRIBUTE_FEATURES)
                           + [None] * len(ATTRIBUTE_TEXT_FEATURES))

    def _facts(self, cell: str | None) -> tuple[Any, ...]:
        if cell is None:
            return self.blank
        got = self.memo.get(cell)
        if got is None:
            got = tuple([fn(cell) for fn in ATTRIBUTE_FEATURES.values()]
                        + [fn(cell) for fn in ATTRIBUTE_TEXT_FEATURES.values()])
            self.memo[cell] = got
        return got

    def block(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        i = batch.schema.get_field_index("ATTRIBUTES")
        if i < 0:
            return batch
        cells = batch.column(i)
        if not pa.types.is_dictionary(cells.type):
            cells = pc.dictionary_encode(cells)
        if "OP CODE" in batch.schema.names:
            mask = pc.fill_null(pc.match_substring_regex(batch.column("OP CODE").cast(pa.string()),
                                                         ATTRIBUTE_READERS), False)
            mask = mask.to_numpy(zero_copy_only=False)
        else:
            mask = np.zeros(batch.num_rows, dtype=bool)
        # one row of facts per dictionary entry, plus a blank row for nulls and other ops
        facts = [self._facts(c) for c in cells.dictionary.to_pylist()] + [self.blank]
        index = pc.fill_null(cells.indices, len(facts) - 1).to_numpy(zero_copy_only=False)
        index = np.where(mask, index, len(facts) - 1)
        arrays = []
        for k, field in enumerate(self.fields):
            per_entry = [f[k] for f in facts]
            if pa.types.is_dictionary(field.type):  # a dictionary holds each text once
                uniques: dict[str, int] = {}
                codes = np.array([-1 if v is None else uniques.setdefault(v, len(uniques))
                                  for v in per_entry], dtype=np.int32)
                at = codes[index]
                arrays.append(pa.DictionaryArray.from_arrays(
                    pa.array(at, mask=at < 0), pa.array(list(uniques), pa.string())))
            else:
                arrays.append(pa.array(np.asarray(per_entry, dtype="float64")[index]))
        out = batch if self.keep else batch.remove_column(i)
        for field, arr in zip(self.fields, arrays):
            out = out.append_column(field, arr)
        return out


def _shapes_to_numbers(cols: dict[str, Any], keep_text: bool) -> None:
    """Add numeric padded dims as `INPUT_0_W` etc. (any era); V2+ text columns are dropped
    unless `keep_text` (the detail view shows them). `cols`: a frame's columns by name, in
    order (a name set again keeps its place, as in a frame)."""
    for c in list(cols):
        m = TENSOR_RE.match(c)
        if not m or m.group(3) not in "WZYX":
            continue
        canonical = f"{m.group(1)}_{m.group(2)}_{m.group(3)}"
        values = by_unique(cols[c], dim_value)
        logical = by_unique(cols[c], logical_dim_value) if m.group(4) and not keep_text else None
        if canonical == c or not keep_text:
            del cols[c]
        cols[canonical] = compact_dims(values)
        if logical is not None and bool((logical < values).any()):  # "32[19]": 19 kept
            cols[canonical + "_LOGICAL"] = compact_dims(logical)


def add_column(df: pd.DataFrame, name: str, values: Any, at: int | None = None) -> None:
    """Add a column in place; pandas' fragmentation warning (very wide files) is not the user's
    concern and must not reach stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
        if at is None:
            df[name] = values
        else:
            df.insert(at, name, values)


def dedupe_header(header: list[str]) -> list[str]:
    """Repeated column names get pandas' suffixes (`NAME`, `NAME.1`, ...), as read_csv does.
    "ID" is taken (the row's line, tt-perf-report's op ID): a file's own "ID" is `ID.1`."""
    seen: dict[str, int] = {"ID": 0}
    out = []
    for h in header:
        if h in seen:
            seen[h] += 1
            out.append(f"{h}.{seen[h]}")
        else:
            seen[h] = 0
            out.append(h)
    return out


def _drop_cut_tail(data: bytes) -> tuple[bytes, bool]:
    """The bytes up to the last newline (a report still being written ends mid-line)."""
    if data and not data.endswith((b"\n", b"\r")):
        cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
        return (data[:cut + 1] if cut >= 0 else b""), True
    return data, False


def _binary_to_text(table: pa.Table) -> pa.Table:
    """Columns pyarrow left as bytes (invalid UTF-8 in an inferred column) become text, with
    undecodable bytes replaced (rare: only such columns pay the per-cell decode)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type) and not pa.types.is_string(field.type.value_type):
            table = table.set_column(i, field.name, table.column(i).cast(field.type.value_type))
            field = table.schema.field(i)
        if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            values = [None if v is None else v.decode("utf-8", "replace")
                      for v in table.column(i).to_pylist()]
            table = table.set_column(i, field.name, pa.array(values, pa.string()))
    return table


def _check_numeric(path: Path, header: list[str], cols: dict[str, Any]) -> None:
    """Key numeric columns must hold numbers; name the first offending cell."""
    for name in NUMERIC:
        if name not in cols:
            continue
        s = cols[name]
        if pd.api.types.is_numeric_dtype(s.dtype):
            continue
        as_num = pd.to_numeric(s, errors="coerce")
        bad = as_num.isna() & s.notna() & (s.astype("string").str.strip() != "")
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            value = str(s.iloc[pos])[:40]
            raise TraceError(path, f"column {name!r}: expected a number, found {value!r}",
                             line=pos + 2, column=header.index(name) + 1)
        cols[name] = compact(as_num)
