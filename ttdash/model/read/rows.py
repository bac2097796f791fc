"""Appended CSV rows kept as Arrow text.

A block of plain lines (no quote, carriage return, NUL or blank line) is parsed by pyarrow in one
pass and kept as one Arrow string column per field (`TextRows`): the live model turns its numbers
into numbers column by column (Arrow casts), and no Python string is made for a cell the analysis
does not read. Anyone who wants rows gets the lists of strings the csv module would give.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

__all__ = ["TextRows", "parse_plain_lines"]

#: A line longer than this is not parsed here (the csv module's path reads it, or says why not).
_BLOCK = 16 << 20


class TextRows(Sequence[list[str]]):
    """Rows of CSV text cells held as an Arrow table of strings, one column per field. Indexing
    and iterating give lists of str (what the csv module gives); a slice is a TextRows without
    a copy. `columns()` is each field's cells as one Arrow string array."""

    __slots__ = ("table",)

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def width(self) -> int:
        return self.table.num_columns

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            if stride == 1:
                return TextRows(self.table.slice(start, max(0, stop - start)))
            return self.take(range(start, stop, stride))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("row index out of range")
        return [c[index].as_py() for c in self.table.columns]

    def __iter__(self) -> Iterator[list[str]]:
        return (list(r) for r in zip(*(c.to_pylist() for c in self.table.columns)))

    def take(self, positions: Sequence[int]) -> TextRows:
        """The rows at `positions`, in their order."""
        return TextRows(self.table.take(pa.array(positions, pa.int64())))

    def columns(self) -> list[pa.Array]:
        """Each field's cells as one Arrow string array."""
        return [c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)
                for c in self.table.columns]

    @staticmethod
    def concat(parts: Sequence[TextRows]) -> TextRows:
        return parts[0] if len(parts) == 1 else TextRows(
            pa.concat_tables([p.table for p in parts]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TextRows):
            return self.table.equals(other.table)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[list[str]]) -> list[list[str]]:
        return list(self) + list(other)

    def __radd__(self, other: Sequence[list[str]]) -> list[list[str]]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"TextRows({len(self)} rows x {self.width} fields)"


@lru_cache(maxsize=8)
def _options(width: int) -> tuple[Any, Any, Any]:
    names = [f"f{i}" for i in range(width)]
    read = pacsv.ReadOptions(column_names=names, use_threads=False, block_size=_BLOCK)
    # no quoting (the block has no quote), every cell its text ("" stays "", not null)
    parse = pacsv.ParseOptions(quote_char=False, ignore_empty_lines=False)
    convert = pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                   strings_can_be_null=False)
    return read, parse, convert


def parse_plain_lines(data: bytes, width: int) -> TextRows | None:
    """Complete lines (each ending in a newline) of `width` comma-separated cells as
    `TextRows`, one row per line; None when they are not all such lines of valid UTF-8 with no
    quote, carriage return, NUL or blank line (the csv module's path then reads them, and says
    which lines it left out)."""
    if not data.endswith(b"\n") or data.startswith(b"\n") or any(
            b in data for b in (b'"', b"\r", b"\0", b"\n\n")):
        return None
    read, parse, convert = _options(width)
    try:
        table = pacsv.read_csv(pa.py_buffer(data), read_options=read, parse_options=parse,
                               convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # a line of another width, a line over _BLOCK, bytes that are not UTF-8
    if table.num_rows != data.count(b"\n"):
        return None
    return TextRows(table)
