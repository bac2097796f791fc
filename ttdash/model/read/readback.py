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
        self.objects = {}
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

    def build(self, k: int) -> Any:
        item = self.made[k]
        if item[0] == "arr":
            return self.column(item[1])
        df = frame_of(item[1], self.column, self.arrays)
        return df.iloc[:, 0].rename(item[2]) if item[0] == "series" else df


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


def read_all(value: Any) -> Any:
    """`value` with every `LaterFrames` and `LaterValue` read (to be stored again)."""
    if isinstance(value, LaterValue):
        return value()
    if isinstance(value, tuple):
        return tuple(read_all(v) for v in value)
    return list(value) if isinstance(value, LaterFrames) else value


def frame_of(spec: tuple[Any, ...], column: Any, made: dict[Any, Any]) -> pd.DataFrame:
    """A frame of `_frame_spec`; `made`: the object columns made so far (one shared by two
    frames is made once), by its codes' section and distinct texts."""
    labels, index, specs, attrs = spec
    if isinstance(index, tuple):
        index = pd.Index(column(index[1]))
    data: dict[int, Any] = {}
    for i, s in enumerate(specs):
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
