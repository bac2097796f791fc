"""Giving freed memory back to the system (glibc only; nothing to do on other C libraries).

A million-op trace allocates and frees hundreds of MB of columns; glibc keeps freed heap memory
mapped unless told otherwise, and that counts in the peak of whatever comes next (the second
side of a diff, the output of a report)."""

from __future__ import annotations

import ctypes
import sys
from functools import cache
from typing import Any


@cache
def _glibc() -> Any:
    """The C library when it is glibc, else None."""
    try:
        libc = ctypes.CDLL(None)  # the running process's symbols, the C library's among them
    except OSError:
        return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None


def return_freed_memory() -> None:
    """glibc raises its mmap threshold as big blocks are freed, after which the million-row
    arrays of one phase come from the heap and stay mapped after they are freed (a hundred MB
    of a 1M-op report's peak). A fixed threshold of 4 MiB keeps every whole-column array of a
    million rows (8 MB) in its own mapping, given back to the system when freed, while the
    chunks of the analysis (1 MB) come from the heap: 256 KiB cost a page fault storm (a
    second more of a warm `open` of a million ops, 3.7 s of system time in a `report`)."""
    libc = _glibc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD


def trim() -> None:
    """The heap's free pages back to the system once a trace is loaded: the analysis works in
    1 MB chunks that the heap keeps (about 135 MB a side of a 1M x 1M diff, which then holds two
    loaded traces and builds two million pairs on top)."""
    libc = _glibc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    arrow = sys.modules.get("pyarrow")  # (imported by whoever read a trace; not imported here)
    if arrow is not None:  # its allocator (mimalloc) keeps what its kernels freed: ~57 MB
        arrow.default_memory_pool().release_unused()  # after a million rows' analysis


#: Frames of at least this many rows are large enough for `settle` to trim after their steps.
SETTLE_ROWS = 100_000


def settle(rows: int) -> None:
    """`trim` after one step of a large frame's analysis (`rows`: its rows; under SETTLE_ROWS
    nothing is done): what the step freed (its arrays' heap chunks, Arrow's buffers) is given
    back before the next step allocates its own. Without it, each step of a million-op report
    (a section, the guide entries) left ~50-120 MB mapped that the next one did not reuse (the
    base of the peak grew from ~550 to ~800 MiB over the sections)."""
    if rows >= SETTLE_ROWS:
        trim()
