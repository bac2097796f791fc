#!/usr/bin/env python3
"""Write SVG screenshots of ttdash's main screens into docs/screenshots/ (used by the README).

Usage: python scripts/screenshots.py   (needs ../shared/fixtures/real beside the repo)
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "fixtures" / "real"
OUT = ROOT / "docs" / "screenshots"


async def shoot(app, name: str, size: tuple[int, int], keys: list[str] = (),
                until=None) -> None:
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if until is not None:
            deadline = time.monotonic() + 30
            while not until(app) and time.monotonic() < deadline:
                await pilot.pause(0.1)
        for k in keys:
            await pilot.press(k)
        await pilot.pause()
        app.save_screenshot(str(OUT / f"{name}.svg"))
        print("wrote", OUT / f"{name}.svg")


async def main() -> None:
    from ttdash.model import Trace, Window
    from ttdash.model.compare.diff import diff_traces
    from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv
    from ttdash.tui.app import open_app
    from ttdash.tui.diffview import diff_app
    from ttdash.tui.watch import watch_app

    OUT.mkdir(parents=True, exist_ok=True)

    def view(name: str, merge: bool = True):
        return Trace.load(REAL / name, columns="all").view(Window("all"), merge=merge)

    wh = view("tt-perf-report__wh_clip_encoder_2.csv")
    await shoot(open_app(wh), "open-80x24", (80, 24), ["j"] * 6)
    await shoot(open_app(view("tt-perf-report__bh20_oft.csv")), "open-signposts-160x48",
                (160, 48), ["]", "]", "]"])
    await shoot(open_app(wh), "open-detail", (110, 40), ["j"] * 6 + ["enter"])
    await shoot(open_app(wh), "open-grouped", (160, 48), ["2"])
    deepseek = view("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    await shoot(open_app(deepseek), "open-advice-120x36", (120, 36), ["3", "G"])
    per_device = view("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", merge=False)
    await shoot(open_app(per_device), "open-timeline-devices-120x36", (120, 36),
                ["4", "right", "down"])
    await shoot(open_app(view("tt-perf-report__bh20_oft.csv")), "open-timeline-80x24", (80, 24),
                ["4", "plus", "plus", "right", "right"])
    await shoot(open_app(wh), "open-roofline-120x36", (120, 36), ["5", "right"])
    bh = view("tt-perf-report__bh_64_clip_encoder_1.csv")
    await shoot(diff_app(diff_traces(wh, bh)), "diff-wh-vs-bh-160x48", (160, 48), ["n"])
    await shoot(diff_app(diff_traces(wh, bh)), "diff-80x24", (80, 24), ["n"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "generated" / "profiler"
        log = root / ".logs" / "cpp_device_perf_report.csv"
        log.parent.mkdir(parents=True)
        write_cpp_device_csv(cpp_device_rows(generate_ops(400, seed=2)).iloc[:260], log)
        await shoot(watch_app(root), "watch-live-120x36", (120, 36),
                    until=lambda app: app.screen.live.total_rows >= 260)
    await history_shots()


async def history_shots() -> None:
    """`ttdash history` on 14 runs of the real CLIP trace (device times jittered, one run with
    its matmuls 6% slower) and one Blackhole run."""
    import os
    import random
    from datetime import datetime, timedelta, timezone

    import pandas as pd

    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history import record
    from ttdash.history.store import Store
    from ttdash.tui.history import history_app

    os.environ["TZ"] = "UTC"
    time.tzset()
    record.default_labels = lambda env=None: {"machine": "wh-lab-3"}  # not this host's name
    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    col = "DEVICE KERNEL DURATION [ns]"
    rng = random.Random(3)
    t0 = datetime(2026, 11, 1, 12, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # the header shows the default store's path, not a temp dir
        store = Store.open("~/.local/share/ttdash/history")
        base = pd.read_csv(src, dtype=str, keep_default_na=False)
        dur = pd.to_numeric(base[col], errors="coerce")
        for i in range(14):
            df = base.copy()
            k = 1 + rng.gauss(0, 0.01)
            hit = dur.notna() & ((df["OP CODE"] == "MinimalMatmulOp") if i == 9 else True)
            df.loc[hit, col] = (dur[hit] * (k + (0.06 if i == 9 else 0))).round().astype(
                "int64").astype(str)
            path = Path(tmp) / f"clip_{i}.csv"
            df.to_csv(path, index=False)
            store.add(record.build(load_view(str(path), WindowOptions()), now=t0 + timedelta(
                days=i), labels={"model": "clip", "commit": f"{0xabc000 + i * 77:x}"}))
        store.add(record.build(load_view(str(REAL / "tt-perf-report__bh_p100_dlv3.csv"),
                                         WindowOptions()), now=t0 + timedelta(days=15),
                               labels={"model": "dlv3"}))

        def loaded(app) -> bool:
            return bool(getattr(app.screen, "loaded", False))

        await shoot(history_app(store), "history-80x24", (80, 24), ["down"], until=loaded)
        await shoot(history_app(store), "history-160x40", (160, 40), ["down"], until=loaded)
        await shoot(history_app(store), "history-trend-120x36", (120, 36),
                    ["down", "down", "down", "down", "down", "down", "t"], until=loaded)


if __name__ == "__main__":
    asyncio.run(main())
