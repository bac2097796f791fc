"""`ttdash run`: a workload with the device profiler on, watched live (or plainly, --no-tui)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

from ..model.errors import TraceError
from .options import RunOptions


def run_spec(opts: RunOptions):  # -> runner.RunSpec
    """Check the command and the profiler directory (TraceError: a one-line error, exit 2)."""
    from ..model.read.discover import resolve_profiler_dir
    from ..runner import RunSpec, WorkloadError, check_command

    argv = list(opts.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    root = resolve_profiler_dir(opts.dir).expanduser().absolute()
    try:
        check_command(argv)
    except WorkloadError as exc:
        raise TraceError(None, str(exc)) from None
    return RunSpec(argv=argv, root=root, mid_run_dump=opts.mid_run_dump, grace=opts.grace,
                   arch=opts.arch)


def live_summary(root: Path, snapshot=None) -> dict:
    """The live rows this run left in `root/.logs`, through the one live-source rule."""
    from ..live.feed import read_live

    snap = read_live(root, snapshot=snapshot)
    best = None
    if snap.model.total_rows:
        tot = snap.model.view().totals()
        best = {"path": str(snap.sources.chosen), "rows": int(snap.model.total_rows),
                "ops": tot["ops"], "device_time_us": tot["device_time_us"],
                "op_to_op_us": tot["op_to_op_us"]}
    return {"root": str(root), "best": best, "note": snap.sources.note()}


def summary_line(exited: str, summary: dict) -> str:
    from ..format import fmt_us
    from ..model.live.table import NO_ROWS

    best = summary["best"]
    if best is None:
        live = (f"no live rows in {Path(summary['root']) / '.logs'} ({NO_ROWS}); "
                "`ttdash doctor` checks this host")
    else:
        live = (f"{best['ops']:,} ops, device time {fmt_us(best['device_time_us'])}, gaps "
                f"{fmt_us(best['op_to_op_us'])} (live rows of {Path(best['path']).name})")
        if summary.get("note"):
            live += f"; {summary['note']}"
    return f"ttdash run: workload {exited} · {live} · {summary['root']}"


#: how long a workload that got a ctrl+c while starting has to end on it before it is sent again
START_INT_S = 2.0


def run_plain(spec, out=None) -> int:
    """`--no-tui`: the workload shares our terminal; then a one-line summary (stderr).
    Returns the workload's exit code. ctrl+c is passed on to it (SIGINT to its group); a second
    ctrl+c, SIGTERM or SIGHUP stop it (SIGTERM, then SIGKILL after the grace period)."""
    from ..model.analysis.ttlang import ENV_VARS, TtlangLog
    from ..model.read.text import clean_text
    from ..runner import Workload, WorkloadError, snapshot_logs

    out = sys.stderr if out is None else out
    spec.snapshot = snapshot_logs(spec.root)
    # tt-lang asked to print its kernel summaries: read the output (echoed as it comes) to
    # sum them up at the end; otherwise the workload has our terminal to itself
    tee = any(spec.env(capture=False).get(v) == "1" for v in ENV_VARS)
    ttlang = TtlangLog()
    w = Workload(spec.argv, env=spec.env(capture=tee), capture=tee, grace=spec.grace)
    interrupts = 0

    def on_int(signum, frame) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            w.send_signal(signal.SIGINT)
        else:
            w.terminate()

    def on_term(signum, frame) -> None:
        w.terminate()

    # The handlers are in place before the workload starts: a ctrl+c as soon as it is up (it
    # may print before this process runs again) reaches it, not our default KeyboardInterrupt,
    # which would leave it running.
    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig, handler in ((signal.SIGINT, on_int), (signal.SIGTERM, on_term),
                             (signal.SIGHUP, on_term)):
            old[sig] = signal.signal(sig, handler)
    try:
        try:
            w.start()
        except WorkloadError as exc:
            raise TraceError(None, str(exc)) from None
        if interrupts == 1:  # ctrl+c while it was being started: it has it now
            w.send_signal(signal.SIGINT)
        elif interrupts:
            w.terminate()
        if tee:
            _echo(w, ttlang)
        if interrupts == 1 and w.wait(timeout=START_INT_S) is None and interrupts == 1:
            # a ctrl+c passed on while the workload was starting can land before its own
            # handler is in and be lost (seen once in ~50 runs under load): it gets it again
            w.send_signal(signal.SIGINT)
        w.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        w.stop()  # the workload if still running, and whatever it left running
    code = w.exit_code if w.exit_code is not None else 1
    assert w.returncode is not None
    ended = w.exit_summary + (" (stopped by ttdash)" if w.left_running else "")
    try:
        summary = live_summary(spec.root, spec.snapshot)
        line = summary_line(ended, summary)
    except Exception as exc:  # the summary must never hide the workload's exit code
        line = (f"ttdash run: workload {ended} · "
                f"could not read {spec.root / '.logs'}: {type(exc).__name__}: {exc}")
    finally:
        spec.snapshot.close()
    try:
        sys.stdout.flush()
        out.write(" ".join(str(clean_text(line)).split()) + "\n")
        for extra in ttlang.summary_lines():
            out.write(f"ttdash run: {clean_text(extra)}\n")
        out.flush()
    except (BrokenPipeError, OSError):
        pass
    return code


def _echo(w, ttlang) -> None:  # (runner.Workload, model.ttlang.TtlangLog)
    """The captured workload's lines to our stdout/stderr as they come, each fed to `ttlang`,
    until it has exited and every line is out."""
    wake = threading.Event()
    w.listener = wake.set
    while True:
        lines, exited = w.drain()
        for ln in lines:
            stream = sys.stdout if ln.stream == "stdout" else sys.stderr
            try:
                stream.write(ln.text + "\n")
            except (BrokenPipeError, OSError):
                pass
            ttlang.feed(ln.text)
        if lines:
            sys.stdout.flush()
        if exited is not None:
            return
        wake.wait(0.2)
        wake.clear()


def run(opts: RunOptions) -> int:
    from .history import recorder

    spec = run_spec(opts)
    record = recorder(opts.store) if opts.record else None
    if opts.no_tui or not sys.stdout.isatty():
        started = time.time()
        code = run_plain(spec)
        if record is not None:
            record_new_reports(spec.root, started, record)
        return code
    from ..tui.run import run_tui

    return run_tui(spec, refresh=opts.refresh, poll=opts.poll, theme=opts.theme, record=record)


def record_new_reports(root: Path, since: float, record, out=None) -> None:
    """`run --no-tui --record`: add the complete reports written since `since` (one line each on
    stderr; a report that cannot be added is said, the workload's exit code stays)."""
    from ..model.read.discover import find_reports, report_is_complete
    from ..model.read.text import clean_text

    out = sys.stderr if out is None else out
    for r in find_reports(root):
        if r.mtime < since or not report_is_complete(r.path):
            continue
        try:
            line = record(r.path)
        except TraceError as exc:
            line = f"not recorded: {exc.oneline()}"
        out.write(f"ttdash run: {clean_text(line)}\n")
    out.flush()
