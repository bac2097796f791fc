"""The analysed view of a large trace kept beside its parsed copy, so the same file (or the same
content under another name) is not analysed twice with the same options.

One file per (content, options) under `$XDG_CACHE_HOME/ttdash/traces/`, named
`<40 hex>.view`, beside the parsed copies of `model.cache` and under the same size bound and
eviction (least recently used first, only the cache's own files). Its name is a hash of:
- the source's whole content (SHA-256, the figure `history add` records as `sha256`); a small
  alias file per source identity (`<40 hex>.digest`: size, mtime/ctime ns, inode, device,
  first and last 64 KiB, as `model.cache` keys its copies, less the path: a hard link is the
  same identity) spares hashing an unchanged file again, and is not used for a file changed within
  `cache.RACY_NS` of the look at it (git's racy-clean rule: it is hashed every time);
- every option that changes the view (`key`: the window, the arch override, the device merge,
  the pause threshold, given by the caller), and what the path itself decides (a tt-run rank
  folder, a realtime log's name, the arch from a `profile_log_device.csv` beside it);
- ttdash's version and the code of `ttdash/model` and `ttdash/report` (a new ttdash never reads
  an old analysis), and this format's `VERSION`.

The file holds the `View` (with its `Trace`) pickled, less its large frames and arrays, which are
columns of Arrow IPC sections in the same file, memory-mapped on read: numbers as they are, text as
dictionary codes and the distinct values. The trace table (`Trace.ordered`: 77 columns, ~240 MiB of
a million ops) is read back when first used, not with the view (`_LATER`): a second `report -f json`
reads only what was worked out from it (the counter columns it shares, the replay sessions), and
never makes it; what a command still works out from it (a json run after a csv run: the
iterations, the why-slow figures, the guide rules) reads the columns it uses alone
(`Trace.ordered_columns`), and a view stored again copies the table's sections as they are
stored, unread. The guide rules' entries kept for JSON (a frame per rule) are read a frame at a time
as they are written, each let go once written (`LaterFrames`), and the why-slow figures' window of
the trace table when those figures are made again. What a command worked out from the view
(iterations, data warnings, the why-slow figures, totals, the grouped advice, "where the time goes",
the CSV columns a diff reads again) is kept with it when the command has made them before the view
is stored (`report` and `diff` store it once their output is written). It is written to a temporary
name and renamed, only when the source still is what was hashed (stamp, and the whole hash again
when racy). Any doubt on read (a bad magic, a record that is not this key's, a truncated or altered
file, an unpickling error) is a miss: the trace is read and analysed again. What is read later is
read through a descriptor opened on the file checked (one put at its name since is not read).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from ..progress import step
from ..trace import _arch_from_log
from . import cache
from .discover import REALTIME_LOGS, rank_of
from .loader import WideRows
from .readback import Later, Reader, frames_later, unread

VERSION = 2  # 2: the trace table and the guide entries read when first used (_LATER)
MAGIC = cache.VIEW_MAGIC
SUFFIX = ".view"
BIG = 4096  # frames and arrays with at least this many rows go to the Arrow sections
#: per-view caches not kept: the op rows (a slice of ops, made again at once), the guide
#: rules' input (its entries are dropped once written), the why-slow figures' columns of the
#: trace table (those of the table, made again at once), this module's own handle
_DROP = ("_op_rows", "_guides", "_why_table", "_acache")
#: the trace's attributes stored apart and read back when first used (Trace.__getattr__ and its
#: `_later`), not with the view: what a second run never asks for costs it no time nor memory
_LATER = ("ordered",)
#: the view's attributes stored apart, their frames read back as they are used: the guide
#: rules' entries (a frame per rule, each read when written and let go: LaterFrames), the
#: why-slow window of the trace table (~110 MB of a million ops) and per-op reasons, read by
#: whyslow._once when figures are made again (LaterValue)
_APART = ("_guide_entries", "_why_window", "_why_reasons")
#: lz4 frames: a million ops' view is ~630 MB of columns, ~10x less on disk; read through the
#: map and unpacked as fast as the disk gives them
_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
#: the trailer: pickle offset, pickle, its index and record lengths, the SHA-1 of everything
#: before the trailer (a flipped bit anywhere is a miss), MAGIC
_FOOT = struct.Struct("<QQQQ20s8s")
_CODE: list[str] = []
_MASKED = (pd.arrays.IntegerArray, pd.arrays.BooleanArray, pd.arrays.FloatingArray)
_ALIAS_HEAD = cache.ALIAS_HEAD


def _code() -> str:
    """ttdash's version and the code that makes a view and what is derived from it."""
    if not _CODE:
        h = hashlib.sha256(cache._fingerprint().encode())
        package = Path(__file__).resolve().parent
        while package.name != "ttdash":  # (wherever in the model this module sits)
            package = package.parent
        for part in ("report", "present"):
            for f in sorted((package / part).glob("*.py")):
                h.update(f"{part}/{f.name}".encode() + b"\0" + f.read_bytes())
        h.update(str(VERSION).encode())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def sha256_of(path: Path) -> tuple[str, int] | None:
    """(hex SHA-256, size) of the whole file, or None when it cannot be read."""
    opened = cache._open_regular(path)
    if opened is None:
        return None
    f, _ = opened
    h, size = hashlib.sha256(), 0
    with f:
        try:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
                size += len(block)
        except OSError:
            return None
    return h.hexdigest(), size


def path_facts(path: Path) -> list[Any]:
    """What the path, not the content, decides of a view (trace.detect_arch, discover)."""
    return [rank_of(path), path.name in REALTIME_LOGS, _arch_from_log(path)]


@dataclass
class Entry:
    """Where the analysed view of one source, with one set of options, lives."""

    slot: cache.Slot
    digest: str
    size: int
    file: Path
    record: dict[str, Any]

    @classmethod
    def of(cls, source: Path, key: str) -> Entry | None:
        """The entry of a regular file worth caching (as model.cache decides), or None."""
        slot = cache.Slot.of(source)
        if slot is None:
            return None
        found = _alias(slot)
        if found is None:
            step("hashing the file", 0, 1)
            found = sha256_of(source)
            if found is None or not slot.unchanged():
                return None
            if not slot.racy:
                _write_alias(slot, found)
        digest, size = found
        record = {"v": VERSION, "sha256": digest, "size": size, "key": key,
                  "path": path_facts(source), "code": _code()}
        name = hashlib.sha256(json.dumps(record, default=str).encode()).hexdigest()[:40]
        return cls(slot, digest, size, cache.traces_dir() / f"{name}{SUFFIX}", record)

    def read(self, lazy: bool = False) -> Any:
        """The stored view (a model.View), its trace's path this source's (and, `lazy`, every
        column of a row read from the parsed copy on demand, as a lazy read gives); None on
        any doubt."""
        view = read_stored(self.file, self.record, MAGIC, "reading the cached analysis")
        if view is None:
            return None
        trace = view.trace
        trace.path = self.slot.source
        if lazy and self.slot.file.is_file():  # the parsed copy: every column of a row, on demand
            trace.wide = WideRows(self.slot.file, self.slot.source, trace.header)
        view.__dict__["_acache"] = self
        self.known = _known(view)
        return view

    def grown(self, view: Any) -> bool:
        """`view` is not stored yet, or has gained what its command worked out since it was
        read from the cache (a csv report's analysis, then a json report's iterations)."""
        known = getattr(self, "known", None)
        return known is None and not self.file.exists() or (
            known is not None and not _known(view) <= known)

    def write(self, view: Any) -> bool:
        """Keep `view` (a model.View of this source) if the source is still what was hashed;
        then evict past the bound. True when kept."""
        return store(self.file, lambda f: _dump(view, f, self.record), self.unchanged)

    def unchanged(self) -> bool:
        """The source still is what was hashed (stamp; and the whole hash again when racy)."""
        return self.slot.unchanged() and (
            not self.slot.racy or sha256_of(self.slot.source) == (self.digest, self.size))

    def spilled(self, frame: pd.DataFrame) -> Any:
        """`frame` (to be stored with the view) written to a file of the cache's folder,
        unlinked at once, read back from it when used (a `Later`; copied unread when the view
        is stored), or as it is when it cannot be written. Each guide rule's entries
        (guides.rule_frames' "keep"): held to the store, ~160 MB of a million ops."""
        record = {"spilled": self.digest, "code": _code()}
        made = cache.temporary(self.file.parent, "spilled.")
        if made is None:
            return frame
        fd, tmp = made
        try:
            with os.fdopen(fd, "w+b") as f:
                dump(SimpleNamespace(), f, record, later={"frame": frame})
            got = load(tmp, record)  # (read through its descriptor, kept open)
        except (*cache._BAD, *_UNREADABLE, pickle.PicklingError, RecursionError):
            return frame
        finally:
            tmp.unlink(missing_ok=True)
        later = None if got is None else (got.__dict__.get("_later") or {}).get("frame")
        return frame if later is None else later


#: what reading a damaged or foreign file can raise (besides cache._BAD): a miss
_UNREADABLE = (pickle.UnpicklingError, EOFError, KeyError, TypeError, AttributeError,
               IndexError, ImportError, struct.error)


def read_stored(file: Path, record: dict[str, Any], magic: bytes, what: str) -> Any:
    """What `store` kept at `file` for `record` (load), or None on any doubt: not a regular
    file private to this user in a private folder (cache.open_cached), damaged, another's."""
    try:
        opened = cache.open_cached(file)
        if opened is None:
            return None
        opened[0].close()
        step(what, 0, 1)
        found = load(file, record, magic)
        os.utime(file, follow_symlinks=False)  # last use, for eviction
    except (*cache._BAD, *_UNREADABLE):
        return None
    return found


def store(file: Path, write: Any, same: Any) -> bool:
    """`write(f)` into a temporary file beside `file` (in the private cache folder), renamed
    to `file` when `same()` (the sources are still what was read); then evict past the bound.
    True when kept."""
    made = cache.temporary(file.parent, f"{file.name}.")
    if made is None:
        return False
    fd, tmp = made
    try:
        with os.fdopen(fd, "w+b") as f:
            write(f)
        if not same():
            tmp.unlink(missing_ok=True)
            return False
        os.replace(tmp, file)
    except (*cache._BAD, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        tmp.unlink(missing_ok=True)
        return False
    cache.evict(cache.max_bytes(), keep=file)
    return True


def _known(view: Any) -> set[str]:
    """What a view and its trace hold worked out (their cached figures, by name)."""
    trace = view.trace
    return ({f"view.{k}" for k in view.__dict__ if k not in _DROP}
            | {f"trace.{k}" for k in trace.__dict__ if k != "_later"}
            | {f"trace.{k}" for k in trace.__dict__.get("_later", ())}
            | {f"iterations.{k}" for k in trace.__dict__.get("_iterations", {})})


# ------------------------------------------------------------------ the identity -> hash alias
def _identity(slot: cache.Slot) -> dict[str, Any]:
    """The source's identity less its path: the same inode, size, times and first and last
    blocks under another name (a hard link) is the same file, and its hash is not made again."""
    record = slot.record(None)
    record.pop("source")
    return record


def _alias_file(slot: cache.Slot) -> Path:
    name = hashlib.sha256(json.dumps(_identity(slot)).encode()).hexdigest()[:40]
    return slot.file.with_name(f"{name}.digest")


def _alias(slot: cache.Slot) -> tuple[str, int] | None:
    """The source's hash as recorded for this very identity (not for a racy one)."""
    if slot.racy:
        return None
    opened = cache.open_cached(_alias_file(slot))
    if opened is None:
        return None
    with opened[0] as f:
        try:
            record = json.loads(f.read(1 << 12))
        except (OSError, ValueError):
            return None
    if not isinstance(record, dict) or record.get("identity") != _identity(slot):
        return None
    digest, size = record.get("sha256"), record.get("size")
    if not isinstance(digest, str) or not isinstance(size, int) or size != slot.stamp[0]:
        return None
    return digest, size


def _write_alias(slot: cache.Slot, found: tuple[str, int]) -> None:
    text = json.dumps({"identity": _identity(slot), "sha256": found[0], "size": found[1]})
    assert text.encode().startswith(_ALIAS_HEAD)
    store(_alias_file(slot), lambda f: f.write(text.encode()), lambda: True)


# ------------------------------------------------------------------ the file format
class _Columns:
    """The large arrays of one pickle, an Arrow IPC section each (read and released one at a
    time: the peak is the frames made, not twice them). An array whose values are another's
    (a frame sharing another's columns: the why-slow figures' window of the trace table) is
    that array's section, read once into one array both frames share again (a section each
    was ~110 MB more of a million ops in a second run than in the first)."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._at: dict[tuple[Any, ...], int] = {}  # where an array's values are -> its section
        #: an object column's values (where they are) -> its codes' section and distinct texts
        self.texts: dict[tuple[Any, ...], tuple[tuple[int, int], np.ndarray, Any]] = {}
        self.alive: list[np.ndarray] = []  # those object columns' values

    @staticmethod
    def where(values: np.ndarray) -> tuple[Any, ...]:
        """Where an array's values are: the same for two arrays only when they are the same
        values (every array added stays alive until the file is written: no address is
        reused meanwhile)."""
        return (values.__array_interface__["data"][0], values.shape, values.dtype.str,
                values.strides)

    def add(self, values: np.ndarray) -> tuple[int, int]:
        key = self.where(values)
        k = self._at.get(key)
        if k is None:
            self.arrays.append(values)
            k = self._at[key] = len(self.arrays) - 1
        return len(values), k

    def stored(self, later: Later) -> tuple[Any, ...]:
        """The spec of what `later` reads (a frame, series or array of the file read), its
        sections to be copied as they are stored: written again, not read."""
        reader, pid = later.stored

        def ref(old: tuple[int, int]) -> tuple[int, int]:
            key = ("stored", id(reader), old[1])
            k = self._at.get(key)
            if k is None:
                self.arrays.append(_Stored(reader, old[1]))
                k = self._at[key] = len(self.arrays) - 1
            return old[0], k

        item = reader.made[pid]
        if item[0] == "arr":
            return ("arr", ref(item[1]))
        labels, index, specs, attrs = item[1]
        if isinstance(index, tuple):
            index = (index[0], ref(index[1]))
        specs = [(s[0], *[ref(v) if k in _REFS.get(s[0], ()) else v
                          for k, v in enumerate(s[1:], 1)]) for s in specs]
        return (item[0], (labels, index, specs, attrs), *item[2:])


class _Stored(NamedTuple):  # a section of a file read, to be copied as it is into the next
    reader: Reader
    section: int


#: where a column spec (_frame_spec) holds section references, by its kind
_REFS = {"np": (1,), "cat": (1,), "masked": (1, 2), "obj": (1,)}


def _frame_spec(df: pd.DataFrame, cols: _Columns) -> tuple[Any, ...]:
    """How to make `df` again: its labels, index and each column's values or codes."""
    specs: list[tuple[Any, ...]] = []
    for i in range(df.shape[1]):
        s = df.iloc[:, i]
        dt = s.dtype
        if isinstance(dt, np.dtype) and dt.kind in "biuf":
            specs.append(("np", cols.add(s.to_numpy())))
        elif isinstance(dt, pd.CategoricalDtype):
            # the categorical's own codes (pandas 3's `.cat.codes` is a copy: two frames
            # sharing the column would not be seen to)
            specs.append(("cat", cols.add(np.asarray(s.array.codes)), dt))
        elif isinstance(s.array, _MASKED):  # Int64, boolean, Float64: values and the NA mask
            arr = s.array
            specs.append(("masked", cols.add(arr.to_numpy(dtype=dt.numpy_dtype,
                                                          na_value=dt.numpy_dtype.type(0))),
                          cols.add(arr.isna()), dt))
        elif isinstance(dt, np.dtype) and dt.kind == "O":
            specs.append(_object_spec(s, cols))
        else:
            specs.append(("py", s))
    index = df.index
    if not isinstance(index, pd.RangeIndex) and isinstance(index.dtype, np.dtype) \
            and index.dtype.kind in "iu" and index.name is None:
        index = ("np", cols.add(index.to_numpy()))
    return df.columns, index, specs, dict(df.attrs)


def _object_spec(s: pd.Series, cols: _Columns) -> tuple[Any, ...]:
    """Text as codes and the distinct strings, the missing cells' own value (None or NaN)
    restored; anything else (mixed types, pd.NA) pickled as it is."""
    values = s.to_numpy()
    known = cols.texts.get(cols.where(values))
    if known is not None:  # another frame's column: its codes and texts
        return ("obj", *known, s.name)
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return ("py", s)
    codes, uniques = pd.factorize(values)
    missing = values[codes < 0]
    if not len(missing):
        na: Any = None
    elif all(v is None for v in missing):
        na = None
    elif all(isinstance(v, float) and v != v for v in missing):
        na = float("nan")
    else:
        return ("py", s)
    known = cols.texts[cols.where(values)] = (cols.add(codes.astype(np.int32)),
                                              np.asarray(uniques, dtype=object), na)
    cols.alive.append(values)  # its address stays its own until the file is written
    return ("obj", *known, s.name)


def _dump(view: Any, f: BinaryIO, record: dict[str, Any]) -> None:
    """`view` stored (dump), less its per-view caches and its rows read on demand; the
    trace's `_LATER` attributes apart, to be read back when first used. What this view was
    read with and has not read back (a `Later`: the trace table, guide entries) is copied as
    it is stored, not read (a json run after a csv run read the whole table to store it)."""
    trace = view.trace
    stored = trace.__dict__.get("_later") or {}
    later = {f"trace.{k}": stored[k] if k in stored and k not in trace.__dict__
             else getattr(trace, k) for k in _LATER}
    later.update((k, unread(view.__dict__[k])) for k in _APART if k in view.__dict__)
    saved = {k: view.__dict__.pop(k) for k in (*_DROP, *_APART) if k in view.__dict__}
    apart = {k: trace.__dict__.pop(k) for k in (*_LATER, "_later") if k in trace.__dict__}
    wide, trace.wide = trace.wide, None
    try:
        dump(view, f, record, later=later)
    finally:
        view.__dict__.update(saved)
        trace.__dict__.update(apart)
        trace.wide = wide


class _Pickler(pickle.Pickler):
    """dump's: large frames, series, arrays and `Later`s as stored objects (`made`), their
    columns as `cols`' sections. (Not a class made per dump, which only the cyclic collector
    frees: the frames it held stayed alive after, a spilled rule's while the next ran.)"""

    def __init__(self, buf: io.BytesIO) -> None:
        super().__init__(buf, protocol=5)
        self.cols = _Columns()
        self.refs: dict[int, int] = {}
        self.made: list[tuple[Any, ...]] = []
        self.keep: list[Any] = []  # the objects whose ids are in refs, alive until it is done

    def persistent_id(self, obj: Any) -> Any:
        big = isinstance(obj, (pd.DataFrame, pd.Series)) and len(obj) >= BIG
        arr = (type(obj) is np.ndarray and obj.ndim == 1 and obj.dtype.kind in "biuf"
               and len(obj) >= BIG)
        if not (big or arr or isinstance(obj, Later)):
            return None
        k = self.refs.get(id(obj))
        if k is None:
            if isinstance(obj, Later):
                self.made.append(self.cols.stored(obj))
            elif arr:
                self.made.append(("arr", self.cols.add(obj)))
            elif isinstance(obj, pd.Series):
                self.made.append(("series", _frame_spec(obj.to_frame(), self.cols), obj.name))
            else:
                self.made.append(("frame", _frame_spec(obj, self.cols)))
            k = self.refs[id(obj)] = len(self.made) - 1
            self.keep.append(obj)
        return k


def dump(root: Any, f: BinaryIO, record: dict[str, Any], magic: bytes = MAGIC,
         later: dict[str, Any] | None = None) -> None:
    """`root` pickled, its large frames, series and arrays as Arrow sections (see module),
    `magic` at both ends, `record` checked on read (load). `later`: attributes of objects in
    `root` (by their path from it: "trace.ordered") pickled apart, their frames read back when
    first used (load)."""
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    pickler.dump(root)
    if later is not None:  # in the same stream after root (one memo: what root holds is its)
        pickler.dump(later)
    cols, made = pickler.cols, pickler.made
    del pickler  # (and what it kept alive: the frames pickled)
    f.write(magic)
    sections = []
    for values in cols.arrays:
        f.write(b"\0" * (-f.tell() % 64))
        start = f.tell()
        if isinstance(values, _Stored):
            rows, data = values.reader.section(values.section)
            f.write(data)
            sections.append((rows, start, len(data)))
            continue
        table = pa.table({"c": values})
        with pa.ipc.new_file(pa.PythonFile(f, mode="w"), table.schema,
                             options=_OPTIONS) as w:
            w.write_table(table)
        sections.append((len(values), start, f.tell() - start))
    tail = pickle.dumps((sections, made) if later is None else (sections, made, "later"),
                        protocol=5)
    meta = json.dumps(record, default=str).encode()
    body = buf.getvalue()
    at = f.tell()
    f.write(body)
    f.write(tail)
    f.write(meta)
    f.flush()
    check = hashlib.sha1(usedforsecurity=False)
    with open(f.fileno(), "rb", closefd=False) as again:
        again.seek(0)
        for block in iter(lambda: again.read(1 << 20), b""):
            check.update(block)
    f.seek(0, os.SEEK_END)
    f.write(_FOOT.pack(at, len(body), len(meta), len(tail), check.digest(), magic))


def load(path: Path, record: dict[str, Any], magic: bytes = MAGIC) -> Any:
    """What `dump` stored at `path` for `record` with `magic`, or None (any doubt). Its `later`
    attributes are set on their objects when root holds their values already; else each is
    an entry of its object's `_later` (name -> a callable that reads it, once), read from the
    same file (an open descriptor: a file put at that name meanwhile is not read)."""
    with pa.memory_map(str(path)) as mm:
        whole = mm.read_buffer()
        fd = os.dup(mm.fileno())
    reader = Reader(fd)
    try:
        return _load(whole, reader, record, magic)
    finally:
        reader.loaded()


def _sha1(fd: int, size: int) -> bytes:
    """The SHA-1 of the file's first `size` bytes, read a block at a time (through its map,
    every page would count in this process's memory until it is let go: 25-70 MB at 1M ops)."""
    check = hashlib.sha1(usedforsecurity=False)
    for at in range(0, size, 1 << 20):
        check.update(os.pread(fd, min(1 << 20, size - at), at))
    return check.digest()


def _load(whole: Any, reader: Reader, record: dict[str, Any], magic: bytes) -> Any:
    n = whole.size
    if n < 8 + _FOOT.size or whole.slice(0, 8).to_pybytes() != magic:
        return None
    at, body_len, meta_len, tail_len, digest, last = _FOOT.unpack(
        whole.slice(n - _FOOT.size, _FOOT.size).to_pybytes())
    end = n - _FOOT.size
    if last != magic or at + body_len + tail_len + meta_len != end:
        return None
    if _sha1(reader.fd, end) != digest:
        return None
    meta = whole.slice(end - meta_len, meta_len).to_pybytes()
    if json.loads(meta) != json.loads(json.dumps(record, default=str)):
        return None  # another key's analysis put at this name
    tail = pickle.loads(whole.slice(at + body_len, tail_len))
    reader.sections, reader.made = tail[0], tail[1]
    reader.whole = whole
    objects = reader.objects
    pending: list[int] = []  # (the later part: what root does not hold, read when used)

    class Unpickler(pickle.Unpickler):
        later = False

        def persistent_load(self, pid: Any) -> Any:
            reader.check(pid)
            if pid not in objects:
                if self.later:
                    pending.append(pid)
                    return Later(reader, pid)
                objects[pid] = reader.build(pid)
            return objects[pid]

    unpickler = Unpickler(io.BytesIO(whole.slice(at, body_len).to_pybytes()))
    root = unpickler.load()
    if len(tail) > 2:
        unpickler.later = True
        for where, value in unpickler.load().items():
            *parents, name = where.split(".")
            owner = root
            for part in parents:
                owner = getattr(owner, part)
            if isinstance(value, Later):
                owner.__dict__.setdefault("_later", {})[name] = value
            else:
                owner.__dict__[name] = frames_later(value)
        reader.wanted = bool(pending)
        # only what is still to be read is kept (not every frame's specs: their own columns)
        reader.made = {pid: reader.made[pid] for pid in pending}
    return root
