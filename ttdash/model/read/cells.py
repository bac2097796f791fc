"""Reading individual cells: tt-perf-report's coercion rules, applied once per distinct value."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

MAX_DIM = float(1 << 32)
DRAM_SHARDED_CONFIG = "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig"
_WHOLE = r"^[+-]?[0-9]+$"
_NNZ_RE = re.compile(r"['\"]nnz['\"]\s*:\s*['\"]?(\d+)")


def by_unique(s: pd.Series, fn: Callable[[Any], Any], default: float = np.nan) -> np.ndarray:
    """Apply `fn` to each distinct value of a column and spread the results back.

    Profiler columns repeat a handful of values (dtypes, memory configs, shapes, op codes, the
    attributes of repeated layers), so this is vectorised in effect, with no per-row Python.
    """
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    values = np.array([fn(u) for u in uniques] + [default], dtype="float64")
    return values[codes]  # code -1 (missing) picks the trailing default


def factorize_rows(cols: Iterable[np.ndarray | pd.Series]) -> np.ndarray:
    """One dense int id per distinct tuple of column values, numbered by first appearance
    (missing values compare equal). Each column's codes are folded into a running tuple number;
    that number is renumbered densely only when the next fold could overflow int64 (the tuples
    of a million rows are a few hundred: usually once, at the end). `cols` may be a generator:
    one column is held at a time."""
    acc: np.ndarray | None = None
    bound = 1  # acc < bound
    for values in cols:  # numpy arrays as they are: a Series of objects would infer strings
        codes, width = _codes(values if isinstance(values, pd.Series) else np.asarray(values))
        if acc is None:
            acc = np.zeros(len(codes), dtype=np.int64)
        elif bound > (1 << 62) // width:
            acc, bound = _dense(acc)
        acc = acc * width + codes
        bound *= width
    return _dense(acc)[0] if acc is not None else np.zeros(0, np.int64)


def _codes(values: np.ndarray | pd.Series) -> tuple[np.ndarray, int]:
    """A column's values as numbers 0 <= code < width, equal values (missing ones too) alike:
    whole numbers of a narrow range (ids, codes) are their own, less the least; anything else
    factorized (missing: 0)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * len(values) and -(1 << 62) < lo and hi < 1 << 62:  # (int64 safe)
            return values.astype(np.int64) - lo, hi - lo + 1
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes.astype(np.int64) + 1, len(uniques) + 1


def first_rows(ids: np.ndarray) -> np.ndarray:
    """Each id's first row, by id, for ids numbered by first appearance (factorize_rows'): what
    np.unique(ids, return_index=True) gives, in one pass and not a sort (the running maximum
    grows exactly where an id first appears)."""
    if not len(ids):
        return np.zeros(0, np.int64)
    top = np.maximum.accumulate(ids)
    return np.flatnonzero(np.concatenate([[True], top[1:] > top[:-1]]))


def _dense(keys: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(keys)
    return codes.astype(np.int64), max(len(uniques), 1)


def by_unique_rows(keys: list[pd.Series], fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """`fn(positions)` (one result per given row position) computed on one row of each distinct
    combination of `keys` and spread back to every row: per-row string building done once per
    distinct value tuple (a million rows repeat a few hundred)."""
    group = factorize_rows(keys)
    return np.asarray(fn(first_rows(group)))[group]


def _whole_numbers(cells: np.ndarray | pa.Array) -> Any:
    """CSV text cells (1-D, objects or Arrow text) as an Arrow int64 array, empty cells null,
    when every other cell is a whole number in int64's range; else None."""
    text = cells if isinstance(cells, pa.Array) else pa.array(
        np.ascontiguousarray(cells), type=pa.string())  # a strided view: 10x slower
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    # decimal digits only: Arrow's cast would also take 0x10, which pandas does not
    if pc.all(pc.match_substring_regex(text, _WHOLE)).as_py() is False:
        return None
    try:
        return pc.cast(text, pa.int64())
    except pa.ArrowInvalid:  # beyond int64
        return None


def numeric_cells(cells: np.ndarray) -> np.ndarray:
    """CSV text cells as numbers, exactly as ``pd.to_numeric(cells, errors="coerce")``: whole
    numbers go through Arrow's integer cast (int64, or float64 with NaN where a cell is empty:
    several times faster than pandas' per-cell parse); anything else (decimals, blanks around a
    number, junk) takes pandas' own path."""
    whole = _whole_numbers(cells)
    if whole is not None:
        return np.asarray(whole.to_numpy(zero_copy_only=False),
                          dtype="float64" if whole.null_count else "int64")
    return np.asarray(pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce"))


def numeric_columns(cells: np.ndarray | list[pa.Array]) -> list[np.ndarray]:
    """Each column of CSV text cells (a 2-D object array, or a list of Arrow text columns of
    one length) as `numeric_cells` makes it, the whole numbers of every column checked and
    cast in one Arrow pass (a live block of 100 rows has a dozen numeric columns: a pass each
    cost more than their cells); a block with any other cell takes `numeric_cells` column by
    column."""
    columns: list[Any]
    if isinstance(cells, np.ndarray):
        n, k = cells.shape
        flat = cells.T.reshape(-1) if n and k else None
        columns = [cells[:, j] for j in range(k)]
    else:
        k, n = len(cells), (len(cells[0]) if cells else 0)
        flat = pa.concat_arrays(cells) if n and k else None
        columns = list(cells)
    whole = _whole_numbers(flat) if flat is not None else None
    if whole is None:
        return [numeric_cells(c if isinstance(c, np.ndarray) else c.to_numpy(zero_copy_only=False))
                for c in columns]
    values = np.asarray(pc.fill_null(whole, 0).to_numpy()).reshape(k, n)
    missing = np.asarray(whole.is_null().to_numpy(zero_copy_only=False)).reshape(k, n)
    return [np.where(m, np.nan, v) if m.any() else v.copy() for v, m in zip(values, missing)]


def interned(s: pd.Series) -> np.ndarray:
    """A text column as an object array whose equal values share one str (8 bytes a row)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    return np.array([str(u) for u in uniques] + [None], dtype=object)[codes]


def _whole_dim(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        return np.nan
    return v if np.isfinite(v) and v == int(v) and 1 <= v <= MAX_DIM else np.nan


def dim_value(cell: object) -> float:
    """A shape cell: "32[2]" -> 32 (padded), "32" -> 32; invalid -> NaN."""
    text = str(cell).strip()
    if "[" in text and "]" in text:
        text = text.split("[", 1)[0]
    return _whole_dim(text)


def logical_dim_value(cell: object) -> float:
    """A shape cell's logical size: "32[19]" -> 19; "32" -> 32; invalid -> NaN."""
    text = str(cell).strip()
    if "[" in text and text.endswith("]"):
        text = text.split("[", 1)[1][:-1]
    return _whole_dim(text)


EXACT_FLOAT32 = float(1 << 24)  # whole numbers up to this are exact in float32


def compact(s: Any) -> Any:
    """A numeric column in the smallest dtype that holds every value exactly: counts, ids, core
    counts and shape dims in 32 bits; timestamps, cycles and fractional values keep 64. A
    million-row trace then costs half the memory, and every number reads back the same."""
    a = np.asarray(s) if s.dtype in (np.int64, np.float64) else None
    if a is not None and a.dtype == np.int64:
        if len(a) and a.min() >= -(1 << 31) and a.max() < (1 << 31):
            return a.astype(np.int32)
    elif a is not None:
        finite = a[np.isfinite(a)]
        if not len(finite) or (np.abs(finite).max() <= EXACT_FLOAT32
                               and bool((finite == np.floor(finite)).all())):
            return a.astype(np.float32)
    return s


EXACT_FLOAT16 = 2048.0  # whole numbers up to this are exact in float16


def compact_dims(values: np.ndarray) -> np.ndarray:
    """A shape column (whole dims or NaN) as `compact` makes it, in float16 when no dim is
    above 2048 (exact there; a model's shapes mostly are): 2 bytes a row. Its readers take it
    as float64 (readers.num) or a cell at a time."""
    a = compact(values)
    if a.dtype == np.float32:
        finite = a[np.isfinite(a)]
        if not len(finite) or np.abs(finite).max() <= EXACT_FLOAT16:
            return a.astype(np.float16)
    return a


def dtype_size(name: object) -> float:
    """Bytes per element: first integer in the dtype name / 8, else 4 (BFLOAT8_B -> 1)."""
    m = re.search(r"\d+", str(name))
    return int(m.group()) / 8 if m else 4.0


def conv_window(attrs: object, k: int) -> float:
    """Height (k=0) or width (k=1) of a conv's window_hw attribute, as tt-perf-report reads it."""
    parts = str(attrs).split("window_hw", 1)
    if len(parts) < 2:
        return np.nan
    window = parts[1].split("; ")[0][2:-1].split(";")
    return _whole_dim(window[k]) if len(window) >= 2 else np.nan


def nnz(attrs: object) -> float:
    m = _NNZ_RE.search(str(attrs))
    return float(m.group(1)) if m else np.nan


def program_config_int(name: str) -> Callable[[object], float]:
    """A whole-number field of a matmul's program_config (in0_block_w, out_subblock_h/w), read
    only when the attributes hold a program_config, as tt-perf-report reads them."""
    pattern = re.compile(rf"{name}=(\d+)")

    def read(attrs: object) -> float:
        text = str(attrs)
        m = pattern.search(text) if "program_config" in text else None
        return float(m.group(1)) if m else np.nan
    return read


def _after(attrs: str, key: str, parts: int, sep: str = ";") -> str:
    """The `parts` first `sep`-separated pieces after `key`, joined by ","; "x" without `key`."""
    pieces = attrs.split(key)
    return ",".join(pieces[1].split(sep)[:parts]) if len(pieces) > 1 else "x"


def halo_config(attrs: object) -> str | None:
    """A halo op's window, stride, padding, dilation and memory layout, as tt-perf-report
    appends them to its op code: "w=(3,3) s=(2,2) p=(1,1,1,1) d=(1,1) | HEIGHT_SHARDED"."""
    a = str(attrs)
    layout = a.split("memory_layout=")
    layout_name = layout[1].split(";")[0].split("::") if len(layout) > 1 else []
    return (f"w={_after(a, 'window_hw=', 2)} s={_after(a, 'stride_hw=', 2)} "
            f"p={_after(a, 'padding=', 4)} d={_after(a, 'dilation_hw=', 2)} | "
            f"{layout_name[1] if len(layout_name) > 1 else 'x'}")


def _int_after(attrs: str, key: str) -> str:
    pieces = attrs.split(key)
    try:
        return str(int(pieces[1][1:].split(";")[0])) if len(pieces) > 1 else "x"
    except ValueError:
        return "x"


def _flag_true(attrs: str, key: str) -> bool:
    """True when the flag is 'true', or absent: tt-perf-report marks an unreadable flag as set."""
    pieces = attrs.split(f"{key}': '")
    return pieces[1].split("'")[0] == "true" if len(pieces) > 1 else True


def conv_config(attrs: object) -> str | None:
    """A conv's blocking as tt-perf-report appends it to its op code: "[ABH=38|38 ADB SR]"
    (per-core output height | activation block height, in tiles; act double buffer; split
    reader)."""
    a = str(attrs)
    out = f"[ABH={_int_after(a, 'per_core_out_matrix_height_ntile')}|" \
          f"{_int_after(a, 'act_block_h_ntiles')}"
    if _flag_true(a, "enable_act_double_buffer"):
        out += " ADB"
    if _flag_true(a, "enable_split_reader"):
        out += " SR"
    return out + "]"


def attribute_int(key: str) -> Callable[[object], float]:
    """A whole-number field of an op's ATTRIBUTES (`'ring_size': '4'`, `'num_links': 2`)."""
    pattern = re.compile(rf"['\"]{key}['\"]\s*:\s*['\"]?(\d+)")

    def read(cell: object) -> float:
        m = pattern.search(str(cell))
        return float(m.group(1)) if m else np.nan
    return read


#: Text facts of ATTRIBUTES (the loader adds them as string columns).
ATTRIBUTE_TEXT_FEATURES = {"_ATTR_CONV_CONFIG": conv_config, "_ATTR_HALO_CONFIG": halo_config}

#: The ops whose ATTRIBUTES cells the loader reads the features of (op code substrings).
ATTRIBUTE_OPS = ("Matmul", "OptimizedConvNew", "Conv2d", "HaloDeviceOperation", "AllGather",
                 "ReduceScatter", "AllReduce", "AllToAll")
ATTRIBUTE_FEATURES = {
    "_ATTR_DRAM_SHARDED": lambda a: float(DRAM_SHARDED_CONFIG in str(a)),
    "_ATTR_WINDOW_H": lambda a: conv_window(a, 0),
    "_ATTR_WINDOW_W": lambda a: conv_window(a, 1),
    "_ATTR_NNZ": nnz,
    "_ATTR_IN0_BLOCK_W": program_config_int("in0_block_w"),
    "_ATTR_OUT_SUBBLOCK_H": program_config_int("out_subblock_h"),
    "_ATTR_OUT_SUBBLOCK_W": program_config_int("out_subblock_w"),
    # collectives (model.ccl): the ring's size and the links it uses
    "_ATTR_RING_SIZE": attribute_int("ring_size"),
    "_ATTR_NUM_LINKS": attribute_int("num_links"),
}
