"""An op's ``ATTRIBUTES`` cell: read for a diff, normalised for matching, flattened into named
fields for "what changed".

The cell (every era) is a Python-dict-like text whose commas the profiler turned into ``;``::

    {'compute_kernel_config': 'WormholeComputeKernelConfig(math_fidelity=HiFi4;...)';
     'output_mem_config': 'MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED;
     buffer_type=BufferType::DRAM;shard_spec=std::nullopt)'; 'transpose_a': 'false'}

*Normalised for matching* (:func:`normalise`) as tt-metal's
``tools/tracy/compare_ops_perf_bar_chart.py`` pairs the ops of two reports: surrounding space
stripped, the ``is_sfpu`` flag folded (true and false alike: an SFPU and a non-SFPU path of one op
still pair), CSV-doubled quotes undone.

*Flattened* (:func:`flatten`): one field per leaf, named by its path
(``program_config.in0_block_w``, ``output_mem_config.buffer_type``,
``output_mem_config.shard_spec.shape``); a struct's type name is the field of its own path
(``program_config`` = ``MatmulMultiCoreReuseMultiCastProgramConfig``).
Values are shown without C++ scopes (``BufferType::DRAM`` -> ``DRAM``, ``std::nullopt`` -> ``none``)
and ``(x=8;y=8)`` as ``8x8``. A cell that does not parse (unbalanced brackets) is one field,
``ATTRIBUTES``, holding the whole text.

Reading: ``ttdash diff`` loads its traces with the "compare" columns (the analysis columns,
``ATTRIBUTES`` whole, the version columns; :func:`ttdash.model.read.loader.read_ops_csv`).
:func:`extra_columns` takes the columns from the trace when it holds them; a trace without them
(the analysis columns leave ``ATTRIBUTES`` out: another command's view, from the analysis cache)
has just those columns of its CSV read again (pyarrow, dictionary-encoded: a few distinct
cells; the loader's block size, so a row the loader read is read again), or gives up (None) when
the file is not the one loaded (rows differ, several files, gone). A cell over
``ATTRIBUTES_MAX_CHARS`` is left unread: only its own op loses its attribute cause, counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..trace import View
from .loader import BLOCK, dedupe_header
from .text import clean_text

ATTRIBUTES = "ATTRIBUTES"
CACHE_HIT = "PROGRAM CACHE HIT"
#: An ATTRIBUTES cell past this many characters is not read (a real one is a few KB): its op
#: gets no attribute cause, the others keep theirs, and the diff counts it.
ATTRIBUTES_MAX_CHARS = 1 << 20
_MAX = {ATTRIBUTES: ATTRIBUTES_MAX_CHARS}

_SFPU_RE = re.compile(r"'is_sfpu':\s*'(?:true|false)'")
_STRUCT_RE = re.compile(r"^([A-Za-z_][\w:<>, ]*)?\((.*)\)$", re.S)
_SCOPE_RE = re.compile(r"\b[A-Za-z_]\w*::")
_XY_RE = re.compile(r"^\(x=(\d+);\s*y=(\d+)\)$")
_OPEN, _CLOSE = "([{", ")]}"
MAX_DEPTH = 6  # nested structs followed this deep; deeper ones are one leaf


def normalise(cell: object) -> str:
    """The match key of a cell, as tt-metal's comparison script makes it."""
    s = str(cell).strip()
    s = _SFPU_RE.sub("'is_sfpu': '*'", s)
    return s.replace('""', '"')


def _split(text: str, sep: str = ";") -> list[str] | None:
    """`text` cut at `sep` outside brackets and quotes (None: unbalanced brackets)."""
    depth, quote, start = 0, "", 0
    parts = []
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch == "'" and depth == 0 and (i == 0 or text[i - 1] in " {;:"):
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth or quote:
        return None
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _leaf(value: str) -> str:
    v = value.strip().strip("'").strip()
    if v == "std::nullopt":
        return "none"
    m = _XY_RE.match(v)
    if m:
        return f"{m.group(1)}x{m.group(2)}"
    return _SCOPE_RE.sub("", v)


def _struct(path: str, value: str, out: dict[str, str], depth: int) -> None:
    """`Name(k=v;k2=v2)` into fields under `path` (and the type name at `path`); else a leaf."""
    v = value.strip().strip("'").strip()
    m = _STRUCT_RE.match(v)
    items = _split(m.group(2)) if m and depth < MAX_DEPTH else None
    pairs = [_split(it, "=") for it in items] if items else None
    if not m or not m.group(1) or not pairs or any(p is None or len(p) < 2 for p in pairs):
        out[path] = _leaf(v)
        return
    out[path] = _leaf(m.group(1))
    for p in pairs:
        assert p is not None
        key, rest = p[0].strip(), "=".join(p[1:])
        _struct(f"{path}.{key}", rest, out, depth + 1)


@lru_cache(maxsize=4096)
def flatten(cell: str) -> tuple[tuple[str, str], ...]:
    """(path, value) of every field of a cell, in the cell's order (see the module docstring).
    Cached: repeated layers repeat their attributes."""
    text = str(clean_text(cell.strip()))
    body = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    items = _split(body) if body.strip() else []
    out: dict[str, str] = {}
    if items is None:
        return ((ATTRIBUTES, text),)
    for item in items:
        kv = _split(item, ":")
        if kv is None or len(kv) < 2:
            return ((ATTRIBUTES, text),)
        key = kv[0].strip().strip("'")
        _struct(key, ":".join(kv[1:]), out, 0)
    return tuple(out.items())


def field_diff(a: str | None, b: str | None) -> list[tuple[str, str | None, str | None]]:
    """(path, baseline value, candidate value) of every field that differs between two cells
    (a field missing on one side is None there), in the baseline cell's order."""
    fa = dict(flatten(a)) if a is not None else {}
    fb = dict(flatten(b)) if b is not None else {}
    keys = list(fa) + [k for k in fb if k not in fa]
    return [(k, fa.get(k), fb.get(k)) for k in keys if fa.get(k) != fb.get(k)]


# ==================================================================== reading

@dataclass(frozen=True)
class Coded:
    """A text column at some ops: a code per op into `values` (-1: none). Long cells (an
    ATTRIBUTES cell is a kilobyte) are hashed once per distinct value, never per op."""

    codes: np.ndarray  # int64
    values: np.ndarray  # objects
    #: per op, a cell too large to read (code -1 there too); None: none was
    unread: np.ndarray | None = None

    @property
    def unread_count(self) -> int:
        return int(self.unread.sum()) if self.unread is not None else 0

    def texts(self) -> np.ndarray:
        """The value per op (None: none)."""
        return np.append(self.values, None).astype(object)[self.codes]


def coded(col: pd.Series, pos: np.ndarray, max_len: int | None = None) -> Coded:
    """`col` at rows `pos` (-1: none), blank cells as none; cells longer than `max_len`
    characters as none too, marked unread (only their own ops)."""
    if isinstance(col.dtype, pd.CategoricalDtype):  # the loader's text columns
        codes = col.cat.codes.to_numpy().astype(np.int64)
        values = col.cat.categories.to_numpy(dtype=object)
    else:
        codes, values = pd.factorize(col, use_na_sentinel=True)
        codes = codes.astype(np.int64)
        values = np.asarray(values, dtype=object)
    blank = np.array([v is None or str(v).strip() == "" for v in values], dtype=bool)
    if blank.any():
        codes = np.where((codes >= 0) & blank[np.maximum(codes, 0)], -1, codes)
    got = np.where(pos >= 0, codes[np.maximum(pos, 0)] if len(codes) else -1, -1)
    unread = None
    if max_len is not None:
        big = np.array([isinstance(v, str) and len(v) > max_len for v in values], dtype=bool)
        if big.any():
            unread = (got >= 0) & big[np.maximum(got, 0)]
            got = np.where(unread, -1, got)
    return Coded(got.astype(np.int64), values, unread)


def joint(a: Coded, b: Coded, show: Callable[[Any], Any] | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both sides' codes into one vocabulary of the values as shown (`show`: per distinct
    value; None: no value), and that vocabulary."""
    vocab: dict[Any, int] = {}

    def ids(values: np.ndarray) -> np.ndarray:
        out = []
        for v in values:
            w = show(v) if show is not None else v
            out.append(-1 if w is None else vocab.setdefault(w, len(vocab)))
        return np.append(np.array(out, dtype=np.int64), -1)

    ia, ib = ids(a.values), ids(b.values)
    return ia[a.codes], ib[b.codes], np.array(list(vocab), dtype=object)


def extra_columns(view: View, ops: pd.DataFrame, names: tuple[str, ...] = (ATTRIBUTES, CACHE_HIT)
                  ) -> dict[str, Coded]:
    """Per op of `ops` (rows of `view`), each of `names` the file has; columns it lacks, or
    that cannot be read again, are left out."""
    ordered = view.trace.ordered_columns(["ID", *names])  # (alone from the analysis cache)
    pos = pd.Index(ordered["ID"].to_numpy()).get_indexer(ops["id"].to_numpy())
    out: dict[str, Coded] = {}
    missing = []
    for name in names:
        if name in ordered.columns:
            out[name] = coded(ordered[name], pos, _MAX.get(name))
        elif name in view.trace.header:
            missing.append(name)
    if missing:
        read = _columns_read(view, missing, len(ordered))
        if read is not None:
            row = ordered["ID"].to_numpy(dtype=np.int64) - 2  # the ID is the CSV line
            for name, col in read.items():
                out[name] = coded(col, np.where(pos >= 0, row[np.maximum(pos, 0)], -1),
                                  _MAX.get(name))
    return out


def _columns_read(view: View, names: list[str], rows: int) -> dict[str, pd.Series] | None:
    """`names` of the view's CSV (of `rows` data rows: its trace table's) as _read_csv_columns
    reads them, kept with its trace (and so in the analysis cache: a second diff of the same
    content does not read the CSV again)."""
    kept: dict[str, pd.Series] = view.trace.__dict__.get("_csv_columns", {})
    wanted = [n for n in names if n not in kept]
    if wanted:
        read = _read_csv_columns(view.trace.path, view.trace.header, wanted, rows)
        if read is None:
            return None
        kept = {**kept, **read}
        view.trace.__dict__["_csv_columns"] = kept
    return {n: kept[n] for n in names}


def _read_csv_columns(path: Path, header: list[str], names: list[str], rows: int
                      ) -> dict[str, pd.Series] | None:
    """`names` of the CSV at `path` (None when it cannot be read, or has not `rows` data rows:
    not the file that was loaded)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        if not Path(path).is_file():
            return None
        cols = dedupe_header(header)
        wanted = [cols[header.index(n)] for n in names]
        text = pa.dictionary(pa.int32(), pa.string())
        table = pacsv.read_csv(
            str(path),
            # the loader's block: a row it read (up to two blocks long) is read here too
            read_options=pacsv.ReadOptions(column_names=cols, skip_rows=1, use_threads=True,
                                           block_size=BLOCK),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted, column_types={c: text for c in wanted},
                strings_can_be_null=True, null_values=[""]))
    except (OSError, ValueError, pa.ArrowException):
        return None
    if table.num_rows != rows:
        return None
    return {n: table.column(c).to_pandas() for n, c in zip(names, wanted)}
