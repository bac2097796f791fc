"""`ttdash ARGS` run inside the test process: `ttdash.cli.main(argv)`, as a child would see it.

The hostile tests used to start `python -m ttdash` for every check (~0.9 s of imports each,
hundreds per run). `run_main` gives back the same `Run` (exit code, stdout, stderr, time, peak
RSS, hung) without a process, and shows what a process would have shown:

- stdout and stderr are files, not terminals: file descriptors 1 and 2 are pointed at temporary
  files for the call, and `sys.stdout` / `sys.stderr` are text files on those descriptors, with
  the encoding and error handlers this interpreter gives its own (what a child of it gets);
  `sys.__stdout__` / `sys.__stderr__` are the same objects, as in a process. So `isatty()` is
  False as in a pipe, `fileno()` works, a string stdout cannot encode fails as it would, and
  what C code writes to the descriptors (pyarrow's logging) is captured too;
- stdin is /dev/null (`sys.stdin` and descriptor 0, which children it starts inherit); NO_COLOR
  is removed and `env` applied, both restored after;
- state a fresh process would not have is cleared first: ttdash's module-level `lru_cache`s
  (e.g. the arch registry read from a user's arches.toml) and the sysfs paths `doctor`'s probe
  gave up on; log records reach stderr through logging's last-resort handler, as in a process
  that configured no logging (pytest's capturing handlers are taken off the root logger for
  the call);
- threads the call started and left running: a non-daemon one is waited for (the interpreter
  does so before it exits; still running at the timeout, the call hung), daemon ones are named
  in `Run.threads_left` unless they end within DAEMON_GRACE_S (a process would end them; here
  they keep running);
- an uncaught exception prints its traceback on stderr and exits 1, `SystemExit` exits with its
  code, and a stdout that cannot be flushed at the end exits 120, as the interpreter does;
- warnings are printed on stderr under Python's default filters (as in a fresh process, not
  collected by pytest), and so are exceptions in threads and unraisable ones;
- a call still running after `timeout` seconds is reported as hung (`main` runs in a daemon
  thread; the test fails, the thread is abandoned);
- peak_rss is this process's peak RSS so far (`ru_maxrss`): an upper bound of the call's.

What only a real process shows (its own memory peak, a kill after a hang, signals: `main` runs
outside the main thread, where commands install no signal handlers; process-wide state a command
changes for good; the console script) stays with `hostile_corpus.run_cli` (and
`conftest.run_ttdash(..., process=True)`).
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import sys
import tempfile
import threading
import time
import traceback
import warnings
from contextlib import contextmanager

from hostile_corpus import TIMEOUT, Run

#: How long daemon threads a call started may take to end after it returned.
DAEMON_GRACE_S = 5.0
#: One call at a time: descriptors 1 and 2 and sys.stdout are the whole process's.
_LOCK = threading.Lock()
#: What `python -W` would add; the filters a fresh interpreter starts with (3.10+).
_DEFAULT_FILTERS = (("default", DeprecationWarning, "__main__"),
                    ("ignore", DeprecationWarning, None),
                    ("ignore", PendingDeprecationWarning, None),
                    ("ignore", ImportWarning, None),
                    ("ignore", ResourceWarning, None))


def _child_stream_settings() -> tuple[str, str, str]:
    """(encoding, stdout errors, stderr errors) of the standard streams a child gets."""
    enc = getattr(sys.__stdout__, "encoding", None) or "utf-8"
    out_err = getattr(sys.__stdout__, "errors", None) or "strict"
    return enc, out_err, "backslashreplace"


@contextmanager
def _environ(env: dict[str, str] | None):
    saved = dict(os.environ)
    os.environ.pop("NO_COLOR", None)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _fresh_state() -> None:
    """Forget what earlier calls in this process left in ttdash's modules (see the docstring)."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "ttdash" or name.startswith("ttdash.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()
    probe = sys.modules.get("ttdash.health.probe")
    if probe is not None:
        probe._hung.clear()


@contextmanager
def _process_like_logging():
    """No handler on the root logger (logging.lastResort writes WARNING and up to sys.stderr,
    the call's), the root level a fresh process has."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@contextmanager
def _process_like_warnings():
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(_DEFAULT_FILTERS):
            if module is None:
                warnings.simplefilter(action, category)
            else:
                warnings.filterwarnings(action, category=category, module=module)
        warnings.showwarning = _show_warning
        yield


def _show_warning(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextmanager
def _redirected(out_fd: int, err_fd: int):
    """fds 1/2 -> out_fd/err_fd, sys.std* -> text files on them; everything restored after."""
    enc, out_errors, err_errors = _child_stream_settings()
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError):
            pass
    saved_fds = os.dup(0), os.dup(1), os.dup(2)
    saved = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__,
             threading.excepthook, sys.unraisablehook)
    stdin = open(os.devnull, encoding=enc)  # noqa: SIM115 - closed below
    try:
        os.dup2(stdin.fileno(), 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", encoding=enc, errors=out_errors, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, encoding=enc,  # noqa: SIM115 - line-buffered
                          errors=err_errors, closefd=False)
        sys.stdin = stdin
        # in a process these are the same objects (`sys.stderr is sys.__stderr__`)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        threading.excepthook = threading.__excepthook__
        sys.unraisablehook = sys.__unraisablehook__
        yield
    finally:
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except (OSError, ValueError):
                pass
        (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__,
         threading.excepthook, sys.unraisablehook) = saved
        stdin.close()
        for fd, saved_fd in enumerate(saved_fds):
            os.dup2(saved_fd, fd)
            os.close(saved_fd)


def _exit_code(code) -> int:
    """What the interpreter makes of `SystemExit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _call_main(argv: list[str], result: dict) -> None:
    """`main(argv)` the way `python -m ttdash` ends: the exit code in result["code"]."""
    from ttdash.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - a process prints it and exits 1
        sys.stderr.write(traceback.format_exc())
        code = 1
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the interpreter's final flush: exit 120
        sys.stderr.write("Exception ignored on flushing sys.stdout:\n" + traceback.format_exc())
        code = 120
    result["code"] = code


def run_main(*args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> Run:
    """`ttdash ARGS` in this process (see the module's docstring): the same `Run` as
    `hostile_corpus.run_cli`."""
    argv = [str(a) for a in args]
    result: dict = {}
    with _LOCK, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _fresh_state()
        before = set(threading.enumerate())
        t0 = time.monotonic()
        with (_environ(env), _process_like_warnings(), _process_like_logging(),
              _redirected(out.fileno(), err.fileno())):
            worker = threading.Thread(target=_call_main, args=(argv, result), daemon=True,
                                      name=f"ttdash {' '.join(argv)[:60]}")
            worker.start()
            worker.join(timeout)
            hung = worker.is_alive()
            left = [t for t in threading.enumerate() if t not in before and t is not worker]
            for t in left:  # what the interpreter joins before it exits
                if not t.daemon and not hung:
                    t.join(max(timeout - (time.monotonic() - t0), 0))
                    hung = t.is_alive()
            grace = time.monotonic() + DAEMON_GRACE_S
            for t in left:  # a daemon thread told to stop may still be on its way out
                if t.daemon and not hung:
                    t.join(max(grace - time.monotonic(), 0))
        left = [t for t in left if t.is_alive()]
        seconds = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out.seek(0)
        err.seek(0)
        return Run(["ttdash(in-process)", *argv], -9 if hung else result["code"],
                   out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                   seconds, peak, hung, [t.name for t in left if t.daemon])
