"""Opening the CSV the loader reads: a regular file as it is, a pipe (`report <(cmd)`,
`/dev/stdin`, a named FIFO) read once, in full, into an anonymous in-memory file that the loader
then reads as a regular one (every second look at a broken file to name its line works) without
the parsed-file cache (`cache.Slot.of` skips it: nothing identifies a pipe's content twice); its
errors name the path given. A character device (`/dev/zero`), a socket or a block device is
refused with one line."""

from __future__ import annotations

import csv
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import TraceError
from .badcsv import binary_error, compressed

MAX_HEADER_BYTES = 4 << 20
#: A pipe is held in memory while it is read: past this, save it to a file (a regular file is
#: streamed in blocks, whatever its size).
PIPE_MAX_BYTES = 2 << 30
#: The in-memory copy of a pipe is named so (`/proc/self/fd/N` resolves to it).
PIPE_COPY_NAME = "ttdash-pipe"
_CHUNK = 1 << 20


def _kind(mode: int) -> str:
    return ("a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _stat(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise TraceError(path, "no such file") from None
    except PermissionError:
        raise TraceError(path, "permission denied") from None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None


def open_checked(path: Path) -> tuple[BinaryIO, int]:
    """A regular file opened for reading, and its size; TraceError for anything else."""
    st = _stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(path, "is a directory, not a CSV file")
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(path, f"{_kind(st.st_mode)}, not a CSV file or a pipe; refusing to "
                         "read it")
    if st.st_size == 0:
        raise TraceError(path, "file is empty")
    try:
        return open(path, "rb"), st.st_size
    except PermissionError:
        raise TraceError(path, "permission denied") from None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None


def decode(path: Path, data: bytes, what: str) -> str:
    if b"\x00" in data or compressed(data):
        raise binary_error(path, data, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_header(path: Path) -> list[str]:
    """The header row's column names (the file's first line)."""
    fh, _ = open_checked(path)
    with fh:
        first = fh.readline(MAX_HEADER_BYTES)
    text = decode(path, first, "header").lstrip("\ufeff")
    text = re.split(r"\r\n|\r|\n", text, maxsplit=1)[0]  # LF, CRLF and old-Mac CR files
    if not text.strip():
        raise TraceError(path, "no header row (first line is blank)", line=1)
    try:
        header = next(csv.reader([text]))
    except csv.Error as exc:
        raise TraceError(path, f"malformed header: {exc}", line=1) from None
    return [h.strip() for h in header]


def is_pipe(path: Path) -> bool:
    """A FIFO (a named pipe, `<(cmd)`, a piped stdin); False for anything else or no file."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


@contextmanager
def pipe_copy(path: Path) -> Iterator[Path]:
    """The whole of the pipe `path`, read once, as a regular in-memory file's path (valid in
    the block). Opened without waiting for a writer: a FIFO nobody writes to reads as empty
    (one line, exit 2), never a hang."""
    copy = _fill(path)
    try:
        yield Path(f"/proc/self/fd/{copy}")
    finally:
        os.close(copy)


def _fill(path: Path) -> int:
    """An in-memory file (its descriptor) holding everything the pipe `path` gave."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    copy = -1
    try:
        # blocking reads from here: wait for the writer's data until it closes its end
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        try:
            copy = os.memfd_create(PIPE_COPY_NAME, os.MFD_CLOEXEC)
        except (AttributeError, OSError) as exc:
            raise TraceError(path, f"a pipe cannot be read here ({exc}): save it to a file "
                             "and give its name") from None
        size = 0
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > PIPE_MAX_BYTES:
                raise TraceError(path, f"more than {PIPE_MAX_BYTES >> 30} GiB from a pipe: "
                                 "save it to a file and give its name")
            os.write(copy, chunk)
        if not size:
            raise TraceError(path, "a pipe that gave nothing (no writer, or it wrote nothing)")
        done, copy = copy, -1
        return done
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
        if copy >= 0:
            os.close(copy)


def renamed(exc: TraceError, path: Path) -> TraceError:
    """`exc` (raised reading a pipe's copy) naming the path the user gave."""
    return TraceError(path, exc.message, line=exc.line, column=exc.column)
