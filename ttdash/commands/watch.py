"""`ttdash watch` and `ttdash demo`: a profiler directory followed live."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TextIO

from ..model.errors import TraceError
from ..schemas import SCHEMA_VERSION
from .options import DemoOptions, WatchOptions


def watch_state(root: Path, arch: str | None = None) -> dict:
    """The `watch --once` snapshot: runs found and the live rows so far (read-only); for a
    multi-host run's root (tt-run ranks), each rank's."""
    from ..health.telemetry import Telemetry
    from ..model.read.discover import TTRUN_DIR, find_ranks

    _listable(root, root)
    _listable(root / TTRUN_DIR)
    ranks = find_ranks(root)
    if not ranks:  # schemas/watch.schema.json
        return {"schema_version": SCHEMA_VERSION, **_one_state(root, arch),
                # the host's Tenstorrent devices now (sysfs; [] without one): temperature,
                # power, AICLK, throttling
                "telemetry": [r.as_dict() for r in Telemetry().read()]}
    states = [(rank, _one_state(folder, arch)) for rank, folder in ranks]
    return {"schema_version": SCHEMA_VERSION, "root": str(root), "exists": True,
            "runs": [{**run, "rank": rank} for rank, st in states for run in st["runs"]],
            "ranks": [{"rank": rank, "root": st["root"], "live": st["live"]}
                      for rank, st in states],
            "telemetry": [r.as_dict() for r in Telemetry().read()]}


def _listable(path: Path, root: Path | None = None) -> None:
    """TraceError naming `path` when it exists but cannot be listed (permissions, I/O): `--once`
    must not answer "empty" for what it could not read. A `root` that is missing may appear
    later (its state says so); one under a file never will."""
    try:
        with os.scandir(path):
            pass
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        if root is not None:
            raise TraceError(path, "not a directory") from None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None


def _one_state(root: Path, arch: str | None) -> dict:
    """One profiler dir's runs and live rows."""
    from ..live.feed import read_live
    from ..model.read.discover import find_reports, report_is_complete
    from ..report.header import facts_dict, timing_facts

    for sub in (".logs", "reports"):
        _listable(root / sub)
    snap = read_live(root, arch)
    view = snap.model.view()
    tot = view.totals()
    rows = int(snap.model.total_rows)
    if snap.skipped and not rows:
        path, line = snap.skipped_lines[0] if snap.skipped_lines else (root, None)
        raise TraceError(path, f"every row of the live log is malformed ({snap.skipped} skipped: "
                         "wrong number of fields or a repeated header)", line=line)
    return {
        "root": str(root), "exists": root.is_dir(),
        "runs": [{"path": str(r.path), "name": r.name, "timestamp": r.timestamp.isoformat(),
                  "size": r.size, "complete": report_is_complete(r.path)}
                 for r in find_reports(root)],
        "live": {"sources": [str(p) for p in snap.paths],
                 "shown": str(snap.sources.chosen) if snap.sources.chosen else None,
                 "not_counted": {str(p): n for p, n in snap.sources.ignored.items()},
                 "rows": rows, "ops": tot["ops"], "skipped_rows": snap.skipped,
                 "skipped_lines": [f"{p}:{ln}" for p, ln in snap.skipped_lines],
                 "device_time_us": tot["device_time_us"], "op_to_op_us": tot["op_to_op_us"],
                 "devices": view.trace.devices,
                 # never an arch nothing said (Wormhole's peaks are then only assumed)
                 "arch": view.trace.arch.name if rows and view.trace.arch_detected else None,
                 "arch_source": view.trace.arch_source if rows else None,
                 "clock_mhz": view.trace.clock_mhz,
                 "device_time_basis": view.trace.timing,
                 # what the TUI header and report's Time: line state (report.header)
                 "header": facts_dict(timing_facts(view)) if rows else None},
    }


def state_json(state: dict, out: TextIO, root: Path) -> None:
    """`watch --once` as JSON (schemas/watch.schema.json): the state itself."""
    json.dump(state, out, indent=None)
    out.write("\n")


def state_table(state: dict, out: TextIO, root: Path) -> None:
    """`watch --once` as plain lines: the folder, the live ops (each rank's), the runs."""
    from ..format import fmt_us
    from ..model.read.text import clean_text

    def live(part: dict) -> str:
        return (f"live: {part['live']['ops']} ops, device time "
                f"{fmt_us(part['live']['device_time_us'])}")

    head = f"{root}: {'exists' if state['exists'] else 'missing'}; " \
           f"{len(state['runs'])} report(s)"
    print(clean_text(head + ("" if "ranks" in state else f"; {live(state)}")), file=out)
    for part in state.get("ranks", []):
        print(clean_text(f"  rank {part['rank']} {live(part)}"), file=out)
    for r in state["runs"]:
        rank = f"rank {r['rank']}  " if "rank" in r else ""
        print(clean_text(f"  {rank}{r['timestamp']}  {r['path']}"
                         f"{'' if r['complete'] else ' (partial)'}"), file=out)


def watch(opts: WatchOptions) -> int:
    from ..model.read.discover import resolve_profiler_dir

    root = resolve_profiler_dir(opts.dir)
    if opts.once:
        from ..present.formats import write

        write("watch", opts.format, watch_state(root, opts.arch), sys.stdout, root)
        return 0
    from .common import no_terminal
    from .history import recorder

    record = recorder(opts.store) if opts.record else None
    if no_terminal() is not None:  # a pipe, a log file, a job: lines, not a screen
        from .lines import follow_lines

        return follow_lines(root, arch=opts.arch, poll=opts.poll, refresh=opts.refresh,
                            record=record)
    from ..tui.app import run_guarded
    from ..tui.watch import watch_app

    return run_guarded(watch_app(root, refresh=opts.refresh, poll=opts.poll, arch=opts.arch,
                                 theme=opts.theme, record=record))


def _check_demo_dir(path: Path) -> None:
    """demo --dir writes a whole simulated run: only into a new or empty directory, never over a
    real profiler directory or a file."""
    try:
        entries = next(os.scandir(path), None) if path.is_dir() else None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    if path.exists() and not path.is_dir():
        raise TraceError(path, "--dir: not a directory")
    if entries is not None:
        raise TraceError(path, "--dir: not empty; demo writes a simulated run and would mix it "
                         "with what is there (give a new or empty directory)")


def demo(opts: DemoOptions) -> int:
    from ..model import Trace, Window
    from ..sim import simulate_run

    temp = opts.dir is None
    if not temp:
        _check_demo_dir(Path(opts.dir))
    base = Path(tempfile.mkdtemp(prefix="ttdash-demo-")) if temp else Path(opts.dir)
    root = base / "generated" / "profiler" if temp else base
    root.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    kwargs = dict(n_ops=opts.ops, speed=opts.speed, arch=opts.arch, devices=opts.devices,
                  stop=stop)
    try:
        if opts.once:
            report = simulate_run(root, **kwargs)
            view = Trace.load(report).view(Window("all"))
            tot = view.totals()
            # "kept": false says the paths are gone (a temporary run is removed on exit;
            # --dir keeps it).
            doc = {"schema_version": SCHEMA_VERSION,  # schemas/demo.schema.json
                   "dir": str(root), "report": str(report), "kept": not temp,
                   "arch": view.trace.arch.name, "ops": tot["ops"],
                   "device_time_us": tot["device_time_us"], "op_to_op_us": tot["op_to_op_us"],
                   "signposts": int(len(view.trace.signposts))}
            json.dump(doc, sys.stdout)
            sys.stdout.write("\n")
            return 0
        from .common import no_terminal

        errors: list[BaseException] = []

        def writer() -> None:
            try:
                simulate_run(root, **kwargs)
            except BaseException as exc:  # shown by the watch status line
                errors.append(exc)

        thread = threading.Thread(target=writer, name="ttdash-demo-writer", daemon=True)
        thread.start()
        if no_terminal() is not None:  # the run as lines, until its report is whole
            from .lines import follow_lines

            def done(printer) -> bool:
                return not thread.is_alive() and (bool(printer.reports) or bool(errors))

            rc = follow_lines(root, stop=stop, until=done, what="ttdash demo")
            if errors and not isinstance(errors[0], Exception):
                raise errors[0]
            if errors:
                raise TraceError(root, f"the simulated run failed: {errors[0]}")
            return rc
        from ..tui.app import run_guarded
        from ..tui.watch import watch_app

        def cleanup() -> None:
            stop.set()
            # the writer first: a file it creates while rmtree runs would be left behind, and
            # after a lost terminal the process may be ended (os._exit) before `finally`
            thread.join(timeout=1.0)
            if temp:
                shutil.rmtree(base, ignore_errors=True)

        rc = run_guarded(watch_app(root, arch=None, theme=opts.theme), cleanup)
        stop.set()
        thread.join(timeout=5)
        return rc
    finally:
        stop.set()
        if temp:
            shutil.rmtree(base, ignore_errors=True)
