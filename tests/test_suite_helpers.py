"""The suite's own helpers. conftest.run_ttdash, the CLI runner: in this process by default, as
a child would run (the environment, `unset`, `cwd`, NO_COLOR, the timeout), a real process for
`run` and on request; what cli_inproc.run_main does so that a call sees what a fresh process
sees (descriptor 0, sys.__stderr__, logging, ttdash's caches, threads left running). And
conftest.assert_frame_equal: fails exactly where pandas' does."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import assert_frame_equal, run_ttdash


@pytest.fixture
def fake_main(monkeypatch):
    def put(fn):
        monkeypatch.setattr("ttdash.cli.main", fn)
    return put


def test_env_unset_and_cwd_for_the_call_only(fake_main, monkeypatch, tmp_path):
    monkeypatch.setenv("TTDASH_TEST_GONE", "here")
    monkeypatch.setenv("NO_COLOR", "1")  # a child of this process inherits it
    monkeypatch.delenv("TTDASH_TEST_ADDED", raising=False)
    here = os.getcwd()
    seen = {}

    def main(argv):
        seen.update(gone=os.environ.get("TTDASH_TEST_GONE"), no_color=os.environ.get("NO_COLOR"),
                    added=os.environ.get("TTDASH_TEST_ADDED"), cwd=os.getcwd(),
                    rel=open(argv[0]).read())
        return 3
    fake_main(main)
    (tmp_path / "f.txt").write_text("relative to cwd")
    r = run_ttdash("f.txt", env={"TTDASH_TEST_ADDED": "1"}, unset=["TTDASH_TEST_GONE"],
                   cwd=tmp_path)
    assert isinstance(r, subprocess.CompletedProcess) and r.returncode == 3
    assert seen == {"gone": None, "no_color": "1", "added": "1", "cwd": str(tmp_path),
                    "rel": "relative to cwd"}
    assert os.getcwd() == here and os.environ["TTDASH_TEST_GONE"] == "here"
    assert "TTDASH_TEST_ADDED" not in os.environ
    r = run_ttdash("f.txt", unset=["NO_COLOR"], cwd=tmp_path)
    assert seen["no_color"] is None and os.environ["NO_COLOR"] == "1"


def test_a_call_past_its_timeout_raises_as_subprocess_run_does(fake_main):
    release = threading.Event()
    fake_main(lambda argv: release.wait())
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            run_ttdash("x", timeout=0.3)
    finally:
        release.set()


def test_daemon_threads_left_running_fail_the_call(fake_main, monkeypatch):
    import cli_inproc

    monkeypatch.setattr(cli_inproc, "DAEMON_GRACE_S", 0.2)
    release = threading.Event()

    def main(argv):
        threading.Thread(target=release.wait, daemon=True, name="left-behind").start()
        return 0
    fake_main(main)
    try:
        with pytest.raises(AssertionError, match="left-behind"):
            run_ttdash("x")
    finally:
        release.set()


def test_a_non_daemon_thread_is_waited_for_as_at_interpreter_exit(fake_main):
    done = []

    def main(argv):
        def late():
            threading.Event().wait(0.3)
            print("after main", flush=True)
            done.append(1)
        threading.Thread(target=late).start()
        return 0
    fake_main(main)
    r = run_main()
    assert done == [1] and r.stdout == "after main\n" and not r.hung, r.describe()


def test_run_and_process_true_start_a_process(tmp_path):
    r = run_ttdash("run", "--no-tui", "--dir", str(tmp_path / "p"), "--", sys.executable, "-c",
                   "import os; print(os.getppid())")
    assert r.returncode == 0, r.stderr
    assert r.args[0] == sys.executable and int(r.stdout) != os.getpid()
    r = run_ttdash("--version", process=True)
    assert r.args[0] == sys.executable and r.stdout.startswith("ttdash ")


def test_descriptor_0_and_the_original_streams_are_the_calls(fake_main):
    seen = {}

    def main(argv):
        seen["fd0"] = os.readlink("/proc/self/fd/0")
        seen["same"] = (sys.__stdin__ is sys.stdin, sys.__stdout__ is sys.stdout,
                        sys.__stderr__ is sys.stderr)
        return 0
    fake_main(main)
    run_main()
    assert seen == {"fd0": os.devnull, "same": (True, True, True)}
    assert sys.__stderr__ is not sys.stderr or sys.__stderr__.fileno() == 2  # restored


def test_log_records_reach_stderr_as_in_a_process(fake_main):
    def main(argv):
        logging.getLogger("ttdash.live.watcher").warning("the watcher says %s", "so")
        logging.getLogger("ttdash.live.watcher").info("not shown")
        return 0
    fake_main(main)
    r = run_main()
    assert r.stderr == "the watcher says so\n", r.describe()


def test_ttdash_caches_are_those_of_a_fresh_process(tmp_path, real):
    """The arch registry is cached per user file path: a file changed between two calls is
    read again, as two processes would."""
    arches = tmp_path / "arches.toml"
    src = str(real / "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv")
    env = {"TTDASH_ARCHES": str(arches)}
    arches.write_text("[wormhole_b0]\ndram_gbps = 100\n")
    r = run_ttdash("report", src, "-f", "json", env=env)
    assert r.returncode == 0, r.stderr
    arches.write_text("[wormhole_new]\ndram_gbps = 100\n")  # lacks the other fields
    r = run_ttdash("report", src, "-f", "json", env=env)
    assert r.returncode == 2 and r.stderr == f"ttdash: {arches}: [wormhole_new] lacks " \
        "tflops_per_core\n", r.stderr


def _frame(**changes):
    cat = pd.Categorical(["a", None, "b", "a"], categories=["a", "b"])
    cols = {"op": cat, "us": [1.0, 2.5, np.nan, 4.0], "n": [1, 2, 3, 4],
            "s": ["x", None, "y", "z"]}
    return pd.DataFrame({**cols, **changes})


@pytest.mark.parametrize("change", [
    {},
    {"op": pd.Categorical(["a", None, "b", "b"], categories=["a", "b"])},  # a value
    {"op": pd.Categorical(["a", "a", "b", "a"], categories=["a", "b"])},  # a missing one
    {"op": pd.Categorical(["a", None, "b", "a"], categories=["b", "a"])},  # category order
    {"op": pd.Categorical.from_codes([0, -1, 1, 0], categories=["b", "a"])},  # same codes
    {"op": pd.Categorical(["a", None, "b", "a"], categories=["a", "b", "c"])},  # one more
    {"op": pd.Categorical(["a", None, "b", "a"], categories=["a", "b"], ordered=True)},
    {"op": pd.array(["a", None, "b", "a"], dtype=object)},  # not categorical
    {"us": [1.0, 2.5, np.nan, 4.5]},
    {"n": [1.0, 2.0, 3.0, 4.0]},
    {"s": ["x", None, "y", "w"]},
], ids=["same", "value", "missing", "order", "codes", "categories", "ordered", "object", "float",
        "dtype", "text"])
def test_frame_equality_fails_where_pandas_does(change):
    want, got = _frame(), _frame(**change)
    for a, b in ((got, want), (want, got)):
        try:
            pd.testing.assert_frame_equal(a, b)
            theirs = None
        except AssertionError as exc:
            theirs = exc
        try:
            assert_frame_equal(a, b)
            ours = None
        except AssertionError as exc:
            ours = exc
        assert (ours is None) == (theirs is None) == (not change), (ours, theirs)
    renamed = want.rename(columns={"op": "code"})
    with pytest.raises(AssertionError):
        assert_frame_equal(renamed, want)
    with pytest.raises(AssertionError):
        assert_frame_equal(want.iloc[::-1], want)
