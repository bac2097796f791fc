"""Play a whole profiler run into a ``generated/profiler`` directory, with real write timing.

What :func:`simulate_run` does, in the order the real profiler does it
(``docs/FORMATS.md``, "Write timing"):

1. *Device open*: delete ``.logs/cpp_device_perf_report.csv`` and
   ``.logs/profile_log_device.csv``; write the device-log header.
2. *Dumps* (``ReadDeviceProfiler`` / mid-run dumps / device close): append the
   ``cpp_device_perf_report`` rows of the ops finished since the last dump
   (header only when the file is new; rows in program order per device;
   ``OP TO OP LATENCY`` restarts at 0 for each device's first row of a dump),
   and append device marker lines to ``profile_log_device.csv``.
3. *Post-processing*: ``rm -rf reports/<ts>; mkdir``, copy the device log and
   the ``.tracy`` file, then write ``ops_perf_results_<ts>.csv`` in a buffered,
   non-atomic pass (several chunks cut mid-line, with flushes and short pauses).

Pacing is simulated wall time divided by ``speed``: at ``speed=1`` each op
stands for :data:`DEMO_SECONDS_PER_OP` seconds, so a 2000-op run lasts ~25 s.
``speed=0`` (or a huge speed) means no pauses at all.
"""

from __future__ import annotations

import math
import shutil
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .archspec import get_arch
from .generator import generate_ops
from .writers import (
    cpp_device_rows,
    profile_log_device_header,
    profile_log_device_lines,
    report_csv_text,
    write_cpp_device_csv,
)

__all__ = ["simulate_run", "report_path_for", "DEMO_SECONDS_PER_OP", "ProgressCallback"]

#: Simulated wall time one op stands for at ``speed=1``.
DEMO_SECONDS_PER_OP = 0.0125
#: Simulated time post-processing takes before the report appears.
POSTPROCESS_SECONDS = 1.5
#: Pause between two chunks of the report write.
REPORT_CHUNK_PAUSE = 0.15
#: Number of chunks the report is written in.
REPORT_CHUNKS = 6

#: ``on_progress(phase, done, total)``; phases: ``"open"``, ``"dump"``, ``"postprocess"``, ``"report"``, ``"done"``.
ProgressCallback = Callable[[str, int, int], None]

_TRACY_PLACEHOLDER = b"tracy\x00\x01\x00ttdash-sim placeholder capture\x00"


def report_path_for(root: Path, timestamp: str, name: str | None = None) -> Path:
    """Where post-processing puts the report for ``timestamp`` (and optional ``-n NAME``)."""
    reports = Path(root) / "reports"
    if name:
        return reports / name / timestamp / f"ops_perf_results_{name}_{timestamp}.csv"
    return reports / timestamp / f"ops_perf_results_{timestamp}.csv"


class _Clock:
    """Pauses scaled by ``speed`` that return early (True) when ``stop`` is set."""

    def __init__(self, speed: float, stop: threading.Event | None) -> None:
        self.scale = 0.0 if (not speed or speed <= 0 or not math.isfinite(speed) or speed >= 1e6) else 1.0 / speed
        self.stop = stop

    def stopped(self) -> bool:
        return bool(self.stop is not None and self.stop.is_set())

    def pause(self, seconds: float) -> bool:
        """Sleep ``seconds / speed``; return True if a stop was requested."""
        t = seconds * self.scale
        if t <= 1e-4:
            return self.stopped()
        if self.stop is not None:
            return self.stop.wait(t)
        time.sleep(t)
        return False


def _dump_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Order one dump's rows like the runtime (device by device, program order) and
    restart op-to-op latency at each device's first row."""
    if rows.empty:
        return rows
    out = rows.sort_values(["DEVICE ID", "GLOBAL CALL COUNT"], kind="stable").copy()
    first = ~out["DEVICE ID"].duplicated()
    for col in ("OP TO OP LATENCY [ns]", "OP TO OP LATENCY BR/NRISC START [ns]"):
        out.loc[first, col] = 0
    return out


def simulate_run(
    root: Path,
    *,
    n_ops: int = 2000,
    speed: float = 1.0,
    dumps: int | None = None,
    arch: str = "wormhole_b0",
    devices: int = 1,
    seed: int = 0,
    stop: threading.Event | None = None,
    on_progress: ProgressCallback | None = None,
    name: str | None = None,
    timestamp: str | None = None,
    **generate_kwargs: Any,
) -> Path:
    """Write a realistic profiler run into ``root`` (a ``generated/profiler`` directory).

    Args:
        root: the profiler directory (created if missing).
        n_ops: device ops of the run.
        speed: simulated-time divisor; 0 or a huge value means no pauses.
        dumps: number of profiler dumps (default: about one per 100 ops, 1..50).
        arch, devices, seed: passed to :func:`~ttdash.sim.generator.generate_ops`.
        stop: when set, the run ends promptly (files stay as they are).
        on_progress: called as ``on_progress(phase, done, total)``.
        name: ``-n NAME`` layout (``reports/NAME/<ts>/ops_perf_results_NAME_<ts>.csv``).
        timestamp: report timestamp (``YYYY_MM_DD_HH_MM_SS``); default: now, at
            post-processing time.
        **generate_kwargs: extra knobs for ``generate_ops`` (``layers``,
            ``host_fallback_every``, ``corrupt_every``, ``trace_replay``, ...).

    Returns:
        The report path. If the run was stopped before post-processing, the
        path is where the report would have been written (based on the current
        time if no ``timestamp`` was given) and the file does not exist.
    """
    root = Path(root)
    clock = _Clock(speed, stop)

    def progress(phase: str, done: int, total: int) -> None:
        if on_progress is not None:
            on_progress(phase, done, total)

    df = generate_ops(n_ops, arch=arch, devices=devices, seed=seed, **generate_kwargs)
    cpp = cpp_device_rows(df)
    a = get_arch(arch)

    # ---------------------------------------------------------------- device open
    logs = root / ".logs"
    logs.mkdir(parents=True, exist_ok=True)
    cpp_path = logs / "cpp_device_perf_report.csv"
    dev_log = logs / "profile_log_device.csv"
    cpp_path.unlink(missing_ok=True)
    dev_log.unlink(missing_ok=True)
    with open(dev_log, "w", encoding="utf-8", newline="") as fh:
        fh.write(profile_log_device_header(a.name, a.clock_mhz, a.max_compute_cores))
    progress("open", 0, n_ops)

    def fallback_path() -> Path:
        return report_path_for(root, timestamp or datetime.now().strftime("%Y_%m_%d_%H_%M_%S"), name)

    # ---------------------------------------------------------------- dumps
    n_dumps = dumps if dumps is not None else min(50, max(1, n_ops // 100))
    n_dumps = max(1, min(int(n_dumps), max(1, n_ops)))
    op_id = cpp["GLOBAL CALL COUNT"].to_numpy(dtype=np.int64) >> 10
    bounds = np.linspace(0, n_ops, n_dumps + 1).round().astype(np.int64)
    for k in range(n_dumps):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if clock.pause((hi - lo) * DEMO_SECONDS_PER_OP):
            return fallback_path()
        sel = (op_id > lo) & (op_id <= hi)
        rows = _dump_rows(cpp.loc[sel])
        if not rows.empty:
            write_cpp_device_csv(rows, cpp_path, append=True)
            with open(dev_log, "a", encoding="utf-8", newline="") as fh:
                fh.writelines(profile_log_device_lines(rows))
        progress("dump", hi, n_ops)

    # ---------------------------------------------------------------- capture end + post-processing
    (logs / "tracy_profile_log_host.tracy").write_bytes(_TRACY_PLACEHOLDER)
    progress("postprocess", n_ops, n_ops)
    if clock.pause(POSTPROCESS_SECONDS):
        return fallback_path()
    ts = timestamp or datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    report = report_path_for(root, ts, name)
    out_dir = report.parent
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    shutil.copyfile(dev_log, out_dir / dev_log.name)
    shutil.copyfile(logs / "tracy_profile_log_host.tracy", out_dir / "tracy_profile_log_host.tracy")

    text = report_csv_text(df).encode("utf-8")
    cuts = np.linspace(0, len(text), REPORT_CHUNKS + 1).round().astype(np.int64)
    with open(report, "wb") as fh:  # buffered, not atomic: a watcher sees partial files
        for i in range(REPORT_CHUNKS):
            fh.write(text[cuts[i] : cuts[i + 1]])
            fh.flush()
            progress("report", int(cuts[i + 1]), len(text))
            if i < REPORT_CHUNKS - 1 and clock.pause(REPORT_CHUNK_PAUSE):
                return report
    progress("done", n_ops, n_ops)
    return report
