#!/usr/bin/env python3
"""`ttdash open FILE`'s first screen of the whole trace, headless, as one process to time.

Usage: python benchmarks/first_screen.py FILE [--no-cache]
Loads FILE as `open` does (commands.common.view_of, the lazy columns, the analysis cache unless
--no-cache), mounts the trace screen (Textual's headless pilot, 120x40) and exits once it has
drawn; prints the seconds from the start of the load to that frame. Time the whole process
(with /usr/bin/time -v for its peak memory) to include the imports, as bench_cold.py does.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time


async def first_screen(path: str) -> float:
    from ttdash.commands.common import view_of
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_app

    t0 = time.perf_counter()
    view = view_of(path, WindowOptions(), "lazy")
    async with open_app(view).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        return time.perf_counter() - t0


if __name__ == "__main__":
    if "--no-cache" in sys.argv[2:]:
        os.environ["TTDASH_NO_CACHE"] = "1"
    print(f"{asyncio.run(first_screen(sys.argv[1])):.2f} s")
