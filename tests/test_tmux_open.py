"""The installed `ttdash open` in a real terminal (tmux): open, third signpost, filter, quit."""

from __future__ import annotations

from conftest import ROOT
from tmux import Tmux, ttdash_bin


def test_open_in_a_real_terminal():
    report = str(ROOT / "fixtures" / "generated" / "wh_small_report.csv")
    with Tmux([ttdash_bin(), "open", report], width=100, height=30) as t:
        screen = t.wait_text("280 ops")
        assert "wormhole_b0" in screen and "Op code" in screen
        assert "row 1/304" in screen  # the cursor starts on the first signpost (start #1)
        t.send("]", "]")  # layer_0 #1 (row 4), then the third signpost, layer_1 #1 (row 21)
        screen = t.wait_text("row 21/304")
        assert "◆ layer_1 #1" in screen
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("Matmul", literal=True)
        t.send("Enter")
        screen = t.wait_text("filter: Matmul")
        assert "showing 84 of 280 ops" in screen
        body = [ln for ln in screen.splitlines()[3:-2] if ln.strip() and ln.split()[0].isdigit()]
        assert body and all("Matmul" in ln for ln in body)
        t.send("q")
        assert t.exit_status() == 0
