"""`ttdash run`: the workload process (runner), the run screen (Pilot), the CLI (--no-tui, exit
codes, usage errors) and one real terminal (tmux)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_ttdash, wait_until
from tmux import Tmux, ttdash_bin

from ttdash.runner import (
    LiveSources,
    Workload,
    WorkloadError,
    clean_line,
    profiler_env,
    snapshot_logs,
)
from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv
from ttdash.tui.run import RunScreen, run_app
from ttdash.tui.widgets import ConfirmScreen

WORKLOAD = ROOT / "tests" / "workloads" / "sim_workload.py"
SIZE = (110, 34)
PY = sys.executable



def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)




PROFILER_VARS = ("TT_METAL_PROFILER_DIR", "TT_METAL_HOME", "TT_METAL_PROFILER_MID_RUN_DUMP")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROFILER_VARS}
    env.update(extra)
    return env


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def old_live_log(root: Path, n: int) -> Path:
    """A .logs/cpp_device_perf_report.csv left by an earlier run."""
    path = root / ".logs" / "cpp_device_perf_report.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cpp_device_csv(cpp_device_rows(generate_ops(n, seed=1)), path, append=False)
    return path


def rendered(widget) -> list[str]:
    """The widget's lines as painted (markup would be gone here if it had been interpreted)."""
    return ["".join(seg.text for seg in widget.render_line(y))
            for y in range(widget.size.height)]


# --------------------------------------------------------------------------- runner
def test_clean_line_makes_output_inert():
    assert clean_line("\x1b[1;31mred\x1b[0m and \x1b]0;title\x07plain\n") == "red and plain"
    assert clean_line("10%\r50%\r100%\r\n") == "100%"
    assert clean_line("[bold red]x[/] \x00\x07bell\u202etxt") == "[bold red]x[/] belltxt"
    assert clean_line("a\tb") == "a       b"
    assert len(clean_line("x" * 50_000)) == 10_001


def test_workload_output_exit_and_env(tmp_path):
    script = ("import os, sys\n"
              "print('out', os.environ['TT_METAL_PROFILER_DIR'], flush=True)\n"
              "print('\\x1b[32mgreen\\x1b[0m', file=sys.stderr, flush=True)\n"
              "sys.stdout.write('no newline at the end')\n"
              "sys.exit(5)\n")
    woken = []
    w = Workload([PY, "-c", script], env=profiler_env(tmp_path / "p", unbuffered=True))
    w.listener = lambda: woken.append(1)
    w.start()
    assert w.running and w.pid
    assert w.wait(30) == 5
    lines, exited = w.drain()
    got = {(ln.stream, ln.text) for ln in lines}
    assert got == {("stdout", f"out {(tmp_path / 'p').absolute()}"), ("stderr", "green"),
                   ("stdout", "no newline at the end")}
    assert exited is not None and exited.exit_code == 5 and exited.returncode == 5
    assert exited.summary.startswith("exited with 5 after ")
    assert w.drain() == ([], None)  # the exit is handed over once
    assert woken and w.describe().startswith("exited with 5")


def test_workload_output_backlog_is_bounded(tmp_path):
    w = Workload([PY, "-c", "for i in range(50): print(i)"], max_buffered=10,
                 env=dict(os.environ, PYTHONUNBUFFERED="1"))
    w.start()
    assert w.wait(30) == 0
    lines, exited = w.drain()
    assert [ln.text for ln in lines] == [str(i) for i in range(40, 50)]
    assert w.lines_dropped == 40 and exited is not None


def test_terminate_signals_the_group_then_kills(tmp_path):
    """SIGTERM reaches the whole process group; a child that ignores it is SIGKILLed later."""
    script = ("import signal, subprocess, sys, time\n"
              "g = subprocess.Popen(['sleep', '60'])\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "print(g.pid, flush=True)\n"
              "time.sleep(60)\n")
    w = Workload([PY, "-c", script], grace=0.5)
    w.start()
    wait_for(lambda: w.pending())
    grandchild = int(w.drain()[0][0].text)
    assert alive(grandchild) and os.getpgid(grandchild) == w.pid  # in the child's group
    t0 = time.monotonic()
    assert w.terminate() is True
    wait_for(lambda: not alive(grandchild), timeout=10)  # SIGTERM got the grandchild at once
    assert w.running  # ... but the child ignores it
    assert w.wait(10) == 128 + signal.SIGKILL
    assert time.monotonic() - t0 >= 0.45
    assert w.returncode == -signal.SIGKILL and w.describe().startswith("killed by SIGKILL")


def test_stop_reaches_setsid_children_and_term_ignoring_grandchildren(tmp_path):
    """Outside the group (setsid) or ignoring SIGTERM after the leader is gone: all stopped."""
    script = ("import os, signal, subprocess, sys, time\n"
              "s = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
              "g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
              "print(s.pid, g.pid, flush=True)\n"
              "time.sleep(60)\n")
    w = Workload([PY, "-c", script], grace=0.5)
    w.start()
    wait_for(lambda: w.pending())
    setsid_child, stubborn = (int(x) for x in w.drain()[0][0].text.split())
    assert os.getpgid(setsid_child) != w.pid  # out of the group: killpg alone would miss it
    wait_for(lambda: {setsid_child, stubborn} <= {p.pid for p in w.tree.alive()})
    w.stop(grace=0.5)
    wait_for(lambda: not alive(setsid_child) and not alive(stubborn), timeout=10)
    assert w.tree.alive() == []


def test_what_a_workload_leaves_running_is_named_then_stopped(tmp_path):
    """The workload exits; a daemonised child lives on: its exit line says so, stop() ends it."""
    script = ("import subprocess\n"
              "p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
              "print(p.pid, flush=True)\n")
    w = Workload([PY, "-c", script], grace=0.5)
    w.start()
    assert w.wait(20) == 0
    orphan = int(w.drain()[0][0].text)
    assert alive(orphan)
    assert "still running: 1 process: sleep (" in w.exit_summary
    assert [p.pid for p in w.left_running] == [orphan]
    w.stop(grace=0.5)
    wait_for(lambda: not alive(orphan), timeout=10)


def test_no_tui_stops_what_the_workload_left_running(tmp_path):
    res = run_ttdash("run", "--no-tui", "--dir", str(tmp_path / "p"), "--", PY, "-c",
                     "import subprocess; p = subprocess.Popen(['sleep', '60'], "
                     "start_new_session=True); print(p.pid, flush=True)",
                     unset=PROFILER_VARS, timeout=60)
    assert res.returncode == 0, res.stderr
    orphan = int(res.stdout.split()[0])
    last = res.stderr.strip().splitlines()[-1]
    assert "still running: 1 process: sleep (" in last and "(stopped by ttdash)" in last
    wait_for(lambda: not alive(orphan), timeout=10)


def test_start_errors():
    with pytest.raises(WorkloadError, match="command not found"):
        Workload(["ttdash-no-such-command-xyz"]).start()
    with pytest.raises(WorkloadError, match="no command"):
        Workload([]).start()
    w = Workload([str(ROOT / "tests")])
    with pytest.raises(WorkloadError, match="not an executable"):
        w.start()
    assert w.state == "failed" and w.wait(1) is None


def test_live_sources_this_run_only_and_one_source(tmp_path):
    old = old_live_log(tmp_path, 30)  # 31 lines: the header + 30 rows
    snap = snapshot_logs(tmp_path)
    assert snap.paths() == {old: 31}
    header = ["GLOBAL CALL COUNT", "DEVICE KERNEL DURATION [ns]"]
    rows = [["1", "10"]] * 5
    pick = LiveSources(snap)
    # Appended to the old file after the start: only lines past the snapshot count.
    got, lines = pick.filter(old, header, rows, [29, 30, 31, 32, 33])
    assert lines == [32, 33] and len(got) == 2 and pick.stale == 3 and pick.chosen == old
    # A second source of the same programs is not counted twice.
    rt = tmp_path / ".logs" / "ttdash_realtime_profile.csv"
    rt.write_text("x\n")
    assert pick.filter(rt, header, rows, [2, 3, 4, 5, 6]) == ([], [])
    assert pick.ignored == {rt: 5} and "not counted twice" in pick.note()
    assert pick.reset(rt) is False and pick.ignored == {}  # the shown table stays
    assert pick.reset(old) is True
    # A file without the live columns never becomes the source.
    assert LiveSources().filter(rt, ["GLOBAL CALL COUNT"], rows, [2, 3, 4, 5, 6]) == ([], [])
    # Re-created since the snapshot (the device profiler deletes its files at device open), even
    # if the file system hands out the same inode number again: all of it is new.
    snap2 = snapshot_logs(tmp_path)
    pick = LiveSources(snap2)
    old.unlink()
    old_live_log(tmp_path, 5)
    assert len(pick.filter(old, header, rows, [2, 3, 4, 5, 6])[0]) == 5 and pick.stale == 0
    snap.close()
    snap2.close()
    assert snap2.paths() == {}


# --------------------------------------------------------------------------- CLI, --no-tui
@pytest.mark.parametrize("code", [0, 3])
def test_no_tui_passes_output_through_and_exits_with_the_workload_code(tmp_path, code):
    root = tmp_path / "prof"
    args = ["run", "--dir", str(root)]
    if code == 0:
        args += ["--mid-run-dump"]  # and no --no-tui: stdout is a pipe, so the plain mode
    else:
        args += ["--no-tui"]
    res = run_ttdash(*args, "--", PY, str(WORKLOAD), "--ops", "120", "--exit", str(code),
                     unset=PROFILER_VARS)
    assert res.returncode == code, res.stderr
    env_line = next(ln for ln in res.stdout.splitlines() if ln.startswith("env "))
    assert "TT_METAL_DEVICE_PROFILER=1 TT_METAL_PROFILER_CPP_POST_PROCESS=1 " \
           f"TT_METAL_PROFILER_DIR={root.absolute()} " in env_line
    assert env_line.endswith("TT_METAL_PROFILER_MID_RUN_DUMP=" + ("1" if code == 0 else ""))
    assert "markup [bold red]x[/] stays literal" in res.stdout  # passed through untouched
    assert "a line on stderr" in res.stderr
    summary = res.stderr.strip().splitlines()[-1]
    assert summary.startswith(f"ttdash run: workload exited with {code} after ")
    assert "120 ops, device time " in summary and "cpp_device_perf_report.csv" in summary
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("var", ["TT_METAL_PROFILER_DIR", "TT_METAL_HOME"])
def test_default_dir_like_watch(tmp_path, var):
    where = tmp_path / "envdir"
    expected = where if var == "TT_METAL_PROFILER_DIR" else where / "generated" / "profiler"
    res = run_ttdash("run", "--no-tui", "--", PY, str(WORKLOAD), "--ops", "20",
                     env={var: str(where)}, unset=PROFILER_VARS, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert f"TT_METAL_PROFILER_DIR={expected} " in res.stdout
    assert (expected / ".logs" / "cpp_device_perf_report.csv").exists()
    assert "20 ops" in res.stderr and str(expected) in res.stderr


def test_rows_of_an_earlier_run_are_not_counted(tmp_path):
    old_live_log(tmp_path, 40)
    res = run_ttdash("run", "--no-tui", "--dir", str(tmp_path), "--", PY, "-c", "print('hi')",
                     unset=PROFILER_VARS)
    assert res.returncode == 0 and res.stdout == "hi\n"
    assert "no live rows" in res.stderr.splitlines()[-1]


@pytest.mark.parametrize("args, message", [
    (["--no-tui"], "no command given"),
    (["--no-tui", "--"], "no command given"),
    (["--", "ttdash-no-such-command-xyz", "--flag"], "command not found: ttdash-no-such"),
    (["--no-tui", "--", "./no/such/file.py"], "command not found: ./no/such/file.py"),
    (["--grace", "-1", "--", "true"], "--grace"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    res = run_ttdash("run", "--dir", str(tmp_path / "p"), *args, unset=PROFILER_VARS,
                     cwd=str(tmp_path), timeout=60)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and message in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "p").exists()


def test_no_tui_ctrl_c_reaches_the_workload(tmp_path):
    proc = subprocess.Popen([PY, "-m", "ttdash", "run", "--no-tui", "--dir", str(tmp_path), "--",
                             PY, str(WORKLOAD), "--hold"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        for line in proc.stdout:  # the workload is up once it says so
            if line.strip() == "ready":
                break
        proc.send_signal(signal.SIGINT)  # what a terminal's ctrl+c does to the foreground job
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    assert "KeyboardInterrupt" in err  # the workload got it, and could clean up
    assert "workload killed by SIGINT" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("when", ["before the spawn", "after the spawn"])
def test_no_tui_ctrl_c_while_the_workload_starts_reaches_it(tmp_path, monkeypatch, when):
    """A ctrl+c that lands while `run --no-tui` is still starting the workload (the child can be
    up, and print, before the parent runs on) goes to the workload, which ends on it; it is not
    this process's KeyboardInterrupt with the workload left holding forever."""
    from ttdash.commands.run import run_plain
    from ttdash.runner import RunSpec, Workload

    start = Workload.start

    def start_then_ctrl_c(self):
        if when == "before the spawn":
            os.kill(os.getpid(), signal.SIGINT)
        start(self)
        if when == "after the spawn":
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(Workload, "start", start_then_ctrl_c)
    spec = RunSpec([PY, str(WORKLOAD), "--hold"], tmp_path, grace=2.0)
    t0 = time.monotonic()
    with open(os.devnull, "w") as out:
        code = run_plain(spec, out=out)
    # the workload's own code for a ctrl+c: 130 once Python's handler is in, 1 for one that
    # lands while its interpreter is still starting
    assert code in (1, 128 + signal.SIGINT)
    assert time.monotonic() - t0 < 15  # ended by the ctrl+c, not by a stop at a deadline


# --------------------------------------------------------------------------- the run screen
async def test_run_screen_live_rows_output_and_exit_status(tmp_path):
    root = tmp_path / "p"
    w = Workload([PY, str(WORKLOAD), "--ops", "150", "--exit", "3"],
                 env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        table, log = screen.query_one("OpTable"), screen.query_one("#output")
        await wait_until(pilot, lambda: screen.exit_summary is not None
                         and screen.live.total_rows == 150 and len(table.rows) == 150,
                         state=lambda: (screen.exit_summary, screen.live.total_rows,
                                        len(table.rows), w.running, w.exit_code,
                                        w.pending(), list(log.lines)[-3:]))
        assert screen.exit_summary.startswith("workload exited with 3 after ")
        assert "live: 150 ops" in str(screen.query_one("#summary").render())
        status = str(screen.query_one("#workload").render())
        assert "✘ workload exited with 3 after" in status and "sim_workload.py" in status
        lines = list(log.lines)
        env_line = next(ln for ln in lines if ln.startswith("env "))
        assert f"TT_METAL_DEVICE_PROFILER=1 TT_METAL_PROFILER_CPP_POST_PROCESS=1 " \
               f"TT_METAL_PROFILER_DIR={root.absolute()} " in env_line
        assert "a line on stderr" in lines and "coloured text" in lines
        assert "simulated 150 ops" in lines and lines[-1] == f"[ttdash] {screen.exit_summary}"
        painted = "\n".join(rendered(log))
        assert "markup [bold red]x[/] stays literal" in painted  # shown literally, not styled
        assert "\x1b" not in "".join(lines) and "\x07" not in "".join(lines)
        # The app stays up after the workload ended, with its final state.
        await pilot.pause(0.3)
        assert app.is_running and app.screen is screen and len(table.rows) == 150
        await pilot.press("o")
        assert not log.display
        await pilot.press("o")
        assert log.display
        await pilot.press("q")  # no question once the workload has ended
        await wait_until(pilot, lambda: not app.is_running, timeout=5)
    assert app.return_code == 3


async def test_ctrl_c_asks_n_keeps_running_y_stops_it(tmp_path):
    root = tmp_path / "p"
    w = Workload([PY, str(WORKLOAD), "--hold"], env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        log = screen.query_one("#output")
        await wait_until(pilot, lambda: "ready" in log.lines)
        await pilot.press("ctrl+c")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert app.screen is screen
        await pilot.pause(0.3)
        assert w.running and "▶ workload running" in str(screen.query_one("#workload").render())
        await pilot.press("ctrl+c")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.exit_summary is not None, timeout=10)
        assert w.returncode == -signal.SIGTERM
        assert "killed by SIGTERM" in str(screen.query_one("#workload").render())
        assert app.is_running and app.screen is screen  # stopped; the results stay on screen
        await pilot.press("q")
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_until(pilot, lambda: not app.is_running, timeout=5)
    assert app.return_code == 128 + signal.SIGTERM


async def test_q_while_running_asks_then_stops_and_quits(tmp_path):
    root = tmp_path / "p"
    w = Workload([PY, str(WORKLOAD), "--hold"], env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "ready" in app.screen.query_one("#output").lines)
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen) and w.running
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running, timeout=10)
    assert w.returncode == -signal.SIGTERM and app.return_code == 128 + signal.SIGTERM


# --------------------------------------------------------------------------- a real terminal
def test_tmux_run_shows_live_ops_then_the_exit_status(tmp_path):
    root = tmp_path / "generated" / "profiler"
    cmd = [ttdash_bin(), "run", "--dir", str(root), "--refresh", "0.2", "--", PY, str(WORKLOAD),
           "--ops", "300", "--speed", "2", "--dumps", "6", "--exit", "3"]
    with Tmux(cmd, width=100, height=30) as t:
        t.wait_for(lambda s: "▶ workload running" in s and "live: " in s
                   and "live: 0 ops" not in s and "Operation" in s, timeout=30)  # live rows
        t.wait_for(lambda s: "workload exited with 3 after" in s and "live: 300 ops" in s
                   and "simulated 300 ops" in s, timeout=30)
        t.send("q")  # no question once it has ended; ttdash exits with the workload's code
        assert t.exit_status() == 3


def test_tmux_terminal_gone_stops_the_workload(tmp_path):
    """An SSH drop (the terminal hangs up) must not leave the workload running on the device:
    in its own session it does not get the terminal's SIGHUP, ttdash stops it."""
    cmd = [ttdash_bin(), "run", "--dir", str(tmp_path), "--", PY, str(WORKLOAD), "--hold"]
    with Tmux(cmd, width=100, height=30) as t:
        screen = t.wait_for(lambda s: "ready" in s and "(pid " in s, timeout=30)
        pid = int(re.search(r"\(pid (\d+)\)", screen).group(1))
        assert alive(pid)
    wait_for(lambda: not alive(pid), timeout=15)  # the session was killed by the with-block


async def test_run_screen_starts_with_the_doctors_warnings(tmp_path, monkeypatch):
    """A host with 4 GiB of HugePages and an x8 link: the workload line says so from the start
    (no prompt, no delay), naming `ttdash doctor`."""
    from fake_host import Card, fake_host

    for k, v in fake_host(tmp_path / "host", [Card(speed="8.0 GT/s PCIe", width=8)],
                          hugepages_1g=4).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("TT_METAL_HOME", str(tmp_path))
    monkeypatch.delenv("ARCH_NAME", raising=False)
    root = tmp_path / "p"
    w = Workload([PY, str(WORKLOAD), "--ops", "20", "--exit", "0"],
                 env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=(200, 30)) as pilot:
        screen = app.screen
        await pilot.pause()
        line = str(screen.query_one("#workload").render())
        assert "doctor: 2 warned (PCIe link, HugePages; ttdash doctor)" in line
        await wait_until(pilot, lambda: screen.exit_summary is not None)
        await pilot.press("q")
