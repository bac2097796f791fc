"""The files the profiler writes besides the report, and the report writer itself.

* :func:`report_csv_text` / :func:`write_report_csv`: ``ops_perf_results_*.csv`` bytes;
* :func:`cpp_device_rows` / :func:`write_cpp_device_csv`: the live
  ``.logs/cpp_device_perf_report.csv`` rows of a report;
* :func:`profile_log_device_header` / :func:`profile_log_device_lines`: ``profile_log_device.csv``;
* :func:`infer_arch_from_clock`: the arch a report's FW cycles and durations point at.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

from .archspec import ARCHS, get_arch
from .columns import CPP_DEVICE_COLUMNS, DEVICE_LOG_COLUMNS, RT_DEVICE_COLUMNS

__all__ = [
    "report_csv_text",
    "write_report_csv",
    "infer_arch_from_clock",
    "cpp_device_rows",
    "write_cpp_device_csv",
    "rt_device_text",
    "profile_log_device_header",
    "profile_log_device_lines",
]


def report_csv_text(df: pd.DataFrame) -> str:
    """The report as the profiler writes it: no index, empty cells for missing, CRLF lines."""
    return df.to_csv(index=False, lineterminator="\r\n")


def write_report_csv(df: pd.DataFrame, path: str | PathLike[str]) -> Path:
    """Write ``df`` exactly like the profiler writes ``ops_perf_results_*.csv``."""
    p = Path(path)
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write(report_csv_text(df))
    return p


# --------------------------------------------------------------------------- live log views

_KNOWN_CLOCKS = {a.clock_mhz: a.name for a in ARCHS.values()}


def infer_arch_from_clock(df: pd.DataFrame) -> tuple[str | None, float | None]:
    """Infer (arch, clock MHz) from ``(FW END - FW START) * 1000 / FW DURATION [ns]``.

    Uses the median over rows with a positive FW duration and picks the nearest
    known clock (within 2%). Returns ``(None, None)`` if nothing can be inferred.
    """
    need = ("DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]")
    if any(c not in df.columns for c in need):
        return None, None
    s = pd.to_numeric(df[need[0]], errors="coerce").astype("float64")
    e = pd.to_numeric(df[need[1]], errors="coerce").astype("float64")
    d = pd.to_numeric(df[need[2]], errors="coerce").astype("float64")
    ok = (d > 0) & s.notna() & e.notna()
    if not ok.any():
        return None, None
    clock = float(np.median((e[ok] - s[ok]) * 1000.0 / d[ok]))
    best = min(_KNOWN_CLOCKS, key=lambda c: abs(c - clock))
    if abs(best - clock) / best > 0.02:
        return None, clock
    return _KNOWN_CLOCKS[best], clock


def cpp_device_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The ``.logs/cpp_device_perf_report.csv`` rows (ttnn 0.81 header) for a report.

    One row per device op (no signposts, no host ops), in report order, with the
    same ``GLOBAL CALL COUNT`` as the report and ``OP NAME`` filled (as under
    ``python -m tracy -r``). Kernel/DM start cycles are placed inside the FW
    window deterministically.
    """
    if "OP TYPE" in df.columns:
        sel = df["OP TYPE"].eq("tt_dnn_device").fillna(False).to_numpy(bool, copy=True)
    else:
        sel = np.ones(len(df), dtype=bool)
    if "DEVICE ID" in df.columns:
        sel = sel & df["DEVICE ID"].notna().to_numpy(bool)
    src = df.loc[sel]
    n = len(src)
    if "DEVICE ARCH" in src.columns and src["DEVICE ARCH"].notna().any():
        arch_name = src["DEVICE ARCH"].astype(object)
        clk_mhz = np.array([get_arch(str(x)).clock_mhz if isinstance(x, str) else np.nan for x in arch_name])
    else:
        name, _ = infer_arch_from_clock(src)
        arch_name = pd.Series([name] * n, index=src.index, dtype=object)
        clk_mhz = np.full(n, get_arch(name).clock_mhz if name else 1000.0)
    clk = clk_mhz / 1000.0

    def num(col: str) -> np.ndarray:
        if col not in src.columns:
            return np.full(n, np.nan)
        return pd.to_numeric(src[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)

    fw_s, fw_ns, k_ns, dm_ns = (
        num("DEVICE FW START CYCLE"),
        num("DEVICE FW DURATION [ns]"),
        num("DEVICE KERNEL DURATION [ns]"),
        num("DEVICE KERNEL DURATION DM START [ns]"),
    )
    lead = np.rint((fw_ns - k_ns).clip(0) * 0.55 * clk)
    k_s = fw_s + lead
    k_e = k_s + np.rint(k_ns * clk)
    dm_s = k_e - np.rint(dm_ns * clk)
    dm_fw = fw_ns - np.rint((fw_ns - k_ns).clip(0) * 0.3)
    trisc0 = num("DEVICE TRISC0 KERNEL DURATION [ns]")
    trisc_fw = np.where(np.isnan(trisc0), np.nan, fw_ns - np.rint((fw_ns - k_ns).clip(0) * 0.4))
    trace = num("METAL TRACE ID")
    traced = ~np.isnan(trace)

    out: dict[str, object] = {}

    def icol(values: np.ndarray) -> pd.arrays.IntegerArray:
        v = np.asarray(values, dtype="float64")
        mask = np.isnan(v)
        return pd.arrays.IntegerArray(np.where(mask, 0, v).astype(np.int64), mask)

    def copy(col: str):
        return icol(num(col))

    empty = icol(np.full(n, np.nan))
    out["GLOBAL CALL COUNT"] = copy("GLOBAL CALL COUNT")
    out["METAL TRACE ID"] = copy("METAL TRACE ID")
    out["METAL TRACE REPLAY SESSION ID"] = copy("METAL TRACE REPLAY SESSION ID")
    out["DEVICE ID"] = copy("DEVICE ID")
    out["DEVICE ARCH"] = arch_name.to_numpy(dtype=object)
    out["OP NAME"] = src["OP CODE"].to_numpy(dtype=object) if "OP CODE" in src.columns else np.full(n, np.nan, dtype=object)
    out["CORE COUNT"] = copy("CORE COUNT")
    out["AVAILABLE WORKER CORE COUNT"] = copy("AVAILABLE WORKER CORE COUNT")
    out["DEVICE TRACE FIRMWARE DURATION [ns]"] = icol(np.where(traced, fw_ns, np.nan))
    out["DEVICE TRACE KERNEL DURATION [ns]"] = icol(np.where(traced, k_ns, np.nan))
    out["DEVICE KERNEL FIRST TO LAST START [ns]"] = copy("DEVICE KERNEL FIRST TO LAST START [ns]")
    out["DEVICE FW DURATION [ns]"] = icol(fw_ns)
    out["DEVICE FW START CYCLE"] = icol(fw_s)
    out["DEVICE FW END CYCLE"] = copy("DEVICE FW END CYCLE")
    out["DEVICE KERNEL DURATION [ns]"] = icol(k_ns)
    out["DEVICE KERNEL START CYCLE"] = icol(k_s)
    out["DEVICE KERNEL END CYCLE"] = icol(k_e)
    out["DEVICE KERNEL DURATION DM START [ns]"] = icol(dm_ns)
    out["DEVICE KERNEL DM START CYCLE"] = icol(dm_s)
    out["DEVICE KERNEL DM END CYCLE"] = icol(k_e)
    for risc in ("BRISC", "NCRISC", "TRISC0", "TRISC1", "TRISC2", "ERISC"):
        out[f"DEVICE {risc} KERNEL DURATION [ns]"] = copy(f"DEVICE {risc} KERNEL DURATION [ns]")
    for q in ("QUASAR_DM", "QUASAR_NEO_TRISC"):
        out[f"DEVICE {q} KERNEL DURATION [ns]"] = empty.copy()
        out[f"DEVICE {q} KERNEL START CYCLE"] = empty.copy()
        out[f"DEVICE {q} KERNEL END CYCLE"] = empty.copy()
    out["DEVICE DM FW DURATION [ns]"] = icol(dm_fw)
    out["DEVICE TRISC FW DURATION [ns]"] = icol(trisc_fw)
    out["OP TO OP LATENCY [ns]"] = copy("OP TO OP LATENCY [ns]")
    out["OP TO OP LATENCY BR/NRISC START [ns]"] = copy("OP TO OP LATENCY BR/NRISC START [ns]")
    res = pd.DataFrame({c: out[c] for c in CPP_DEVICE_COLUMNS})
    res.index = range(n)
    return res


def write_cpp_device_csv(rows: pd.DataFrame, path: str | PathLike[str], *, append: bool = False) -> Path:
    """Write (or append, header only when the file is new) cpp_device_perf_report rows."""
    p = Path(path)
    new = not (append and p.exists() and p.stat().st_size > 0)
    with open(p, "a" if append else "w", newline="", encoding="utf-8") as fh:
        fh.write(rows.to_csv(index=False, header=new, lineterminator="\n"))
    return p


def rt_device_text(cpp_rows: pd.DataFrame, clock_mhz: float, *, dispatch_ns: float = 2_500.0) -> str:
    """``.logs/rt_device_perf_report.csv`` (header and rows) for cpp_device_perf_report rows,
    as the realtime profiler's quick mode writes it: the dispatch core's window around each
    program (``dispatch_ns`` before the kernel starts and after it ends: a few us above the
    classic duration), duration ``llround((end - start) / frequency)``, op-to-op from the same
    chip's previous end (0 on a chip's first row, blank when negative); trace ids, arch, op
    name and core counts left empty."""
    freq = clock_mhz / 1000.0  # cycles per ns
    lead = round(dispatch_ns * 0.6 * freq)
    tail = round(dispatch_ns * 0.4 * freq)
    lines = [",".join(RT_DEVICE_COLUMNS)]
    prev_end: dict[int, int] = {}
    cols = ["GLOBAL CALL COUNT", "DEVICE ID", "DEVICE KERNEL START CYCLE", "DEVICE KERNEL END CYCLE"]
    for gcc, dev, ks, ke in cpp_rows[cols].itertuples(index=False, name=None):
        start, end = int(ks) - lead, int(ke) + tail
        dur = int(np.floor((end - start) / freq + 0.5))
        gap = "0" if dev not in prev_end else (
            str(int(np.floor((start - prev_end[dev]) / freq + 0.5))) if start >= prev_end[dev] else "")
        prev_end[dev] = end
        lines.append(f"{int(gcc)},,,{int(dev)},,,,,{dur},{start},{end},{gap},")
    return "\n".join(lines) + "\n"


def profile_log_device_header(arch: str, freq_mhz: int | float, cores: int) -> str:
    """First two lines of ``profile_log_device.csv`` (each ending in a newline).

    Example: ``ARCH: wormhole_b0, CHIP_FREQ[MHz]: 1000, Max Compute Cores: 64``
    followed by the column line ``PCIe slot, core_x, core_y, ...``.
    """
    freq = int(freq_mhz) if float(freq_mhz).is_integer() else freq_mhz
    return f"ARCH: {arch}, CHIP_FREQ[MHz]: {freq}, Max Compute Cores: {cores}\n" + ", ".join(DEVICE_LOG_COLUMNS) + "\n"


_FW_SRC = "/opt/tt-metal/tt_metal/hw/firmware/src/tt-1xx/brisc.cc"
_KERNEL_SRC = "/opt/tt-metal/tt_metal/hw/firmware/src/tt-1xx/brisck.cc"


def profile_log_device_lines(cpp_rows: pd.DataFrame) -> list[str]:
    """Device marker lines (BRISC FW and kernel zones of core (1,1)) for cpp rows.

    Four lines per row, ``run host ID`` = GLOBAL CALL COUNT, ``PCIe slot`` = device.
    """
    lines: list[str] = []
    cols = ("DEVICE ID", "GLOBAL CALL COUNT", "DEVICE FW START CYCLE", "DEVICE FW END CYCLE",
            "DEVICE KERNEL START CYCLE", "DEVICE KERNEL END CYCLE", "METAL TRACE ID")
    for dev, gcc, fs, fe, ks, ke, tid in cpp_rows[list(cols)].itertuples(index=False, name=None):
        if pd.isna(fs) or pd.isna(fe):
            continue
        dev_s = "" if pd.isna(dev) else int(dev)
        tr = "" if pd.isna(tid) else int(tid)
        ks = fs if pd.isna(ks) else ks
        ke = fe if pd.isna(ke) else ke
        for cycle, zone, typ, timer, line, src in (
            (fs, "BRISC-FW", "ZONE_START", 61457, 412, _FW_SRC),
            (ks, "BRISC-KERNEL", "ZONE_START", 63326, 64, _KERNEL_SRC),
            (ke, "BRISC-KERNEL", "ZONE_END", 63326, 64, _KERNEL_SRC),
            (fe, "BRISC-FW", "ZONE_END", 61457, 412, _FW_SRC),
        ):
            lines.append(f"{dev_s},1,1,BRISC,{timer},{int(cycle)},0,{int(gcc)},{tr},{tr},{zone},{typ},{line},{src},\n")
    return lines
