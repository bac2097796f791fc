"""tt-lang's kernel summaries in `ttdash run` (issue #15.6): PERF SUMMARY / THREAD SUMMARY
blocks parsed from the workload's output into the run screen's panel and `--no-tui`'s summary,
a kernel run twice shown as its first run against its last."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, run_ttdash, wait_until
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.model.analysis.ttlang import TtlangLog
from ttdash.runner import Workload, profiler_env
from ttdash.tui.run import run_app

PY = sys.executable
WORKLOAD = ROOT / "tests" / "workloads" / "ttlang_workload.py"
BASELINE_VS_FINAL = ("tt-lang eltwise_add: 8x8 grid, 122.9 us, DRAM 16.0 MB read, 8.0 MB write, "
                     "204.8 GB/s, 23% memory bound, 2 runs: first 184.3 us -> last 122.9 us "
                     "(1.50x)")


def output() -> list[str]:
    return subprocess.run([PY, str(WORKLOAD)], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_programs_parsed_once_each_with_their_verdict():
    log = TtlangLog()
    changed = [log.feed(line) for line in output()]
    assert any(changed)
    assert [(p.program_id, p.name) for p in log.programs] == [(1024, "eltwise_add"),
                                                             (1026, "eltwise_add")]
    first, last = log.programs
    assert (first.grid, first.cores, first.duration_cycles) == ((8, 8), 64, 184_320)
    assert first.duration_us == 184.32  # from the cycles and the clock, not the rounded print
    assert first.dram_read_bytes == 16 * 1024 * 1024 and first.bandwidth_gbs == 136.5
    assert (first.bound, last.bound) == ("80% memory bound", "23% memory bound")
    assert log.threads["NCRISC"] == ("add_dm", 120_002)  # the last THREAD SUMMARY
    assert log.summary_lines() == [BASELINE_VS_FINAL]


def test_auto_profile_alone_and_unrelated_text():
    log = TtlangLog()
    for line in ["THREAD SUMMARY", "  NCRISC   [rd]  1,000 cycles (  3 ops) [100.0%]",
                 "  TRISC_1  [cmp]   400 cycles (  2 ops) [ 40.0%]", "",
                 "  Perfectly balanced!", "--- Program 7 ---", "grid: 9x9 (81 cores)"]:
        log.feed(line)
    assert log.programs == []  # an unnamed program is a ttnn op, not the kernel
    assert log.summary_lines() == ["tt-lang rd: balanced, longest thread NCRISC 1,000 cycles"]
    quiet = TtlangLog()
    for line in ["50% done", "duration: 5 cycles (0.0 us)", "grid: 1x1 (1 cores)"]:
        assert not quiet.feed(line)
    assert quiet.summary_lines() == []


def test_no_tui_echoes_the_output_and_sums_the_kernels_up(tmp_path):
    r = run_ttdash("run", "--no-tui", "--dir", str(tmp_path / "p"), "--", PY, str(WORKLOAD),
                   env={"TTLANG_PERF_DUMP": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == output()  # every line echoed, in order
    assert r.stderr.strip().splitlines()[-1] == f"ttdash run: {BASELINE_VS_FINAL}"
    plain = run_ttdash("run", "--no-tui", "--dir", str(tmp_path / "q"), "--", PY, str(WORKLOAD),
                       unset=["TTLANG_PERF_DUMP", "TTLANG_AUTO_PROFILE"])
    assert plain.returncode == 0 and plain.stdout.splitlines() == output()
    assert "tt-lang" not in plain.stderr  # not asked: the output is not read


async def test_run_screen_panel(tmp_path):
    root = tmp_path / "p"
    w = Workload([PY, str(WORKLOAD)], env=profiler_env(root, unbuffered=True))
    app = run_app(root, w, refresh=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        panel = screen.query_one("#ttlang")
        await wait_until(pilot, lambda: screen.exit_summary is not None
                         and len(screen.ttlang.programs) == 2)
        await pilot.pause()
        assert panel.display and str(panel.render()) == BASELINE_VS_FINAL


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.sampled_from(output()),  # real lines, and real lines with text spliced in
    st.tuples(st.sampled_from(output()), st.integers(0, 60), st.text(max_size=5)).map(
        lambda t: t[0][:t[1]] + t[2] + t[0][t[1]:])), max_size=120))
def test_any_output_never_breaks_the_parser(lines):
    log = TtlangLog()
    for line in lines:
        log.feed(line)
    for text in log.summary_lines():  # every line it makes is one line of text
        assert text.startswith("tt-lang") and "\n" not in text
