"""Writing exports safely: atomically, never over a file without consent, never into a watched
directory."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..model.errors import TraceError


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
