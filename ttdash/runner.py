"""`ttdash run`: start a workload with the device profiler on, and watch what it writes.

Process management only (no Textual): the profiler environment, the child process in its own
session and process group, its output read by threads and handed over through a queue, stopping it
(SIGTERM to the group and to every descendant, SIGKILL after a grace period).

The whole process tree is tracked, not only the group (``ttdash.proctree``): stopping signals
every descendant; what is still running when the workload exits is named in its exit line, and
stopped when ttdash stops or quits. The command (`--no-tui` and its summary) is
``ttdash.commands.run``; the interactive view is ``ttdash.tui.run``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from .model.live.table import LIVE_KEY, LiveSources  # noqa: F401  (LiveSources: re-exported)
from .model.read.text import clean_text
from .proctree import ProcessTree, become_subreaper, describe_procs

__all__ = [
    "Exited", "LiveSources", "LogsSnapshot", "OutputLine", "RunSpec", "Workload", "WorkloadError",
    "check_command", "clean_line", "describe_exit", "profiler_env", "snapshot_logs",
]

MAX_LINE_CHARS = 10_000
MAX_BUFFERED_LINES = 20_000

_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[P^_][^\x1b]*"
                      r"(?:\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")


class WorkloadError(Exception):
    """The workload cannot be started (bad command): a usage error, exit 2."""


# --------------------------------------------------------------------------- environment
def profiler_env(root: str | os.PathLike[str], *, mid_run_dump: bool = False,
                 base: dict[str, str] | None = None, unbuffered: bool = False) -> dict[str, str]:
    """``base`` (default: ours) plus the device profiler variables for a run into ``root``."""
    env = dict(os.environ if base is None else base)
    env["TT_METAL_DEVICE_PROFILER"] = "1"
    env["TT_METAL_PROFILER_CPP_POST_PROCESS"] = "1"
    env["TT_METAL_PROFILER_DIR"] = str(Path(root).expanduser().absolute())
    if mid_run_dump:
        env["TT_METAL_PROFILER_MID_RUN_DUMP"] = "1"
    if unbuffered:  # a Python workload writing into our pipes: line by line, not in 8 KiB blocks
        env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def check_command(argv: list[str], env: dict[str, str] | None = None) -> None:
    """Raise WorkloadError when ``argv`` is empty or its program cannot be found/run."""
    if not argv:
        raise WorkloadError("no command given: ttdash run [OPTIONS] -- COMMAND [ARGS...]")
    prog = argv[0]
    if os.sep in prog or (os.altsep and os.altsep in prog):
        if not os.path.exists(prog):
            raise WorkloadError(f"command not found: {prog}")
        if os.path.isdir(prog) or not os.access(prog, os.X_OK):
            raise WorkloadError(f"not an executable file: {prog}")
        return
    path = (env or os.environ).get("PATH", os.defpath)
    if shutil.which(prog, path=path) is None:
        raise WorkloadError(f"command not found: {prog}")


def clean_line(raw: str) -> str:
    """One line of untrusted output made inert: what a terminal would show after carriage
    returns (progress bars), without escape sequences or control characters."""
    line = raw.rstrip("\n").rstrip("\r")
    if line.isprintable():  # the common case: nothing to strip (escapes, controls, tabs and
        # bidi marks are all non-printable)
        return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
    if "\r" in line:
        parts = [p for p in line.split("\r") if p]
        line = parts[-1] if parts else ""
    line = _ANSI_RE.sub("", line).expandtabs(8)
    line = str(clean_text(line))
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def _fmt_elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def describe_exit(returncode: int, elapsed: float) -> str:
    """``exited with 0 after 12.3 s`` / ``killed by SIGTERM after 3.0 s``."""
    if returncode < 0:
        return f"killed by {_signal_name(-returncode)} after {_fmt_elapsed(elapsed)}"
    return f"exited with {returncode} after {_fmt_elapsed(elapsed)}"


# --------------------------------------------------------------------------- the workload
@dataclass(frozen=True)
class OutputLine:
    stream: str  # "stdout" or "stderr"
    text: str    # already cleaned (clean_line)


@dataclass(frozen=True)
class Exited:
    returncode: int   # Popen's: negative for a signal
    exit_code: int    # a shell's: 128 + signal for a signal
    elapsed: float
    summary: str      # describe_exit(...)


class Workload:
    """A child process in its own session (so its own process group), started with ``env``.

    With ``capture`` its stdout/stderr are read line by line by two threads into a queue that
    :meth:`drain` empties (stdin is /dev/null); without, it shares ours. ``listener`` (any
    callable) is called from those threads whenever something new is queued: it must be
    thread-safe (e.g. Textual's ``post_message``). States: new, running, exited, failed.
    """

    def __init__(self, argv: list[str], *, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None, capture: bool = True,
                 grace: float = 5.0, max_buffered: int = MAX_BUFFERED_LINES) -> None:
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.capture = capture
        self.grace = grace
        self.listener: Callable[[], None] | None = None
        self.proc: subprocess.Popen | None = None
        self.state = "new"
        self.error: str | None = None
        self.terminating = False
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.returncode: int | None = None
        self.lines_dropped = 0  # output lines lost because the reader (UI) fell far behind
        self._max_buffered = max_buffered
        self._lines: deque[OutputLine] = deque()
        self._exited: Exited | None = None
        self._exit_unread = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._timer: threading.Timer | None = None
        self.tree = ProcessTree()
        self.left_running: list[psutil.Process] = []  # still alive when the workload exited

    # ------------------------------------------------------------ start / wait
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def start(self) -> None:
        """Start the child; WorkloadError when it cannot be (then ``state`` is "failed")."""
        if self.state != "new":
            raise WorkloadError("the workload was already started")
        try:
            check_command(self.argv, self.env)
            become_subreaper()
            env = self.tree.mark(os.environ if self.env is None else self.env)
            self.proc = subprocess.Popen(
                self.argv, env=env, cwd=self.cwd,
                stdin=subprocess.DEVNULL if self.capture else None,
                stdout=subprocess.PIPE if self.capture else None,
                stderr=subprocess.PIPE if self.capture else None,
                start_new_session=True, close_fds=True)
        except WorkloadError as exc:
            self.state, self.error = "failed", str(exc)
            raise
        except OSError as exc:
            self.state = "failed"
            self.error = f"cannot run {self.argv[0]}: {exc.strerror or exc}"
            raise WorkloadError(self.error) from None
        self.started_at = time.monotonic()
        self.state = "running"
        self.tree.watch(self.proc.pid, self._done)
        readers = []
        if self.capture:
            for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
                t = threading.Thread(target=self._read, args=(name, pipe), daemon=True,
                                     name=f"ttdash-workload-{name}")
                t.start()
                readers.append(t)
        threading.Thread(target=self._wait, args=(readers,), daemon=True,
                         name="ttdash-workload-wait").start()

    def _read(self, name: str, pipe) -> None:
        """Read what is there (up to 64 KiB at a time) and queue its complete lines in one go:
        a chatty workload costs one lock and one wake-up per chunk, not per line."""
        tail = b""
        try:
            while True:
                chunk = pipe.read1(1 << 16)
                if not chunk:
                    break
                parts = (tail + chunk).split(b"\n")
                tail = parts.pop()
                if len(tail) > 1 << 16:  # no newline for 64 KiB: show it as a line anyway
                    parts.append(tail)
                    tail = b""
                if parts:
                    self._push([OutputLine(name, clean_line(p.decode("utf-8", "replace")))
                                for p in parts])
            if tail:
                self._push([OutputLine(name, clean_line(tail.decode("utf-8", "replace")))])
        except (OSError, ValueError):
            pass
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    def _push(self, lines: list[OutputLine]) -> None:
        with self._lock:
            self._lines.extend(lines)
            over = len(self._lines) - self._max_buffered
            if over > 0:  # the reader (UI) fell far behind: keep the newest lines
                for _ in range(over):
                    self._lines.popleft()
                self.lines_dropped += over
        self._notify()

    def _notify(self) -> None:
        cb = self.listener
        if cb is not None:
            try:
                cb()
            except Exception:  # a closing UI: the queue keeps the lines
                pass

    def _wait(self, readers: list[threading.Thread]) -> None:
        assert self.proc is not None
        rc = self.proc.wait()
        self.ended_at = time.monotonic()
        for t in readers:  # grandchildren may keep the pipes open: do not wait for them forever
            t.join(timeout=2.0)
        left = self.tree.alive()
        if self.terminating and left:
            # Stopping: the leader is gone but not its tree. SIGTERM what is left now; the
            # pending SIGKILL (kill()) still applies to it.
            self.tree.signal(signal.SIGTERM)
        elif self._timer is not None:
            self._timer.cancel()
        self.left_running = left
        summary = describe_exit(rc, self.elapsed)
        if left and not self.terminating:
            summary += f"; still running: {describe_procs(left)}"
        exited = Exited(rc, 128 - rc if rc < 0 else rc, self.elapsed, summary)
        with self._lock:
            self.returncode = rc
            self._exited, self._exit_unread = exited, True
            self.state = "exited"
        self._done.set()
        self._notify()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code (shell style) once the child has exited; None on timeout."""
        if self.state == "new":
            raise WorkloadError("the workload was not started")
        if self.state == "failed":
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.is_set():  # short waits: signal handlers run in between
            left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if left <= 0:
                return None
            self._done.wait(left)
        return self.exit_code

    @property
    def exit_summary(self) -> str:
        """How it ended (with what it left running), once it has; else describe()."""
        return self._exited.summary if self._exited is not None else self.describe()

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def exit_code(self) -> int | None:
        rc = self.returncode
        return None if rc is None else (128 - rc if rc < 0 else rc)

    @property
    def elapsed(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at or time.monotonic()) - self.started_at

    def describe(self) -> str:
        if self.state == "new":
            return "not started"
        if self.state == "failed":
            return f"failed to start: {self.error}"
        if self.state == "exited" and self.returncode is not None:
            return describe_exit(self.returncode, self.elapsed)
        text = f"running for {_fmt_elapsed(self.elapsed)} (pid {self.pid})"
        if self.terminating:
            text += f" · stopping: SIGTERM sent, SIGKILL after {self.grace:g} s"
        return text

    # ------------------------------------------------------------ output
    def drain(self, limit: int | None = None) -> tuple[list[OutputLine], Exited | None]:
        """Queued output lines (oldest first, at most ``limit``) and, once every line before it
        was taken, the exit (returned once)."""
        with self._lock:
            n = len(self._lines) if limit is None else min(limit, len(self._lines))
            lines = [self._lines.popleft() for _ in range(n)]
            exited = None
            if self._exit_unread and not self._lines:
                exited, self._exit_unread = self._exited, False
        return lines, exited

    def pending(self) -> int:
        with self._lock:
            return len(self._lines)

    # ------------------------------------------------------------ stopping
    def send_signal(self, sig: int) -> bool:
        """Send ``sig`` to the child's process group and every descendant (those outside the
        group too: setsid children, orphans)."""
        if self.proc is None:
            return False
        if self._done.is_set():
            return self.tree.signal(sig) > 0
        self.tree.signal(sig)
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            try:
                self.proc.send_signal(sig)
            except OSError:
                return False
        return True

    def terminate(self, grace: float | None = None) -> bool:
        """SIGTERM to the group now, SIGKILL if it is still running ``grace`` s later.
        Does not wait; False when there is nothing to stop."""
        if self.state != "running":
            return False
        if self.terminating:
            return True
        self.terminating = True
        grace = self.grace if grace is None else grace
        self.send_signal(signal.SIGTERM)
        self._timer = threading.Timer(max(0.0, grace), self.kill)
        self._timer.daemon = True
        self._timer.start()
        return True

    def kill(self) -> bool:
        return self.send_signal(signal.SIGKILL)

    def stop(self, grace: float | None = None) -> int | None:
        """Terminate and wait until it and every descendant are gone (at most about grace + 4
        s); the exit code."""
        grace = self.grace if grace is None else grace
        if self.state == "running":
            self.terminate(grace)
            if self.wait(grace + 2.0) is None:
                self.kill()
                self.wait(2.0)
        if self.state == "exited":
            self.tree.stop(grace)
        return self.exit_code


# --------------------------------------------------------------------------- live rows of a run
class LogsSnapshot:
    """The ``.logs/*.csv`` files as they were before a run: for each, its complete lines then.

    Each file is held open, which pins its inode: a file deleted and re-created by the run (the
    device profiler does that at device open) can never look like the old one, even on a file
    system that would reuse the inode number at once. ``close()`` lets them go.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._files: dict[Path, tuple[int, int]] = {}  # path -> (fd, complete lines)
        logs = Path(root) / ".logs"
        try:
            paths = sorted(p for p in logs.iterdir() if p.suffix == ".csv")
        except OSError:
            return
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError("not a file")
                n, offset = 0, 0
                while True:
                    chunk = os.pread(fd, 1 << 20, offset)
                    if not chunk:
                        break
                    n += chunk.count(b"\n")
                    offset += len(chunk)
            except OSError:
                os.close(fd)
                continue
            self._files[path] = (fd, n)

    def lines_before(self, path: Path) -> int | None:
        """Complete lines ``path`` had before the run, if it is still that same file."""
        entry = self._files.get(path)
        if entry is None:
            return None
        try:
            old, now = os.fstat(entry[0]), os.stat(path)
            same = (old.st_dev, old.st_ino) == (now.st_dev, now.st_ino)
        except OSError:
            same = False
        if not same:
            self.forget(path)
            return None
        return entry[1]

    def forget(self, path: Path) -> None:
        entry = self._files.pop(path, None)
        if entry is not None:
            try:
                os.close(entry[0])
            except OSError:
                pass

    def paths(self) -> dict[Path, int]:
        return {p: n for p, (_, n) in self._files.items()}

    def close(self) -> None:
        for path in list(self._files):
            self.forget(path)

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


def snapshot_logs(root: str | os.PathLike[str]) -> LogsSnapshot:
    """``root/.logs/*.csv`` before a run (their rows are not this run's)."""
    return LogsSnapshot(root)


# --------------------------------------------------------------------------- the command
@dataclass
class RunSpec:
    argv: list[str]
    root: Path
    mid_run_dump: bool = False
    grace: float = 5.0
    arch: str | None = None
    snapshot: LogsSnapshot | None = None

    def env(self, *, capture: bool) -> dict[str, str]:
        return profiler_env(self.root, mid_run_dump=self.mid_run_dump, unbuffered=capture)
