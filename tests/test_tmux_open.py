"""The installed `ttdash open` in a real terminal (tmux): open, third signpost, filter, quit."""

from __future__ import annotations

import pytest
from conftest import ROOT
from tmux import Tmux, ttdash_bin


@pytest.mark.smoke  # the real-terminal test the lowest-dependency CI pass keeps
def test_open_in_a_real_terminal():
    report = str(ROOT / "fixtures" / "generated" / "wh_small_report.csv")
    with Tmux([ttdash_bin(), "open", report], width=100, height=30) as t:
        # The cursor starts on the first signpost (start #1): row 1.
        t.wait_for(lambda s: "280 ops" in s and "wormhole_b0" in s and "Op code" in s
                   and "row 1/304" in s)
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
