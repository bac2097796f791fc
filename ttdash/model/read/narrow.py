"""Parsed blocks held narrow until the whole file is read (issue #51: a million ops' peak).

The loader keeps every parsed block until the last one is read, then converts the columns to
pandas, where `cells.compact` stores each numeric column in 32 bits when every value of it is
exact there. pyarrow parses numbers as int64 and float64, so the blocks held meanwhile took
twice the memory their columns end up in: a million-row trace's parsed table was ~410 MB, its
numbers ~340 of it. Each block's numeric columns are narrowed as they come, by `compact`'s own
rule applied to the block's values (a column passes it if and only if each of its blocks does),
and a column some block could not narrow is widened back in whole at the end (its narrowed
blocks were exact, so the values are the parsed ones): the frame made from the table has the
same values in the same dtypes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .cells import EXACT_FLOAT32

INT32_LO, INT32_HI = -(1 << 31), 1 << 31  # compact's int32 range: lo <= v < hi
#: a narrowed type -> the type it was parsed as
WIDE = {pa.int32(): pa.int64(), pa.float32(): pa.float64()}


def narrow_array(a: pa.Array) -> pa.Array:
    """An int64 block in int32 when every value is in int32's range; a float64 block in
    float32 when every finite value is whole and at most 2**24 (exact in float32: compact's
    rule); any other block as it is. Missing values stay missing."""
    if pa.types.is_int64(a.type):
        bounds = pc.min_max(a)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is None or (lo >= INT32_LO and hi < INT32_HI):
            return a.cast(pa.int32())
    elif pa.types.is_float64(a.type):
        v = a.to_numpy(zero_copy_only=False)
        finite = v[np.isfinite(v)]
        if not len(finite) or (np.abs(finite).max() <= EXACT_FLOAT32
                               and bool((finite == np.floor(finite)).all())):
            return a.cast(pa.float32())
    return a


def narrow_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The block with its numeric columns narrowed (narrow_array)."""
    arrays = [narrow_array(a) for a in batch.columns]
    if all(a is b for a, b in zip(arrays, batch.columns)):
        return batch
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def table_of(batches: list[pa.RecordBatch]) -> pa.Table:
    """Narrowed blocks as one table: a column some block holds wide is wide in every block."""
    names = batches[0].schema.names
    columns = []
    for i in range(len(names)):
        chunks = [b.column(i) for b in batches]
        kinds = {c.type for c in chunks}
        if len(kinds) > 1:
            (wide,) = {WIDE.get(t, t) for t in kinds}
            chunks = [c if c.type == wide else c.cast(wide) for c in chunks]
        columns.append(pa.chunked_array(chunks, type=chunks[0].type))
    return pa.Table.from_arrays(columns, names=names)
