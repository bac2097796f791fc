"""The installed `ttdash open` in a real terminal (tmux): open, third signpost, filter, quit;
a trace whose file starts with host rows opens on its heaviest device op."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import ROOT, real_dir
from tmux import Tmux, ttdash_bin

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"


@pytest.mark.smoke  # the real-terminal test the lowest-dependency CI pass keeps
def test_open_in_a_real_terminal():
    report = str(ROOT / "fixtures" / "generated" / "wh_small_report.csv")
    with Tmux([ttdash_bin(), "open", report], width=100, height=30) as t:
        t.wait_for(lambda s: "280 ops" in s and "wormhole_b0" in s and "Op code" in s
                   and "row 1/304" in s and "sort: Device ↓" in s)
        # File order: the cursor on the first signpost (start #1), row 1.
        t.send("o")
        t.wait_for(lambda s: "row 1/304" in s and "sort: file order" in s)
        t.send("]", "]")  # layer_0 #1 (row 4), then the third signpost, layer_1 #1 (row 21)
        t.wait_for(lambda s: "row 21/304" in s and "◆ layer_1 #1" in s)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("Matmul", literal=True)
        t.send("Enter")
        def only_matmuls(screen: str) -> bool:
            body = [ln for ln in screen.splitlines()[3:-2]
                    if ln.strip() and ln.split()[0].isdigit()]
            return bool(body) and all("Matmul" in ln for ln in body)

        t.wait_for(lambda s: "filter: Matmul" in s and "showing 84 of 280 ops" in s
                   and only_matmuls(s))
        t.send("q")
        assert t.exit_status() == 0


def test_a_trace_starting_with_host_rows_opens_on_its_heaviest_device_op():
    """SEG's file begins with ~20 `(torch) ... HOST` rows without device time; at 80x24 the
    first table row is the op with the longest kernel (read from the CSV here), and the status
    line says the order."""
    path = real_dir() / SEG
    df = pd.read_csv(path, usecols=["OP CODE", "OP TYPE", "DEVICE KERNEL DURATION [ns]"])
    assert df["OP TYPE"].iloc[0] == "python_fallback"  # what the test is about
    i = int(df["DEVICE KERNEL DURATION [ns]"].idxmax())
    op_id, op_code = i + 2, str(df.loc[i, "OP CODE"])  # ID: the op's line in the file
    with Tmux([ttdash_bin(), "open", str(path)], width=80, height=24) as t:
        screen = t.wait_for(lambda s: "sort: Device ↓" in s and "Op code" in s
                            and "row 1/1,179" in s)
        lines = screen.splitlines()
        assert "sort: Device ↓" in lines[0]  # the header's first line says the order
        head = next(k for k, ln in enumerate(lines) if "Op code" in ln and "Device" in ln)
        first = lines[head + 1].split()
        assert first[:2] == [str(op_id), op_code], lines[head + 1]
        assert "(torch)" not in "\n".join(lines[head + 1:head + 10])
        t.send("q")
        assert t.exit_status() == 0


def test_the_why_view_at_80x24_in_a_real_terminal():
    """`6` in the installed `ttdash open` at 80x24: the lead, the model's headline, the op
    codes by device time (read from the CSV here) with their reason, and what to try, on one
    screen; enter lists the top op code's ops with their reason."""
    import numpy as np

    from ttdash.format import fmt_us

    path = real_dir() / CLIP
    df = pd.read_csv(path, usecols=["OP CODE", "DEVICE KERNEL DURATION [ns]", "PM IDEAL [ns]",
                                    "CORE COUNT"])
    dur, ideal = df["DEVICE KERNEL DURATION [ns]"], df["PM IDEAL [ns]"]
    m = (ideal > 1) & (dur > 0)
    rec = ((dur - ideal).clip(lower=0)[m] / 1000).groupby(df["OP CODE"][m]).sum()
    dev = (dur / 1000).groupby(df["OP CODE"]).sum().sort_values(ascending=False)
    top, second = dev.index[0], dev.index[1]
    assert set(df["CORE COUNT"][df["OP CODE"] == second]) == {1}
    with Tmux([ttdash_bin(), "open", str(path)], width=80, height=24) as t:
        t.wait_for(lambda s: "sort: Device ↓" in s and "row 1/1,872" in s)
        t.send("6")
        screen = t.wait_for(lambda s: "Every op explained" in s and "Op code: reason" in s)
        lines = screen.splitlines()
        assert len(lines) <= 24 and max(len(ln) for ln in lines) <= 80
        text = " ".join(screen.split())
        assert f"Model: {fmt_us(float(np.sum(rec)))} of" in text
        head = next(k for k, ln in enumerate(lines) if "Op code: reason" in ln)
        assert f" {top}: " in lines[head + 1] and fmt_us(dev.iloc[0]) in lines[head + 1]
        assert f" {second}: under-g" in lines[head + 2]  # 1 of 64 cores in the file
        assert "Try: " in text
        t.send("Enter")
        screen = t.wait_for(lambda s: f"{top}: " in s and "Reason" in s)
        rows = [ln.split() for ln in screen.splitlines() if ln.split()[:1]
                and ln.split()[0].isdigit() and top[:12] in ln]
        assert len(rows) >= 10
        t.send("Escape")
        t.wait_for(lambda s: "Every op explained" in s)
        t.send("q")
        assert t.exit_status() == 0


def test_a_terminal_hung_up_without_a_sighup_to_it_leaves_no_process(tmp_path):
    """`ttdash open` in a session of its own (`setsid`: not the terminal's foreground process
    group, so the hangup sends it no SIGHUP, as in a CI run that left one spinning for 8
    minutes): once tmux closes the terminal, the process notices (its terminal's ioctls fail)
    and exits within seconds instead of reading the dead terminal on a core forever."""
    import os
    import shutil
    import signal
    import time
    from pathlib import Path

    path = tmp_path / "hangup_probe.csv"  # (its own name: this run's process alone matches)
    shutil.copyfile(ROOT / "fixtures" / "generated" / "wh_small_report.csv", path)

    def alive() -> list[int]:  # the processes whose command line opens `path`
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"open" in argv and str(path).encode() in argv:
                found.append(int(proc.name))
        return found

    with Tmux(["setsid", ttdash_bin(), "open", str(path)], width=80, height=24) as t:
        t.wait_for(lambda s: "280 ops" in s and "Op code" in s)
        pids = alive()
        assert pids, "the program is not running"
    deadline = time.monotonic() + 10  # (a process has no event to await: polled)
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = alive()
    for pid in left:  # (not left spinning after a failure)
        os.kill(pid, signal.SIGKILL)
    assert not left, f"ttdash open still running 10 s after its terminal closed: {left}"
