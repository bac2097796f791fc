"""A columnar copy of each large trace read, so an unchanged file is not parsed twice.

One Parquet file per source file under `$XDG_CACHE_HOME/ttdash/traces/` (never beside the trace:
a profiler directory is only read), named by a hash of what identifies the source as it is now:
its resolved path, size, modification and change times (ns), inode and device, a fingerprint of
its first and last 64 KiB, and ttdash's model code (a new ttdash, or any edit to how a file is
read, is a miss). The copy holds the parsed Arrow batches exactly as the loader made them (text
dictionary-encoded, the attribute facts added), written while the CSV is parsed; it is kept only
when the whole read succeeded and the source did not change meanwhile (written to a temporary
name, renamed). The oldest copies (by last use) are deleted past a size bound
(`TTDASH_CACHE_MAX_MB`, default 4096). `--no-cache` or `TTDASH_NO_CACHE=1` turn it off.

What is read back is checked, and any doubt is a miss (the file is parsed again and the copy
replaced), never an error:
- the copy records, in its Parquet key-value metadata, the identity above; a copy whose record
  is not this source's (another trace's copy put in its place) is not used;
- its pages carry CRC checksums, verified on every read (a flipped bit is a miss);
- only a regular file is opened (a FIFO or a symlink at a copy's name is not), and only one
  this user owns that no group or other user can write, in folders that are the same
  (`open_cached`: the folders ttdash makes are 0700, `make_dir`);
- a change of the source keeps its size and its restored mtime only by changing its ctime (set
  by the kernel, not by `touch`, tar, `cp -p` or rsync): a file changed within `RACY_NS` of the
  read could be changed again within one tick of a coarse filesystem clock without its ctime
  moving, so its copy also records a hash of the whole source, taken before and after the parse,
  and a read of that copy hashes the source again (git's "racy clean" entries, the same cure).
Only files with the cache's own names that hold its record (or, for a temporary file, the
Parquet magic) are ever deleted. The analysed views of `model.analysis_cache` live in the same
folder and count against the same bound (their own names and magic, checked the same way).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from ... import __version__
from ...paths import cache_dir
from ..progress import step

MIN_BYTES = 4 << 20  # smaller files parse in well under a second: not worth a copy
ROW_GROUP = 1 << 16
RACY_NS = 2 * 10**9  # a source changed this recently may change again with the same ctime
LOOK_BYTES = 1 << 16  # the source's first and last blocks in its fingerprint
RECORD = b"ttdash.cache"  # the copy's key-value metadata: whose copy it is
VERSION = 2
_ENTRY = re.compile(r"[0-9a-f]{40}\.parquet")
_TEMP = re.compile(r"[0-9a-f]{40}\.parquet\.[a-z0-9_]+\.tmp")
#: the analysis cache's files (model.analysis_cache), under the same bound and eviction
_OTHER = re.compile(r"[0-9a-f]{40}\.(view|digest|diff)")
_OTHER_TEMP = re.compile(r"[0-9a-f]{40}\.(view|digest|diff)\.[a-z0-9_]+\.tmp")
_FINGERPRINT: list[str] = []
VIEW_MAGIC = b"TTDASHV1"  # an analysis file's (model.analysis_cache) first and last bytes
DIFF_MAGIC = b"TTDASHD1"  # a stored diff's (model.compare.stored) first and last bytes
ALIAS_HEAD = b'{"identity": '  # how its alias files (an identity's content hash) start
_BAD = (OSError, ValueError, MemoryError, pa.ArrowException)  # anything a bad copy can raise

Stamp = tuple[int, int, int, int, int]


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
        model = Path(__file__).parents[1]
        for f in sorted(model.rglob("*.py")):
            h.update(str(f.relative_to(model)).encode() + b"\0" + f.read_bytes())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _now_ns() -> int:
    return time.time_ns()


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def _open_regular(path: Path, follow: bool = True) -> tuple[BinaryIO, os.stat_result] | None:
    """`path` opened for reading with its status, or None unless it is a regular file (opening
    never waits: a FIFO is refused, not read; a symlink is refused unless `follow`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb"), st


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (group or others)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def trusted_dir() -> bool:
    """The cache's folders (ttdash's own and traces/) are private (see `_private`): another
    user who could write in them could put a file there that ttdash would load."""
    for d in (cache_dir(), traces_dir()):
        try:
            st = os.stat(d)  # (a symlinked folder: the folder it names)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or not _private(st):
            return False
    return True


def open_cached(path: Path) -> tuple[BinaryIO, os.stat_result] | None:
    """A file of the cache opened for reading (a regular file, not a symlink), or None unless
    it and the cache's folders are private to this user (`_private`, `trusted_dir`): a copy,
    an analysis or an alias anyone else could have written is never read (a miss)."""
    opened = _open_regular(path, follow=False)
    if opened is None:
        return None
    if not _private(opened[1]) or not trusted_dir():
        opened[0].close()
        return None
    return opened


def make_dir() -> Path:
    """The cache's folder (traces_dir), made private (0700) where ttdash creates it; OSError
    when it cannot be made."""
    for d in (cache_dir(), traces_dir()):
        if not d.is_dir():
            d.parent.mkdir(parents=True, exist_ok=True)
            try:
                d.mkdir(mode=0o700)
            except FileExistsError:
                continue  # made meanwhile: trusted_dir judges it
            os.chmod(d, 0o700)  # whatever the umask
    return traces_dir()


def temporary(folder: Path, prefix: str) -> tuple[int, Path] | None:
    """A new file `prefix`*.tmp in `folder` of the cache (its descriptor and path), the cache's
    folders made private first; None when they cannot be made or are not private (nothing is
    written into such a folder: trusted_dir)."""
    try:
        make_dir()
        if not trusted_dir():
            return None
        fd, name = tempfile.mkstemp(suffix=".tmp", prefix=prefix, dir=folder)
    except OSError:
        return None
    return fd, Path(name)


def _look(f: BinaryIO, size: int) -> str:
    """A fingerprint of the size and the first and last blocks (a few reads, not the file)."""
    h = hashlib.sha256(str(size).encode() + b"\0" + f.read(LOOK_BYTES))
    if size > LOOK_BYTES:
        f.seek(max(size - LOOK_BYTES, LOOK_BYTES))
        h.update(f.read(LOOK_BYTES))
    return h.hexdigest()


@contextmanager
def open_copy(path: Path) -> Iterator[pq.ParquetFile]:
    """A copy opened for reading with its page checksums verified; OSError unless it is a
    regular file private to this user in a private folder (open_cached)."""
    opened = open_cached(path)
    if opened is None:
        raise OSError(f"{path}: not a regular file of this user's private cache")
    with opened[0] as f:
        yield pq.ParquetFile(f, page_checksum_verification=True)


def _bare(table: pa.Table) -> pa.Table:
    """`table` without the copy's record (a fresh parse has none)."""
    meta = dict(table.schema.metadata or {})
    meta.pop(RECORD, None)
    return table.replace_schema_metadata(meta or None)


@dataclass
class Slot:
    """Where the copy of one source file (as it is now) lives."""

    source: Path
    real: str
    stamp: Stamp
    look: str
    racy: bool  # changed within RACY_NS of this look at it: its copy holds a whole-file hash
    file: Path

    @classmethod
    def of(cls, source: Path) -> Slot | None:
        """The slot of a regular file worth caching, or None (cache off, small, unreadable)."""
        if not enabled():
            return None
        start = _now_ns()
        opened = _open_regular(source)
        if opened is None:
            return None
        f, st = opened
        with f:
            if st.st_size < MIN_BYTES:
                return None
            try:
                look = _look(f, st.st_size)
            except OSError:
                return None
        real = os.path.realpath(source)
        if real.startswith("/memfd:"):
            return None  # a pipe's copy (model.csvfile): read once, nothing to find again
        racy = max(st.st_mtime_ns, st.st_ctime_ns) >= start - RACY_NS
        key = hashlib.sha256(json.dumps([real, *_stamp(st), look, _fingerprint()]).encode())
        return cls(Path(source), real, _stamp(st), look, racy,
                   traces_dir() / f"{key.hexdigest()[:40]}.parquet")

    def record(self, digest: str | None) -> dict[str, Any]:
        """What a copy of this source says of itself (`digest`: the whole source's hash)."""
        return {"v": VERSION, "source": self.real, "stamp": list(self.stamp), "look": self.look,
                "code": _fingerprint(), "digest": digest}

    def unchanged(self) -> bool:
        """The source is still the file this slot was made of (stamp and fingerprint)."""
        opened = _open_regular(self.source)
        if opened is None:
            return False
        f, st = opened
        with f:
            try:
                return _stamp(st) == self.stamp and _look(f, st.st_size) == self.look
            except OSError:
                return False

    def digest(self) -> str | None:
        """A hash of the whole source, or None when it is not this slot's file any more."""
        opened = _open_regular(self.source)
        if opened is None:
            return None
        f, st = opened
        with f:
            try:
                h = hashlib.sha1(usedforsecurity=False)
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
                after = os.fstat(f.fileno())
            except OSError:
                return None
        return h.hexdigest() if _stamp(st) == self.stamp == _stamp(after) else None

    def _trusts(self, pf: pq.ParquetFile) -> bool:
        """The copy says it is this source's, as it is now."""
        try:
            record = json.loads((pf.metadata.metadata or {})[RECORD])
        except (KeyError, ValueError):
            return False
        if not isinstance(record, dict) or record != self.record(record.get("digest")):
            return False
        return record["digest"] is None or record["digest"] == self.digest()

    def read(self, columns: list[str], complete: list[str] | None = None,
             first: Callable[[pa.Table], None] | None = None, first_after: int = 0
             ) -> pa.Table | None:
        """The cached columns named in `columns` (in the copy's order), or None when there is no
        copy, it is not this source's or fails a check, or it lacks one of them or of
        `complete` (an earlier read asked for fewer). `first`, when given and the copy has more
        than one row group and more than `first_after` rows, is given the first row group (the
        same columns) before the whole is read."""
        try:
            with open_copy(self.file) as pf:
                names = pf.schema_arrow.names
                if not set(columns).union(complete or ()) <= set(names):
                    return None
                step("reading the cached copy", 0, 1)
                if not self._trusts(pf):
                    return None
                wanted = [n for n in names if n in columns]
                meta = pf.metadata
                if first is not None and meta.num_row_groups > 1 and meta.num_rows > first_after:
                    first(_bare(pf.read_row_group(0, columns=wanted)))
                table = pf.read(columns=wanted)
                os.utime(self.file, follow_symlinks=False)  # last use, for eviction
        except _BAD:
            return None
        return _bare(table)

    def writer(self) -> Writer | None:
        digest = None
        if self.racy:  # hashed before the parse and again after it (commit)
            digest = self.digest()
            if digest is None:
                return None
        try:
            make_dir()
        except OSError:
            return None
        if not trusted_dir():
            return None
        return Writer(self, digest)


class Writer:
    """Takes the batches of one parse; `commit()` keeps them, `abort()` (or no commit) drops."""

    def __init__(self, slot: Slot, digest: str | None = None) -> None:
        self.slot = slot
        self.digest = digest
        self.tmp: Path | None = None
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

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        fd, name = tempfile.mkstemp(suffix=".tmp", prefix=f"{self.slot.file.name}.",
                                    dir=self.slot.file.parent)
        os.close(fd)
        self.tmp = Path(name)
        record = json.dumps(self.slot.record(self.digest)).encode()
        schema = schema.with_metadata({**(schema.metadata or {}), RECORD: record})
        ints = [f.name for f in schema if pa.types.is_integer(f.type)]  # see WideRows
        return pq.ParquetWriter(self.tmp, schema, compression="lz4",
                                write_statistics=ints or False, write_page_checksum=True)

    def _flush(self) -> None:
        if not self.pending or self.failed:
            return
        try:
            table = pa.Table.from_batches(self.pending)
            if self.pq is None:
                self.pq = self._open(table.schema)
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
        same = self.slot.unchanged() and (self.digest is None
                                          or self.slot.digest() == self.digest)
        if self.failed or self.pq is None or self.tmp is None or not same:
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
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)


def _mine(path: Path, temporary: bool) -> bool:
    """`path` is a regular file this cache wrote: a copy holding its record, or a temporary
    file (a read that was killed) empty or starting with the Parquet magic."""
    opened = open_cached(path)
    if opened is None:
        return False
    with opened[0] as f:
        try:
            if temporary:
                return f.read(4) in (b"", b"PAR1")
            record = json.loads((pq.ParquetFile(f).metadata.metadata or {})[RECORD])
        except (KeyError, *_BAD):
            return False
    return isinstance(record, dict) and isinstance(record.get("v"), int) and "source" in record


def _mine_view(path: Path, temporary: bool) -> bool:
    """`path` is a file model.analysis_cache wrote: an analysis (or a stored diff) with its
    magic at both ends, an alias starting as one does, or (`temporary`) any being written, or
    empty."""
    opened = open_cached(path)
    if opened is None:
        return False
    with opened[0] as f:
        try:
            head = f.read(len(ALIAS_HEAD))
            if temporary:
                return head in (b"", ALIAS_HEAD) or head.startswith((VIEW_MAGIC, DIFF_MAGIC))
            if path.name.endswith((".view", ".diff")):
                magic = VIEW_MAGIC if path.name.endswith(".view") else DIFF_MAGIC
                f.seek(-len(magic), os.SEEK_END)
                return head.startswith(magic) and f.read(len(magic)) == magic
        except OSError:
            return False
    return head == ALIAS_HEAD


def evict(limit: int, stale_after: float = 3600.0, keep: Path | None = None) -> None:
    """Delete the least recently used copies until they fit in `limit` bytes (and temporary
    files older than `stale_after` seconds: a read that was killed); never `keep` (the copy
    just made, which the caller may read rows from). Only files with the cache's names that
    it can tell it wrote are counted or deleted: nothing else in the folder is touched."""
    now = time.time()
    entries = []
    try:
        listing = list(os.scandir(traces_dir()))
    except OSError:
        return
    for e in listing:
        temporary = _TEMP.fullmatch(e.name) is not None
        other = _OTHER.fullmatch(e.name) is not None
        other_temp = _OTHER_TEMP.fullmatch(e.name) is not None
        if not (temporary or other or other_temp) and _ENTRY.fullmatch(e.name) is None:
            continue
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        path = Path(e.path)
        if other_temp:  # a killed write of an analysis: never renamed, so never read
            if now - st.st_mtime > stale_after and _mine_view(path, temporary=True):
                path.unlink(missing_ok=True)
        elif other:
            if _mine_view(path, temporary=False):
                entries.append((st.st_mtime, st.st_size, path))
        elif temporary:
            if now - st.st_mtime > stale_after and _mine(path, temporary=True):
                path.unlink(missing_ok=True)
        elif _mine(path, temporary=False):
            entries.append((st.st_mtime, st.st_size, path))
    total = sum(e[1] for e in entries)
    for _, size, f in sorted(entries):
        if total <= limit:
            break
        if f == keep:
            continue
        try:
            f.unlink(missing_ok=True)
        except OSError:
            continue
        total -= size
