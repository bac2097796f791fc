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
    from ttdash.model.diff import diff_traces
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


if __name__ == "__main__":
    asyncio.run(main())
