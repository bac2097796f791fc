"""The screen `open` shows while a large trace loads: the phase with rows read so far and a
percentage in the header, a progress bar, and keys that work (`q` stops the load and quits).

The load runs in a thread worker; the model reports its progress through `model.progress`
(bytes parsed, analysis chunks), passed to the screen with `call_from_thread` at most ten times a
second. `q` sets a flag the next progress report turns into `LoadCancelled`, so the thread stops
within one parse block or analysis chunk. When the view is ready the trace screen replaces this
one; a load error ends the app and is raised again once the terminal is restored (one line on
stderr, exit 2, as for a small file)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static

from ..model import View
from ..model.progress import reporting
from .widgets import plain

REPORTS_PER_S = 10


class LoadCancelled(Exception):
    """Raised inside the loading thread once `q` was pressed."""


class LoadingScreen(Screen):
    BINDINGS = [Binding("q", "stop", "Quit", id="ttdash.quit")]
    DEFAULT_CSS = """
    LoadingScreen #loading-header { height: 1; background: $panel; padding: 0 1; }
    LoadingScreen #loading-phase { height: 1; padding: 0 1; margin-top: 1; }
    LoadingScreen ProgressBar { padding: 0 1; }
    """

    def __init__(self, load: Callable[[], View], name: str,
                 make_screen: Callable[[View], Screen]) -> None:
        super().__init__()
        self._load, self._name, self._make_screen = load, name, make_screen
        self._stop = threading.Event()
        self._last = 0.0
        self.error: BaseException | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain(f"loading {self._name}"), id="loading-header")
        yield Static("", id="loading-phase")
        yield ProgressBar(total=100, show_eta=False, id="loading-bar")
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self._work, thread=True, exit_on_error=False, name="load")

    def _work(self) -> None:
        try:
            with reporting(self._progress):
                view = self._load()
        except LoadCancelled:
            return
        except Exception as exc:  # a bad file: reported after the terminal is restored
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._done, view)

    def _progress(self, phase: str, done: int, total: int) -> None:
        """The model's progress (in the loading thread)."""
        if self._stop.is_set():
            raise LoadCancelled
        now = time.monotonic()
        if now - self._last >= 1 / REPORTS_PER_S or done >= total:
            self._last = now
            self.app.call_from_thread(self._show, phase, done, total)

    def _show(self, phase: str, done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 0.0
        self.query_one("#loading-header", Static).update(
            plain(f"loading {self._name} · {pct:.0f}%"))
        self.query_one("#loading-phase", Static).update(plain(phase))
        self.query_one(ProgressBar).update(progress=pct)

    def _done(self, view: View) -> None:
        self.app.switch_screen(self._make_screen(view))

    def _failed(self, exc: BaseException) -> None:
        self.error = exc
        self.app.exit(return_code=2)

    def action_stop(self) -> None:
        self._stop.set()
        self.app.exit()
