"""A columnar copy of each large trace read, so an unchanged file is not parsed twice.

One Parquet file per source file under `$XDG_CACHE_HOME/ttdash/traces/` (never beside the trace:
a profiler directory is only read), named by a hash of the source's resolved path, size,
modification time and inode and of ttdash's model code (a new ttdash, or any edit to how a file
is read, is a miss). The copy holds the parsed Arrow batches exactly as the loader made them
(text dictionary-encoded, the attribute facts added), written while the CSV is parsed; it is
kept only when the whole read succeeded and the source did not change meanwhile (written to a
temporary name, renamed). The oldest copies (by last use) are deleted past a size bound
(`TTDASH_CACHE_MAX_MB`, default 4096). `--no-cache` or `TTDASH_NO_CACHE=1` turn it off.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from ..paths import cache_dir
from .progress import step

MIN_BYTES = 4 << 20  # smaller files parse in well under a second: not worth a copy
ROW_GROUP = 1 << 16
_FINGERPRINT: list[str] = []


def enabled() -> bool:
    """On unless `TTDASH_NO_CACHE` is set (the CLI's `--no-cache` sets it)."""
    return os.environ.get("TTDASH_NO_CACHE", "") in ("", "0")


def traces_dir() -> Path:
    return cache_dir() / "traces"


def max_bytes() -> int:
    """The cache's size limit: `TTDASH_CACHE_MAX_MB` (``inf``: no limit), else 4 GiB."""
    try:
        mb = float(os.environ.get("TTDASH_CACHE_MAX_MB", "4096"))
    except ValueError:
        mb = math.nan
    if math.isnan(mb):
        return 4096 << 20
    return int(min(max(mb * (1 << 20), 0), sys.maxsize))


def _fingerprint() -> str:
    """ttdash's version and the model code that decides what a read produces."""
    if not _FINGERPRINT:
        h = hashlib.sha256(__version__.encode())
        for f in sorted(Path(__file__).parent.glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino


@dataclass
class Slot:
    """Where the copy of one source file (as it is now) lives."""

    source: Path
    stamp: tuple[int, int, int]
    file: Path

    @classmethod
    def of(cls, source: Path) -> Slot | None:
        """The slot of a regular file worth caching, or None (cache off, small, unreadable)."""
        if not enabled():
            return None
        try:
            st = os.stat(source)
        except OSError:
            return None
        if st.st_size < MIN_BYTES:
            return None
        real = os.path.realpath(source)
        key = hashlib.sha256(json.dumps([real, *_stamp(st), _fingerprint()]).encode())
        return cls(Path(source), _stamp(st), traces_dir() / f"{key.hexdigest()[:40]}.parquet")

    def read(self, columns: list[str], complete: list[str] | None = None,
             first: Callable[[pa.Table], None] | None = None, first_after: int = 0
             ) -> pa.Table | None:
        """The cached columns named in `columns` (in the copy's order), or None when there is no
        copy or it lacks one of them or of `complete` (an earlier read asked for fewer).
        `first`, when given and the copy has more than one row group and more than
        `first_after` rows, is given the first row group (the same columns) before the whole
        is read."""
        try:
            pf = pq.ParquetFile(self.file)
            names = pf.schema_arrow.names
            if not set(columns).union(complete or ()) <= set(names):
                return None
            wanted = [n for n in names if n in columns]
            step("reading the cached copy", 0, 1)
            meta = pf.metadata
            if first is not None and meta.num_row_groups > 1 and meta.num_rows > first_after:
                first(pf.read_row_group(0, columns=wanted))
            table = pq.read_table(self.file, columns=wanted)
            os.utime(self.file)  # last use, for eviction
        except (OSError, pa.ArrowException):
            return None
        return table

    def writer(self) -> Writer | None:
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return Writer(self)


class Writer:
    """Takes the batches of one parse; `commit()` keeps them, `abort()` (or no commit) drops."""

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.tmp = slot.file.with_name(f"{slot.file.name}.{os.getpid()}.tmp")
        self.pq: pq.ParquetWriter | None = None
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0
        self.failed = False

    def write(self, batch: pa.RecordBatch) -> None:
        if self.failed:
            return
        self.pending.append(batch)
        self.rows += batch.num_rows
        if self.rows >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self.pending or self.failed:
            return
        try:
            table = pa.Table.from_batches(self.pending)
            if self.pq is None:  # null counts of integer columns: see WideRows
                ints = [f.name for f in table.schema if pa.types.is_integer(f.type)]
                self.pq = pq.ParquetWriter(self.tmp, table.schema, compression="lz4",
                                           write_statistics=ints or False)
            self.pq.write_table(table, row_group_size=len(table))
        except (OSError, pa.ArrowException):
            self.failed = True  # a full disk or a schema surprise: the read goes on uncached
        self.pending, self.rows = [], 0

    def finish(self) -> None:
        """The parse is over: write what is pending (nothing is held past this)."""
        self._flush()
        if self.pq is not None:
            try:
                self.pq.close()
            except (OSError, pa.ArrowException):
                self.failed = True

    def commit(self) -> bool:
        """Keep the finished copy if the source is still what was read (the whole read
        succeeded); then evict past the bound. True when the copy was kept."""
        try:
            same = _stamp(os.stat(self.slot.source)) == self.slot.stamp
        except OSError:
            same = False
        if self.failed or self.pq is None or not same:
            self.abort()
            return False
        try:
            os.replace(self.tmp, self.slot.file)
        except OSError:
            self.abort()
            return False
        evict(max_bytes(), keep=self.slot.file)
        return True

    def abort(self) -> None:
        self.failed = True
        self.finish()
        self.tmp.unlink(missing_ok=True)


def evict(limit: int, stale_after: float = 3600.0, keep: Path | None = None) -> None:
    """Delete the least recently used copies until they fit in `limit` bytes (and temporary
    files older than `stale_after` seconds: a read that was killed); never `keep` (the copy
    just made, which the caller may read rows from)."""
    now = time.time()
    entries = []
    for f in traces_dir().glob("*"):
        try:
            st = f.stat()
        except OSError:
            continue
        if f.suffix == ".tmp":
            if now - st.st_mtime > stale_after:
                f.unlink(missing_ok=True)
            continue
        entries.append((st.st_mtime, st.st_size, f))
    total = sum(e[1] for e in entries)
    for _, size, f in sorted(entries):
        if total <= limit:
            break
        if f == keep:
            continue
        f.unlink(missing_ok=True)
        total -= size
