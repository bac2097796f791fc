"""The installed `ttdash watch` in a real terminal while another process plays a profiler run."""

from __future__ import annotations

import subprocess
import sys

from tmux import Tmux, ttdash_bin

WRITER = """
import sys
from pathlib import Path
from ttdash.sim import simulate_run
simulate_run(Path(sys.argv[1]), n_ops=400, speed=8, seed=7)
"""


def test_watch_empty_dir_then_live_rows_then_report(tmp_path):
    root = tmp_path / "generated" / "profiler"  # does not exist yet
    with Tmux([ttdash_bin(), "watch", str(root), "--refresh", "0.2"], width=100, height=30) as t:
        t.wait_for(lambda s: "waiting" in s and "0 ops" in s)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(root)])
        try:
            t.wait_for(lambda s: "live: " in s and " ops/s" in s and "live: 0 ops" not in s
                       and "Operation" in s, timeout=30)  # live op rows on screen
            t.wait_for(lambda s: "report (L live" in s and "400 ops" in s
                       and "ops_perf_results_" in s, timeout=60)
        finally:
            writer.wait(60)
        assert writer.returncode == 0
        t.send("q")
        assert t.exit_status() == 0


RANK_WRITER = """
import sys
from pathlib import Path
from ttdash.sim import simulate_run
for k in range(2):  # rank 1 runs after rank 0: its report is waited for while its rows arrive
    simulate_run(Path(sys.argv[1]) / f"rank{k}", n_ops=300, speed=4 / (k + 1), seed=7,
                 devices=2)
"""


def test_watch_of_a_multi_host_run_in_a_real_terminal(tmp_path):
    """`watch ttrun/` while two ranks run (the same 300 ops on 2 devices each): every rank's
    rows live (4 devices numbered through the 2 ranks), rank 0's report held until rank 1 has
    one, then the two merged."""
    top = tmp_path / "ttrun"
    for k in range(2):
        (top / f"rank{k}").mkdir(parents=True)
    with Tmux([ttdash_bin(), "watch", str(top), "--refresh", "0.2"], width=160,
              height=30) as t:
        t.wait_for(lambda s: f"watching {top} (" in s and "2 ranks live" in s and "0 ops" in s)
        writer = subprocess.Popen([sys.executable, "-c", RANK_WRITER, str(top)])
        try:
            t.wait_for(lambda s: "live: " in s and "4 dev / 2 ranks" in s and " Rank " in s
                       and "report of rank 0 ready: waiting for rank 1" in s, timeout=30)
            t.wait_for(lambda s: "report (L live" in s and "300 ops" in s
                       and "4 dev / 2 ranks" in s and "2 ranks' reports merged" in s,
                       timeout=60)
        finally:
            writer.wait(60)
        assert writer.returncode == 0
        t.send("q")
        assert t.exit_status() == 0


def _new_demo_dir(before: set, timeout: float = 30.0):
    """The temp dir the demo created (ttdash-demo-* in the temp folder, not there before)."""
    import tempfile
    import time
    from pathlib import Path

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = set(Path(tempfile.gettempdir()).glob("ttdash-demo-*")) - before
        if new:
            return new.pop()
        time.sleep(0.05)
    raise AssertionError("the demo created no temp dir")


def _demo_dirs() -> set:
    import tempfile
    from pathlib import Path

    return set(Path(tempfile.gettempdir()).glob("ttdash-demo-*"))


def test_demo_streams_then_cleans_up():
    before = _demo_dirs()
    with Tmux([ttdash_bin(), "demo", "--ops", "400", "--speed", "4"], width=100, height=30) as t:
        base = _new_demo_dir(before)
        t.wait_for(lambda s: "live: " in s and " ops/s" in s and "live: 0 ops" not in s,
                   timeout=30)
        assert (base / "generated" / "profiler" / ".logs").is_dir()
        t.wait_text("report (L live", timeout=60)
        t.send("q")
        assert t.exit_status() == 0
        assert not base.exists()  # the whole temp dir is gone


def test_demo_cleans_up_when_the_terminal_dies():
    import subprocess
    import time

    before = _demo_dirs()
    t = Tmux([ttdash_bin(), "demo", "--ops", "2000"], width=100, height=30)
    try:
        base = _new_demo_dir(before)
        t.wait_text("live: ", timeout=30)
    finally:
        t.close()  # tmux kill-session: the program gets SIGHUP
    def alive() -> bool:
        return subprocess.run(["pgrep", "-f", "ttdash demo --ops 2000"],
                              capture_output=True).returncode == 0

    deadline = time.monotonic() + 15
    while (base.exists() or alive()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not base.exists() and not alive()


def test_watch_telemetry_strip_and_doctor_in_a_real_terminal(tmp_path):
    """The installed binary on a fake host (a cool card and a hot, clocked-down one) at 80x24:
    the telemetry line under the table names both devices and marks the hot one; `doctor` in
    the same terminal prints its checks and exits 0."""
    from fake_host import Card, fake_host

    env = fake_host(tmp_path / "host", [Card(), Card(temp_c=82.0, aiclk=700, power_w=60.0)])
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    root = tmp_path / "profiler"
    root.mkdir()
    with Tmux([ttdash_bin(), "watch", str(root)], width=80, height=24, env=env) as t:
        t.wait_for(lambda s: "telemetry dev1 82C 60W 700MHz HOT · dev0 45C 35W 1000MHz" in s,
                   timeout=30)
        t.send("q")
        assert t.exit_status() == 0
    with Tmux([ttdash_bin(), "doctor"], width=80, height=24, env=env) as t:
        assert t.exit_status() == 0
        s = t.screen()
        assert "WARN  sensors, device 1 (0000:02:00.0, wormhole n150)" in s
        assert "ok    kernel driver (tt-kmd)" in s
