"""Run many tt-perf-report command lines for the price of one start: ``python oracle_batch.py
JOBS.json`` imports tt-perf-report (pandas, matplotlib: ~1 s of each run's CPU) once, then runs
each job in a child forked from that state, as a fresh ``python ARGV`` would run after its
imports: its own working directory (a scratch one, deleted after), stdin from /dev/null,
stdout and stderr to files, its exit code the child's. Two jobs run at a time.

JOBS.json: a list of argv lists (``["-m", MODULE, ...]`` or ``["-c", CODE, ...]``, as
`oracle.execute` runs them). Prints a JSON list of {returncode, stdout, stderr}, in order.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import sys
import tempfile
import traceback

import tt_perf_report.perf_report  # noqa: F401  (the imports every job shares)

PARALLEL = 2


def _run(argv: list[str]) -> int:
    """Run one job in this (forked) process; its exit code, as the interpreter would give."""
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's path first, as -m does
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            raise ValueError(f"not -m or -c: {argv[:1]}")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - what an uncaught exception does to a process
        traceback.print_exc()
        return 1
    return 0


def _child(argv: list[str], out: str, err: str) -> None:
    cwd = tempfile.mkdtemp(prefix="tt-perf-report-")
    try:
        os.chdir(cwd)
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            new = os.open(path, flags, 0o600)
            os.dup2(new, fd)
            os.close(new)
        code = _run(argv)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    os._exit(code)


def main(jobs_path: str) -> int:
    jobs = json.loads(open(jobs_path, encoding="utf-8").read())
    scratch = tempfile.mkdtemp(prefix="oracle-batch-")
    files = [(os.path.join(scratch, f"{i}.out"), os.path.join(scratch, f"{i}.err"))
             for i in range(len(jobs))]
    codes: dict[int, int] = {}
    running: dict[int, int] = {}  # pid: job
    try:
        for i, argv in enumerate(jobs):
            while len(running) >= PARALLEL:
                pid, status = os.wait()
                codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    _child(argv, *files[i])
                finally:
                    os._exit(70)  # only if the child's set-up itself failed
            running[pid] = i
        while running:
            pid, status = os.wait()
            codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
        results = []
        for i, (out, err) in enumerate(files):
            with open(out, encoding="utf-8", newline=None) as fo, \
                    open(err, encoding="utf-8", errors="replace", newline=None) as fe:
                results.append({"returncode": codes[i], "stdout": fo.read(),
                                "stderr": fe.read()})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
