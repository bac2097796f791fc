"""The screen `open` shows while a large trace loads: the phase with rows read so far and a
percentage in the header, a progress bar, and keys that work (`q` stops the load and quits).

The load runs in a thread worker; the model reports its progress through `model.progress`
(bytes parsed, analysis chunks), passed to the screen with `call_from_thread` at most ten times a
second. `q` sets a flag the next progress report turns into `LoadCancelled`, so the thread stops
within one parse block or analysis chunk. When the view is ready the trace screen replaces this
one; a load error ends the app and is raised again once the terminal is restored (one line on
stderr, exit 2, as for a small file).

With `preview`, the read offers its first rows (`model.progress.offer_preview`, 16,384 rows in)
before the rest is parsed and analysed: the trace screen is pushed on them at once, every key
working, the load's progress leading its header; when the whole view is ready that same screen
takes it (cursor, sort and filter kept)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import ProgressBar, Static

from ..model import View
from ..model.progress import previewing, reporting
from .widgets import SteadyFooter, plain

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
                 make_screen: Callable[[View], Any],
                 preview: Callable[[Any], View] | None = None) -> None:
        super().__init__()
        self._load, self._name, self._make_screen = load, name, make_screen
        self._preview = preview
        self._previewed = False
        self._stop = threading.Event()
        self._last = 0.0
        self.error: BaseException | None = None
        self.trace_screen: Any = None  # the trace screen shown on the first rows
        self._note = "loading"  # the progress as the trace screen's header shows it

    def compose(self) -> ComposeResult:
        yield Static(plain(f"loading {self._name}"), id="loading-header")
        yield Static("", id="loading-phase")
        yield ProgressBar(total=100, show_eta=False, id="loading-bar")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.run_worker(self._work, thread=True, exit_on_error=False, name="load")

    def _work(self) -> None:
        try:
            with reporting(self._progress), \
                    previewing(self._offered if self._preview is not None else None):
                view = self._load()
        except LoadCancelled:
            return
        except Exception as exc:  # a bad file: reported after the terminal is restored
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._done, view)

    def _progress(self, phase: str, done: int, total: int) -> None:
        """The model's progress (in the loading thread)."""
        self._check_stop(phase, done, total)
        now = time.monotonic()
        if now - self._last >= 1 / REPORTS_PER_S or done >= total:
            self._last = now
            self.app.call_from_thread(self._show, phase, done, total)

    def _check_stop(self, phase: str, done: int, total: int) -> None:
        """A progress sink that only stops the loading thread once `q` was pressed."""
        if self._stop.is_set():
            raise LoadCancelled

    def _offered(self, make: Callable[[], Any]) -> None:
        """The read's first rows (in the loading thread, which waits): a view of them."""
        if self._previewed or self._preview is None:
            return
        self._previewed = True
        try:
            with reporting(self._check_stop):  # its own phases are not the load's to show
                view = self._preview(make())
        except LoadCancelled:
            raise
        except Exception:  # whatever is wrong with the rows, the whole load will say
            return
        self.app.call_from_thread(self._show_preview, view)

    def _show_preview(self, view: View) -> None:
        if self._stop.is_set():
            return
        self.trace_screen = self._make_screen(view)
        self.trace_screen.loading_note = self._note
        self.app.push_screen(self.trace_screen)

    def _show(self, phase: str, done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 0.0
        self.query_one("#loading-header", Static).update(
            plain(f"loading {self._name} · {pct:.0f}%"))
        self.query_one("#loading-phase", Static).update(plain(phase))
        self.query_one(ProgressBar).update(progress=pct)
        self._note = f"loading {pct:.0f}%: {phase.replace(f'{self._name}: ', '')}"
        if self.trace_screen is not None and self.trace_screen.is_mounted:
            self.trace_screen.loading_note = self._note
            self.trace_screen.update_header()

    def _done(self, view: View) -> None:
        screen = self.trace_screen
        if screen is None:
            self.app.switch_screen(self._make_screen(view))
            return
        screen.loading_note = ""
        screen.set_view(view)
        screen.show_window_note()

    def on_unmount(self) -> None:
        self._stop.set()  # the app ends (q on the preview): the loading thread stops too

    def _failed(self, exc: BaseException) -> None:
        self.error = exc
        self.app.exit(return_code=2)

    def action_stop(self) -> None:
        self._stop.set()
        self.app.exit()
