"""The argparse building blocks of ttdash's command line: the one-line-error parser, the typed
argument values, the option groups several commands share, and the history command's parser (its
own tree of actions). cli.py assembles the commands from them."""

from __future__ import annotations

import argparse
import math
import sys

from .argtypes import output_path, path_arg
from .model.columns import PAUSE_ABOVE_US
from .model.errors import TraceError
from .model.read.text import clean_text
from .present import formats

EXIT_BAD_INPUT = 2


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


def port_number(text: str) -> int:
    return int(_number(int, text, "a TCP port (1-65535)", lambda v: 0 < v < 65536))


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
    g.add_argument("--steady-state", action="store_true",
                   help="only the iterations after the warm-up: replay sessions, a repeated "
                        "signpost or a repeating op sequence, found in the trace (an error, "
                        "exit 2, when nothing repeats)")
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
                   "stdout (`-o -`: stdout); refuses to replace an existing file without "
                   "--force", type=output_path)
    p.add_argument("--force", action="store_true", help="with --output: replace FILE if it exists")


def _cache_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="parse and analyse the CSV again "
                   "even when an unchanged copy or analysis is cached, and keep none (the "
                   "cache: $XDG_CACHE_HOME/ttdash, large traces only; also TTDASH_NO_CACHE=1)")


def _record_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", action="store_true", help="add each report finished while "
                   "watching to the run history (ttdash history)")
    p.add_argument("--store", metavar="PATH|URI", type=store_uri, help="--record's history "
                   "store (default "
                   "$TTDASH_HISTORY, else $XDG_DATA_HOME/ttdash/history)")


def store_uri(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty store path (give a directory or a URI)")
    return path_arg(text)


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value")
    return text


def history_parser(sub) -> None:
    # --store is accepted before and after the action; SUPPRESS on the action's copy keeps a
    # value given before it (`history --store S list`)
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", metavar="PATH|URI", type=store_uri, default=argparse.SUPPRESS,
                       help="the history store: a directory or a URI pyarrow opens (file://, "
                       "s3://BUCKET/PATH, gs://...); default $TTDASH_HISTORY, else "
                       "$XDG_DATA_HOME/ttdash/history")
    def fmt(subject: str) -> argparse.ArgumentParser:  # its own --format choices
        p = argparse.ArgumentParser(add_help=False)
        p.add_argument("--format", "-f", choices=formats.choices(subject),
                       default="table", help="output format (default table)")
        _output_args(p)
        return p
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
    hs.add_parser("list", parents=[store, sel, fmt("runs")], help="the runs, newest first",
                  description="The stored runs, newest first, with device and steady-state "
                  "time, the change against the previous run and labels.")
    t = hs.add_parser("trend", parents=[store, sel, fmt("trend")], help="a metric over the runs",
                      description="Device and steady-state time per run, oldest first: of "
                      "whole runs, one op code or one signpost region.")
    which = t.add_mutually_exclusive_group()
    which.add_argument("--op", metavar="OPCODE", type=non_empty,
                       help="one op code (as in report's csv/json)")
    which.add_argument("--region", metavar="NAME", type=non_empty,
                       help="one signpost region (its label, e.g. 'decode #2')")
    t.add_argument("--by", metavar="LABEL", type=non_empty,
                   help="one row per value of a numeric label (e.g. batch, for runs added "
                        "with --label batch=N): device time per sample (time / N), also per "
                        "op code, the smallest value first")
    c = hs.add_parser("check", parents=[store, sel, fmt("check")],
                      help="gate a run against the median of the last N matching runs",
                      description="Compare PATH's steady state (device + dispatch gaps, the "
                      "diff gate's default) with the median of the last N stored runs of the "
                      "same arch and window (and --where labels), with the op codes that grew "
                      "most. PATH itself is left out of the history if it was added.")
    c.add_argument("path", metavar="PATH", type=path_arg,
                   help="the run to check: CSV or profiler directory")
    c.add_argument("--fail-above", type=finite_float, required=True, metavar="PCT",
                   help="exit 1 when PATH is more than PCT percent above the median")
    c.add_argument("--against", metavar="NAME", type=non_empty,
                   help="compare with the runs of the named baseline (history baseline set "
                   "NAME) instead of the last N matching runs")
    _window_args(c)
    x = hs.add_parser("export", parents=[store, sel], help="the runs as Tenstorrent's "
                      "benchmark records",
                      description="The selected runs (oldest first) as a JSON list of "
                      "CompleteBenchmarkRun records (tt-metal's infra/data_collection/"
                      "pydantic_models.py): steady-state, device, dispatch and wall time and "
                      "each op code's device time as measurements.")
    x.add_argument("--format", "-f", choices=["benchmark"], default="benchmark",
                   help="output format (benchmark: CompleteBenchmarkRun records)")
    _output_args(x)
    b = hs.add_parser("baseline", parents=[store, sel], help="named baselines: set NAME to "
                      "runs, or list them",
                      description="`baseline set NAME` names the selected runs (--run RUN_ID, "
                      "--where, --last) for `check --against NAME`, as a CI pins a release; "
                      "setting it again moves it (the store keeps every setting). `baseline "
                      "list` prints each name and its runs.")
    b.add_argument("baseline_action", choices=["set", "list"], metavar="set|list",
                   help="set NAME, or list the baselines")
    b.add_argument("name", nargs="?", metavar="NAME", help="the baseline's name (set)")
    b.add_argument("--run", action="append", default=[], metavar="RUN_ID", type=non_empty,
                   help="a run of the baseline (its id or a unique prefix, as list shows it); "
                   "repeatable")
    q = hs.add_parser("sql", parents=[store, fmt("sql")], help="SQL over the store (DuckDB)",
                      description="Run a DuckDB query with the views `runs` and `ops` over the "
                      "store (needs the sql extra: pip install 'ttdash[sql]').")
    q.add_argument("query", metavar="SQL", type=non_empty,
                   help="e.g. \"SELECT arch, count(*) FROM runs GROUP BY arch\"")
