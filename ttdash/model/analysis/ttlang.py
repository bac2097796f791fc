"""tt-lang's kernel summaries in a workload's output (`TTLANG_PERF_DUMP=1`: `=== PERF SUMMARY ===`;
`TTLANG_AUTO_PROFILE=1`: `THREAD SUMMARY` and the compute/memory-bound verdict), read line by
line as `ttdash run` gets them. Formats: tenstorrent/tt-lang python/ttl/_src/perf_summary.py
(`format_summary`) and auto_profile.py (`print_profile_report`); both print to stdout, the
auto-profile report of a call before its PERF SUMMARY.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ENV_VARS = ("TTLANG_PERF_DUMP", "TTLANG_AUTO_PROFILE")

_PROGRAM = re.compile(r"^--- Program (\d+)(?: \((.+)\))? ---$")
_HEAD = re.compile(r"^arch: (\S+), freq: ([\d.]+) MHz")
_GRID = re.compile(r"^grid: (\d+)x(\d+) \((\d+) (?:cores|nodes)\)$")
_DURATION = re.compile(r"^duration: ([\d,]+) cycles \(([\d.]+) (us|ms)\)$")
_DRAM = re.compile(r"^DRAM (read|write):\s+([\d.]+) (B|KB|MB)\s+\((\d+) transfers\)$")
_BW = re.compile(r"^effective BW:\s+([\d.]+) GB/s")
_THREAD = re.compile(r"^(\S+)\s+(?:\[(.+?)\]\s+)?([\d,]+) cycles \(\s*(\d+) ops\) "
                     r"\[\s*([\d.]+)%\]$")
_BOUND = re.compile(r"^(\d+)% (compute|memory) bound$")
_UNITS = {"B": 1, "KB": 1024, "MB": 1024 * 1024}


@dataclass
class Program:
    """One program of a PERF SUMMARY (tt-lang names only the kernel it was called for)."""

    program_id: int
    name: str | None
    freq_mhz: float | None = None
    grid: tuple[int, int] | None = None
    cores: int | None = None
    duration_cycles: int | None = None
    duration_us: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    bandwidth_gbs: float | None = None
    bound: str | None = None  # "80% memory bound", "94% compute bound", "balanced"


@dataclass
class TtlangLog:
    """Feed it the workload's lines; `programs` are the named kernels' runs in order."""

    programs: list[Program] = field(default_factory=list)
    threads: dict[str, tuple[str | None, int]] = field(default_factory=dict)  # last THREAD SUMMARY
    _seen: set[int] = field(default_factory=set)
    _current: Program | None = None
    _freq: float | None = None
    _in_threads: bool = False
    _bound: str | None = None  # the auto-profile verdict waiting for its PERF SUMMARY

    def feed(self, line: str) -> bool:
        """One output line (ANSI already stripped); True when a summary changed."""
        text = line.strip()
        if text == "THREAD SUMMARY":
            self._in_threads, self.threads = True, {}
            return False
        if text.startswith("=== PERF SUMMARY"):
            self._in_threads = False
            return False
        if self._in_threads and (m := _THREAD.match(text)):
            self.threads[m.group(1)] = (m.group(2), int(m.group(3).replace(",", "")))
            return True
        if m := _BOUND.match(text):
            self._bound = f"{m.group(1)}% {m.group(2)} bound"
            return self._attach_bound()
        if text == "Perfectly balanced!":
            self._bound = "balanced"
            return self._attach_bound()
        if m := _HEAD.match(text):
            self._freq = float(m.group(2))
            return False
        if m := _PROGRAM.match(text):
            self._in_threads = False
            pid, name = int(m.group(1)), m.group(2)
            # every call prints every program in the log dir again: each program once, and
            # only the one tt-lang names (the kernel called; the others are ttnn ops)
            if pid in self._seen or not name:
                self._current = None
                return False
            self._seen.add(pid)
            self._current = Program(pid, name, freq_mhz=self._freq)
            self.programs.append(self._current)
            self._attach_bound()
            return True
        p = self._current
        if p is None:
            return False
        if m := _GRID.match(text):
            p.grid, p.cores = (int(m.group(1)), int(m.group(2))), int(m.group(3))
        elif m := _DURATION.match(text):
            p.duration_cycles = int(m.group(1).replace(",", ""))
            p.duration_us = float(m.group(2)) * (1000.0 if m.group(3) == "ms" else 1.0)
            if p.freq_mhz:  # the exact figure from the cycles, not the rounded print
                p.duration_us = p.duration_cycles / p.freq_mhz
        elif m := _DRAM.match(text):
            size = float(m.group(2)) * _UNITS[m.group(3)]
            if m.group(1) == "read":
                p.dram_read_bytes = size
            else:
                p.dram_write_bytes = size
        elif m := _BW.match(text):
            p.bandwidth_gbs = float(m.group(1))
        elif not text:
            self._current = None
            return True
        else:
            return False
        return True

    def _attach_bound(self) -> bool:
        """The verdict belongs to the next named program; to the last one if it came after."""
        target = self._current
        if self._bound is None or target is None or target.bound is not None:
            return False
        target.bound, self._bound = self._bound, None
        return True

    def summary_lines(self) -> list[str]:
        """A line per kernel name: its last run's figures, and the first run against the last
        one when it ran more than once (a baseline and the final version in one command)."""
        by_name: dict[str, list[Program]] = {}
        for p in self.programs:
            by_name.setdefault(str(p.name), []).append(p)
        out = []
        for name, runs in by_name.items():
            last = runs[-1]
            bits = []
            if last.grid:
                bits.append(f"{last.grid[0]}x{last.grid[1]} grid")
            if last.duration_us is not None:
                bits.append(_us(last.duration_us))
            if last.dram_read_bytes is not None or last.dram_write_bytes is not None:
                bits.append(f"DRAM {_mb(last.dram_read_bytes)} read, "
                            f"{_mb(last.dram_write_bytes)} write")
            if last.bandwidth_gbs is not None:
                bits.append(f"{last.bandwidth_gbs:g} GB/s")
            if last.bound:
                bits.append(last.bound)
            first = runs[0]
            if len(runs) > 1 and first.duration_us and last.duration_us:
                bits.append(f"{len(runs)} runs: first {_us(first.duration_us)} -> last "
                            f"{_us(last.duration_us)} "
                            f"({first.duration_us / last.duration_us:.2f}x)")
            out.append(f"tt-lang {name}: " + ", ".join(bits))
        if self._bound is not None and self.threads and not self.programs:  # auto-profile alone
            thread, (kernel, cycles) = max(self.threads.items(), key=lambda t: t[1][1])
            out.append(f"tt-lang{f' {kernel}' if kernel else ''}: {self._bound}, longest thread "
                       f"{thread} {cycles:,} cycles")
        return out


def _us(us: float) -> str:
    return f"{us / 1000:,.2f} ms" if us >= 1000 else f"{us:,.1f} us"


def _mb(n: float | None) -> str:
    return "?" if n is None else f"{n / (1024 * 1024):,.1f} MB"
