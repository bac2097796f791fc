"""The store's op rows (schema.OPS) built straight from a view's columns as Arrow arrays: the
values `model.columns.export_frame` gives (whole numbers as integers, "" bound as missing, floats
rounded to 6 decimals but total_pct, missing cells null) without a pandas frame per batch or a
Python object per cell. A column of a type this does not know goes through export_frame itself
(`_exported`), so the two never differ (tests/test_store_opcols.py holds them equal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..model.columns import INT_FIELDS, export_frame
from .schema import BATCH, OPS, OWN_OP_FIELDS

#: (start, stop) -> the column's rows start:stop as an Arrow array of its declared type
Column = Callable[[int, int], pa.Array]


def op_batches(view: Any) -> Iterator[pa.RecordBatch]:
    """The ops of `view` as OPS rows in report order, BATCH rows at a time (each column read
    once; a batch's arrays are made from slices of it, so a million ops' rows never exist
    twice in memory). The ops' signatures are the view's (model.compare.signature_codes:
    worked out once, kept with the view), each distinct text made Arrow text once."""
    from ..model.compare.signature import signature_codes

    ops = view.op_rows
    columns = [_column(ops, f.name, f.type) for f in OPS if f.name not in OWN_OP_FIELDS]
    is_host = ops["is_host"].to_numpy(dtype=bool)
    codes, distinct = signature_codes(view)
    signature = pa.array(distinct, type=pa.string())
    for start in range(0, max(len(ops), 1), BATCH):
        stop = min(start + BATCH, len(ops))
        arrays = [c(start, stop) for c in columns]
        arrays.append(_take(signature, codes[start:stop]))
        arrays.append(pa.array(is_host[start:stop], type=pa.bool_()))
        yield pa.RecordBatch.from_arrays(arrays, schema=OPS)


def _column(ops: pd.DataFrame, name: str, kind: pa.DataType) -> Column:
    """How one op field's rows become its Arrow array (export_frame's value, then `kind`)."""
    s = ops[name]
    dtype = s.dtype
    if name == "corrupt" or kind == pa.bool_():  # a flag: (export_frame leaves it) as bool
        if isinstance(dtype, np.dtype) and dtype.kind == "b":
            flags = s.to_numpy(dtype=bool)
            return lambda a, b: pa.array(flags[a:b], type=kind)
    elif isinstance(dtype, pd.CategoricalDtype):
        cats = dtype.categories
        if kind == pa.string() and cats.inferred_type in ("string", "empty"):
            return _categorical(s, name == "bound")
    elif dtype == "float64" and name in INT_FIELDS and kind == pa.int64():
        values = s.to_numpy()
        return lambda a, b: _whole(values[a:b]) or _exported(ops.iloc[a:b], name, kind)
    elif dtype == "float64" and name not in INT_FIELDS and kind == pa.float64():
        values = s.to_numpy()
        if name == "total_pct":  # a tiny share keeps its digits
            return lambda a, b: pa.array(values[a:b], type=kind, from_pandas=True)
        return lambda a, b: _rounded(values[a:b])
    elif dtype == "int64" and kind == pa.int64() and name in INT_FIELDS:
        ints = s.to_numpy()
        if not len(ints) or np.abs(ints).max() < 2 ** 53:  # (exact through export's Float64)
            return lambda a, b: pa.array(ints[a:b], type=kind)
    return lambda a, b: _exported(ops.iloc[a:b], name, kind)


def _categorical(s: pd.Series, bound: bool) -> Column:
    """A categorical text column: its categories made Arrow strings once, each batch a take of
    its codes (code -1, and for the bound the "" category, missing)."""
    cats = s.cat.categories
    text = pa.array(cats.to_numpy(dtype=object), type=pa.string())
    codes = s.cat.codes.to_numpy()
    blank = int(cats.get_loc("")) if bound and "" in cats else -1

    def column(a: int, b: int) -> pa.Array:
        part = codes[a:b]
        return _take(text, part, part == blank if blank >= 0 else None)

    return column


def _take(values: pa.Array, codes: np.ndarray, missing: np.ndarray | None = None
          ) -> pa.Array:
    """values[codes], null where a code is -1 (or `missing`)."""
    lost = codes < 0 if missing is None else (codes < 0) | missing
    return values.take(pa.array(codes, mask=lost if lost.any() else None))


def _whole(values: np.ndarray) -> pa.Array | None:
    """Floats that count something as integers (rounded half to even, as pandas' round),
    NaN missing (export_frame's Float64 -> round -> Int64); None when one is infinite or
    beyond int64 (left to export_frame, which refuses it)."""
    missing = np.isnan(values)
    ints = np.round(np.where(missing, 0.0, values))
    if len(ints) and not (np.abs(ints) < 2.0 ** 63).all():
        return None
    return pa.array(ints.astype(np.int64), type=pa.int64(),
                    mask=missing if missing.any() else None)


def _rounded(values: np.ndarray) -> pa.Array:
    """Floats rounded to 6 decimals (pandas' round is numpy's), NaN missing."""
    with np.errstate(all="ignore"):  # 1e300 cells: rounding overflows harmlessly
        return pa.array(np.round(values, 6), type=pa.float64(), from_pandas=True)


def _exported(part: pd.DataFrame, name: str, kind: pa.DataType) -> pa.Array:
    """One column of `part` through export_frame and pandas' conversion (what every column
    went through before): the path for a type the others do not know."""
    col = export_frame(part, (name,))[name]
    if kind == pa.string():  # missing as null, not NaN
        col = col.astype(object).where(col.notna(), None)
    elif kind == pa.bool_():
        col = col.astype(bool)
    return pa.Array.from_pandas(col, type=kind)
