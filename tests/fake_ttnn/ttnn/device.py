"""Fake ``ttnn.device`` real-time profiler API, shaped like ttnn 0.81.1's.

Real ttnn calls each registered callback from its own receiver thread with a
``ProgramRealtimeRecordBatch`` (``records``: non-empty, oldest first, valid only during the call;
``dropped``: records lost since the last call). An exception escaping a callback there would end
the process; here it is recorded in ``callback_errors`` so tests can assert there is none.

Test helpers: ``emit(batches)`` delivers from a separate thread; ``make_records(...)`` builds
realistic records; ``reset()``. ``SHAPE = "record"`` delivers one record per call with
``program_id`` instead of ``runtime_id`` (ttnn 0.71/0.72).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading

SHAPE = "batch"

MATMUL_SOURCES = (
    "ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/reader_bmm_tile_layout.cpp",
    "ttnn/cpp/ttnn/operations/matmul/device/kernels/compute/bmm_large_block_zm.cpp",
)
ADD_SOURCES = (
    "ttnn/cpp/ttnn/operations/eltwise/unary/device/kernels/dataflow/reader_unary.cpp",
    "ttnn/cpp/ttnn/operations/eltwise/binary/device/kernels/compute/eltwise_binary_kernel.cpp",
)


class ProgramRealtimeRecord:
    __slots__ = ("runtime_id", "chip_id", "start_timestamp", "end_timestamp", "frequency",
                 "kernel_sources")

    def __init__(self, runtime_id, chip_id, start_timestamp, end_timestamp, frequency=1.0,
                 kernel_sources=()):
        self.runtime_id = runtime_id
        self.chip_id = chip_id
        self.start_timestamp = start_timestamp
        self.end_timestamp = end_timestamp
        self.frequency = frequency
        self.kernel_sources = tuple(kernel_sources)


class ProgramRealtimeRecordBatch:
    __slots__ = ("records", "dropped")

    def __init__(self, records, dropped=0):
        self.records = tuple(records)
        self.dropped = dropped


class _OldRecord:
    """ttnn 0.71/0.72: ``program_id``."""

    def __init__(self, r):
        self.program_id = r.runtime_id
        self.chip_id = r.chip_id
        self.start_timestamp = r.start_timestamp
        self.end_timestamp = r.end_timestamp
        self.frequency = r.frequency
        self.kernel_sources = r.kernel_sources


_lock = threading.Lock()
_callbacks: dict[int, object] = {}
_ids = itertools.count(1)
callback_errors: list[BaseException] = []
delivery_threads: list[str] = []
unregistered: list[int] = []


def _trace(message):
    if os.environ.get("FAKE_TTNN_TRACE"):
        sys.stderr.write(f"fake-ttnn: {message}\n")
        sys.stderr.flush()


def RegisterProgramRealtimeProfilerCallback(callback):
    if not callable(callback):
        raise TypeError("callback must be callable")
    with _lock:
        handle = next(_ids)
        _callbacks[handle] = callback
    _trace(f"registered callback {handle}")
    return handle


def UnregisterProgramRealtimeProfilerCallback(handle):
    with _lock:
        _callbacks.pop(handle, None)
        unregistered.append(handle)
    _trace(f"unregistered callback {handle}")


def IsProgramRealtimeProfilerActive():
    return True


def registered():
    with _lock:
        return dict(_callbacks)


def emit(batches, wait=True):
    """Deliver ``batches`` to every registered callback from a new thread."""
    batches = list(batches)

    def run():
        delivery_threads.append(threading.current_thread().name)
        for batch in batches:
            for cb in list(registered().values()):
                payloads = [batch] if SHAPE == "batch" else [_OldRecord(r) for r in batch.records]
                for payload in payloads:
                    try:
                        cb(payload)
                    except BaseException as exc:  # real ttnn: std::terminate
                        callback_errors.append(exc)

    t = threading.Thread(target=run, name="fake-ttnn-realtime-receiver")
    t.start()
    if wait:
        t.join()
    return t


def make_records(first_id, n, *, chip=0, start=1_000_000, ticks=(5_000, 12_000), gap=700,
                 frequency=1.0, sources=(MATMUL_SOURCES, ADD_SOURCES)):
    """``n`` back-to-back records on one chip: durations cycle through ``ticks``, ``gap`` ticks
    between one end and the next start."""
    out, t = [], start
    for i in range(n):
        d = ticks[i % len(ticks)]
        out.append(ProgramRealtimeRecord(first_id + i, chip, t, t + d, frequency,
                                         sources[i % len(sources)]))
        t += d + gap
    return out


def reset():
    with _lock:
        _callbacks.clear()
    callback_errors.clear()
    delivery_threads.clear()
    unregistered.clear()
