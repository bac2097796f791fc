"""Progress on stderr for commands that take a while: a transient line (phase, %, elapsed) that
appears only after a second (`TTDASH_PROGRESS_AFTER` seconds) and only when stderr is a
terminal; nothing at all when piped, and it is gone before the command's own output or a
full-screen view starts."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DELAY_S = 1.0


class StderrProgress:
    def __init__(self, delay: float = DELAY_S) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.start = time.monotonic()
        self.delay = delay
        self.progress = Progress(TextColumn("ttdash: {task.description}"), BarColumn(),
                                 TaskProgressColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
        self.tasks: dict[int, Any] = {}  # a line per thread (a diff loads its sides at once)
        self.shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.shown:
            if time.monotonic() - self.start < self.delay:
                return
            self.progress.start()
            self.shown = True
        me = threading.get_ident()
        if me not in self.tasks:
            self.tasks[me] = self.progress.add_task(phase, total=1)
        self.progress.update(self.tasks[me], description=phase, completed=done,
                             total=max(total, 1))

    def close(self) -> None:
        if self.shown:
            self.progress.stop()  # transient: the line is erased


def _own_terminal() -> bool:
    """stderr is the process's own terminal, and nothing else draws on it: not a full-screen
    app (Textual replaces sys.stderr with a capture that says it is a terminal), not a worker
    thread of one (watch --record adds a run to the history in a thread)."""
    return (sys.stderr is sys.__stderr__ and sys.stderr is not None and sys.stderr.isatty()
            and threading.current_thread() is threading.main_thread())


@contextmanager
def on_stderr() -> Iterator[None]:
    """Show the model's progress (see model.progress) on stderr while the block runs."""
    from ..model.progress import reporting

    if not _own_terminal():
        yield
        return
    try:
        delay = float(os.environ.get("TTDASH_PROGRESS_AFTER", DELAY_S))
    except ValueError:
        delay = DELAY_S
    bar = StderrProgress(delay)
    try:
        with reporting(bar):
            yield
    finally:
        bar.close()
