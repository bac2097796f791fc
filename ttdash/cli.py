"""ttdash command line: report, open, watch, demo, diff, run, doctor, history, mcp, serve.

Exit codes: 0 ok; 1 regression found by `diff --fail-above` or `history check --fail-above` (or a
failed `doctor` check); 2 bad input or usage; 3 faster than expected (`diff --fail-below`); 130
interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from . import __version__
from .argtypes import NOT_UTF8, path_arg, shown, text_error
from .cliargs import (
    EXIT_BAD_INPUT,
    Parser,
    _cache_arg,
    _output_args,
    _record_args,
    _window_args,
    arch_name,
    device_count,
    finite_float,
    history_parser,
    id_range,
    non_negative_float,
    ops_count,
    port_number,
    positive_float,
    positive_int,
    store_uri,
)
from .memory import return_freed_memory
from .model.columns import (
    DEFAULT_METRIC,
    METRIC_NAMES,
    MIN_MATCH_RATE,
    SUMMARY_GROUP_BY,
)
from .model.errors import TraceError
from .present import formats
from .report.choices import ADVICE_MODES, DEFAULT_RANK, RANK_WORDS

if TYPE_CHECKING:
    from .commands.options import OutputOptions, WindowOptions

EXIT_OK, EXIT_REGRESSION = 0, 1
#: what --refresh means since the live refresh adapts to its cost (ttdash/live/pacer.py)
REFRESH_HELP = ("the longest new rows wait for the screen (default 0.5): rows are shown as "
                "they come, a burst coalesced into refreshes as far apart as their cost needs "
                "(at most this)")


def build_parser() -> Parser:
    p = Parser(prog="ttdash", description="Terminal dashboard for Tenstorrent profiler output "
               "(ops_perf_results CSVs and generated/profiler directories).",
               epilog="Exit codes: 0 ok, 1 regression (diff --fail-above), 2 bad input or usage, "
               "3 faster than expected (diff --fail-below).")
    p.add_argument("--version", action="version", version=f"ttdash {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    r = sub.add_parser("report", help="print one trace's op table (table, csv, json, markdown)",
                       description="Print the per-op analysis of one trace, with tt-perf-report "
                       "1.4.1's numbers. PATH is an ops_perf_results CSV or a profiler directory "
                       "(its newest report).")
    r.add_argument("path", metavar="PATH", nargs="+", type=path_arg, help="CSV file or "
                   "profiler/report directory; several CSVs: the reports of one multi-host run, "
                   "merged as tt-perf-report merges them (device ids offset per file, IDs "
                   "numbered through)")
    r.add_argument("--format", "-f", choices=formats.choices("report"),
                   default="table", help="output format (default: table; plain when stdout is "
                   "not a terminal or NO_COLOR is set). " + formats.choices_help("report"))
    r.add_argument("--top", type=positive_int, metavar="N", help="only the N ops with the "
                   "most device time (or --rank-by), largest first")
    r.add_argument("--rank-by", choices=tuple(RANK_WORDS), default=DEFAULT_RANK,
                   help="what --top ranks by: " + "; ".join(
                       f"{k}: {v}" + (" (default)" if k == DEFAULT_RANK else "")
                       for k, v in RANK_WORDS.items()).replace("%", "%%"))
    r.add_argument("--id-range", type=id_range, metavar="A-B", help="only the ops with IDs "
                   "A to B (also A- or -B), as tt-perf-report: the first one's gap dropped, "
                   "shares of the total over these ops")
    r.add_argument("--no-host-ops", action="store_true", help="leave host fallback ops out "
                   "(shares of the total over the rest, as tt-perf-report)")
    r.add_argument("--min-percentage", type=non_negative_float, metavar="PCT", help="hide ops "
                   "under PCT%% of the total (totals still count them; tt-perf-report only "
                   "greys them)")
    r.add_argument("--raw-op-codes", action="store_true", help="op codes as in the CSV, without "
                   "the size/config tt-perf-report appends (csv and json always have them raw)")
    r.add_argument("--print-signposts", action="store_true", help="list every signpost in the "
                   "summary (default: the first 6)")
    r.add_argument("--summary", action="store_true", help="tt-perf-report's summary instead "
                   "of the op table: ops grouped (--group-by), device time and share, FLOPs %% "
                   "min/max/mean/std/weighted mean per group")
    r.add_argument("--group-by", choices=SUMMARY_GROUP_BY, default=SUMMARY_GROUP_BY[0],
                   help="--summary groups: op code, op code and input 0 memory (default, as "
                   "tt-perf-report), or op category")
    r.add_argument("--advice", choices=ADVICE_MODES, default=ADVICE_MODES[0],
                   help="the advice after the ops (host fallbacks, high op-to-op gaps and the "
                   "tracing saving, matmul rules): summary groups it (per op code, the largest "
                   "gaps, per rule with the time at stake; default), full lists every entry as "
                   "tt-perf-report does, none leaves it out. JSON always has every entry and "
                   "the summary")
    r.add_argument("--no-advice", dest="advice", action="store_const", const="none",
                   help="the same as --advice none")
    _output_args(r)
    _window_args(r)

    o = sub.add_parser("open", help="interactive view of one trace",
                       description="Open one trace (a CSV, or a profiler directory's newest "
                       "report) in the interactive dashboard. Shows the whole trace unless a "
                       "window option is given.")
    o.add_argument("path", metavar="PATH", type=path_arg,
                   help="CSV file or profiler/report directory")
    o.add_argument("--theme", help="theme name (ttdash-dark, ttdash-light, ttdash-ansi, any "
                   "Textual theme, or yours in ~/.config/ttdash/themes/)")
    _window_args(o)

    w = sub.add_parser("watch", help="follow a profiler directory live",
                       description="Follow a profiler directory while a run writes it: the live "
                       ".logs op table, then the full report when it appears.")
    w.add_argument("dir", nargs="?", metavar="DIR", type=path_arg, help="profiler directory "
                   "(default: $TT_METAL_PROFILER_DIR, $TT_METAL_HOME/generated/profiler, "
                   "./generated/profiler)")
    w.add_argument("--poll", type=positive_float, metavar="SECONDS",
                   help="use polling every SECONDS instead of inotify (NFS and other filesystems "
                   "without change events)")
    w.add_argument("--refresh", type=positive_float, default=0.5, metavar="SECONDS",
                   help=REFRESH_HELP)
    w.add_argument("--once", action="store_true", help="print the current state and exit")
    w.add_argument("--format", "-f", choices=formats.choices("watch"), default="json",
                   help="output of --once (default json)")
    w.add_argument("--theme", help="theme name")
    w.add_argument("--arch", type=arch_name, help="override the detected arch")
    _record_args(w)
    _cache_arg(w)

    d = sub.add_parser("demo", help="simulate a profiled run and watch it (no hardware needed)",
                       description="Write a realistic simulated profiler run (live .logs appends, "
                       "then the final report) into a temporary directory and watch it.")
    d.add_argument("--ops", type=ops_count, default=2000, metavar="N",
                   help="ops in the run (default 2000)")
    d.add_argument("--speed", type=non_negative_float, default=1.0, metavar="X",
                   help="speed-up factor (default 1.0; 0 = as fast as possible)")
    d.add_argument("--dir", metavar="DIR", type=path_arg,
                   help="write the run here instead of a temp directory")
    d.add_argument("--arch", default="wormhole_b0", help="simulated arch (default wormhole_b0)")
    d.add_argument("--devices", type=device_count, default=1, help="simulated devices (default 1)")
    d.add_argument("--once", action="store_true", help="run the simulation without the UI and "
                   "print the final report summary (json)")
    d.add_argument("--theme", help="theme name")

    df = sub.add_parser("diff", help="compare a baseline and a candidate trace",
                        description="Compare two traces: ops aligned, per-op, per-op-code and "
                        "per-signpost deltas, what changed between paired ops (the cause) and "
                        "around the runs. A CI gate with --fail-above / --fail-below.",
                        epilog="Exit codes: 0 ok, 1 regression (--fail-above), 2 bad input or "
                        "usage or a comparison that cannot be trusted, 3 faster than expected "
                        "(--fail-below).")
    df.add_argument("baseline", metavar="A", nargs="?", type=path_arg,
                    help="baseline CSV or directory")
    df.add_argument("candidate", metavar="B", nargs="?", type=path_arg,
                    help="candidate CSV or directory")
    df.add_argument("--baseline", dest="baseline_runs", nargs="+", metavar="A", type=path_arg,
                    help="several runs of the baseline (instead of A): the gate compares the "
                    "mean total against the run-to-run spread (bootstrap 95%% CI); the first run "
                    "is aligned op by op")
    df.add_argument("--candidate", dest="candidate_runs", nargs="+", metavar="B", type=path_arg,
                    help="several runs of the candidate (instead of B)")
    df.add_argument("--format", "-f", choices=formats.choices("diff"),
                    default=None, help="output (default: the interactive view on a terminal, "
                    "table otherwise)")
    df.add_argument("--fail-above", type=finite_float, metavar="PCT",
                    help="exit 1 when the candidate is slower than the baseline by more than PCT "
                    "percent on --metric; exit 2 (fail closed) when the totals cannot be trusted "
                    f"(archs differ, under {MIN_MATCH_RATE * 100:.0f}%% of ops matched, gaps or "
                    "valid timings missing on one side)")
    df.add_argument("--fail-below", type=non_negative_float, metavar="PCT",
                    help="exit 3 when the candidate is faster than the baseline by more than PCT "
                    "percent on --metric: the target is out of date (as tt-metal's "
                    "check_device_perf fails a run that beats its expected time by more than "
                    "the margin)")
    df.add_argument("--min-delta-us", type=non_negative_float, metavar="US",
                    help="an absolute floor: a change smaller than US microseconds on --metric "
                    "never fails --fail-above or --fail-below, whatever its percentage")
    df.add_argument("--metric", choices=tuple(METRIC_NAMES), default=DEFAULT_METRIC,
                    help="total compared: steady = device + dispatch gaps (default; host pauses "
                    "left out), device, wall = device + every gap, pauses = host pauses only")
    df.add_argument("--allow-arch-mismatch", action="store_true",
                    help="let --fail-above compare traces of different archs")
    df.add_argument("--top", type=positive_int, default=10, metavar="N", help="regressions and "
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
    rn.add_argument("--dir", metavar="DIR", type=path_arg, help="profiler directory (default: "
                    "$TT_METAL_PROFILER_DIR, $TT_METAL_HOME/generated/profiler, "
                    "./generated/profiler)")
    rn.add_argument("--mid-run-dump", action="store_true", help="also set "
                    "TT_METAL_PROFILER_MID_RUN_DUMP=1 (device profiler rows during the run, "
                    "not only at device close)")
    rn.add_argument("--no-tui", action="store_true", help="no interactive view: pass the "
                    "output through, then print a summary (the default when stdout is not a "
                    "terminal)")
    rn.add_argument("--refresh", type=positive_float, default=0.5, metavar="SECONDS",
                    help=REFRESH_HELP)
    rn.add_argument("--poll", type=positive_float, metavar="SECONDS", help="poll DIR every SECONDS "
                    "instead of inotify")
    rn.add_argument("--grace", type=non_negative_float, default=5.0, metavar="SECONDS",
                    help="when stopping the workload, seconds between SIGTERM and SIGKILL "
                    "(default 5)")
    rn.add_argument("--theme", help="theme name")
    rn.add_argument("--arch", type=arch_name, help="override the detected arch")
    _record_args(rn)
    rn.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                    help="the workload, e.g. -- python model.py")
    dr = sub.add_parser("doctor", help="check this host: PCIe link, HugePages, driver, sensors, "
                        "environment",
                        description="Check what the Tenstorrent tuning guides ask for when "
                        "throughput is half what it should be: each Tenstorrent PCI device's "
                        "link speed and width, 1 GiB HugePages, the tt-kmd driver, temperature, "
                        "power and AICLK, ARCH_NAME, TT_METAL_HOME and the profiler variables. "
                        "Read-only (sysfs, procfs, the environment; never the device). Exit "
                        "status 1 when a check fails, else 0.")
    dr.add_argument("--format", "-f", choices=formats.choices("doctor"), default="table",
                    help="output format (default table)")
    dr.add_argument("--smi-snapshot", metavar="FILE", type=path_arg, help="also check the "
                    "boards in a tt-smi snapshot (`tt-smi -s` JSON: sensors read through the "
                    "device, which doctor itself never opens)")
    _output_args(dr)
    history_parser(sub)
    m = sub.add_parser("mcp", help="a Model Context Protocol server on stdio, for agents",
                       description="Serve ttdash's analyses (traces, diffs, gates, the run "
                       "history, doctor, a live directory) as MCP tools on stdin/stdout, with the "
                       "numbers of the JSON outputs (needs the mcp extra: pip install "
                       "'ttdash[mcp]').")
    m.add_argument("--store", metavar="PATH|URI", type=store_uri, help="the history tools' "
                   "store (default $TTDASH_HISTORY, else $XDG_DATA_HOME/ttdash/history)")
    sv = sub.add_parser("serve", help="`open` in a web browser (textual-serve)",
                        description="Serve the interactive view of one trace as a web page, one "
                        "session per page load, for hosts without an SSH terminal (needs the "
                        "serve extra: pip install 'ttdash[serve]').")
    sv.add_argument("path", metavar="PATH", type=path_arg, help="CSV file or profiler/report "
                    "directory (its newest report)")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                    "127.0.0.1: this machine only; 0.0.0.0 serves every network)")
    sv.add_argument("--port", type=port_number, default=8000, help="TCP port (default 8000)")
    sv.add_argument("--theme", help="theme name")
    sv.add_argument("--max-sessions", type=positive_int, default=4, metavar="N",
                    help="browser sessions at once (default 4); the one over is refused")
    sv.add_argument("--export-dir", metavar="DIR", type=path_arg, help="the one directory the "
                    "sessions' exports (`e`) write into, by file name only (default: exports "
                    "off)")
    _window_args(sv)
    return p


# ------------------------------------------------------------------ argv -> typed options
def _window(a: argparse.Namespace) -> WindowOptions:
    from .commands.options import WindowOptions

    return WindowOptions(signpost=a.signpost, start_signpost=a.start_signpost,
                         end_signpost=a.end_signpost, perf_report_window=a.perf_report_window,
                         replay=a.replay, steady_state=a.steady_state,
                         per_device=a.per_device, arch=a.arch,
                         pause_above_us=a.pause_above)


def _out(a: argparse.Namespace) -> OutputOptions:
    from .commands.options import OutputOptions

    return OutputOptions(output=a.output, force=a.force)


def options(a: argparse.Namespace):
    """The typed options of the parsed command (what the commands take)."""
    from .commands import options as o

    if a.command == "report":
        if a.format == "perfetto" and (a.summary or a.top or a.min_percentage is not None):
            Parser(prog="ttdash report").error(
                "--format perfetto exports every op of the window: --summary, --top and "
                "--min-percentage apply to the tables")
        try:  # a format registered for report but not its summary: refused, not the table
            formats.writer("summary" if a.summary else "report", a.format)
        except formats.Unregistered as exc:
            Parser(prog="ttdash report").error(str(exc))
        return o.ReportOptions(path=tuple(a.path), format=a.format, top=a.top,
                               rank_by=a.rank_by, window=_window(a), out=_out(a),
                               advice=a.advice, id_range=a.id_range,
                               no_host_ops=a.no_host_ops, min_percentage=a.min_percentage,
                               raw_op_codes=a.raw_op_codes, print_signposts=a.print_signposts,
                               summary=a.group_by if a.summary else None)
    if a.command == "open":
        return o.OpenOptions(path=a.path, theme=a.theme, window=_window(a))
    if a.command == "diff":
        base = [a.baseline] if a.baseline else []
        cand = [a.candidate] if a.candidate else []
        base += a.baseline_runs or []
        cand += a.candidate_runs or []
        if len(base) < 1 or len(cand) < 1 or (a.baseline_runs and a.baseline) or (
                a.candidate_runs and a.candidate):
            Parser(prog="ttdash diff").error(
                "give a baseline and a candidate: A B, or --baseline A1 A2 ... --candidate B1 "
                "B2 ...")
        return o.DiffOptions(baseline=base[0], candidate=cand[0], baseline_runs=tuple(base[1:]),
                             candidate_runs=tuple(cand[1:]), format=a.format,
                             fail_above=a.fail_above, fail_below=a.fail_below,
                             min_delta_us=a.min_delta_us, metric=a.metric,
                             allow_arch_mismatch=a.allow_arch_mismatch, top=a.top, theme=a.theme,
                             window=_window(a), out=_out(a))
    if a.command == "watch":
        if a.record and a.once:
            Parser(prog="ttdash watch").error("--record follows a run: not with --once (use "
                                              "`ttdash history add DIR`)")
        if a.store and not a.record:
            Parser(prog="ttdash watch").error("--store is where --record adds runs: give "
                                              "--record too")
        return o.WatchOptions(dir=a.dir, poll=a.poll, refresh=a.refresh, once=a.once,
                              format=a.format, theme=a.theme, arch=a.arch, record=a.record,
                              store=a.store)
    if a.command == "demo":
        from pathlib import Path

        return o.DemoOptions(ops=a.ops, speed=a.speed, dir=Path(a.dir) if a.dir else None,
                             arch=a.arch, devices=a.devices, once=a.once, theme=a.theme)
    if a.command == "run":
        if a.store and not a.record:
            Parser(prog="ttdash run").error("--store is where --record adds runs: give "
                                            "--record too")
        return o.RunOptions(cmd=tuple(a.cmd or ()), dir=a.dir, mid_run_dump=a.mid_run_dump,
                            no_tui=a.no_tui, refresh=a.refresh, poll=a.poll, grace=a.grace,
                            theme=a.theme, arch=a.arch, record=a.record, store=a.store)
    if a.command == "history":
        action = a.action
        window = _window(a) if action in ("add", "check") else o.WindowOptions()
        paths = tuple(a.path) if action == "add" else (a.path,) if action == "check" else ()
        return o.HistoryOptions(
            action=action, store=a.store, paths=paths, labels=tuple(getattr(a, "label", ())),
            where=tuple(getattr(a, "where", ())), last=getattr(a, "last", None),
            op=getattr(a, "op", None), region=getattr(a, "region", None),
            by=getattr(a, "by", None),
            fail_above=getattr(a, "fail_above", None), query=getattr(a, "query", None),
            against=getattr(a, "against", None),
            baseline_action=getattr(a, "baseline_action", None), name=getattr(a, "name", None),
            run_ids=tuple(getattr(a, "run", ())),
            format=getattr(a, "format", "table"), theme=getattr(a, "theme", None),
            window=window, out=_out(a) if hasattr(a, "output") else o.OutputOptions())
    if a.command == "mcp":
        return o.McpOptions(store=a.store)
    if a.command == "serve":
        return o.ServeOptions(path=a.path, host=a.host, port=a.port, theme=a.theme,
                              window=_window(a), max_sessions=a.max_sessions,
                              export_dir=a.export_dir)
    if a.command == "doctor":
        return o.DoctorOptions(format=a.format, smi_snapshot=a.smi_snapshot, out=_out(a))
    raise ValueError(a.command)


def parse(argv: list[str] | None = None):
    """argv -> (command name, typed options); usage errors exit 2 with one line."""
    parser = build_parser()
    a = parser.parse_args(argv)
    if not a.command:
        return None, None
    bad = text_error(a)
    if bad:
        Parser(prog=f"ttdash {a.command}").error(bad)
    if getattr(a, "no_cache", False):  # read by the model's cache wherever a trace is loaded
        os.environ["TTDASH_NO_CACHE"] = "1"
    return a.command, options(a)


def _command(name: str):
    """The command's function (only its module is imported: `history list` must not pay for
    pandas)."""
    import importlib

    module, func = {"report": ("report", "report"), "open": ("report", "open_trace"),
                    "watch": ("watch", "watch"), "demo": ("watch", "demo"),
                    "diff": ("diff", "diff"), "run": ("run", "run"),
                    "doctor": ("doctor", "doctor"), "history": ("history", "history"),
                    "mcp": ("mcp", "mcp"), "serve": ("serve", "serve")}[name]
    return getattr(importlib.import_module(f".commands.{module}", __package__), func)


def main(argv: list[str] | None = None) -> int:
    name, opts = parse(argv)
    if name is None:
        build_parser().print_help()
        return EXIT_BAD_INPUT
    return_freed_memory()
    try:
        return _command(name)(opts)
    except TraceError as exc:
        sys.stderr.write(f"ttdash: {exc.oneline()}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except UnicodeEncodeError as exc:  # a name found on disk with bytes that are not UTF-8
        text = exc.object if isinstance(exc.object, str) else ""
        what = shown(text[max(exc.start - 200, 0):exc.end + 200]) or "output"
        sys.stderr.write(f"ttdash: {TraceError(what, NOT_UTF8).oneline()}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `ttdash report ... | head`: the reader went away; not an error of ours.
        from .commands.common import drop_stdout

        drop_stdout()
        return EXIT_OK
    except OSError as exc:  # a full disk or a dead terminal under stdout, an unreadable path
        where = exc.filename or "output"
        sys.stderr.write(f"ttdash: {TraceError(where, exc.strerror or str(exc)).oneline()}\n")
        from .commands.common import drop_stdout

        drop_stdout()
        return EXIT_BAD_INPUT

