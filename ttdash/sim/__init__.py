"""Synthetic Tenstorrent profiler output: realistic reports, live logs and whole runs.

Public API:

* :func:`generate_ops` - an ``ops_perf_results`` table (V2.1 layout) for a transformer-like model.
* :func:`write_report_csv` - write it like the profiler does.
* :func:`cpp_device_rows` - the matching ``.logs/cpp_device_perf_report.csv`` rows.
* :func:`rt_device_text` - the realtime profiler's quick-mode ``.logs/rt_device_perf_report.csv``.
* :func:`profile_log_device_header` - the first two lines of ``profile_log_device.csv``.
* :func:`simulate_run` - play a whole profiler run into a ``generated/profiler`` directory.
"""

from .archspec import ARCHS, SimArch, get_arch
from .generator import CORRUPT_OFFSET_NS, generate_ops
from .model import ModelConfig
from .run import simulate_run
from .writers import (
    cpp_device_rows,
    infer_arch_from_clock,
    profile_log_device_header,
    profile_log_device_lines,
    report_csv_text,
    rt_device_text,
    write_cpp_device_csv,
    write_report_csv,
)

__all__ = [
    "ARCHS",
    "CORRUPT_OFFSET_NS",
    "ModelConfig",
    "SimArch",
    "cpp_device_rows",
    "generate_ops",
    "get_arch",
    "infer_arch_from_clock",
    "profile_log_device_header",
    "profile_log_device_lines",
    "report_csv_text",
    "rt_device_text",
    "simulate_run",
    "write_cpp_device_csv",
    "write_report_csv",
]
