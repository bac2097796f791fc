"""ttdash command line: report, open, watch, demo, diff, run, doctor, history.

Exit codes: 0 ok; 1 regression found by `diff --fail-above` or `history check --fail-above` (or a
failed `doctor` check); 2 bad input or usage; 3 faster than expected (`diff --fail-below`); 130
interrupted.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TYPE_CHECKING

from . import __version__
from .argtypes import NOT_UTF8, output_path, path_arg, shown, text_error
from .memory import return_freed_memory
from .model.columns import (
    DEFAULT_METRIC,
    METRIC_NAMES,
    MIN_MATCH_RATE,
    PAUSE_ABOVE_US,
    SUMMARY_GROUP_BY,
)
from .model.errors import TraceError
from .model.text import clean_text
from .report import formats
from .report.choices import ADVICE_MODES, DEFAULT_RANK, RANK_WORDS

if TYPE_CHECKING:
    from .commands.options import OutputOptions, WindowOptions

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> NoReturn:  # type: ignore[name-defined]  # noqa: F821
        # `message` echoes what was typed (an unknown argument): one inert line
        message = " ".join(str(clean_text(message.replace("\n", " "))).split())
        message += _did_you_mean(message)
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _did_you_mean(message: str) -> str:
    """"; did you mean 'report'?" for argparse's invalid choice (a typo'd command, action or
    --format), by difflib ("" when nothing is close, or argparse already suggests one)."""
    import difflib
    import re

    m = re.search(r"invalid choice: (.+?) \(choose from (.+)\)$", message)
    if not m or "maybe you meant" in message:
        return ""
    typed = m.group(1).strip("'\"")
    choices = [c.strip().strip("'\"") for c in m.group(2).split(",")]
    close = difflib.get_close_matches(typed, choices, n=1, cutoff=0.6) or [
        c for c in choices if typed and c.startswith(typed)][:1]
    return f"; did you mean '{close[0]}'?" if close else ""


# ------------------------------------------------------------------ argument types
def _number(kind, text: str, what: str, ok) -> float:
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not (math.isfinite(v) and ok(v)):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return v


def positive_int(text: str) -> int:
    return int(_number(int, text, "a positive whole number", lambda v: v > 0))


def positive_float(text: str) -> float:
    return _number(float, text, "a positive number", lambda v: v > 0)


def non_negative_float(text: str) -> float:
    return _number(float, text, "a number >= 0", lambda v: v >= 0)


def finite_float(text: str) -> float:
    return _number(float, text, "a finite number", lambda v: True)


def ops_count(text: str) -> int:
    return int(_number(int, text, f"a whole number from 1 to {MAX_DEMO_OPS:,}",
                       lambda v: 0 < v <= MAX_DEMO_OPS))


def device_count(text: str) -> int:
    return int(_number(int, text, f"a whole number from 1 to {MAX_DEVICES}",
                       lambda v: 0 < v <= MAX_DEVICES))


def id_range(text: str) -> tuple[int | None, int | None]:
    """tt-perf-report's --id-range: START-END, START- or -END (thousands separators allowed)."""
    start, sep, end = text.replace(",", "").strip().partition("-")
    try:
        if not sep or not (start or end):
            raise ValueError
        lo = int(start) if start else None
        hi = int(end) if end else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not START-END, START- or -END") from None
    if lo is not None and hi is not None and lo > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: START is above END")
    return lo, hi


def arch_name(text: str) -> str:
    from .model.arch import get_arch

    try:
        return get_arch(text).name
    except TraceError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


MAX_DEMO_OPS = 10_000_000
MAX_DEVICES = 64


def _window_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("window (which ops to analyse; default: the whole trace)")
    g.add_argument("--signpost", metavar="NAME[#K]|N",
                   help="only the region after signpost NAME (its K-th occurrence, default 1st) "
                        "or after the N-th signpost, up to the next signpost")
    g.add_argument("--start-signpost", metavar="A", help="ops after the first signpost named A "
                   "(tt-perf-report's option)")
    g.add_argument("--end-signpost", metavar="B", help="ops before the first signpost named B "
                   "(its second occurrence when A == B)")
    g.add_argument("--perf-report-window", action="store_true",
                   help="tt-perf-report's default window: the ops after the first signpost "
                        "named like the last signpost")
    g.add_argument("--ignore-signposts", action="store_true",
                   help="the whole trace (the default; kept for tt-perf-report's users)")
    g.add_argument("--replay", type=int, metavar="N",
                   help="only the ops of metal-trace replay session N (METAL TRACE REPLAY "
                        "SESSION ID)")
    p.add_argument("--arch", metavar="ARCH", type=arch_name,
                   help="override the detected arch: grayskull_e75, grayskull_e150, wormhole_b0, "
                        "blackhole_p100, blackhole_p150 (or an alias: wormhole, blackhole, p100, "
                        "p150, e150, ...; add your own in ~/.config/ttdash/arches.toml)")
    p.add_argument("--per-device", "--no-merge-devices", action="store_true",
                   help="one row per device per op (default: merge devices like tt-perf-report: "
                        "CCL ops averaged, others the slowest device)")
    p.add_argument("--pause-above", type=positive_float, default=PAUSE_ABOVE_US, metavar="US",
                   help="an op-to-op gap longer than US microseconds is a host pause (compile, "
                        "warm-up, Python), shorter ones are dispatch; steady state = device + "
                        f"dispatch (default {PAUSE_ABOVE_US:g})")
    _cache_arg(p)  # every command that analyses a trace takes the window options


def _output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of "
                   "stdout; refuses to replace an existing file without --force", type=output_path)
    p.add_argument("--force", action="store_true", help="with --output: replace FILE if it exists")


def _cache_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="parse the CSV again even when an "
                   "unchanged copy is cached, and keep none (the cache: $XDG_CACHE_HOME/ttdash, "
                   "large traces only; also TTDASH_NO_CACHE=1)")


def _record_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", action="store_true", help="add each report finished while "
                   "watching to the run history (ttdash history)")
    p.add_argument("--store", metavar="PATH|URI", type=store_uri, help="--record's history "
                   "store (default "
                   "$TTDASH_HISTORY, else $XDG_DATA_HOME/ttdash/history)")


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
                   help="UI refresh interval (default 0.5)")
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
                    help="UI refresh interval (default 0.5)")
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
    _history_parser(sub)
    return p


def store_uri(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty store path (give a directory or a URI)")
    return path_arg(text)


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value")
    return text


def _history_parser(sub) -> None:
    # --store is accepted before and after the action; SUPPRESS on the action's copy keeps a
    # value given before it (`history --store S list`)
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", metavar="PATH|URI", type=store_uri, default=argparse.SUPPRESS,
                       help="the history store: a directory or a URI pyarrow opens (file://, "
                       "s3://BUCKET/PATH, gs://...); default $TTDASH_HISTORY, else "
                       "$XDG_DATA_HOME/ttdash/history")
    fmt = argparse.ArgumentParser(add_help=False)
    fmt.add_argument("--format", "-f", choices=formats.choices("history"),
                     default="table", help="output format (default table)")
    _output_args(fmt)
    sel = argparse.ArgumentParser(add_help=False)
    sel.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                     help="only runs with this label (or arch=ARCH, window=TEXT); repeatable")
    sel.add_argument("--last", type=positive_int, metavar="N", help="only the last N runs")

    h = sub.add_parser("history", help="the run history: every run kept, "
                       "trends, a gate against the last N runs",
                       description="A Parquet store of runs (runs/) and their ops (ops/), "
                       "hive-partitioned: DuckDB, Spark or pyarrow read it as it is. Without an "
                       "action: the interactive list of runs.",
                       epilog="Exit codes: 0 ok, 1 regression (check --fail-above), 2 bad input "
                       "or store.")
    h.add_argument("--store", metavar="PATH|URI", type=store_uri, help="the history store "
                   "(see ACTION --help)")
    h.add_argument("--theme", help="theme name (the interactive list)")
    hs = h.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    a = hs.add_parser("add", parents=[store], help="add reports (CSV files or profiler dirs)",
                      description="Add each PATH's analysis (whole file unless a window option "
                      "is given) as one run; the same file content is kept once.")
    a.add_argument("path", nargs="+", metavar="PATH", type=path_arg, help="CSV file or "
                   "profiler/report directory (its newest report)")
    a.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label of the run (commit, branch, model, batch, ...); repeatable. "
                   "machine and user are added, commit and branch from CI variables")
    _window_args(a)
    hs.add_parser("list", parents=[store, sel, fmt], help="the runs, newest first",
                  description="The stored runs, newest first, with device and steady-state "
                  "time, the change against the previous run and labels.")
    t = hs.add_parser("trend", parents=[store, sel, fmt], help="a metric over the runs",
                      description="Device and steady-state time per run, oldest first: of "
                      "whole runs, one op code or one signpost region.")
    which = t.add_mutually_exclusive_group()
    which.add_argument("--op", metavar="OPCODE", type=non_empty,
                       help="one op code (as in report's csv/json)")
    which.add_argument("--region", metavar="NAME", type=non_empty,
                       help="one signpost region (its label, e.g. 'decode #2')")
    c = hs.add_parser("check", parents=[store, sel, fmt], help="gate a run against the median "
                      "of the last N matching runs",
                      description="Compare PATH's steady state (device + dispatch gaps, the "
                      "diff gate's default) with the median of the last N stored runs of the "
                      "same arch and window (and --where labels), with the op codes that grew "
                      "most. PATH itself is left out of the history if it was added.")
    c.add_argument("path", metavar="PATH", type=path_arg,
                   help="the run to check: CSV or profiler directory")
    c.add_argument("--fail-above", type=finite_float, required=True, metavar="PCT",
                   help="exit 1 when PATH is more than PCT percent above the median")
    _window_args(c)
    q = hs.add_parser("sql", parents=[store, fmt], help="SQL over the store (DuckDB)",
                      description="Run a DuckDB query with the views `runs` and `ops` over the "
                      "store (needs the sql extra: pip install 'ttdash[sql]').")
    q.add_argument("query", metavar="SQL", type=non_empty,
                   help="e.g. \"SELECT arch, count(*) FROM runs GROUP BY arch\"")


# ------------------------------------------------------------------ argv -> typed options
def _window(a: argparse.Namespace) -> WindowOptions:
    from .commands.options import WindowOptions

    return WindowOptions(signpost=a.signpost, start_signpost=a.start_signpost,
                         end_signpost=a.end_signpost, perf_report_window=a.perf_report_window,
                         replay=a.replay, per_device=a.per_device, arch=a.arch,
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
            fail_above=getattr(a, "fail_above", None), query=getattr(a, "query", None),
            format=getattr(a, "format", "table"), theme=getattr(a, "theme", None),
            window=window, out=_out(a) if hasattr(a, "output") else o.OutputOptions())
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
                    "doctor": ("doctor", "doctor"), "history": ("history", "history")}[name]
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

