"""Column layouts of the files the Tenstorrent profiler writes (names, and which hold integers).

The report header is built the way the profiler builds it: a fixed head, then
``INPUT_n_*`` / ``OUTPUT_n_*`` blocks sized to the largest tensor count of the
run, then a tail. See ``docs/FORMATS.md`` (shared) for the eras.
"""

from __future__ import annotations

__all__ = [
    "REPORT_HEAD",
    "REPORT_TAIL",
    "KERNEL_SIZE_COLUMNS",
    "INT_COLUMNS",
    "TENSOR_FIELDS",
    "report_columns",
    "tensor_columns",
    "CPP_DEVICE_COLUMNS",
    "RT_DEVICE_COLUMNS",
    "DEVICE_LOG_COLUMNS",
    "V21_ONLY_COLUMNS",
]

#: Fixed head of the V2.1 ``ops_perf_results`` header.
REPORT_HEAD: tuple[str, ...] = (
    "OP CODE",
    "OP TYPE",
    "GLOBAL CALL COUNT",
    "DEVICE ID",
    "DEVICE ARCH",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "CORE COUNT",
    "AVAILABLE WORKER CORE COUNT",
    "PARALLELIZATION STRATEGY",
    "HOST START TS",
    "HOST END TS",
    "HOST DURATION [ns]",
    "DEVICE FW START CYCLE",
    "DEVICE FW END CYCLE",
    "OP TO OP LATENCY [ns]",
    "OP TO OP LATENCY BR/NRISC START [ns]",
    "DEVICE FW DURATION [ns]",
    "DEVICE KERNEL DURATION [ns]",
    "DEVICE KERNEL DURATION DM START [ns]",
    "DEVICE KERNEL DURATION PER CORE MIN [ns]",
    "DEVICE KERNEL DURATION PER CORE MAX [ns]",
    "DEVICE KERNEL DURATION PER CORE AVG [ns]",
    "DEVICE KERNEL FIRST TO LAST START [ns]",
    "DEVICE BRISC KERNEL DURATION [ns]",
    "DEVICE NCRISC KERNEL DURATION [ns]",
    "DEVICE TRISC0 KERNEL DURATION [ns]",
    "DEVICE TRISC1 KERNEL DURATION [ns]",
    "DEVICE TRISC2 KERNEL DURATION [ns]",
    "DEVICE ERISC KERNEL DURATION [ns]",
    "DEVICE COMPUTE CB WAIT FRONT [ns]",
    "DEVICE COMPUTE CB RESERVE BACK [ns]",
    "DISPATCH TOTAL CQ CMD OP TIME [ns]",
    "DISPATCH GO SEND WAIT TIME [ns]",
)

#: Per-RISC kernel binary sizes (part of the report tail).
KERNEL_SIZE_COLUMNS: tuple[str, ...] = (
    "TENSIX DM 0 MAX KERNEL SIZE [B]",
    "TENSIX DM 1 MAX KERNEL SIZE [B]",
    "TENSIX COMPUTE 0 MAX KERNEL SIZE [B]",
    "TENSIX COMPUTE 1 MAX KERNEL SIZE [B]",
    "TENSIX COMPUTE 2 MAX KERNEL SIZE [B]",
    "ACTIVE ETH DM 0 MAX KERNEL SIZE [B]",
    "ACTIVE ETH DM 1 MAX KERNEL SIZE [B]",
    "IDLE ETH DM 0 MAX KERNEL SIZE [B]",
    "IDLE ETH DM 1 MAX KERNEL SIZE [B]",
)

#: Tail of the V2.1 header (the variant with program hash / cache hit columns).
REPORT_TAIL: tuple[str, ...] = (
    "METAL TRACE ID",
    "METAL TRACE REPLAY SESSION ID",
    "COMPUTE KERNEL SOURCE",
    "COMPUTE KERNEL HASH",
    "DATA MOVEMENT KERNEL SOURCE",
    "DATA MOVEMENT KERNEL HASH",
    "PROGRAM HASH",
    "PROGRAM CACHE HIT",
    *KERNEL_SIZE_COLUMNS,
    "PM IDEAL [ns]",
    "PM COMPUTE [ns]",
    "PM BANDWIDTH [ns]",
    "PM REQ I BW",
    "PM REQ O BW",
    "PM FPU UTIL (%)",
    "NOC UTIL (%)",
    "MULTICAST NOC UTIL (%)",
    "DRAM BW UTIL (%)",
    "ETH BW UTIL (%)",
    "NPE CONG IMPACT (%)",
)

#: Columns that only exist from V2.1 on; dropped for ``header="v2"``.
V21_ONLY_COLUMNS: frozenset[str] = frozenset(
    {
        "DEVICE ARCH",
        "AVAILABLE WORKER CORE COUNT",
        "PROGRAM HASH",
        "PROGRAM CACHE HIT",
        "MULTICAST NOC UTIL (%)",
        "ETH BW UTIL (%)",
    }
)

#: Report columns written as integers (nullable); the rest are text, except ``PM FPU UTIL (%)``.
INT_COLUMNS: frozenset[str] = frozenset(
    {
        "GLOBAL CALL COUNT",
        "DEVICE ID",
        "CORE COUNT",
        "AVAILABLE WORKER CORE COUNT",
        "HOST START TS",
        "HOST END TS",
        "HOST DURATION [ns]",
        "DEVICE FW START CYCLE",
        "DEVICE FW END CYCLE",
        "OP TO OP LATENCY [ns]",
        "OP TO OP LATENCY BR/NRISC START [ns]",
        "DEVICE FW DURATION [ns]",
        "DEVICE KERNEL DURATION [ns]",
        "DEVICE KERNEL DURATION DM START [ns]",
        "DEVICE KERNEL FIRST TO LAST START [ns]",
        "DEVICE BRISC KERNEL DURATION [ns]",
        "DEVICE NCRISC KERNEL DURATION [ns]",
        "DEVICE TRISC0 KERNEL DURATION [ns]",
        "DEVICE TRISC1 KERNEL DURATION [ns]",
        "DEVICE TRISC2 KERNEL DURATION [ns]",
        "METAL TRACE ID",
        "METAL TRACE REPLAY SESSION ID",
        "PROGRAM HASH",
        "PM IDEAL [ns]",
        "PM COMPUTE [ns]",
        "PM BANDWIDTH [ns]",
        *KERNEL_SIZE_COLUMNS,
    }
)

#: Per-tensor fields, in header order (shape fields get the ``_PAD[LOGICAL]`` suffix).
TENSOR_FIELDS: tuple[str, ...] = ("W", "Z", "Y", "X", "LAYOUT", "DATATYPE", "MEMORY")
SHAPE_FIELDS: tuple[str, ...] = ("W", "Z", "Y", "X")


def tensor_columns(prefix: str, index: int, *, pad_logical: bool = True) -> list[str]:
    """Column names of one tensor block, e.g. ``INPUT_0_W_PAD[LOGICAL]`` ... ``INPUT_0_MEMORY``."""
    out = []
    for field in TENSOR_FIELDS:
        name = f"{prefix}_{index}_{field}"
        if field in SHAPE_FIELDS and pad_logical:
            name += "_PAD[LOGICAL]"
        out.append(name)
    return out


def report_columns(n_inputs: int, n_outputs: int, *, header: str = "v2.1") -> list[str]:
    """The full ``ops_perf_results`` header for a run with the given tensor counts.

    Args:
        n_inputs: largest input-tensor count of the run.
        n_outputs: largest output-tensor count of the run.
        header: ``"v2.1"`` (default, newest) or ``"v2"`` (no DEVICE ARCH /
            AVAILABLE WORKER CORE COUNT / program-hash columns).
    """
    if header not in ("v2.1", "v2"):
        raise ValueError(f"header must be 'v2.1' or 'v2', not {header!r}")
    cols = list(REPORT_HEAD)
    for i in range(n_inputs):
        cols += tensor_columns("INPUT", i)
    for i in range(n_outputs):
        cols += tensor_columns("OUTPUT", i)
    cols += REPORT_TAIL
    if header == "v2":
        cols = [c for c in cols if c not in V21_ONLY_COLUMNS]
    return cols


#: Header of ``.logs/cpp_device_perf_report.csv`` (ttnn 0.81).
CPP_DEVICE_COLUMNS: tuple[str, ...] = (
    "GLOBAL CALL COUNT",
    "METAL TRACE ID",
    "METAL TRACE REPLAY SESSION ID",
    "DEVICE ID",
    "DEVICE ARCH",
    "OP NAME",
    "CORE COUNT",
    "AVAILABLE WORKER CORE COUNT",
    "DEVICE TRACE FIRMWARE DURATION [ns]",
    "DEVICE TRACE KERNEL DURATION [ns]",
    "DEVICE KERNEL FIRST TO LAST START [ns]",
    "DEVICE FW DURATION [ns]",
    "DEVICE FW START CYCLE",
    "DEVICE FW END CYCLE",
    "DEVICE KERNEL DURATION [ns]",
    "DEVICE KERNEL START CYCLE",
    "DEVICE KERNEL END CYCLE",
    "DEVICE KERNEL DURATION DM START [ns]",
    "DEVICE KERNEL DM START CYCLE",
    "DEVICE KERNEL DM END CYCLE",
    "DEVICE BRISC KERNEL DURATION [ns]",
    "DEVICE NCRISC KERNEL DURATION [ns]",
    "DEVICE TRISC0 KERNEL DURATION [ns]",
    "DEVICE TRISC1 KERNEL DURATION [ns]",
    "DEVICE TRISC2 KERNEL DURATION [ns]",
    "DEVICE ERISC KERNEL DURATION [ns]",
    "DEVICE QUASAR_DM KERNEL DURATION [ns]",
    "DEVICE QUASAR_DM KERNEL START CYCLE",
    "DEVICE QUASAR_DM KERNEL END CYCLE",
    "DEVICE QUASAR_NEO_TRISC KERNEL DURATION [ns]",
    "DEVICE QUASAR_NEO_TRISC KERNEL START CYCLE",
    "DEVICE QUASAR_NEO_TRISC KERNEL END CYCLE",
    "DEVICE DM FW DURATION [ns]",
    "DEVICE TRISC FW DURATION [ns]",
    "OP TO OP LATENCY [ns]",
    "OP TO OP LATENCY BR/NRISC START [ns]",
)

#: Line 2 of ``profile_log_device.csv`` (the 15-column variant; the profiler
#: writes ", " between names).
DEVICE_LOG_COLUMNS: tuple[str, ...] = (
    "PCIe slot",
    "core_x",
    "core_y",
    "RISC processor type",
    "timer_id",
    "time[cycles since reset]",
    "data",
    "run host ID",
    "trace id",
    "trace id counter",
    "zone name",
    "type",
    "source line",
    "source file",
    "meta data",
)


#: Header of ``.logs/rt_device_perf_report.csv`` (``TT_METAL_PROFILER_RT_QUICK=1``): a column
#: subset of cpp_device_perf_report's, only call count, device, duration, cycles and op-to-op
#: filled (tt-metal realtime_profiler_csv_report_handler.cpp).
RT_DEVICE_COLUMNS: tuple[str, ...] = CPP_DEVICE_COLUMNS[:8] + (  # the same 8 first columns
    "DEVICE KERNEL DURATION [ns]",
    "DEVICE KERNEL START CYCLE",
    "DEVICE KERNEL END CYCLE",
    "OP TO OP LATENCY [ns]",
    "OP TO OP LATENCY BR/NRISC START [ns]",
)
