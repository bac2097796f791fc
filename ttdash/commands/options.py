"""Typed options of the commands. `cli.py` turns argv into these; nothing below it sees argparse.

The default window rule, one for every command (open, report, diff, watch's report view): the whole
trace. `--perf-report-window` is tt-perf-report's default (the ops after the first signpost named
like the last one), `--signpost` one signpost region, `--start-signpost/--end-signpost` a range,
`--steady-state` the iterations after the detected warm-up (model.iterations; a trace without
repeated iterations is an error, exit 2, rather than a silent whole-trace window).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..model.columns import DEFAULT_METRIC, PAUSE_ABOVE_US


@dataclass(frozen=True)
class WindowOptions:
    signpost: str | None = None
    start_signpost: str | None = None
    end_signpost: str | None = None
    perf_report_window: bool = False
    replay: int | None = None  # one metal-trace replay session
    steady_state: bool = False  # the iterations after the warm-up
    per_device: bool = False
    arch: str | None = None
    pause_above_us: float = PAUSE_ABOVE_US

    @property
    def explicit(self) -> bool:
        """A window option was given (the user asked for less than the whole trace)."""
        return bool(self.signpost or self.start_signpost or self.end_signpost
                    or self.perf_report_window or self.replay is not None
                    or self.steady_state)

    def window(self, trace):  # -> model.Window
        from ..model import Window

        if self.replay is not None:
            return Window("replay", region=self.replay)
        if self.steady_state:
            return Window("steady")
        if self.signpost:
            return Window("region", region=trace.find_signpost(self.signpost))
        if self.start_signpost or self.end_signpost:
            return Window("range", start=self.start_signpost, end=self.end_signpost)
        if self.perf_report_window:
            return Window("default")
        return Window("all")


@dataclass(frozen=True)
class OutputOptions:
    """--output FILE (None: standard output) and --force."""

    output: str | None = None
    force: bool = False

    def __post_init__(self) -> None:
        if self.output == "-":  # `-o -`: standard output, as every CLI reads it (not a file)
            object.__setattr__(self, "output", None)


@dataclass(frozen=True)
class ReportOptions:
    path: str | tuple[str, ...]  # several: reports of one run, merged as tt-perf-report does
    format: str = "table"
    top: int | None = None
    rank_by: str = "device"  # report.single.RANK_FIELDS
    window: WindowOptions = field(default_factory=WindowOptions)
    out: OutputOptions = field(default_factory=OutputOptions)
    advice: str = "summary"  # report.advice.ADVICE_MODES
    id_range: tuple[int | None, int | None] | None = None  # tt-perf-report's --id-range
    no_host_ops: bool = False
    min_percentage: float | None = None  # hide ops under this share of the total
    raw_op_codes: bool = False
    print_signposts: bool = False
    summary: str | None = None  # --summary's --group-by: op, memory or category


@dataclass(frozen=True)
class OpenOptions:
    path: str
    theme: str | None = None
    window: WindowOptions = field(default_factory=WindowOptions)


@dataclass(frozen=True)
class DiffOptions:
    baseline: str
    candidate: str
    format: str | None = None
    baseline_runs: tuple[str, ...] = ()  # more runs of each side (the first is aligned)
    candidate_runs: tuple[str, ...] = ()
    fail_above: float | None = None
    fail_below: float | None = None  # faster by more than this fails too (exit 3)
    min_delta_us: float | None = None  # a change under this (absolute us) never fails
    metric: str = DEFAULT_METRIC
    allow_arch_mismatch: bool = False
    top: int = 10
    theme: str | None = None
    window: WindowOptions = field(default_factory=WindowOptions)
    out: OutputOptions = field(default_factory=OutputOptions)


@dataclass(frozen=True)
class WatchOptions:
    dir: str | None = None
    poll: float | None = None
    refresh: float = 0.5
    once: bool = False
    format: str = "json"
    theme: str | None = None
    arch: str | None = None
    record: bool = False  # add each report finished while watching to the run history
    store: str | None = None  # --record's store (None: the default store)


@dataclass(frozen=True)
class DemoOptions:
    ops: int = 2000
    speed: float = 1.0
    dir: Path | None = None
    arch: str = "wormhole_b0"
    devices: int = 1
    once: bool = False
    theme: str | None = None


@dataclass(frozen=True)
class RunOptions:
    cmd: tuple[str, ...] = ()
    dir: str | None = None
    mid_run_dump: bool = False
    no_tui: bool = False
    refresh: float = 0.5
    poll: float | None = None
    grace: float = 5.0
    theme: str | None = None
    arch: str | None = None
    record: bool = False  # add the run's report to the run history
    store: str | None = None


@dataclass(frozen=True)
class DoctorOptions:
    format: str = "table"
    smi_snapshot: str | None = None
    out: OutputOptions = OutputOptions()


@dataclass(frozen=True)
class HistoryOptions:
    """`ttdash history ACTION`: action is None (the TUI), add, list, trend, check, sql, export
    or baseline."""
    action: str | None = None
    store: str | None = None  # a path or URI; None: $TTDASH_HISTORY, else the XDG data dir
    paths: tuple[str, ...] = ()  # add: reports or profiler dirs; check: the run checked
    labels: tuple[str, ...] = ()  # add: KEY=VALUE
    where: tuple[str, ...] = ()  # list/trend/check: KEY=VALUE (a label, or arch/window)
    last: int | None = None
    op: str | None = None  # trend: one op code
    region: str | None = None  # trend: one signpost region
    by: str | None = None  # trend: one row per value of this numeric label (batch size)
    fail_above: float | None = None  # check
    query: str | None = None  # sql
    against: str | None = None  # check: the named baseline's runs instead of the last N
    baseline_action: str | None = None  # baseline: set or list
    name: str | None = None  # baseline set: its name
    run_ids: tuple[str, ...] = ()  # baseline set: --run RUN_ID (or a unique prefix)
    format: str = "table"
    theme: str | None = None
    window: WindowOptions = field(default_factory=WindowOptions)
    out: OutputOptions = field(default_factory=OutputOptions)


@dataclass(frozen=True)
class McpOptions:
    """`ttdash mcp`: a Model Context Protocol server on stdin/stdout."""
    store: str | None = None  # the history tools' store; None: $TTDASH_HISTORY, else XDG


@dataclass(frozen=True)
class ServeOptions:
    """`ttdash serve PATH`: `open PATH` in a web page (textual-serve)."""
    path: str = ""
    host: str = "127.0.0.1"
    port: int = 8000
    theme: str | None = None
    window: WindowOptions = field(default_factory=WindowOptions)
    max_sessions: int = 4  # sessions at once; the one over is refused
    export_dir: str | None = None  # where the sessions' exports go; None: exports off
