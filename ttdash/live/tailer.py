"""Incremental CSV reader that only reads the bytes appended since the last poll.

The tailer keeps the file descriptor open between polls. Holding it pins the inode, so a file that
is deleted and re-created (even instantly, even if the file system would reuse the inode number) is
always seen as a different file. Truncation, replacement and in-place rewrites are reported as a
``reset``; the tailer then starts again from byte 0 of the current file. After a truncation with
the same inode (logrotate's ``copytruncate``), rows appended without a header of their own are
read with the header known before (a first line with no number in it is a new header).
"""

from __future__ import annotations

import csv
import gc
import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..model.read.rows import TextRows, parse_plain_lines

__all__ = ["CsvTailer", "TailResult"]

#: Bytes kept from the start / end of what was read, to notice a file rewritten in place.
_SIG_LEN = 64
#: Appended to a parse batch that contains quotes: if it survives as its own record, the last real
#: record was complete; if it is swallowed, the batch ended inside a quoted field.
_SENTINEL = "\ufdd0\ufdd1"
#: A quoted field left open for this many lines is treated as malformed rather than waited for.
_MAX_PENDING_LINES = 10_000


@dataclass
class TailResult:
    """What one :meth:`CsvTailer.poll` found.

    ``header`` is the current header (``None`` until its line is complete). ``rows[i]`` started on
    line ``lines[i]`` (1-based; the header is line 1 in a normal file); ``first_line`` is
    ``lines[0]`` (0 when there are no rows). When ``reset`` is true the caller must drop every row
    it got from this tailer before; ``rows`` then already come from the new file. A block of
    plain lines comes as `TextRows` (Arrow text, read as lists of str), others as lists.
    """

    header: list[str] | None = None
    rows: list[list[str]] | TextRows = field(default_factory=list)
    first_line: int = 0
    lines: list[int] = field(default_factory=list)
    reset: bool = False
    reason: str | None = None
    missing: bool = False
    error: str | None = None
    bad_rows: int = 0
    bad_lines: list[int] = field(default_factory=list)
    #: True when the poll stopped at ``max_bytes`` and more data is already waiting.
    more: bool = False


def _open_readonly(path: str) -> int:
    """Open ``path`` read-only without blocking (a FIFO swapped in must not hang us)."""
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0] if text else type(exc).__name__


def _looks_like_header(rec: list[str]) -> bool:
    """No cell is a number: column names, not a row of device numbers."""
    for cell in rec:
        try:
            float(cell)
        except ValueError:
            continue
        return False
    return True


MAX_LINE_BYTES = 16 << 20  # no profiler row is this long
#: A block of complete lines longer than this is offered to pyarrow (`parse_plain_lines`, ~0.6
#: us a row); below, its ~0.3 ms a call costs more than the csv module's ~3 us a row saves.
PLAIN_BYTES = 32 << 10
# The csv module refuses fields over 128 KiB by default; the one-shot loader (pyarrow) keeps
# them, so the tailer must too (a long ATTRIBUTES cell is not a malformed row).
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))


class CsvTailer:
    """Tail a growing CSV file: header once, then complete rows as they are appended."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = 64 << 20) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        #: blocks of complete lines longer than this are offered to pyarrow (PLAIN_BYTES)
        self.plain_bytes = PLAIN_BYTES
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._reset_state()

    # ----------------------------------------------------------------- state
    def _reset_state(self) -> None:
        self._offset = 0  # bytes of the file consumed (including self._partial)
        self._partial = b""  # bytes after the last newline (a cut line)
        self._skipping = False  # dropping an overlong line up to its newline
        self._pending: list[str] = []  # complete lines of a record whose quoted field is still open
        self._pending_start = 0  # line number where the pending record starts
        self._lines_done = 0  # physical lines fully consumed (pending ones excluded)
        self._header: list[str] | None = None
        self._head_sig = b""  # first bytes of the file as read
        self._tail_sig = b""  # last bytes read before self._offset
        self._last_stat: tuple[int, int] | None = None  # (size, mtime_ns) of the last poll
        #: the header before a truncation (logrotate's copytruncate): rows appended after it
        #: without a header of their own are read with it
        self._known_header: list[str] | None = None

    def _close_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._ident = None

    def close(self) -> None:
        """Release the file descriptor (the next poll reopens the file and starts over)."""
        self._close_fd()
        self._reset_state()

    def __enter__(self) -> CsvTailer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self._close_fd()
        except Exception:
            pass

    @property
    def header(self) -> list[str] | None:
        """The header, once its line is complete."""
        return self._header

    @property
    def offset(self) -> int:
        """Bytes of the file consumed so far."""
        return self._offset

    @property
    def pending_bytes(self) -> int:
        """Bytes read but not yet emitted (a cut last line or an open quoted field)."""
        return len(self._partial) + sum(len(s) for s in self._pending)

    @property
    def lines_done(self) -> int:
        """Physical lines emitted, skipped or used as header so far."""
        return self._lines_done

    # ------------------------------------------------------------------ poll
    def poll(self) -> TailResult:
        """Read what was appended since the last poll; never raises for I/O problems."""
        res = TailResult()
        path = os.fspath(self.path)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if self._fd is not None or self._offset:
                self._close_fd()
                self._reset_state()
                res.reset, res.reason = True, "deleted"
            res.missing = True
            return res
        except OSError as exc:
            res.header, res.error = self._header, _one_line(exc)
            return res

        if not stat.S_ISREG(st.st_mode):
            if self._fd is not None or self._offset:
                self._close_fd()
                self._reset_state()
                res.reset, res.reason = True, "replaced by a non-regular file"
            res.error = f"not a regular file: {path}"
            return res

        if self._fd is not None and self._ident != (st.st_dev, st.st_ino):
            self._close_fd()
            self._reset_state()
            res.reset, res.reason = True, "replaced"

        if self._fd is None:
            try:
                fd = _open_readonly(path)
            except FileNotFoundError:
                res.missing = True
                return res
            except OSError as exc:
                res.error = _one_line(exc)
                return res
            try:
                fst = os.fstat(fd)
            except OSError as exc:
                os.close(fd)
                res.error = _one_line(exc)
                return res
            if not stat.S_ISREG(fst.st_mode):
                os.close(fd)
                res.error = f"not a regular file: {path}"
                return res
            self._fd, self._ident = fd, (fst.st_dev, fst.st_ino)
            st = fst

        size = st.st_size
        if self._offset and size < self._offset:
            known = self._header
            self._reset_state()
            self._known_header = known
            res.reset, res.reason = True, "truncated"
        elif self._offset and (size, st.st_mtime_ns) != self._last_stat and not self._same_prefix():
            self._reset_state()
            res.reset, res.reason = True, "rewritten"
        self._last_stat = (size, st.st_mtime_ns)

        try:
            data, res.more = self._read_new(size)
        except OSError as exc:
            res.header, res.error = self._header, _one_line(exc)
            return res
        if data:
            self._consume(data, res)
        res.header = self._header
        if res.rows:
            res.first_line = res.lines[0]
        return res

    # --------------------------------------------------------------- helpers
    def _same_prefix(self) -> bool:
        """True when the bytes we remember still sit where we read them."""
        assert self._fd is not None
        try:
            if self._head_sig and os.pread(self._fd, len(self._head_sig), 0) != self._head_sig:
                return False
            n = len(self._tail_sig)
            if n and os.pread(self._fd, n, self._offset - n) != self._tail_sig:
                return False
        except OSError:
            return False
        return True

    def _read_new(self, size: int) -> tuple[bytes, bool]:
        """Read from the offset to EOF (at most ``max_bytes``); return (data, more_waiting)."""
        assert self._fd is not None
        chunks: list[bytes] = []
        got = 0
        want = max(size - self._offset, 1 << 16)
        while got < self.max_bytes:
            chunk = os.pread(self._fd, min(want, self.max_bytes - got), self._offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            want = 1 << 20
        data = b"".join(chunks)
        if data:
            if len(self._head_sig) < _SIG_LEN:
                self._head_sig = (self._head_sig + data)[:_SIG_LEN]
            self._tail_sig = (self._tail_sig + data[-_SIG_LEN:])[-_SIG_LEN:]
            self._offset += len(data)
        return data, got >= self.max_bytes

    def _consume(self, data: bytes, res: TailResult) -> None:
        """Split new bytes into complete lines, parse them, fill ``res``."""
        if self._skipping:  # inside an overlong line: drop bytes until its newline
            nl = data.find(b"\n")
            if nl < 0:
                return
            data = data[nl + 1:]
            self._skipping = False
            self._lines_done += 1
        buf = self._partial + data if self._partial else data
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE_BYTES:  # binary junk or a runaway line: never hold it all
                self._partial = b""
                self._skipping = True
                res.bad_rows += 1
                res.error = (f"line {self._lines_done + 1} is longer than "
                             f"{MAX_LINE_BYTES >> 20} MiB (binary data?); skipped")
                return
            self._partial = buf
            return
        self._partial = buf[cut + 1 :]
        if len(buf) > self.plain_bytes and self._plain(buf[: cut + 1], res):
            return
        self._decode_and_parse(buf[: cut + 1], res)

    def _plain(self, block: bytes, res: TailResult) -> bool:
        """Parse a block of plain rows (`parse_plain_lines`) in one pyarrow pass; False when
        it is not one (the csv module's path then reads it). The header line of a file's first
        block is read by that path first."""
        if self._pending:
            return False
        if self._header is None:
            nl = block.find(b"\n")
            if not nl or b'"' in block:  # a blank first line, or quotes: every line the slow way
                return False
            self._decode_and_parse(block[: nl + 1], res)
            block = block[nl + 1 :]
            if self._header is None or res.rows:
                self._decode_and_parse(block, res)
                return True
        header = ",".join(self._header).encode()
        rows = None if block.startswith(header + b"\n") or b"\n" + header + b"\n" in block \
            else parse_plain_lines(block, len(self._header))
        if rows is None:
            self._decode_and_parse(block, res)
            return True
        first = self._lines_done + 1
        res.rows = rows
        res.lines.extend(range(first, first + len(rows)))
        self._lines_done += len(rows)
        return True

    def _decode_and_parse(self, block: bytes, res: TailResult) -> None:
        """Complete lines through the csv module (any line a CSV may hold)."""
        if not block:
            return
        text = block.decode("utf-8", "replace")
        if self._lines_done == 0 and not self._pending and text.startswith("\ufeff"):
            text = text[1:]
        if self._pending:
            text = "".join(self._pending) + text
            base = self._pending_start - 1
            self._pending = []
        else:
            base = self._lines_done
        self._parse(text, base, res)

    def _parse(self, text: str, base: int, res: TailResult) -> None:
        """Parse complete lines ``text`` whose first line is line ``base + 1``."""
        gc_was_on = gc.isenabled()
        if gc_was_on:  # millions of small lists: generational GC passes would double the cost
            gc.disable()
        try:
            if '"' in text:
                self._parse_quoted(text, base, res)
            else:
                try:
                    recs = list(csv.reader(io.StringIO(text, newline="\n")))
                except csv.Error:
                    self._parse_lines(text, base, res)
                    return
                # Without quotes every physical line is exactly one record.
                self._emit(recs, base + 1, None, res)
                self._lines_done = base + text.count("\n")
        finally:
            if gc_was_on:
                gc.enable()

    def _parse_quoted(self, text: str, base: int, res: TailResult) -> None:
        """Parse text with quotes: records may span lines and the last one may be unfinished."""
        reader = csv.reader(io.StringIO(text + _SENTINEL + "\n", newline="\n"))
        recs: list[list[str]] = []
        starts: list[int] = []
        prev = 0
        try:
            for rec in reader:
                recs.append(rec)
                starts.append(base + prev + 1)
                prev = reader.line_num
        except csv.Error:
            self._parse_lines(text, base, res)
            return
        if recs and recs[-1] == [_SENTINEL]:
            recs.pop()
            starts.pop()
            self._emit(recs, 0, starts, res)
            self._lines_done = base + text.count("\n")
            return
        # The text ended inside a quoted field: keep that record's lines for the next poll.
        recs.pop()
        start = starts.pop()
        keep = [ln + "\n" for ln in text.split("\n")[start - base - 1 : -1]]
        self._emit(recs, 0, starts, res)
        self._lines_done = start - 1
        if len(keep) > _MAX_PENDING_LINES:
            self._parse_lines("".join(keep), start - 1, res)
        else:
            self._pending, self._pending_start = keep, start

    def _parse_lines(self, text: str, base: int, res: TailResult) -> None:
        """Slow path for malformed input: one record per physical line."""
        recs: list[list[str]] = []
        starts: list[int] = []
        for i, line in enumerate(text.split("\n")[:-1], start=base + 1):
            try:
                rec = next(csv.reader([line.rstrip("\r")]), [])
            except csv.Error:
                res.bad_rows += 1
                res.bad_lines.append(i)
                continue
            recs.append(rec)
            starts.append(i)
        self._emit(recs, 0, starts, res)
        self._lines_done = base + text.count("\n")

    def _emit(
        self, recs: list[list[str]], first: int, starts: list[int] | None, res: TailResult
    ) -> None:
        """Take the header from the first non-blank record; keep rows of the header's width.

        Record ``i`` started on line ``starts[i]``, or ``first + i`` when ``starts`` is None.
        """
        k = 0
        if self._header is None:
            while k < len(recs) and not recs[k]:
                k += 1
            if k == len(recs):
                return
            known, self._known_header = self._known_header, None
            if known is not None and recs[k] != known and not _looks_like_header(recs[k]):
                self._header = known  # appended after a truncation without a header: rows
            else:
                self._header = recs[k]
                k += 1
        body = recs[k:] if k else recs
        if not body:
            return
        width = len(self._header)
        header = self._header
        if all(len(r) == width and r != header for r in body):
            res.rows.extend(body)
            if starts is None:
                res.lines.extend(range(first + k, first + len(recs)))
            else:
                res.lines.extend(starts[k:])
            return
        for i, rec in enumerate(body, start=k):
            line = first + i if starts is None else starts[i]
            n = len(rec)
            if n == width and rec != header:
                res.rows.append(rec)
                res.lines.append(line)
            elif n:  # blank lines are skipped silently
                res.bad_rows += 1
                res.bad_lines.append(line)
