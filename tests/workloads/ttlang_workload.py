"""A fake tt-lang workload for `ttdash run` tests: prints what tt-lang prints with
TTLANG_AUTO_PROFILE=1 and TTLANG_PERF_DUMP=1 (THREAD SUMMARY, the bound verdict, PERF SUMMARY;
text written here after tt-lang's auto_profile.py and perf_summary.py formats, numbers made
up) for a baseline and a faster final version of one kernel, each call printing every program
of the log dir again, the earlier ones unnamed as tt-lang does."""

from __future__ import annotations

RULE = "=" * 100


def thread_summary(kernel: str, rows: list[tuple[str, int, int]], verdict: str) -> str:
    longest = max(c for _, c, _ in rows)
    lines = [RULE, "THREAD SUMMARY", RULE]
    for thread, cycles, ops in rows:
        info = f" [{kernel}_{'compute' if thread.startswith('TRISC') else 'dm'}]"
        lines.append(f"  {thread:<12}{info:>20} {cycles:>10,} cycles ({ops:>3} ops) "
                     f"[{100.0 * cycles / longest:>5.1f}%]")
    lines += ["", f"  {verdict}", "  Compute ├──────●─────┤ Memory", "", RULE, ""]
    return "\n".join(lines)


def program(pid: int, name: str | None, cycles: int, read_mb: float, write_mb: float,
            unit: str = "cores") -> str:
    us = cycles / 1000
    dur = f"{cycles:,} cycles ({us / 1000:.2f} ms)" if us >= 1000 else f"{cycles:,} cycles ({us:.1f} us)"
    bw = (read_mb + write_mb) * 1024 * 1024 / (cycles / 1e9) / 1e9
    return "\n".join([
        f"--- Program {pid}{f' ({name})' if name else ''} ---",
        f"grid: 8x8 (64 {unit})",
        f"duration: {dur}",
        f"  DRAM read:      {f'{read_mb:.1f} MB':>10}  (8192 transfers)",
        f"  DRAM write:     {f'{write_mb:.1f} MB':>10}  (4096 transfers)",
        f"  effective BW:   {bw:.1f} GB/s (total payload / duration)",
        "  transfer size:  2.0 KB (uniform)",
        "  kernel time:",
        f"    BRISC    {cycles - 900:,} cycles ({(cycles - 900) / 1000:.1f} us)",
        "",
    ])


def perf_summary(programs: list[str]) -> str:
    return "\n".join(["=== PERF SUMMARY ===",
                      "arch: wormhole_b0, freq: 1000 MHz, max_compute_cores: 64",
                      f"programs: {len(programs)} (listed in dispatch order, includes ttnn ops)",
                      "", *programs, "=== CB FLOW GRAPH ===", "{}"])


def main() -> None:
    print("[Auto-profile] baseline")
    print(thread_summary("add", [("NCRISC", 181_944, 82), ("BRISC", 96_512, 41),
                                 ("TRISC_1", 92_880, 41)], "80% memory bound"))
    print(perf_summary([program(1024, "eltwise_add", 184_320, 16.0, 8.0)]))
    print("[Auto-profile] final")
    print(thread_summary("add", [("NCRISC", 120_002, 82), ("TRISC_1", 92_880, 41)],
                         "23% memory bound"))
    # the second call prints both programs again: the first one unnamed, in "nodes" wording
    print(perf_summary([program(1024, None, 184_320, 16.0, 8.0, unit="nodes"),
                        program(1026, "eltwise_add", 122_880, 16.0, 8.0, unit="nodes")]))


if __name__ == "__main__":
    main()
