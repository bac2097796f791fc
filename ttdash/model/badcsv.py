"""Slow paths that name the line (and column) of a CSV pyarrow could not read: they run only
after a parse has failed, reading the file again in bounded chunks or with the csv module."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from .errors import TraceError


def locate_bad_line(path: Path, n_fields: int) -> TraceError:
    """Slow path: find the first row whose field count differs from the header's."""
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        next(reader, None)
        last_line = 1
        for row in reader:
            line = reader.line_num
            if row and len(row) != n_fields:
                at_end = fh.read(1) == ""
                if at_end and len(row) < n_fields:
                    return TraceError(path, f"last line is cut short ({len(row)} of {n_fields} "
                                      "fields); the file may still be being written", line=line,
                                      column=len(row))
                return TraceError(path, f"expected {n_fields} fields, found {len(row)}", line=line,
                                  column=min(len(row), n_fields) + 1 if len(row) < n_fields
                                  else n_fields + 1)
            last_line = line
    return TraceError(path, "malformed CSV", line=last_line)


def locate_binary(path: Path, limit: int = 64 << 20) -> TraceError:
    """Slow path for a file pyarrow cannot split into rows: find the first NUL byte or overlong
    line, reading in bounded chunks (a 2 GB sparse file is not read whole)."""
    line, start, pos = 1, 0, 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(1 << 22)
            if not chunk:
                break
            nul = chunk.find(b"\x00")
            part = chunk if nul < 0 else chunk[:nul]
            nl = part.count(b"\n")
            if nl:
                start = pos + part.rfind(b"\n") + 1
            line += nl
            if nul >= 0:
                return TraceError(path, f"binary data (NUL byte) at byte {pos + nul}; not a CSV "
                                  "row", line=line)
            pos += len(chunk)
            if pos - start > limit:
                return TraceError(path, f"a line longer than {limit >> 20} MiB; not a profiler "
                                  "CSV row", line=line)
    opened = _unclosed_quote(path)
    if opened is not None:
        return TraceError(path, 'unclosed quote: a cell opened with " here never ends, so the '
                          "rest of the file reads as one cell", line=opened)
    return TraceError(path, "cannot split the file into CSV rows", line=line)


def _unclosed_quote(path: Path) -> int | None:
    """The line where a quoted cell opens and the file ends inside it (None if none)."""
    inside, opened = False, None
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if raw.count(b'"') % 2:
                inside = not inside
                opened = n if inside else None
    return opened if inside else None


def numeric_error(path: Path, header: list[str], msg: str) -> TraceError:
    """pyarrow names the column of a cell it cannot convert, not the row: find the row (slow
    path, errors only) and name the column by its header."""
    m = re.search(r"column #?(\d+)", msg)
    if not m or int(m.group(1)) >= len(header):
        return TraceError(path, f"bad value: {msg.splitlines()[0]}")
    col = int(m.group(1))
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        next(reader, None)
        for row in reader:
            cell = row[col].strip() if col < len(row) else ""
            if not cell:
                continue
            try:
                float(cell)
            except ValueError:
                return TraceError(path, f"column {header[col]!r}: expected a number, found "
                                  f"{cell[:40]!r}", line=reader.line_num, column=col + 1)
    return TraceError(path, f"column {header[col]!r}: bad value: {msg.splitlines()[0]}",
                      column=col + 1)
