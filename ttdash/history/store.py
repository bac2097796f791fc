"""The run history: a Parquet dataset any engine reads as it is.

    STORE/runs/arch=ARCH/run-RUN_ID.parquet            one row per run (schema.RUNS)
    STORE/runs/arch=ARCH/runs-UUID.parquet             many runs, merged by `compact`
    STORE/ops/arch=ARCH/run_id=RUN_ID/ops.parquet      one row per op (schema.OPS)

Every file carries its schema version (schema.VERSION_KEY in the Parquet key-value metadata);
ttdash reads a file of an older version into the current schema (schema.conform) and refuses
one of a newer version (schema.NewerSchema: one line naming the file).

`arch` and `run_id` are hive partitions (in the path, not in the files); only the folders below
STORE are partitions (a `run_id=...` folder above it labels nothing: `runs`, `run_ops` and the
views of `history sql`, `sql_view`, read the partitions from the path below the root).

Safety: every file is written under a temporary name starting with "." (which pyarrow, DuckDB's
`*.parquet` glob and Spark all skip) and renamed into place, so no reader sees half a file. Names
are keyed by the run id (a hash of the file's content and the analysis settings): two processes
adding the same run write the same names (the run is kept once), two different runs never share
a name. The ops file is written before the run's row (and removed if the row cannot be): a run
listed has its ops. Merging run rows (`compact`, after an add, on any filesystem, without a lock:
an object store has none that holds across hosts) writes the merged file before removing the
ones it replaces; a reader that sees both keeps each run once (rows are deduplicated by run_id),
one that finds a listed file gone lists again and reads the files it has not read. So any number
of writers, compactions and readers, on one host or many (a local disk, an NFS-style share, an
object store: the same code), need no coordination. Every page of every file carries a CRC-32
checksum (WRITE_OPTIONS) that every read verifies (VERIFY): a file whose bytes changed on disk is
named and skipped, or fails the one command that needs it (`check`), never read as other numbers.

An add killed between its writes can leave ops without their run row (until a compaction removes
them, STALE_S later) and, killed in a compaction, a run's row twice. Every ttdash reader (list,
trend, check, sql, the TUI) agrees at every instant: a run is listed once, and ops count only
when their run row exists. DuckDB reading the files directly agrees with these views (STORE's own
path without `key=value` folders, which DuckDB would read as partitions too):

    CREATE VIEW runs AS SELECT * FROM read_parquet('STORE/runs/*/*.parquet',
        hive_partitioning=true, hive_types={'arch': VARCHAR}, union_by_name=true)
      QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY added_at) = 1;
    CREATE VIEW ops AS SELECT * FROM read_parquet('STORE/ops/*/*/*.parquet',
        hive_partitioning=true, hive_types={'arch': VARCHAR, 'run_id': VARCHAR},
        union_by_name=true) o
      WHERE EXISTS (SELECT 1 FROM runs r WHERE r.arch = o.arch AND r.run_id = o.run_id);
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..model.errors import TraceError
from ..paths import data_dir
from . import schema as sch
from . import sqlviews
from .record import RunRecord
from .schema import RUNS
from .sqlviews import REQUIRED

#: Run rows in one partition beyond which an add merges them into one file (a store of a
#: thousand runs reads in a few files, not a thousand).
COMPACT_ABOVE = 32
#: How every file is written: zstd, and a CRC-32 checksum of each data page (Parquet's own, which
#: pyarrow, parquet-mr/Spark and Arrow readers can verify; ttdash's readers always do:
#: VERIFY). A byte changed on disk then fails the read of its page instead of changing a number.
WRITE_OPTIONS: dict[str, Any] = {"compression": "zstd", "write_page_checksum": True}
#: How every file is opened (pq.ParquetFile's options).
VERIFY: dict[str, Any] = {"page_checksum_verification": True}
#: What reading a damaged file can raise (a changed footer byte can make a column's name
#: invalid UTF-8, which pyarrow raises as UnicodeDecodeError).
_UNREADABLE = (OSError, pa.ArrowException, UnicodeDecodeError)
#: Rounds of re-listing a reader makes when files it listed were merged away meanwhile.
RELIST = 50
#: Tries of one listing: a folder made by another writer during a listing fails it in pyarrow 16
LIST_TRIES = 5
#: Seconds a remote store has to answer the first request.
REMOTE_TIMEOUT = 30.0
#: Leftovers of an add that died (a temporary file, ops without their run row) older than this
#: are removed by the next compaction; younger ones may be an add in progress.
STALE_S = 3600.0
_VANISHED = object()  # a file removed between listing and reading (a compaction)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def default_store() -> str:
    """$TTDASH_HISTORY, else $XDG_DATA_HOME/ttdash/history."""
    return os.environ.get("TTDASH_HISTORY") or str(data_dir() / "history")


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


@dataclass
class Store:
    """A history store at a local path or any URI pyarrow's filesystems open (file://, s3://,
    gs://, hdfs://)."""

    uri: str
    fs: pafs.FileSystem = field(repr=False)
    root: str  # the store's path inside `fs`
    #: problems met while reading (a corrupt or foreign file): one line each, naming the file
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, uri: str | None = None) -> Store:
        uri = uri or default_store()
        try:
            if "://" in uri:
                fs, root = pafs.FileSystem.from_uri(uri)
            else:
                fs, root = pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise TraceError(uri, "not a store this ttdash can open: "
                             + _first_line(exc)) from None
        store = cls(uri=uri, fs=fs, root=root.rstrip("/") or "/")
        if not store.local:
            store._probe()
        return store

    def _probe(self, timeout: float | None = None) -> None:
        """A remote store answers within REMOTE_TIMEOUT seconds, or a clear error (a client
        without network or credentials may otherwise retry for minutes)."""
        timeout = REMOTE_TIMEOUT if timeout is None else timeout
        result: list[BaseException | None] = []

        def probe() -> None:
            try:
                self.fs.get_file_info(self.root)
                bucket = self.root.split("/")[0]
                if (self.fs.type_name == "s3"
                        and self.fs.get_file_info(bucket).type == pafs.FileType.NotFound):
                    result.append(TraceError(self.uri, f"bucket {bucket!r} does not exist "
                                             "(create it first; ttdash never creates buckets)"))
                    return
                result.append(None)
            except BaseException as exc:  # handed to the caller's thread
                result.append(exc)

        t = threading.Thread(target=probe, name="ttdash-store-probe", daemon=True)
        t.start()
        t.join(timeout)
        if not result:
            raise TraceError(self.uri, f"no answer in {timeout:g} s (network, bucket name or "
                             "credentials?)")
        if isinstance(result[0], TraceError):
            raise result[0]
        if result[0] is not None:
            raise TraceError(self.uri, "cannot reach the store: "
                             + _remote_hint(result[0])) from None

    @property
    def local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _error(self, exc: BaseException, what: str) -> TraceError:
        return TraceError(self.uri, f"{what}: {_first_line(exc)}")

    # ------------------------------------------------------------ reading
    def exists(self) -> bool:
        try:
            return self.fs.get_file_info(self.root).type == pafs.FileType.Directory
        except (OSError, pa.ArrowException):
            return False

    def files(self, table: str) -> list[str]:
        """The Parquet files of "runs" or "ops" (hidden temporaries left out)."""
        if not self.exists():
            kind = self.fs.get_file_info(self.root).type
            if kind != pafs.FileType.NotFound:
                raise TraceError(self.uri, "is not a directory: not a history store")
            raise TraceError(self.uri, "no history store here yet (`ttdash history add "
                             "REPORT` creates it)")
        selector = pafs.FileSelector(self._path(table), recursive=True, allow_not_found=True)
        for attempt in range(LIST_TRIES):
            try:
                infos = self.fs.get_file_info(selector)
                break
            except (OSError, pa.ArrowException) as exc:
                # a folder another writer made while this one listed (pyarrow 16 reports its
                # own race as "Cannot list directory ...: No such file or directory"): again
                if attempt == LIST_TRIES - 1:
                    raise self._error(exc, "cannot list the store") from None
        return sorted(i.path for i in infos if i.type == pafs.FileType.File
                      and i.path.endswith(".parquet")
                      and not any(_hidden(p) for p in i.path[len(self.root):].split("/")))

    def _partitions(self, path: str) -> dict[str, str]:
        out = {}
        for part in path[len(self.root):].split("/")[:-1]:
            key, eq, value = part.partition("=")
            if eq:
                out[key] = value
        return out

    def _rel(self, path: str) -> str:
        """`path` as the store's URI and the path below its root (how files are named)."""
        return f"{self.uri}/{path[len(self.root):].lstrip('/')}"

    def _read(self, path: str, columns: list[str] | None) -> pa.Table | None | object:
        """One runs file as RUNS (or its `columns`), whatever its schema version; None (with a
        line in `skipped`) when it is corrupt or foreign; _VANISHED when it was removed since
        it was listed. A file of a newer schema version raises NewerSchema."""
        name = self._rel(path)
        try:
            if self.local and not os.path.exists(path):
                return _VANISHED
            with self.fs.open_input_file(path) as fh:
                pf = pq.ParquetFile(fh, **VERIFY)
                try:
                    version = sch.check_version(pf.metadata.metadata, name)
                except ValueError as exc:
                    self.skipped.append(f"{name}: not a ttdash runs file ({exc}); skipped")
                    return None
                present = set(pf.schema_arrow.names)
                if (lacks := _lacks("runs", version, present)):
                    self.skipped.append(f"{name}: {lacks}; skipped")
                    return None
                wanted = columns or RUNS.names
                table = pf.read(columns=sch.source_columns("runs", version, wanted, present))
        except FileNotFoundError:
            return _VANISHED
        except _UNREADABLE as exc:
            self.skipped.append(f"{name}: {_damage(exc)}; skipped")
            return None
        try:
            return sch.conform(table, "runs", version, columns)
        except (pa.ArrowException, ValueError) as exc:
            self.skipped.append(f"{name}: columns of other types "
                                f"({_first_line(exc)}); skipped")
            return None

    def _read_all(self, read: Callable[[str], Any]) -> tuple[list[str], list[Any]]:
        """`read` of every runs file, also of those a compaction wrote while they were read
        (files, results; a file merged away meanwhile left out: its rows are in a file written
        before it was removed, which the next listing has). No lock is needed: files are
        written once and removed only when a file holding their rows exists."""
        done: dict[str, Any] = {}
        for _ in range(RELIST):
            todo = [f for f in self.files("runs") if f not in done]
            with ThreadPoolExecutor(max_workers=8) as pool:
                got = list(pool.map(read, todo))
            done.update(zip(todo, got))
            if not any(t is _VANISHED for t in got):
                break
        kept = sorted(f for f, t in done.items() if t is not _VANISHED)
        return kept, [done[f] for f in kept]

    def runs(self, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Every run (each once), oldest added first. `columns`: RUNS fields to read
        (run_id and added_at always; "arch" always)."""
        if columns is not None:
            columns = list(dict.fromkeys(["run_id", "added_at", *columns]))
        self.skipped = []  # this read's problems only
        files, tables = self._read_all(lambda f: self._read(f, columns))
        rows: dict[str, dict[str, Any]] = {}
        for path, t in zip(files, tables):
            if t is None:
                continue
            arch = self._partitions(path).get("arch", "")
            stamps = [c for c in ("added_at", "run_at") if c in t.column_names]
            for c in stamps:  # as integers: pyarrow's own conversion would import pandas
                t = t.set_column(t.column_names.index(c), c, t[c].cast(pa.int64()))
            blank = 0
            for r in t.to_pylist():
                if any(r.get(k, 0) is None for k in REQUIRED):
                    blank += 1
                    continue
                r["arch"] = arch
                for c in stamps:
                    r[c] = _utc(r[c])
                old = rows.get(r["run_id"])
                if old is None or r["added_at"] < old["added_at"]:
                    rows[r["run_id"]] = r
            if blank:
                self.skipped.append(f"{self._rel(path)}: {blank} row(s) without "
                                    f"{', '.join(REQUIRED)}; skipped")
        out = sorted(rows.values(), key=lambda r: (r["added_at"], r["run_id"]))
        for r in out:
            if "labels" in r:
                r["labels"] = dict(r["labels"] or [])
        return out

    def run_ops(self, run: dict[str, Any], columns: list[str]) -> pa.Table:
        """The stored ops of one run (report order), `columns` of OPS (whatever the files'
        schema version: schema.conform)."""
        directory = self._path("ops", f"arch={run['arch']}", f"run_id={run['run_id']}")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
            files = sorted(i.path for i in infos if i.type == pafs.FileType.File
                           and i.path.endswith(".parquet") and not _hidden(i.base_name))
            if not files:
                raise TraceError(self.uri, f"run {run['run_id']} has no stored ops "
                                 f"({directory}): the store is damaged")
            tables = [self._ops_file(f, run, columns) for f in files]
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise self._error(exc, f"cannot read the ops of run {run['run_id']}") from None
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def _ops_file(self, path: str, run: dict[str, Any], columns: list[str]) -> pa.Table:
        """One ops file's `columns` (a damaged file: TraceError naming it)."""
        with self.fs.open_input_file(path) as fh:
            pf = pq.ParquetFile(fh, **VERIFY)
            try:
                version = sch.check_version(pf.metadata.metadata, self._rel(path))
            except ValueError as exc:
                raise TraceError(self._rel(path), f"not a ttdash ops file ({exc})") from None
            present = set(pf.schema_arrow.names)
            if (lacks := _lacks("ops", version, present)):
                raise TraceError(self._rel(path), f"{lacks}: cannot read the ops of run "
                                 f"{run['run_id']}")
            try:
                read = pf.read(columns=sch.source_columns("ops", version, columns, present))
            except _UNREADABLE as exc:
                raise TraceError(self._rel(path), f"{_damage(exc)}: cannot read the ops of run "
                                 f"{run['run_id']}") from None
        return sch.conform(read, "ops", version, columns)

    def readable(self, table: str) -> list[str]:
        """The Parquet files of "runs" or "ops" whose footer reads (the others named in
        `skipped`): what an engine given the whole list can scan. A file of a newer schema
        version raises NewerSchema (as every other reader)."""
        files = self.files(table)
        self.skipped = []

        def ok(path: str) -> bool:
            try:
                with self.fs.open_input_file(path) as fh:
                    pf = pq.ParquetFile(fh, **VERIFY)
                    try:
                        version = sch.check_version(pf.metadata.metadata, self._rel(path))
                    except ValueError as exc:
                        self.skipped.append(f"{self._rel(path)}: not a ttdash {table} file "
                                            f"({exc}); skipped")
                        return False
                    if (lacks := _lacks(table, version, set(pf.schema_arrow.names))):
                        self.skipped.append(f"{self._rel(path)}: {lacks}; skipped")
                        return False
                    blank = 0
                    for i in range(pf.num_row_groups):  # every page, against its checksum
                        group = pf.read_row_group(i)
                        if table == "runs":  # rows the view leaves out, named as runs() does
                            blank += _blank_rows(group, version)
                    if blank:
                        self.skipped.append(f"{self._rel(path)}: {blank} row(s) without "
                                            f"{', '.join(REQUIRED)}; skipped")
            except FileNotFoundError:
                return False
            except _UNREADABLE as exc:
                self.skipped.append(f"{self._rel(path)}: {_damage(exc)}; skipped")
                return False
            return True

        with ThreadPoolExecutor(max_workers=8) as pool:
            return [f for f, good in zip(files, pool.map(ok, files)) if good]

    def local_copy(self, dest: str) -> Store:
        """The store's Parquet files copied under the local folder `dest` (the same paths below
        it), as a store that names its files by this store's URI: how `history sql` reads an
        object store (DuckDB's own S3 reader, httpfs, is an extension it downloads). Checksums
        are verified on the copy, as on any local store."""
        def copy(path: str) -> Any:
            target = os.path.join(dest, path[len(self.root):].lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            try:
                with self.fs.open_input_stream(path) as src, open(target, "wb") as out:
                    while block := src.read(1 << 20):
                        out.write(block)
            except FileNotFoundError:  # merged away meanwhile (runs files only)
                return _VANISHED
            except _UNREADABLE as exc:
                raise self._error(exc, f"cannot read {self._rel(path)}") from None
            return True

        self._read_all(copy)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(copy, self.files("ops")))
        return Store(uri=self.uri, fs=pafs.LocalFileSystem(), root=dest.rstrip("/"))

    def sql_source(self, files: list[str]) -> str:
        """DuckDB's read of `files` (sqlviews.sql_source)."""
        return sqlviews.sql_source(files)

    def sql_view(self, table: str, files: list[str], columns: list[str]) -> str:
        """The DuckDB view "runs" or "ops" over `files` (sqlviews.sql_view)."""
        return sqlviews.sql_view(self, table, files, columns)

    # ------------------------------------------------------------ writing
    def _write(self, directory: str, name: str, write: Callable[[Any], None]) -> None:
        """Write a file through `write(sink)` under a hidden temporary name, then rename it."""
        tmp = f"{directory}/.tmp-{uuid.uuid4().hex}"
        try:
            self.fs.create_dir(directory, recursive=True)
            with self.fs.open_output_stream(tmp) as sink:
                write(sink)
            self.fs.move(tmp, f"{directory}/{name}")
        except BaseException as exc:
            try:
                self.fs.delete_file(tmp)
            except (OSError, pa.ArrowException):
                pass
            if isinstance(exc, (OSError, pa.ArrowException)):
                raise self._error(exc, "cannot write to the store") from None
            raise

    def add(self, record: RunRecord, batches: Iterable[pa.RecordBatch] | None = None) -> bool:
        """Store one run (its ops, then its row), in the declared schema (schema.OPS and RUNS,
        stamped with SCHEMA_VERSION). `batches`: the op rows when already built (their
        undeclared fields left out); else schema.op_batches(record.view). False: a run of the
        same content is stored already (nothing written)."""
        if self.exists() and any(r["run_id"] == record.run_id
                                 for r in self.runs(columns=["run_id"])):
            return False
        arch = f"arch={record.arch}"

        def ops(sink) -> None:
            from concurrent.futures import ThreadPoolExecutor

            # a batch encoded and compressed (pyarrow, without the GIL) while the next is built
            with pq.ParquetWriter(sink, sch.stamped(sch.OPS), **WRITE_OPTIONS) as w, \
                    ThreadPoolExecutor(max_workers=1) as pool:
                pending = None
                for batch in (sch.op_batches(record.view) if batches is None else batches):
                    batch = sch.conform_batch(batch)
                    if pending is not None:
                        pending.result()
                    pending = pool.submit(w.write_batch, batch)
                if pending is not None:
                    pending.result()

        def run(sink) -> None:
            row = {k: v for k, v in record.row.items() if k in RUNS.names}
            pq.write_table(pa.Table.from_pylist([row], schema=sch.stamped(RUNS)), sink,
                           **WRITE_OPTIONS)

        ops_dir = self._path("ops", arch, f"run_id={record.run_id}")
        self._write(ops_dir, "ops.parquet", ops)
        try:
            self._write(self._path("runs", arch), f"run-{record.run_id}.parquet", run)
        except BaseException:  # no ops without their run left behind for DuckDB to count
            try:
                self.fs.delete_dir(ops_dir)
            except (OSError, pa.ArrowException):
                pass
            raise
        try:  # the run is stored: a failed tidy-up must not say otherwise
            self.compact(arch)
        except (TraceError, OSError, pa.ArrowException):
            pass
        return True

    def compact(self, partition: str, above: int | None = None) -> int:
        """Merge the run files of one `runs/` partition when there are more than `above`
        (COMPACT_ABOVE); returns the files merged. Lock-free, on any filesystem (an object
        store has no lock that holds across hosts): the merged file is written (under a new
        name, renamed into place) before any file it merges is removed, so every row is in
        some file at every instant; two compactions at once write two merged files with the
        same rows, which readers keep once (by run_id) and the next compaction merges."""
        directory = self._path("runs", partition)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        except (OSError, pa.ArrowException):
            return 0
        names = sorted(i.path for i in infos if i.type == pafs.FileType.File
                       and i.path.endswith(".parquet") and not _hidden(i.base_name))
        if len(names) <= (COMPACT_ABOVE if above is None else above):
            return 0
        read = [(p, self._read(p, None)) for p in names]
        # a bad file stays (named on every read); a vanished one was merged by another
        good = [(p, t) for p, t in read if t is not None and t is not _VANISHED]
        if not good:
            return 0
        merged = pa.concat_tables([t for _, t in good])
        first = _first_of_each(merged["run_id"].to_pylist())
        merged = merged.filter(pa.array(first)) if not all(first) else merged
        merged = merged.replace_schema_metadata(sch.stamped(RUNS).metadata)
        self._write(directory, f"runs-{uuid.uuid4().hex}.parquet",
                    lambda sink: pq.write_table(merged, sink, **WRITE_OPTIONS))
        for p, _ in good:
            try:
                self.fs.delete_file(p)
            except FileNotFoundError:  # merged and removed by another compaction
                pass
        self._tidy()
        return len(good)

    def _tidy(self) -> None:
        """Remove what adds that died left: temporary files, and ops partitions without a run
        row, older than STALE_S (younger: maybe an add running)."""
        old = time.time() - STALE_S
        stored = {r["run_id"] for r in self.runs(columns=["run_id"])}
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True,
                                                            allow_not_found=True))
        except (OSError, pa.ArrowException):
            return
        # an ops partition of no run is stale when its folder's time (a local one's: its last
        # entry made), else (an object store has no folders) each of its files', is old
        folders: dict[str, float] = {}
        files: dict[str, list[float]] = {}
        for i in infos:
            stamp = i.mtime.timestamp() if i.mtime is not None else None
            if i.type == pafs.FileType.File and i.base_name.startswith(".tmp-"):
                if stamp is not None and stamp < old:
                    try:
                        self.fs.delete_file(i.path)
                    except (OSError, pa.ArrowException):
                        pass
                continue
            parent = i.path.rsplit("/", 1)[0] if i.type == pafs.FileType.File else i.path
            key, _, run_id = parent.rsplit("/", 1)[-1].partition("=")
            if key != "run_id" or run_id in stored:
                continue
            if i.type == pafs.FileType.Directory and stamp is not None:
                folders[parent] = stamp
            else:
                files.setdefault(parent, []).append(time.time() if stamp is None else stamp)
        for parent in {*folders, *files}:
            stamps = [folders[parent]] if parent in folders else files[parent]
            if max(stamps) < old:
                try:
                    self.fs.delete_dir(parent)
                except (OSError, pa.ArrowException):
                    pass


def _remote_hint(exc: BaseException) -> str:
    """An object store's refusal in one line, led by what to check (the standard variables)."""
    text = _first_line(exc)
    if any(k in text for k in ("ACCESS_DENIED", "AccessDenied", "InvalidAccessKeyId",
                               "SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch")):
        return "access denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): " + text
    if "NETWORK_CONNECTION" in text:
        where = os.environ.get("AWS_ENDPOINT_URL")
        return (f"no connection to {'AWS_ENDPOINT_URL=' + where if where else 'the endpoint'}: "
                + text)
    return text


def _lacks(table: str, version: int, present: set[str]) -> str:
    """Nothing ("") when a file of `table` and `version` with the columns `present` has every
    field it must have (schema.missing), else what to say of it."""
    gone = sch.missing(table, version, present, REQUIRED if table == "runs" else ())
    if not gone:
        return ""
    return (f"not a ttdash {table} file as written (no {', '.join(gone[:3])} column"
            f"{'s' if len(gone) > 1 else ''}: a changed footer or another tool's file)")


def _blank_rows(group: pa.Table, version: int) -> int:
    """Rows of a runs row group without one of the REQUIRED fields."""
    names = sch.names_in("runs", version)
    mask = None
    for c in REQUIRED:
        col = group[names.get(c, c)]
        mask = col.is_null() if mask is None else pc.or_(mask, col.is_null())
    return pc.sum(mask).as_py() or 0


def _damage(exc: BaseException) -> str:
    """What a file that fails to read is: "corrupt (...)" when a page fails its checksum (a
    byte changed since it was written), else "unreadable (...)"."""
    text = _first_line(exc)
    return f"{'corrupt' if 'checksum' in text.lower() else 'unreadable'} ({text})"


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _utc(us: int | None) -> datetime | None:
    return None if us is None else EPOCH + timedelta(microseconds=us)


def _first_of_each(keys: list[str]) -> list[bool]:
    seen: set[str] = set()
    out = []
    for k in keys:
        out.append(k not in seen)
        seen.add(k)
    return out
