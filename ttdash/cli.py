"""ttdash command line: report, open, watch, demo, diff, run.

Exit codes: 0 ok; 1 regression found by `diff --fail-above`; 2 bad input or usage; 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .model.errors import TraceError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _window_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("window (which ops to analyse)")
    g.add_argument("--signpost", metavar="NAME[#K]|N",
                   help="only the region after signpost NAME (its K-th occurrence, default 1st) "
                        "or after the N-th signpost, up to the next signpost")
    g.add_argument("--start-signpost", metavar="A", help="ops after the first signpost named A "
                   "(tt-perf-report's option)")
    g.add_argument("--end-signpost", metavar="B", help="ops before the first signpost named B "
                   "(its second occurrence when A == B)")
    g.add_argument("--ignore-signposts", action="store_true",
                   help="analyse the whole file (default: like tt-perf-report, only the ops after "
                        "the first signpost named like the last signpost)")
    p.add_argument("--arch", metavar="ARCH",
                   help="override the detected arch: grayskull_e75, grayskull_e150, wormhole_b0, "
                        "blackhole_p100, blackhole_p150 (or an alias: wormhole, blackhole, p100, "
                        "p150, e150, ...; add your own in ~/.config/ttdash/arches.toml)")
    p.add_argument("--per-device", action="store_true",
                   help="one row per device per op (default: merge devices like tt-perf-report: "
                        "CCL ops averaged, others the slowest device)")


def _output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of "
                   "stdout; refuses to replace an existing file without --force")
    p.add_argument("--force", action="store_true", help="with --output: replace FILE if it exists")


def write_output(args: argparse.Namespace, render) -> None:
    """Run `render(stream)` into stdout, or into --output FILE written atomically."""
    import io

    from .report.export import write_atomic

    if not getattr(args, "output", None):
        render(sys.stdout)
        return
    buf = io.StringIO()
    render(buf)
    write_atomic(args.output, buf.getvalue(), force=args.force)


def build_parser() -> Parser:
    p = Parser(prog="ttdash", description="Terminal dashboard for Tenstorrent profiler output "
               "(ops_perf_results CSVs and generated/profiler directories).",
               epilog="Exit codes: 0 ok, 1 regression (diff --fail-above), 2 bad input or usage.")
    p.add_argument("--version", action="version", version=f"ttdash {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    r = sub.add_parser("report", help="print one trace's op table (table, csv, json, markdown)",
                       description="Print the per-op analysis of one trace, with tt-perf-report "
                       "1.4.1's numbers. PATH is an ops_perf_results CSV or a profiler directory "
                       "(its newest report).")
    r.add_argument("path", metavar="PATH", help="CSV file or profiler/report directory")
    r.add_argument("--format", "-f", choices=("table", "csv", "json", "markdown"),
                   default="table", help="output format (default: table; plain when stdout is "
                   "not a terminal or NO_COLOR is set)")
    r.add_argument("--top", type=int, metavar="N", help="only the N ops with the largest share "
                   "of total time, largest first")
    _output_args(r)
    _window_args(r)

    o = sub.add_parser("open", help="interactive view of one trace",
                       description="Open one trace (a CSV, or a profiler directory's newest "
                       "report) in the interactive dashboard. Shows the whole trace unless a "
                       "window option is given.")
    o.add_argument("path", metavar="PATH", help="CSV file or profiler/report directory")
    o.add_argument("--theme", help="theme name (ttdash-dark, ttdash-light, ttdash-ansi, any "
                   "Textual theme, or yours in ~/.config/ttdash/themes/)")
    _window_args(o)

    w = sub.add_parser("watch", help="follow a profiler directory live",
                       description="Follow a profiler directory while a run writes it: the live "
                       ".logs op table, then the full report when it appears.")
    w.add_argument("dir", nargs="?", metavar="DIR", help="profiler directory (default: "
                   "$TT_METAL_PROFILER_DIR, $TT_METAL_HOME/generated/profiler, "
                   "./generated/profiler)")
    w.add_argument("--poll", type=float, metavar="SECONDS", help="use polling every SECONDS "
                   "instead of inotify (NFS and other filesystems without change events)")
    w.add_argument("--refresh", type=float, default=0.5, metavar="SECONDS",
                   help="UI refresh interval (default 0.5)")
    w.add_argument("--once", action="store_true", help="print the current state and exit")
    w.add_argument("--format", "-f", choices=("json", "table"), default="json",
                   help="output of --once (default json)")
    w.add_argument("--theme", help="theme name")
    w.add_argument("--arch", help="override the detected arch")

    d = sub.add_parser("demo", help="simulate a profiled run and watch it (no hardware needed)",
                       description="Write a realistic simulated profiler run (live .logs appends, "
                       "then the final report) into a temporary directory and watch it.")
    d.add_argument("--ops", type=int, default=2000, metavar="N", help="ops in the run (default "
                   "2000)")
    d.add_argument("--speed", type=float, default=1.0, metavar="X", help="speed-up factor "
                   "(default 1.0; 0 = as fast as possible)")
    d.add_argument("--dir", metavar="DIR", help="write the run here instead of a temp directory")
    d.add_argument("--arch", default="wormhole_b0", help="simulated arch (default wormhole_b0)")
    d.add_argument("--devices", type=int, default=1, help="simulated devices (default 1)")
    d.add_argument("--once", action="store_true", help="run the simulation without the UI and "
                   "print the final report summary (json)")
    d.add_argument("--theme", help="theme name")

    df = sub.add_parser("diff", help="compare a baseline and a candidate trace",
                        description="Compare two traces: ops aligned, per-op, per-op-code and "
                        "per-signpost deltas. A CI gate with --fail-above.")
    df.add_argument("baseline", metavar="A", help="baseline CSV or directory")
    df.add_argument("candidate", metavar="B", help="candidate CSV or directory")
    df.add_argument("--format", "-f", choices=("tui", "table", "csv", "json", "markdown"),
                    default=None, help="output (default: the interactive view on a terminal, "
                    "table otherwise)")
    df.add_argument("--fail-above", type=float, metavar="PCT", help="exit 1 when the candidate "
                    "is slower than the baseline by more than PCT percent")
    df.add_argument("--metric", choices=("device", "wall"), default="wall",
                    help="total compared by --fail-above (default wall = device + gaps)")
    df.add_argument("--top", type=int, default=10, metavar="N", help="regressions and "
                    "improvements listed (default 10)")
    df.add_argument("--theme", help="theme name")
    _output_args(df)
    _window_args(df)

    rn = sub.add_parser("run", help="run a workload with the device profiler on and watch it live",
                        usage="%(prog)s [OPTIONS] -- COMMAND [ARGS...]",
                        description="Run COMMAND with the device profiler on "
                        "(TT_METAL_DEVICE_PROFILER=1, TT_METAL_PROFILER_CPP_POST_PROCESS=1, "
                        "TT_METAL_PROFILER_DIR=DIR) and watch DIR live, with the workload's "
                        "output in a panel (o). ctrl+c or q while it runs ask before stopping it. "
                        "Without a terminal (or with --no-tui) its output passes through and a "
                        "one-line summary of the live rows follows on stderr. With ttnn 0.71 or "
                        "later, `from ttdash.hooks.ttnn import install; install()` in the workload "
                        "also streams ttnn's real-time profiler (no device profiler dump needed).",
                        epilog="Exit status: the workload's (128+N if killed by signal N); 2 for "
                        "usage errors. Example: ttdash run -- python model.py --batch 8")
    rn.add_argument("--dir", metavar="DIR", help="profiler directory (default: "
                    "$TT_METAL_PROFILER_DIR, $TT_METAL_HOME/generated/profiler, "
                    "./generated/profiler)")
    rn.add_argument("--mid-run-dump", action="store_true", help="also set "
                    "TT_METAL_PROFILER_MID_RUN_DUMP=1 (device profiler rows during the run, "
                    "not only at device close)")
    rn.add_argument("--no-tui", action="store_true", help="no interactive view: pass the "
                    "output through, then print a summary (the default when stdout is not a "
                    "terminal)")
    rn.add_argument("--refresh", type=float, default=0.5, metavar="SECONDS",
                    help="UI refresh interval (default 0.5)")
    rn.add_argument("--poll", type=float, metavar="SECONDS", help="poll DIR every SECONDS "
                    "instead of inotify")
    rn.add_argument("--grace", type=float, default=5.0, metavar="SECONDS", help="when stopping "
                    "the workload, seconds between SIGTERM and SIGKILL (default 5)")
    rn.add_argument("--theme", help="theme name")
    rn.add_argument("--arch", help="override the detected arch")
    rn.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                    help="the workload, e.g. -- python model.py")
    return p


def window_from(args: argparse.Namespace, trace, default: str = "default") -> "object":
    from .model import Window

    if args.signpost:
        return Window("region", region=trace.find_signpost(args.signpost))
    if args.start_signpost or args.end_signpost:
        return Window("range", start=args.start_signpost, end=args.end_signpost)
    if args.ignore_signposts:
        return Window("all")
    return Window(default)


def load_view(path: str, args: argparse.Namespace, columns: str = "analysis",
              default_window: str = "default"):
    from .model import Trace
    from .model.discover import resolve_trace_path

    trace = Trace.load(resolve_trace_path(path), arch=args.arch, columns=columns)
    return trace.view(window_from(args, trace, default_window), merge=not args.per_device)


def cmd_report(args: argparse.Namespace) -> int:
    from .report.single import render

    if args.top is not None and args.top <= 0:
        raise TraceError(None, "--top must be a positive number")
    view = load_view(args.path, args)
    color = (args.format == "table" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
             and not args.output)
    write_output(args, lambda out: render(view, args.format, out, top=args.top, color=color))
    return EXIT_OK


def cmd_open(args: argparse.Namespace) -> int:
    from .tui.app import run_open

    # Interactive: the whole trace by default (signposts are navigable rows), unlike `report`.
    view = load_view(args.path, args, columns="all", default_window="all")
    return run_open(view, theme=args.theme)


def cmd_watch(args: argparse.Namespace) -> int:
    from .tui.watch import run_watch

    return run_watch(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from .tui.watch import run_demo

    return run_demo(args)


def cmd_diff(args: argparse.Namespace) -> int:
    from .report.diff import run_diff

    return run_diff(args)


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import prepare_run, run_plain

    spec = prepare_run(args)
    if args.poll is not None and args.poll <= 0:
        raise TraceError(None, "--poll must be a positive number of seconds")
    if args.no_tui or not sys.stdout.isatty():
        return run_plain(spec)
    from .tui.run import run_tui

    return run_tui(spec, refresh=args.refresh, poll=args.poll, theme=args.theme)


COMMANDS = {"report": cmd_report, "open": cmd_open, "watch": cmd_watch, "demo": cmd_demo,
            "diff": cmd_diff, "run": cmd_run}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return COMMANDS[args.command](args)
    except TraceError as exc:
        sys.stderr.write(f"ttdash: {exc.oneline()}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `ttdash report ... | head`: the reader went away; not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
