"""Shared test fixtures: the real profiler files in ../shared (never copied into the repo)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
# Every ttdash the suite starts (in process, as a child, in tmux) caches its large traces here,
# never in the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="ttdash-test-cache-")
SHARED_REAL = ROOT.parent / "shared" / "fixtures" / "real"

# Bytecode is written (into the repo's and the venv's gitignored __pycache__) even where the
# environment says PYTHONDONTWRITEBYTECODE: without it every ttdash child recompiles ttdash
# (~0.07 s a start) and every pytest worker re-rewrites the test modules' asserts (~5 s); the
# fast tier spent 60 more CPU-seconds (458 vs 397). The modules imported before this line
# (this file's) are rewritten again at each run; every later one is cached.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


#: Test tiers (markers). `slow` is the union of the others plus tests marked slow by hand:
#: `pytest -m "not slow"` is the fast tier for day-to-day work; CI's newest-dependency pass
#: runs everything, the lowest-dependency pass everything but `terminal` (one `smoke` terminal
#: test still runs there), `oracle` and `wheel` (see .ci/run).
MARKERS = {
    "terminal": "drives the installed ttdash in a real terminal (tmux): set automatically for "
                "tests in test_tmux_*.py and tests that start a Tmux",
    "smoke": "the one real-terminal test the lowest-dependency pass keeps",
    "wheel": "builds and installs the wheel",
    "oracle": "runs tt-perf-report itself (the recorded outputs are replayed elsewhere)",
    "slow": "left out of the fast tier (set for terminal, wheel and oracle tests too). By hand "
            "on tests of 5 s and more whose point the fast tier checks on a smaller input: the "
            "large traces of the chunk-equivalence properties (chunked output on 1,872 ops, 5 "
            "s; chunked analysis of the two largest traces, 9 s) and the cache's hypothesis "
            "property over changed digits (9 s; single changed bytes stay fast), the history "
            "store killed at each write (10 s; the readers' own tests stay fast), the diffs "
            "of 100,000 ops a side (3-5 s each; the fast tier diffs the real files), the docs' "
            "PySpark snippet (a Spark session, ~40 s; the DuckDB queries stay fast)",
}
SLOW_TIERS = ("terminal", "wheel", "oracle")
#: Whole files left out of the fast tier: the hostile corpus (every bad input through every
#: command) and the hypothesis properties, minutes of CPU that day-to-day edits rarely move.
SLOW_FILES = ("test_hostile", "test_properties")


def pytest_configure(config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def _starts_tmux(item) -> bool:
    import inspect

    if item.module.__name__.startswith("test_tmux_") or "term_env" in item.fixturenames:
        return True
    try:
        return "Tmux(" in inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return False


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if _starts_tmux(item):
            item.add_marker(pytest.mark.terminal)
        if (any(item.get_closest_marker(m) for m in SLOW_TIERS)
                or item.module.__name__ in SLOW_FILES):
            item.add_marker(pytest.mark.slow)


def real_dir() -> Path:
    """../shared/fixtures/real; skip only when it is absent and CI is unset (fail in CI)."""
    if not SHARED_REAL.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED_REAL} is missing in CI")
        pytest.skip("../shared/fixtures/real is not beside the repo")
    return SHARED_REAL



def run_ttdash(*args: str, env: dict[str, str] | None = None, unset: Iterable[str] = (),
               cwd: str | Path | None = None, timeout: float = 180, process: bool = False
               ) -> subprocess.CompletedProcess[str]:
    """`ttdash ARGS` as a child process would run it: the suite's one CLI runner. `env` is added
    to this process's environment, `unset` names are removed from it, `cwd` is the working
    directory; stdin is /dev/null, stdout and stderr are files (not terminals); a call running
    past `timeout` raises subprocess.TimeoutExpired.

    In this process by default (`cli_inproc.run_main`: `ttdash.cli.main(argv)` with descriptors
    0-2 and sys.std* as a child has them, the environment and working directory set for the
    call and restored after, exit codes as the interpreter makes them), which spares ~1-2 s of
    imports per call. `process=True` starts `python -m ttdash` for what only a process shows:
    signals, its own memory peak, interpreter start-up and shutdown, a stdin that is not
    /dev/null, calls from several threads at once (run_main takes one at a time). `ttdash run`
    is always a process: it makes its process a child subreaper for good and handles
    SIGINT/SIGTERM/SIGHUP for its workload only in the main thread (run_main calls `main` in
    another). An in-process call that leaves daemon threads running fails (a process would have
    ended them): give it process=True."""
    if process or (args and str(args[0]) == "run"):
        drop = set(unset)
        e = {k: v for k, v in os.environ.items() if k not in drop}
        e.update(env or {})
        return subprocess.run([sys.executable, "-m", "ttdash", *args], capture_output=True,
                              text=True, env=e, cwd=cwd, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    from cli_inproc import run_main

    removed = {k: os.environ.pop(k) for k in set(unset) if k in os.environ}
    # run_main takes NO_COLOR away for its hostile cases; a child of this process inherits it
    kept = {"NO_COLOR": os.environ["NO_COLOR"]} if "NO_COLOR" in os.environ else {}
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        r = run_main(*args, env={**kept, **(env or {})}, timeout=timeout)
    finally:
        os.chdir(here)
        os.environ.update(removed)
    if r.hung:
        raise subprocess.TimeoutExpired(r.cmd, timeout, r.stdout, r.stderr)
    assert not r.threads_left, (f"`ttdash {' '.join(map(str, args))}` left threads running "
                                f"{r.threads_left}: run it with process=True")
    return subprocess.CompletedProcess(r.cmd, r.returncode, r.stdout, r.stderr)


def assert_frame_equal(got, want) -> None:
    """pd.testing.assert_frame_equal(got, want), fast on categorical columns. pandas compares
    those twice: value by value in Python (1-2 s for a wide trace), then by categories (in
    order) and codes; the first cannot fail when the second passes, so only the second is made
    here (with the dtype check), and the other columns go through pandas as they are."""
    import numpy as np
    import pandas as pd

    assert isinstance(got, pd.DataFrame) and isinstance(want, pd.DataFrame), (type(got),
                                                                               type(want))
    pd.testing.assert_index_equal(got.columns, want.columns, obj="DataFrame.columns")
    cats = [i for i, t in enumerate(want.dtypes) if isinstance(t, pd.CategoricalDtype)]
    rest = [i for i in range(want.shape[1]) if i not in set(cats)]
    pd.testing.assert_frame_equal(got.iloc[:, rest], want.iloc[:, rest])
    for i in cats:
        a, b = got.iloc[:, i], want.iloc[:, i]
        where = f"column {want.columns[i]!r}"
        assert a.dtype == b.dtype, (where, a.dtype, b.dtype)
        pd.testing.assert_index_equal(a.cat.categories, b.cat.categories, obj=where)
        np.testing.assert_array_equal(a.cat.codes.to_numpy(), b.cat.codes.to_numpy(),
                                      err_msg=where)


REPORT_FIXTURES = [
    "tt-perf-report__bh20_oft.csv",
    "tt-perf-report__bh20_oft_integral_image_trace.csv",
    "tt-perf-report__bh_64_clip_encoder_1.csv",
    "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
    "tt-perf-report__bh_invalid_trace_decode_window.csv",
    "tt-perf-report__bh_p100_dlv3.csv",
    "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv",
    "tt-perf-report__wh_clip_encoder_2.csv",
    "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv",
    "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv",
]
#: The real files a per-file test reads in the fast tier: each header era (the oldest
#: SEG_ENCODER, V1, V2, V2.1 with counters), 8 devices with CCL ops, 2 devices, corrupt rows and
#: replay. The other three (wh_clip_encoder_2, bh_64_clip_encoder_1, bh_p100_dlv3: single
#: devices of eras listed here) are the larger costs; both CI passes read every file.
FAST_REAL = (
    "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv",
    "tt-perf-report__bh20_oft_integral_image_trace.csv",
    "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv",
    "tt-perf-report__bh20_oft.csv",
    "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
    "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv",
    "tt-perf-report__bh_invalid_trace_decode_window.csv",
)
def bundled_themes() -> list[str]:
    """The themes ttdash ships (ttdash/themes/*.toml), by name."""
    from importlib import resources

    return sorted(p.name.removesuffix(".toml") for p in
                  resources.files("ttdash").joinpath("themes").iterdir()
                  if p.name.endswith(".toml"))


#: The bundled themes (the default first) and Textual's own; a per-theme test runs the first
#: in the fast tier, every one in CI.
THEMES = ("ttdash-dark", *(t for t in bundled_themes() if t != "ttdash-dark"), "textual-dark")


def tiered(values: Iterable, fast: Iterable) -> list:
    """`values` as pytest parameters, those not in `fast` marked slow: the fast tier runs a
    parametrised check on a few cases that cover its kinds, both CI passes on every case."""
    keep = list(fast)
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]


def each_real_file(names: Iterable[str] = REPORT_FIXTURES) -> list:
    """REPORT_FIXTURES (or `names`) as parameters, FAST_REAL in the fast tier."""
    return tiered(names, FAST_REAL)


def each_theme() -> list:
    return tiered(THEMES, THEMES[:1])


def pairwise(firsts: Iterable, seconds: Iterable, fast: Iterable | None = None) -> list:
    """Every (first, second) pair as a parameter; the fast tier runs a rotation, first k with
    second k mod n (only the firsts in `fast`, when given): each first once and, with enough
    firsts, each second too. CI runs every pair."""
    a, b = list(firsts), list(seconds)
    keep = a if fast is None else list(fast)
    return [pytest.param(x, y) if j == i % len(b) and x in keep else
            pytest.param(x, y, marks=pytest.mark.slow)
            for i, x in enumerate(a) for j, y in enumerate(b)]


@pytest.fixture
def real() -> Path:
    return real_dir()


async def wait_until(pilot, predicate, timeout: float = 20.0, state=None) -> None:
    """Let a Textual app run until `predicate()` holds (watchers and workloads have threads)
    and the screen has drawn the status line its last change asked for (it is drawn right
    after the message that changed the state, so a test can land between the two).
    `state()`: what the failure message shows of the app when the deadline passes."""
    deadline = time.monotonic() + timeout
    while not predicate() or getattr(pilot.app.screen, "status_pending", False):
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached"
                                 + (f" (state: {state()})" if state is not None else ""))
        await pilot.pause(0.05)


def screen_console(app) -> Console:
    """A recording console that has printed everything on screen, as a terminal would get it."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False,
                      safe_box=False)
    console.print(app.screen._compositor.render_update(full=True,
                                                       screen_stack=app._background_screens))
    return console


def screen_text(app) -> tuple[str, str]:
    """(plain, styled) text of everything on screen, as a terminal would get it."""
    console = screen_console(app)
    return console.export_text(styles=False), console.export_text(styles=True)


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """Cache every file (not only large ones) into tmp_path/cache; returns the traces dir
    (tests/test_cache.py, tests/test_analysis_cache.py)."""
    from ttdash.model.read import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TTDASH_NO_CACHE", raising=False)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    return tmp_path / "cache" / "ttdash" / "traces"
