"""Giving freed memory back to the system (glibc only; nothing to do on other C libraries).

A million-op trace allocates and frees hundreds of MB of columns; glibc keeps freed heap memory
mapped unless told otherwise, and that counts in the peak of whatever comes next (the second
side of a diff, the output of a report)."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

#: How long pyarrow's jemalloc keeps freed pages (ms): Arrow's own setting, and a load's.
ARROW_DECAY_MS, LOAD_DECAY_MS = 1000, 100


@cache
def _glibc() -> Any:
    """The C library when it is glibc, else None."""
    try:
        libc = ctypes.CDLL(None)  # the running process's symbols, the C library's among them
    except OSError:
        return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None


#: glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (mallopt's parameter numbers)
_MMAP, _TRIM = -3, -1
#: The mmap threshold return_freed_memory fixes; the trim threshold it leaves (glibc's default)
MMAP_THRESHOLD, TRIM_THRESHOLD = 4 << 20, 128 << 10
#: Within scratch_heap: arrays up to 32 MiB (glibc's largest threshold) from the heap, and
#: what is freed at its top kept for the next
SCRATCH_MMAP, SCRATCH_TRIM = 32 << 20, 256 << 20
_fixed = False  # whether return_freed_memory has fixed the threshold (the CLI's process)


def return_freed_memory() -> None:
    """glibc raises its mmap threshold as big blocks are freed, after which the million-row
    arrays of one phase come from the heap and stay mapped after they are freed (a hundred MB
    of a 1M-op report's peak). A fixed threshold of 4 MiB keeps every whole-column array of a
    million rows (8 MB) in its own mapping, given back to the system when freed, while the
    chunks of the analysis (1 MB) come from the heap: 256 KiB cost a page fault storm (a
    second more of a warm `open` of a million ops, 3.7 s of system time in a `report`)."""
    global _fixed
    libc = _glibc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_MMAP, MMAP_THRESHOLD)
        _fixed = True


@contextmanager
def scratch_heap() -> Iterator[None]:
    """A phase that makes and drops hundreds of whole-column temporaries (a diff's alignment and
    comparison of a million ops a side) takes them from the heap, reused, and gives the heap's
    free pages back at its end (`trim`). Under return_freed_memory's fixed threshold each 8 MB
    array was a new mapping, zeroed page by page: a 1M x 1M diff's analysis took 7.7 s, 5.3 s
    this way, its peak ~60 MiB higher (1,444 -> 1,500 MiB). Nothing changes where the threshold
    was not fixed (glibc's own sliding threshold reuses already)."""
    libc = _glibc()
    if not _fixed or libc is None:
        yield
        return
    libc.mallopt(_MMAP, SCRATCH_MMAP)
    libc.mallopt(_TRIM, SCRATCH_TRIM)
    try:
        yield
    finally:
        libc.mallopt(_MMAP, MMAP_THRESHOLD)
        libc.mallopt(_TRIM, TRIM_THRESHOLD)
        trim()


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


def no_huge_page_advice() -> None:
    """numpy advises the kernel to back each array of 4 MiB or more with huge pages (2 MiB), and
    a kernel whose transparent huge pages are on `madvise` with defrag `madvise` (Ubuntu's
    default) then zeroes, and if it must compacts, 2 MiB at the array's first touch of each.
    A process whose table grows while it is shown pays that on every new buffer: the live
    table's doubling at 345,700 rows cost 0.3-0.6 s of CPU with the advice and 0.15 s without
    (benchmarks/bench_live_growth.py). A one-shot report is the same either way (the 1M-op csv
    report: same CPU, same peak), so only the live model asks for this. Private to numpy
    (since 1.20; `NUMPY_MADVISE_HUGEPAGE=0` is the public form, read only at numpy's import):
    where it is gone, nothing changes."""
    import numpy as np

    core = getattr(np, "_core", None) or np.core  # numpy 2 | 1.26
    setter = getattr(core.multiarray, "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


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


@contextmanager
def freed_at_once() -> Iterator[None]:
    """pyarrow before 18 allocates from jemalloc, which keeps freed pages about a second
    (ARROW_DECAY_MS) before giving them back: while a trace is parsed and its table converted
    a column at a time, the freed columns stayed and a million ops' `open` peaked ~115 MiB
    higher (911 against 794 MiB). Meanwhile they go back within LOAD_DECAY_MS; Arrow's own
    setting is restored after (0 for the whole run cost a million ops' table report ~10% in
    the returns). Nothing to do with mimalloc (pyarrow 18 and later: `trim` returns its
    blocks)."""
    arrow = sys.modules.get("pyarrow")
    if arrow is None or arrow.default_memory_pool().backend_name != "jemalloc":
        yield
        return
    arrow.jemalloc_set_decay_ms(LOAD_DECAY_MS)
    try:
        yield
    finally:
        arrow.jemalloc_set_decay_ms(ARROW_DECAY_MS)
