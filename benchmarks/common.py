"""Helpers for the benchmark scripts (not tests): build big traces, time commands."""

from __future__ import annotations

import atexit
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "fixtures" / "real"
OUT = ROOT / "benchmarks" / "out"
# ttdash's columnar copies of the big traces go to a temporary cache, removed at exit: a
# benchmark leaves nothing in the user's ~/.cache (and `--no-cache` runs measure cold reads).
# A benchmark's own child (bench_memory.py's `open`) imports this module too: it keeps the
# cache folder its parent gave it (XDG_CACHE_HOME), not a new empty one.
if os.environ.get("TTDASH_BENCH_CACHE"):
    CACHE = os.environ["TTDASH_BENCH_CACHE"]
else:
    CACHE = os.environ["TTDASH_BENCH_CACHE"] = tempfile.mkdtemp(prefix="ttdash-bench-cache-")
    os.environ["XDG_CACHE_HOME"] = CACHE
    atexit.register(shutil.rmtree, CACHE, True)
# ttdash as installed: a wheel's install compiles its bytecode, but this checkout's editable
# install compiles ttdash at every start where PYTHONDONTWRITEBYTECODE is set (~0.07 s a run).
# The children may write it, and it is written once here, before anything is measured.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
compileall.compile_dir(ROOT / "ttdash", quiet=1)


def repeated_trace(src: Path, times: int, dest: Path | None = None) -> Path:
    """`src` with its data rows repeated `times` times, HOST START TS shifted so order holds."""
    import pandas as pd

    dest = dest or OUT / f"{src.stem}_x{times}.csv"
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    ts = pd.to_numeric(df["HOST START TS"], errors="coerce")
    span = int(ts.max() - ts.min()) + 1_000_000
    parts = []
    for k in range(times):
        part = df.copy()
        part["HOST START TS"] = (ts + k * span).astype("Int64").astype(str)
        parts.append(part)
    pd.concat(parts).to_csv(dest, index=False)
    return dest


def measure_cpu(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one command, from its own
    rusage (os.wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd} exited with {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def measure(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command, from its own rusage."""
    wall, _, rss = measure_cpu(cmd, stdout)
    return wall, rss


def python() -> str:
    return sys.executable
