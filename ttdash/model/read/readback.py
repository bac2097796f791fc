"""An analysis-cache file's sections read back into arrays and frames (read.analysis_cache): at
once while the file is loaded, or later, when first used, through a descriptor of the file that
was checked (`Later`, `LaterFrames`, `LaterValue`)."""

from __future__ import annotations

import os
import pickle
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..columns import shared_columns


class Reader:
    """The sections of one stored file, read into arrays: from its map while it is loaded, then
    (a `Later` frame) from its open descriptor. An array read is shared by every frame built
    from its section while it is alive (two frames sharing columns share them again)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.whole: Any = None  # the file's map while it is loaded
        self.sections: list[tuple[int, int, int]] = []
        self.made: Any = []  # each stored object's spec (after the load: those of Later's)
        self.arrays: Any = {}  # section (or object column) -> its array
        self.objects: dict[int, Any] = {}  # a stored object made -> it (while loading)
        self.wanted = False  # a Later holds this reader
        self._closer = weakref.finalize(self, os.close, fd)

    def loaded(self) -> None:
        """The file is loaded: its map let go, each array shared only while something holds
        it; the descriptor closed unless a `Later` is to read from it."""
        self.whole = None
        self.arrays = weakref.WeakValueDictionary(self.arrays)
        self.objects.clear()  # (in place: the load's unpickler holds this dict)
        if not self.wanted:
            self._closer()

    def check(self, pid: Any) -> None:
        if not isinstance(pid, int) or not 0 <= pid < len(self.made):
            raise pickle.UnpicklingError("bad reference")

    def _bytes(self, start: int, size: int) -> Any:
        if self.whole is not None:
            return self.whole.slice(start, size)
        data = os.pread(self.fd, size, start)
        if len(data) != size:
            raise IndexError("a section past the end")
        return pa.py_buffer(data)

    def column(self, ref: tuple[int, int], keep: bool = True) -> np.ndarray:
        """The array of a section; `keep`: shared with what reads it next (not an object
        column's codes: its texts are, and the codes held to the end of a load were ~90 MB of
        a million ops at its peak)."""
        length, (rows, start, size) = ref[0], self.sections[ref[1]]
        arr = self.arrays.get(ref[1])
        if arr is not None:
            return arr
        table = pa.ipc.open_file(self._bytes(start, size)).read_all()
        if table.num_rows != length or rows != length:
            raise IndexError("a section of another length")
        arr = table.column(0).to_numpy()
        arr = arr if arr.flags.writeable else arr.copy()
        if keep:
            self.arrays[ref[1]] = arr
        return arr

    def build(self, k: int, only: Any = None) -> Any:
        """Stored object `k`; of a frame, `only` its columns with these labels (a list)."""
        item = self.made[k]
        if item[0] == "arr":
            return self.column(item[1])
        df = frame_of(item[1], self.column, self.arrays, only)
        return df.iloc[:, 0].rename(item[2]) if item[0] == "series" else df

    def section(self, k: int) -> tuple[int, bytes]:
        """Section `k` as it is stored (its rows, its bytes), to be written again unread."""
        rows, start, size = self.sections[k]
        data = os.pread(self.fd, size, start)
        if len(data) != size:
            raise IndexError("a section past the end")
        return rows, data


class Later:
    """A stored frame read when asked for (`value()`): the trace table of a view whose command
    never reads it is never made. Read again when asked for once the last read is let go (a
    guide rule's entries, written and dropped); while it is alive, that one."""

    def __init__(self, reader: Reader, pid: int) -> None:
        self._reader = reader
        self._pid = pid
        self._lock = threading.Lock()
        self._value: Any = lambda: None  # a weak reference to the last read

    def __call__(self) -> Any:
        with self._lock:
            value = self._value()
            if value is None:
                value = self._reader.build(self._pid)
                self._value = weakref.ref(value)
            return value

    @property
    def labels(self) -> pd.Index:
        """A stored frame's column labels, read from its spec (not the frame)."""
        item = self._reader.made[self._pid]
        if item[0] != "frame":
            raise TypeError("not a stored frame")
        return pd.Index(item[1][0])

    def select(self, labels: Sequence[Any]) -> pd.DataFrame:
        """The stored frame's columns of these labels (in its order), read alone: the rest of
        the frame is not read (a column read already and alive is shared, not read again)."""
        return self._reader.build(self._pid, list(labels))

    @property
    def stored(self) -> tuple[Reader, int]:
        """The reader and the stored object's number, to write it again as it is stored."""
        return self._reader, self._pid


class LaterFrames(Sequence[Any]):
    """Frames stored apart (`Later`), each read when taken and not kept here: iterated, one
    frame at a time is alive (a million ops' guide entries are ~85 MB of frames, ~150 MB of
    RSS at once)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(len(self))[k]]
        item = self._items[k]
        return item() if isinstance(item, Later) else item

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self._items)):
            yield self[k]


class LaterValue:
    """A tuple holding a frame stored apart (`Later`): called, the tuple with it read."""

    def __init__(self, items: tuple[Any, ...]) -> None:
        self._items = items

    def __call__(self) -> tuple[Any, ...]:
        return tuple(v() if isinstance(v, Later) else v for v in self._items)

    @property
    def items(self) -> tuple[Any, ...]:
        """The tuple, its `Later`s not read."""
        return self._items


def frames_later(value: Any) -> Any:
    """`value` with each list holding a `Later` as a `LaterFrames` (in tuples too); a tuple
    holding a `Later` itself as a `LaterValue`."""
    if isinstance(value, list) and any(isinstance(v, Later) for v in value):
        return LaterFrames(value)
    if isinstance(value, tuple):
        value = tuple(frames_later(v) for v in value)
        if any(isinstance(v, Later) for v in value):
            return LaterValue(value)
    return value


def unread(value: Any) -> Any:
    """`value` as frames_later was given it: each `LaterFrames` and `LaterValue` the list or
    tuple it holds, its `Later`s not read (to be stored again, copied as they are stored)."""
    if isinstance(value, LaterValue):
        return unread(value.items)
    if isinstance(value, tuple):
        return tuple(unread(v) for v in value)
    return list(value._items) if isinstance(value, LaterFrames) else value


def frame_of(spec: tuple[Any, ...], column: Any, made: dict[Any, Any],
             only: Any = None) -> pd.DataFrame:
    """A frame of `_frame_spec`; `made`: the object columns made so far (one shared by two
    frames is made once), by its codes' section and distinct texts; `only`: just the columns
    of these labels (a list), the others not read."""
    labels, index, specs, attrs = spec
    if isinstance(index, tuple):
        index = pd.Index(column(index[1]))
    picked: Sequence[int] = range(len(specs))
    if only is not None:
        wanted = set(only)
        picked = [i for i, label in enumerate(labels) if label in wanted]
        labels = labels[picked]
    data: dict[int, Any] = {}
    for i, s in enumerate(specs[k] for k in picked):
        kind = s[0]
        if kind == "np":
            data[i] = column(s[1])
        elif kind == "cat":
            data[i] = pd.Categorical.from_codes(column(s[1]), dtype=s[2])
        elif kind == "masked":
            data[i] = s[3].construct_array_type()(column(s[1]), column(s[2]))
        elif kind == "obj":
            key = ("obj", s[1][1], id(s[2]))
            values = made.get(key)
            if values is None:
                codes, uniques, na = column(s[1], False), s[2], s[3]
                values = uniques.take(codes, mode="clip") if len(uniques) else \
                    np.full(len(codes), na, dtype=object)
                if len(uniques) and (codes < 0).any():
                    values[codes < 0] = na
                made[key] = values
            # a Series of dtype object: pandas would make text of a bare array (str dtype)
            data[i] = pd.Series(values, index=index, dtype=object, copy=False)
        else:
            data[i] = s[1].array
    df = pd.DataFrame(data, index=index, copy=False)
    df.columns = labels
    df.attrs.update(attrs)
    return df


class ReadLater:
    """Attributes the analysis cache reads back when first used (`_later`: name -> a `Later`;
    a shallow copy shares them), then kept: a command never reading one never makes it; of the
    trace table (`ordered`: model.Trace), the labels and some columns without the rest."""

    def __getattr__(self, name: str) -> Any:
        make = (self.__dict__.get("_later") or {}).get(name)
        if make is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.__dict__.setdefault(name, make())

    def _table_later(self) -> Later | None:
        """`ordered` as stored, when not read back yet."""
        return None if "ordered" in self.__dict__ else \
            (self.__dict__.get("_later") or {}).get("ordered")

    @property
    def ordered_labels(self) -> pd.Index:
        """`ordered`'s column labels (stored: from what was stored, the table not read)."""
        later = self._table_later()
        return self.ordered.columns if later is None else later.labels

    def ordered_columns(self, labels: Any) -> pd.DataFrame:
        """`ordered`'s columns of these labels (those it has, in its order), their memory
        shared; stored, these columns read alone (a json run after a csv run: the guide rules
        read 36 of a million ops' 77 columns, ~80 of ~250 MB)."""
        later = self._table_later()
        if later is not None:
            return later.select(labels)
        table: pd.DataFrame = self.ordered
        wanted = set(labels)
        return shared_columns(table, [c for c in table.columns if c in wanted])
