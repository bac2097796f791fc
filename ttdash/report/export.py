"""Writing exports safely: atomically, never over a file without consent, never into a watched
directory."""

from __future__ import annotations

import collections
import contextlib
import errno
import io
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from ..model.errors import TraceError
from .safe import put, utf8_binary


def inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
        return True
    except (ValueError, OSError):
        return False


def watched_dirs(root: Path, max_depth: int = 4, max_entries: int = 20_000) -> list[Path]:
    """`root` and the resolved target of every symlink inside it (a `.logs` linked to another
    disk is as watched as `root`): a bounded walk, symlinks not followed."""
    out = [root]
    seen = 0
    stack = [(root, 0)]
    while stack and seen < max_entries:
        d, depth = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            if e.is_symlink():
                out.append(Path(e.path).resolve())
            elif depth < max_depth and e.is_dir(follow_symlinks=False):
                stack.append((Path(e.path), depth + 1))
    return out


def check_target(path: str | Path, protected: tuple[Path, ...] = ()) -> Path:
    """The resolved target, or TraceError when it is a directory or inside a watched dir."""
    p = Path(path).expanduser()
    if not str(path).strip():
        raise TraceError(None, "no file name given")
    if p.is_dir():
        raise TraceError(p, "is a directory")
    for root in protected:
        for d in watched_dirs(root):
            if inside(p, d):
                where = d if d == root else f"{d} (linked from {root})"
                raise TraceError(p, f"refusing to write inside the watched directory {where}")
    if not p.parent.exists():
        raise TraceError(p.parent, "no such directory")
    return p


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


Content = str | Callable[[TextIO], None]  # the text, or what writes it into a stream


def _put(fh: TextIO, content: Content) -> None:
    if isinstance(content, str):
        fh.write(content)
    else:
        content(fh)


def _write_in_place(p: Path, text: Content) -> Path:
    """A FIFO or a device (`-o /dev/stdout`, a named pipe): written into, never replaced (a
    rename would put a regular file where the device was). A FIFO with no reader is an error,
    not a hang."""
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags | os.O_NONBLOCK)
        os.set_blocking(fd, True)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise TraceError(p, "is a FIFO with no reader") from None
        raise TraceError(p, exc.strerror or str(exc)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            _put(fh, text)
    except OSError as exc:
        raise TraceError(p, exc.strerror or str(exc)) from None
    return p


def write_atomic(path: str | Path, text: Content, *, force: bool = False,
                 protected: tuple[Path, ...] = ()) -> Path:
    """Write `text` (or what the callable writes: a million-row export is streamed, not held)
    to a temp file beside `path`, then rename it into place (regular files);
    FIFOs and character devices are written in place. A new file gets the usual mode (0666 less
    the umask); a replaced file keeps its mode."""
    p = check_target(path, protected)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise TraceError(p, exc.strerror or str(exc)) from None
    if st is not None and (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)):
        return _write_in_place(p, text)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise TraceError(p, "is not a regular file, a FIFO or a device; not writing to it")
    if st is not None and not force:
        raise TraceError(p, "exists; not overwriting without confirmation (--force)")
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            _put(fh, text)
        os.replace(tmp, p)
    except BaseException as exc:  # nothing half-written is left behind, whatever happened
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise TraceError(p, exc.strerror or str(exc)) from None
        raise
    return p


Sent = str | bytes | Callable[[], object]  # put_behind's items

#: Writes from this many bytes have their disk space allocated first (_reserver).
RESERVE_FROM = 1 << 20


def _reserver(binary: BinaryIO) -> Callable[[int], None]:
    """`reserve(n)`: the disk space of the next `n` bytes written into `binary` (flushed)
    allocated before they are written (posix_fallocate), when it is a regular file opened
    without O_APPEND, and `n` is RESERVE_FROM or more. A write into space not yet allocated
    makes ext4 reserve each block (delayed allocation), and renaming the file over another
    then allocates every one before the rename returns: a 1 GB export measured 0.2 s to write
    and rename into place so, against 0.6-3 s without (the slow end while an earlier run's
    output was still being flushed to disk). The first refusal (a file system that allocates
    no space ahead, a full disk: the write then says so) ends it; the file's size is what was
    written."""
    def nothing(n: int) -> None:
        pass
    try:
        fd = binary.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or not hasattr(os, "posix_fallocate"):
            return nothing
        import fcntl

        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            return nothing
        at = [os.lseek(fd, 0, os.SEEK_CUR)]
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return nothing

    def reserve(n: int) -> None:
        if at[0] < 0:
            return
        if n >= RESERVE_FROM:
            try:
                os.posix_fallocate(fd, at[0], n)
            except OSError:
                at[0] = -1
                return
        at[0] += n
    return reserve


@contextlib.contextmanager
def put_behind(out: TextIO, ahead: int = 1) -> Iterator[Callable[..., None]]:
    """`send(*items)`: texts, UTF-8 bytes (put's) or callables that make them (records_later's),
    written into `out` in the order sent by one thread behind the caller: the writing, and a
    callable's work (pyarrow's joins: without the GIL), overlap the caller's making of the next
    items. A send waits while more than `ahead` earlier ones are unwritten (memory stays that
    many sends' worth above the caller's), or (`wait=True`) until it is written; an error in
    the thread is raised by the next send or on leaving. Nothing else may write into `out`
    meanwhile. Without a binary stream that takes UTF-8 (a StringIO) each send is written at
    once."""
    from concurrent.futures import Future, ThreadPoolExecutor

    def made(item: Sent) -> object:
        data = item() if callable(item) else item
        return data.encode("utf-8") if isinstance(data, str) else data

    binary = utf8_binary(out)
    if binary is None:
        yield lambda *items, wait=False: [put(out, made(item)) for item in items]
        return
    out.flush()
    reserve = _reserver(binary)

    def write(items: tuple[Sent, ...]) -> None:
        for item in items:
            data = made(item)
            reserve(memoryview(data).nbytes)  # type: ignore[arg-type]
            binary.write(data)

    pending: collections.deque[Future[None]] = collections.deque()
    pool = ThreadPoolExecutor(max_workers=1)

    def send(*items: Sent, wait: bool = False) -> None:
        pending.append(pool.submit(write, items))
        while len(pending) > (0 if wait else ahead):
            pending.popleft().result()
    try:
        yield send
        while pending:
            pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
