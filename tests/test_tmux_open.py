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
    """`6` in the installed `ttdash open` at 80x24: the headline, the op codes by time above
    the performance model (read from the CSV here: PM IDEAL vs the kernel's duration), the
    unmodelled row and the footer on one screen; enter lists the top op code's ops."""
    import numpy as np

    from ttdash.format import fmt_us

    path = real_dir() / CLIP
    df = pd.read_csv(path, usecols=["OP CODE", "DEVICE KERNEL DURATION [ns]", "PM IDEAL [ns]"])
    dur, ideal = df["DEVICE KERNEL DURATION [ns]"], df["PM IDEAL [ns]"]
    m = (ideal > 1) & (dur > 0)
    rec = ((dur - ideal).clip(lower=0)[m] / 1000).groupby(df["OP CODE"][m]).sum()
    rec = rec.sort_values(ascending=False)
    top, second = rec.index[0], rec.index[1]
    unmodelled = int((dur.notna() & (dur > 0) & ~m).sum())
    with Tmux([ttdash_bin(), "open", str(path)], width=80, height=24) as t:
        t.wait_for(lambda s: "sort: Device ↓" in s and "row 1/1,872" in s)
        t.send("6")
        screen = t.wait_for(lambda s: "Model: " in s and "Recoverable" in s)
        lines = screen.splitlines()
        assert len(lines) <= 24 and max(len(ln) for ln in lines) <= 80
        text = " ".join(screen.split())
        assert f"Model: {fmt_us(float(np.sum(rec)))} of" in text
        assert f"{top} holds {fmt_us(rec.iloc[0])} of it" in text
        head = next(k for k, ln in enumerate(lines) if "Recoverable" in ln and "Op code" in ln)
        assert lines[head + 1].split()[-1] == top and lines[head + 2].split()[-1] == second
        assert fmt_us(rec.iloc[0]) in lines[head + 1]
        assert any(f"unmodelled ({unmodelled:,} ops" in ln and "no model" in ln for ln in lines)
        assert "If every modelled op under 70% of its model reached it" in text
        t.send("Enter")
        screen = t.wait_for(lambda s: f"{top}: " in s and "Eff%" in s)
        rows = [ln.split() for ln in screen.splitlines() if ln.split()[:1]
                and ln.split()[0].isdigit() and top in ln]
        assert len(rows) >= 10
        t.send("Escape")
        t.wait_for(lambda s: "Model: " in s)
        t.send("q")
        assert t.exit_status() == 0
