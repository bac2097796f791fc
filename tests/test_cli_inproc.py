"""The in-process runner of the hostile tests (cli_inproc.run_main) shows what a process shows.

Each test puts a stand-in for `ttdash.cli.main` in place and checks one thing a child process
would have shown (its exit code, stderr, what reached its file descriptors); the real `main` is
compared with a real process in test_hostile.py::test_report_installed_binary.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings

import pytest
from cli_inproc import run_main


@pytest.fixture
def fake_main(monkeypatch):
    def put(fn):
        monkeypatch.setattr("ttdash.cli.main", fn)
    return put


def test_exit_code_stdout_stderr(fake_main):
    def main(argv):
        print("out", *argv)
        sys.stderr.write("err\n")
        return 2
    fake_main(main)
    r = run_main("a", "b")
    assert (r.returncode, r.stdout, r.stderr, r.hung) == (2, "out a b\n", "err\n", False)


def test_the_real_main_usage_error():
    r = run_main("report", "--no-such-option")
    assert r.returncode == 2 and r.stdout == "", r.describe()
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("ttdash"), r.describe()


@pytest.mark.parametrize(("code", "status", "err"), [(None, 0, ""), (3, 3, ""),
                                                     ("bye", 1, "bye\n")])
def test_system_exit(fake_main, code, status, err):
    def main(argv):
        raise SystemExit(code)
    fake_main(main)
    r = run_main()
    assert (r.returncode, r.stderr) == (status, err)


def test_uncaught_exception_is_a_traceback_and_exit_1(fake_main):
    def main(argv):
        raise RuntimeError("boom")
    fake_main(main)
    r = run_main()
    assert r.returncode == 1
    assert r.stderr.startswith("Traceback") and "RuntimeError: boom" in r.stderr


def test_streams_are_files_on_fds_1_and_2(fake_main):
    seen = {}

    def main(argv):
        seen["tty"] = (sys.stdout.isatty(), sys.stderr.isatty())
        seen["fds"] = (sys.stdout.fileno(), sys.stderr.fileno())
        seen["stdin"] = sys.stdin.read()
        print("python")
        sys.stdout.flush()
        os.write(1, b"C code\n")
        os.write(2, b"pyarrow log\n")
        return 0
    fake_main(main)
    r = run_main()
    assert seen == {"tty": (False, False), "fds": (1, 2), "stdin": ""}
    assert (r.stdout, r.stderr) == ("python\nC code\n", "pyarrow log\n")


def test_unencodable_output_fails_as_in_a_process(fake_main):
    """A lone surrogate cannot be written to a real stdout (a StringIO would take it)."""
    def main(argv):
        print("\ud800")
        return 0
    fake_main(main)
    r = run_main()
    assert r.returncode == 1 and "UnicodeEncodeError" in r.stderr, r.describe()


def test_environment_applied_then_restored(fake_main, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    seen = {}

    def main(argv):
        seen.update(no_color=os.environ.get("NO_COLOR"), term=os.environ.get("TERM"))
        return 0
    fake_main(main)
    run_main(env={"TERM": "dumb-for-this-call"})
    assert seen == {"no_color": None, "term": "dumb-for-this-call"}
    assert os.environ["NO_COLOR"] == "1"
    assert os.environ.get("TERM") != "dumb-for-this-call"


def test_warnings_and_thread_errors_reach_stderr(fake_main):
    def main(argv):
        warnings.warn("shown", UserWarning, stacklevel=1)
        warnings.warn("hidden outside __main__", DeprecationWarning, stacklevel=1)
        t = threading.Thread(target=lambda: 1 / 0)
        t.start()
        t.join()
        return 0
    fake_main(main)
    r = run_main()
    assert r.returncode == 0
    assert "UserWarning: shown" in r.stderr and "hidden" not in r.stderr, r.stderr
    assert "ZeroDivisionError" in r.stderr, r.stderr


def test_a_hang_is_reported(fake_main):
    release = threading.Event()

    def main(argv):
        release.wait()
        return 0
    fake_main(main)
    try:
        r = run_main(timeout=0.3)
    finally:
        release.set()
    assert r.hung and r.returncode == -9 and r.seconds >= 0.3


def test_peak_rss_is_this_process_s(fake_main):
    import resource

    fake_main(lambda argv: 0)
    r = run_main()
    assert r.peak_rss == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > 0
