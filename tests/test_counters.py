"""Per-RISC kernel times and utilisation counters in an op's details (issue #15.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import real_dir, screen_text

from ttdash.model import Trace, Window
from ttdash.model.counters import counter_cells, risc_times, slowest_risc
from ttdash.tui.app import open_app
from ttdash.tui.widgets import DetailScreen


def row(**ns) -> dict:
    return {f"DEVICE {k} KERNEL DURATION [ns]": v for k, v in ns.items()}


def test_the_slowest_risc_is_named_with_what_it_suggests():
    assert slowest_risc({}) is None
    assert slowest_risc(row(BRISC=9000, NCRISC=20000, TRISC1=10000)).startswith(
        "NCRISC (data movement, reader), 20.00 us: the op waits on data")
    assert "compute bound" in slowest_risc(row(BRISC=9000, NCRISC=8000, TRISC1=30000))
    assert "neither alone" in slowest_risc(row(BRISC=10000, TRISC2=10400))  # within 5%
    assert "ethernet" in slowest_risc(row(ERISC=50000, BRISC=1000))
    # zero, blank and absurd cells are no time
    assert risc_times(row(BRISC=0, NCRISC=np.nan, TRISC0="x", TRISC1=np.inf, TRISC2=5)) == \
        [("TRISC2", 5.0)]


def test_counters_shown_when_they_have_a_value():
    r = {"PM FPU UTIL (%)": 61.5, "NOC UTIL (%)": pd.NA, "DRAM BW UTIL (%)": "",
         "PERF COUNTER L1 HITS": 12, "SFPU Util Max (%)": 3.0, "OP CODE": "Matmul",
         "_region": 1}
    assert counter_cells(r) == [("PM FPU UTIL (%)", 61.5), ("PERF COUNTER L1 HITS", 12),
                                ("SFPU Util Max (%)", 3.0)]


async def test_details_pane_shows_risc_times_and_counters():
    path = real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
    app = open_app(Trace.load(path, columns="all").view(Window("all")))
    async with app.run_test(size=(100, 80)) as pilot:
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text, _ = screen_text(app)
        assert "Per-RISC kernel time" in text and "TRISC1 (compute, math)" in text
        assert "Slowest" in text and "BRISC (data movement, writer), 94.25 us" in text
        assert "Utilisation counters" in text and "PM FPU UTIL (%)" in text
        assert "NOC UTIL (%)" not in text.split("Utilisation counters")[1].split("Advice")[0]
