"""Progress of long model work (reading, analysing), for whoever shows it.

The model calls `step(phase, done, total)`; nothing happens unless a caller installed a sink
with `reporting(sink)` (the CLI does, on a terminal). A context variable, so threads and the
suite's parallel apps never see each other's sink."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Sink = Callable[[str, int, int], None]  # (phase, done, total), done <= total
_SINK: ContextVar[Sink | None] = ContextVar("ttdash_progress", default=None)


def step(phase: str, done: int, total: int) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink(phase, done, total)


@contextmanager
def reporting(sink: Sink | None) -> Iterator[None]:
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
