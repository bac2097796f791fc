"""Drive a real program in a real terminal: tmux send-keys / capture-pane."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

EXIT_MARK = "__TTDASH_EXIT__="


def ttdash_bin() -> str:
    """The installed console script (not `python -m`): what a user runs."""
    exe = Path(sys.executable).parent / "ttdash"
    return str(exe) if exe.exists() else (shutil.which("ttdash") or "ttdash")


class Tmux:
    """One program in one tmux pane, on a tmux server of its own (`-L`): no other test, CI pass
    or user shares it, and there is no race with a shared server exiting as its last session
    closes."""

    def __init__(self, command: list[str], width: int = 100, height: int = 30,
                 env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.name = f"ttdash-test-{uuid.uuid4().hex[:8]}"
        env_prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        cmd = " ".join(shlex.quote(c) for c in command)
        shell = f"cd {shlex.quote(cwd)} && " if cwd else ""
        # The shell prints the program's exit status into the pane, then idles until killed.
        # COLUMNS/LINES unset: the program sizes itself from the pane, as in a real terminal
        # (a tmux server started under pytest may carry COLUMNS=80 in its environment).
        script = (f"{shell}env -u COLUMNS -u LINES TERM=xterm-256color {env_prefix} {cmd}; "
                  f"echo {EXIT_MARK}$?; sleep 600")
        subprocess.run(self.cmd("new-session", "-d", "-s", self.name, "-x", str(width), "-y",
                                str(height), "sh", "-c", script), check=True)

    def cmd(self, *args: str) -> list[str]:
        """A tmux command line for this pane's server."""
        return ["tmux", "-L", self.name, *args]

    def send(self, *keys: str, literal: bool = False) -> None:
        args = self.cmd("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)
        subprocess.run(args, check=True)

    def screen(self) -> str:
        return subprocess.run(self.cmd("capture-pane", "-p", "-t", self.name),
                              capture_output=True, text=True, check=True).stdout

    def wait_for(self, predicate, timeout: float = 20.0) -> str:
        """Poll the terminal until `predicate(screen)` (a real terminal has no event to await)."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out; screen was:\n{text}")

    def wait_text(self, needle: str, timeout: float = 20.0) -> str:
        return self.wait_for(lambda s: needle in s, timeout)

    def exit_status(self, timeout: float = 15.0) -> int:
        """Wait for the program to exit; its exit status."""
        screen = self.wait_text(EXIT_MARK, timeout)
        return int(screen.split(EXIT_MARK, 1)[1].split()[0])

    def close(self) -> None:
        # kill-session (SIGHUP to the program, as a closed terminal does); this pane's private
        # server then exits by itself, having no session left.
        subprocess.run(self.cmd("kill-session", "-t", self.name), capture_output=True)

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
