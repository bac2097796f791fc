"""Full-screen commands without a terminal (#33.8): `open` and `history` say so in one line and
exit 2; `watch` and `demo` run as plain lines. A real process where only a process shows it
(stdin/stdout pipes, a timeout), in-process otherwise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from conftest import SHARED_REAL, real_dir, run_ttdash

from ttdash.cli import main
from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv

SMALL = "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv"
LIMIT_S = 2.0  # the bound, beyond the interpreter's own start (CPU seconds: _ttdash)


def _start_s() -> float:
    """CPU seconds `python -m ttdash --version` takes here (the interpreter's own start)."""
    return _ttdash("--version", timeout=60)[1]


def _ttdash(*args: str, timeout: float, stdin=subprocess.DEVNULL):
    """(the finished `python -m ttdash ARGS`, the CPU seconds it used). CPU time, not wall time:
    the machine is shared, and under load the same refusal took 0.8 s or 2.8 s of wall time
    (`open` imports Textual before it can say it needs a terminal); a busy loop shows in CPU
    time, a wait on something that never comes in the timeout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "ttdash", *args], stdin=stdin,
                                stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(proc.args, timeout)
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode,
                                           out.read().decode(), err.read().decode())
    return done, usage.ru_utime + usage.ru_stime


def _cpu_s(pid: int) -> float:
    """CPU seconds a running process has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


@pytest.fixture
def no_screen(monkeypatch):
    """run_guarded replaced: a full-screen app started in-process is recorded, not run (it
    would draw into pytest's capture and wait for keys)."""
    import ttdash.tui.app as app

    started = []
    monkeypatch.setattr(app, "run_guarded", lambda a, *rest: started.append(a) or 0)
    return started


def test_open_without_a_terminal_is_one_line_exit_2(capsys, no_screen):
    path = real_dir() / SMALL
    assert main(["open", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ttdash: {path}: "), err
    assert "needs a terminal" in err and f"ttdash report {path}" in err
    assert no_screen == []


def test_history_view_without_a_terminal_is_one_line_exit_2(tmp_path, capsys, no_screen):
    store = tmp_path / "store"
    store.mkdir()
    assert main(["history", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ttdash: {store}: "), err
    assert "needs a terminal" in err and "ttdash history list" in err
    assert no_screen == []


def test_watch_without_a_terminal_prints_lines(tmp_path, capsys, no_screen, monkeypatch):
    """The plain mode in-process: the live rows, then the report, as lines; stopped by SIGTERM
    (what a job runner sends)."""
    import ttdash.commands.lines as lines

    root = tmp_path / "p"
    log = root / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    write_cpp_device_csv(cpp_device_rows(generate_ops(30, seed=1)), log)
    seen = threading.Event()
    real_update = lines.LinePrinter.update

    def update(self, view, notes):
        real_update(self, view, notes)
        if self._last_live:
            seen.set()

    monkeypatch.setattr(lines.LinePrinter, "update", update)
    finished = threading.Event()

    def stop() -> None:  # also when no line came (the assertions below then fail)
        seen.wait(20)
        if not finished.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop, daemon=True).start()
    try:
        rc = main(["watch", str(root), "--refresh", "0.05"])
    finally:
        finished.set()
    out = capsys.readouterr().out.splitlines()
    assert no_screen == []
    assert rc == 128 + signal.SIGTERM
    assert out[0].startswith(f"ttdash watch: following {root} as lines ("), out
    assert any(ln.startswith("live: 30 ops, device time ") for ln in out), out


@pytest.mark.skipif(not SHARED_REAL.is_dir() and not os.environ.get("CI"),
                    reason="real fixtures absent")
@pytest.mark.parametrize("cmd", ["open", "history"])
def test_full_screen_commands_in_a_pipe_exit_2_within_2_s(tmp_path, cmd):
    """A real process with stdin and stdout pipes (what hung at 72% CPU until killed)."""
    start = _start_s()
    store = tmp_path / "store"
    store.mkdir()
    args = ["open", str(real_dir() / SMALL)] if cmd == "open" else ["history", "--store",
                                                                    str(store)]
    r, took = _ttdash(*args, timeout=LIMIT_S + 30)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[:300])
    assert r.stderr.count("\n") == 1 and "needs a terminal" in r.stderr, r.stderr
    assert took < start + LIMIT_S, (took, start)


def test_open_with_stdout_piped_from_a_terminal_names_stdout(tmp_path):
    """stdin a terminal, stdout a pipe (`ttdash open x | less`): still one line, exit 2."""
    primary, secondary = os.openpty()
    try:
        r, _ = _ttdash("open", str(real_dir() / SMALL), timeout=30, stdin=secondary)
    finally:
        os.close(primary)
        os.close(secondary)
    assert r.returncode == 2 and "(stdout is not one)" in r.stderr, r.stderr


def _lines(proc):
    """A queue of the process's stdout lines ("" at its end), read by a thread."""
    import queue

    q: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            q.put(line)
        q.put("")

    threading.Thread(target=read, daemon=True).start()
    return q


def _next(q, timeout: float) -> str:
    import queue

    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        return ""


def test_watch_in_a_pipe_runs_its_plain_mode_and_stops_on_sigterm(tmp_path):
    start = _start_s()
    root = tmp_path / "p"
    proc = subprocess.Popen([sys.executable, "-m", "ttdash", "watch", str(root)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = _lines(proc)
        first = _next(lines, LIMIT_S + 30)  # the plain mode's first line
        took = _cpu_s(proc.pid)  # CPU seconds up to it (and a little after), as _ttdash
        assert first.startswith(f"ttdash watch: following {root} as lines (stdin is not a "
                                "terminal)"), first
        assert took < start + LIMIT_S, (took, start)
        second = _next(lines, 10)  # the watch's own state
        assert second == f"warning: waiting for {root} to appear\n", second
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=LIMIT_S + 3)
        rest, err = _next(lines, 3), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert rest == "" and "Traceback" not in err, (rest, err)


def test_demo_in_a_pipe_runs_as_lines_to_its_end(tmp_path):
    # --speed 5 (1.6 s): the run's post-processing (0.3 s) comes between its last dump and the
    # report; at --speed 0 a loaded machine wrote the report before the watch read the live
    # log, and the live line never came (three workers at load 4)
    r = run_ttdash("demo", "--ops", "60", "--speed", "5", "--dir", str(tmp_path / "d"),
                   timeout=30)
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stderr
    assert lines[0].startswith(f"ttdash demo: following {tmp_path / 'd'} as lines"), lines
    assert any(ln.startswith("live: 60 ops") for ln in lines), lines
    assert lines[-1].startswith(f"report: {tmp_path / 'd' / 'reports'}"), lines
    assert "\x1b" not in r.stdout  # no screen drawn into the pipe
