"""A full-screen app run so that no lost terminal leaves a process behind (run_guarded)."""

from __future__ import annotations

import errno
import os
import signal
import sys
import termios
import threading
from collections.abc import Callable

from textual.app import App


def run_guarded(app: App, cleanup: Callable[[], None] | None = None) -> int:
    """Run a Textual app so that a lost terminal (SIGHUP: SSH drop, tmux kill) or SIGTERM never
    leaves a process behind: `cleanup` runs at once, the app is asked to exit, and if Textual's
    shutdown blocks on the dead terminal the process exits after 2 s anyway. A terminal hung
    up without a SIGHUP to this process (it is not in the terminal's foreground process
    group, or the signal was lost) is noticed within a second (`_terminal_lost`) and handled
    as one: reading the dead terminal, Textual's input thread would spin on a core forever."""

    def on_signal(signum, frame) -> None:
        if cleanup is not None:
            try:
                cleanup()
            except Exception:  # cleanup is best effort; exiting matters more
                pass
        app.exit()
        timer = threading.Timer(2.0, os._exit, args=(128 + signum,))
        timer.daemon = True
        timer.start()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGHUP, signal.SIGTERM)}
    done = threading.Event()
    threading.Thread(target=_terminal_lost, args=(done,), daemon=True).start()
    try:
        app.run()
    finally:
        done.set()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return app.return_code or 0


def _terminal_lost(done: threading.Event, every: float = 1.0) -> None:
    """Until `done`: every `every` s, whether the terminal the app runs in (stdin's or stdout's)
    is still there; a hung-up terminal's ioctls fail with EIO: SIGHUP to this process then
    (run_guarded's handler, in the main thread)."""
    fds = [f.fileno() for f in (sys.__stdin__, sys.__stdout__) if f is not None]
    ttys = [fd for fd in fds if os.isatty(fd)]
    while ttys and not done.wait(every):
        try:
            termios.tcgetattr(ttys[0])
        except termios.error as exc:
            if exc.args and exc.args[0] == errno.EIO:
                os.kill(os.getpid(), signal.SIGHUP)
                return
