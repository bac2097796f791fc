"""Writing exports safely: atomically, never over a file without consent, never into a watched
directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..model.errors import TraceError


def inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
        return True
    except (ValueError, OSError):
        return False


def check_target(path: str | Path, protected: tuple[Path, ...] = ()) -> Path:
    """The resolved target, or TraceError when it is a directory or inside a watched dir."""
    p = Path(path).expanduser()
    if not str(path).strip():
        raise TraceError(None, "no file name given")
    if p.is_dir():
        raise TraceError(p, "is a directory")
    for d in protected:
        if inside(p, d):
            raise TraceError(p, f"refusing to write inside the watched directory {d}")
    if not p.parent.exists():
        raise TraceError(p.parent, "no such directory")
    return p


def write_atomic(path: str | Path, text: str, *, force: bool = False,
                 protected: tuple[Path, ...] = ()) -> Path:
    """Write `text` to a temp file beside `path`, then rename it into place."""
    p = check_target(path, protected)
    if p.exists() and not force:
        raise TraceError(p, "exists; not overwriting without confirmation (--force)")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
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
