"""Slow paths that name the line (and column) of a CSV pyarrow could not read: they run only
after a parse has failed, reading the file again in bounded chunks or with the csv module.

Line numbers are a text editor's: a line ends at "\\n", at "\\r\\n" (once) and at a lone "\\r"
outside a quoted cell (pyarrow and the csv module end a row there). A lone "\\r" inside a quoted
cell is the cell's text, as pyarrow reads it, not a line break (vim shows it as ^M). An error
in a row that spans several lines (a quoted cell with line breaks) names the line it starts on.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ..errors import TraceError

#: The longest cell the csv module may hand back here (its default, 128 KiB, is less than a
#: long ATTRIBUTES cell); past this a cell is reported, not held.
MAX_CELL = 64 << 20


class _Lines:
    """The lines of a text file opened with newline="" as the csv module reads them (split at
    "\\n", "\\r\\n" and "\\r"), counting line breaks as an editor does (see the module's doc)."""

    def __init__(self, fh: TextIO) -> None:
        self.fh = fh
        self.breaks = 0  # line breaks read so far
        self.inside = False  # in a quoted cell after what was read

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        text = next(self.fh)
        if text.count('"') % 2:
            self.inside = not self.inside
        if text.endswith("\n") or (text.endswith("\r") and not self.inside):
            self.breaks += 1
        return text


def _rows(lines: _Lines) -> Iterator[tuple[int, list[str]]]:
    """(line the row starts on, row) of each row after the header."""
    csv.field_size_limit(max(csv.field_size_limit(), MAX_CELL))  # process-wide; the tailer too
    reader = csv.reader(lines)
    next(reader, None)
    while True:
        start = lines.breaks + 1
        row = next(reader, None)
        if row is None:
            return
        yield start, row


def _csv_error(path: Path, exc: csv.Error, line: int) -> TraceError:
    text = str(exc)
    if "field larger" in text:
        text = f"a cell longer than {MAX_CELL >> 20} MiB; not a profiler CSV cell"
    return TraceError(path, f"not CSV: {text}", line=line)


def locate_bad_line(path: Path, n_fields: int) -> TraceError:
    """Slow path: find the first row whose field count differs from the header's."""
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        lines = _Lines(fh)
        last_line = line = 1
        try:
            for line, row in _rows(lines):
                if row and len(row) != n_fields:
                    at_end = fh.read(1) == ""
                    if at_end and len(row) < n_fields:
                        if lines.inside:  # a quote never closed: the line it opens on
                            return locate_binary(path)
                        return TraceError(path, f"last line is cut short ({len(row)} of "
                                          f"{n_fields} fields); the file may still be being "
                                          "written", line=line, column=len(row))
                    return TraceError(path, f"expected {n_fields} fields, found {len(row)}",
                                      line=line, column=min(len(row), n_fields) + 1
                                      if len(row) < n_fields else n_fields + 1)
                last_line = line
        except csv.Error as exc:
            return _csv_error(path, exc, lines.breaks + 1 if line == last_line else line)
    return TraceError(path, "malformed CSV", line=last_line)


#: Magic numbers of the compressions a report may come in, and the command that undoes each.
COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip -k"), (b"BZh", "bzip2", "bunzip2 -k"),
              (b"\xfd7zXZ\x00", "xz", "unxz -k"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
              (b"PK\x03\x04", "zip", "unzip"))


def compressed(data: bytes) -> tuple[str, str] | None:
    """(format, the command that decompresses it) when `data` (a file's start) is compressed."""
    for magic, kind, undo in COMPRESSED:
        if data.startswith(magic) and (kind != "bzip2" or data[3:4].isdigit()):
            return kind, undo
    return None


def binary_error(path: Path, data: bytes, what: str) -> TraceError:
    """The error of a file whose first line is not text: a compressed file says how to
    decompress it; anything else is binary data."""
    kind = compressed(data)
    if kind is None:
        return TraceError(path, f"not a CSV file (binary data in the {what})", line=1)
    name = Path(path).name
    return TraceError(path, f"{kind[0]}-compressed, not a CSV file: decompress it first "
                      f"({kind[1]} '{name}') and give the .csv")


#: pyarrow's parse block, the loader's (a row across more than two is refused; locate_binary
#: names its line). 4 MiB, not 1: a quarter of the batches, each attribute text's facts made once
#: per batch (a 93,600-row read 0.51 -> 0.41 s; a million rows' peak no higher).
BLOCK = 4 << 20
SPECIAL = re.compile(rb'\r\n|["\r\n]')


def locate_binary(path: Path, limit: int = 64 << 20, block_size: int | None = None
                  ) -> TraceError:
    """Slow path for a file pyarrow cannot split into rows: find the first NUL byte, overlong
    line, row longer than pyarrow's block (`block_size`, the loader's) or unclosed quote, reading
    in bounded chunks (a 2 GB sparse file is not read whole)."""
    block = BLOCK if block_size is None else block_size
    line, start, pos = 1, 0, 0  # the line, the byte its line starts at, the chunk's byte
    inside, opened = False, 1  # in a quoted cell, opened on this line
    row, row_line = 0, 1  # the byte and line the current row starts at
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(1 << 22)
            if not chunk:
                break
            if chunk.endswith(b"\r"):  # a "\r\n" split between two chunks
                chunk += fh.read(1)
            nul = chunk.find(b"\x00")
            part = chunk if nul < 0 else chunk[:nul]
            for m in SPECIAL.finditer(part):
                c = m.group()
                if c == b'"':
                    inside = not inside
                    opened = line
                    continue
                if c == b"\r" and inside:
                    continue  # a lone CR in a quoted cell: its text
                line += 1
                start = pos + m.end()
                if inside:
                    continue
                if start - row > block:
                    return TraceError(path, f"a row of {(start - row) / (1 << 20):.1f} MiB "
                                      f"(a cell that long is not a profiler's); rows of up to "
                                      f"{block >> 20} MiB are read", line=row_line)
                row, row_line = start, line
            if nul >= 0:
                return TraceError(path, f"binary data (NUL byte) at byte {pos + nul}; not a CSV "
                                  "row", line=line)
            pos += len(chunk)
            if pos - start > limit:
                return TraceError(path, f"a line longer than {limit >> 20} MiB; not a profiler "
                                  "CSV row", line=line)
    if inside:
        return TraceError(path, 'unclosed quote: a cell opened with " here never ends, so the '
                          "rest of the file reads as one cell", line=opened)
    if pos - row > block:  # the last row, with no line break after it
        return TraceError(path, f"a row of {(pos - row) / (1 << 20):.1f} MiB (a cell that long "
                          f"is not a profiler's); rows of up to {block >> 20} MiB are read",
                          line=row_line)
    return TraceError(path, "cannot split the file into CSV rows", line=line)


def numeric_error(path: Path, header: list[str], msg: str) -> TraceError:
    """pyarrow names the column of a cell it cannot convert, not the row: find the row (slow
    path, errors only) and name the column by its header."""
    m = re.search(r"column #?(\d+)", msg)
    if not m or int(m.group(1)) >= len(header):
        return TraceError(path, f"bad value: {msg.splitlines()[0]}")
    col = int(m.group(1))
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        lines = _Lines(fh)
        try:
            for line, row in _rows(lines):
                cell = row[col].strip() if col < len(row) else ""
                if not cell:
                    continue
                try:
                    float(cell)
                except ValueError:
                    return TraceError(path, f"column {header[col]!r}: expected a number, "
                                      f"found {cell[:40]!r}", line=line, column=col + 1)
        except csv.Error as exc:
            return _csv_error(path, exc, lines.breaks + 1)
    return TraceError(path, f"column {header[col]!r}: bad value: {msg.splitlines()[0]}",
                      column=col + 1)
