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
        screen = t.wait_text("waiting")
        assert "0 ops" in screen
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(root)])
        try:
            screen = t.wait_for(lambda s: "live: " in s and " ops/s" in s
                                and "live: 0 ops" not in s, timeout=30)
            assert "Operation" in screen  # live op rows on screen
            screen = t.wait_text("report (L live", timeout=60)
            assert "400 ops" in screen and "ops_perf_results_" in screen
        finally:
            writer.wait(60)
        assert writer.returncode == 0
        t.send("q")
        assert t.exit_status() == 0
