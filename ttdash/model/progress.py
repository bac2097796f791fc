"""Progress of long model work (reading, analysing), for whoever shows it.

The model calls `step(phase, done, total)`; nothing happens unless a caller installed a sink
with `reporting(sink)` (the CLI does, on a terminal). A long read also offers a look at its
first rows (`offer_preview`) to a caller that installed `previewing(sink)` (open's loading
screen). Context variables, so threads and the suite's parallel apps never see each other's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

Sink = Callable[[str, int, int], None]  # (phase, done, total), done <= total
_SINK: ContextVar[Sink | None] = ContextVar("ttdash_progress", default=None)
#: given `make`, a callable building the rows read so far (a loader.RawTable); called at most
#: once per read, in the reading thread, which waits for it
PreviewSink = Callable[[Callable[[], Any]], None]
_PREVIEW: ContextVar[PreviewSink | None] = ContextVar("ttdash_preview", default=None)


def step(phase: str, done: int, total: int) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink(phase, done, total)


def reporting(sink: Sink | None) -> AbstractContextManager[None]:
    return _installed(_SINK, sink)


@contextmanager
def _installed(var: ContextVar[Any], sink: Any) -> Iterator[None]:
    token = var.set(sink)
    try:
        yield
    finally:
        var.reset(token)


def wants_preview() -> bool:
    return _PREVIEW.get() is not None


def offer_preview(make: Callable[[], Any]) -> None:
    sink = _PREVIEW.get()
    if sink is not None:
        sink(make)


def previewing(sink: PreviewSink | None) -> AbstractContextManager[None]:
    return _installed(_PREVIEW, sink)
