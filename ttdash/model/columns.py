"""The one registry of what ttdash shows about an op: every column's key, titles, unit, meaning,
formatter and colour rule; the bound classes with their severity; the thresholds behind the colours.

The op table, `report` (table, csv, json, markdown), the details pane, row copy and exports are all
views of this registry: a column is declared here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..format import fmt_floats, fmt_int, fmt_num, fmt_pct, fmt_us, is_missing
from .read.discover import DISPATCH_TIMING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# ------------------------------------------------------------------ thresholds (named once)
#: tt-perf-report's op-to-op gap limit: above it the device waited for the host.
GAP_LIMIT_US = 6.5
#: Fewer cores than this: the op uses a small part of the grid.
LOW_CORES = 10
#: Under this share of its performance model an op is coloured (model.perfmodel).
LOW_EFF_PCT = 30.0
#: The slowest core at this multiple of the average core's kernel time or more (PER CORE MAX /
#: AVG): the op's work is spread unevenly; a third or more of its time the grid waits for its
#: slowest cores (model.imbalance). The real traces with per-core times: median skew 1.01-1.08,
#: 99th percentile 1.37-1.81.
SKEW_FLAG = 1.5
#: Under this share of the available worker cores an op runs on a fraction of the grid.
LOW_GRID_PCT = 50.0
#: tt-perf-report's bound rule: an op is DRAM- (FLOP-) bound at this % of the DRAM (FLOP) peak.
BOUND_THRESHOLD_PCT = 65.0
#: ttdash's split of op-to-op gaps (default of --pause-above): a gap up to this is *dispatch*
#: (the host issuing the next op, the steady state of a run); a longer one is a *host pause*
#: (program compile, warm-up, Python or I/O between iterations). Untraced dispatch gaps measure
#: tens to hundreds of microseconds; the pauses of the real traces we have run from milliseconds to
#: seconds and make 97-100% of their gap time. Steady state = device time + dispatch gaps.
PAUSE_ABOVE_US = 1000.0
#: What `diff --metric` compares. The default, steady, leaves host pauses out.
METRIC_NAMES = {
    "steady": "steady state (device + dispatch gaps)",
    "device": "device time",
    "wall": "wall time (device + every op-to-op gap)",
    "pauses": "host pauses (op-to-op gaps above the pause threshold)",
}
DEFAULT_METRIC = "steady"
#: Below this share of matched ops, two traces run different programs: their totals say little.
MIN_MATCH_RATE = 0.8


#: What the shares are shares of.
WALL_BASIS = "the window's wall time (device time + every op-to-op gap)"
DEVICE_BASIS = "the window's device time"


class Severity(str, Enum):
    GOOD = "good"
    WARN = "warn"
    BAD = "bad"


class Bound(str, Enum):
    """tt-perf-report's bound classes, with what each means and how it is coloured."""

    DRAM = "DRAM"
    FLOP = "FLOP"
    BOTH = "BOTH"
    SLOW = "SLOW"
    HOST = "HOST"

    @property
    def severity(self) -> Severity:
        return {"SLOW": Severity.WARN, "HOST": Severity.BAD}.get(self.value, Severity.GOOD)

    @property
    def meaning(self) -> str:
        return BOUND_MEANING[self.value]


BOUND_MEANING = {
    "DRAM": f"at >= {BOUND_THRESHOLD_PCT:g}% of the DRAM bandwidth peak: limited by memory",
    "FLOP": f"at >= {BOUND_THRESHOLD_PCT:g}% of the math peak for its fidelity: limited by compute",
    "BOTH": "DRAM- and FLOP-bound at once",
    "SLOW": f"modelled, but under {BOUND_THRESHOLD_PCT:g}% of both peaks: room to optimise",
    "HOST": "ran on the host (a fallback op): move it to the device",
}
#: An op with no bound: not modelled (tt-perf-report models matmuls and convolutions only).
UNMODELLED = "unmodelled"


def without_signposts(ops: Any) -> Any:
    """The rows of an ops frame that are not signposts: the frame itself, not a copy, when it
    has none (pandas 2 copies a whole frame for a mask that keeps every row: a million ops'
    290 MB, twice more over a report's advice)."""
    if "is_signpost" not in ops:
        return ops
    sp = ops["is_signpost"].to_numpy(dtype=bool)
    return ops[~sp] if sp.any() else ops


def shared_columns(frame: pd.DataFrame, columns: Any) -> pd.DataFrame:
    """`frame`'s `columns` (its index and rows) as a frame of their own that shares their
    memory: pandas 2's frame[columns] copies them (pandas 3 shares them until written). For a
    reader: a write into it would be a write into `frame`."""
    import pandas as pd

    return pd.DataFrame({c: frame[c] for c in columns}, index=frame.index, copy=False)


def aggregated(groups: Any, **named: tuple[str, Any]) -> pd.DataFrame:
    """`groups.agg(**named)` (a groupby's named aggregation: name=(column, reduction)), the same
    frame, made of each column's own reduction: pandas 3's named aggregation costs ~4 ms a
    call whatever the rows (0.7 ms for the same three reductions one by one), and a small
    report makes ~8 of them."""
    import pandas as pd

    return pd.DataFrame({name: groups[column].agg(how) for name, (column, how) in named.items()})


def bound_severity(value: object) -> Severity | None:
    try:
        return Bound(str(value)).severity
    except ValueError:
        return None


# ------------------------------------------------------------------ columns
@dataclass(frozen=True)
class Column:
    key: str  # field of a View's ops frame, and the json/csv name
    title: str  # long title (details, markdown, report table)
    short: str  # narrow title (the op table)
    kind: str  # id, op, text, us, pct, int, num, bound
    meaning: str
    unit: str = ""
    digits: int = 1
    basis: str = ""  # a share: what it is a share *of* (said in its title and glossary line)
    # layout at narrow widths (the op table and the report table)
    width: int = 5  # minimum cells in the op table
    pref: int = 0  # preferred cells when space allows (0: the minimum)
    priority: int = 9  # 0: always shown; larger numbers give way first (report: see DROP_*)
    never_cut: bool = False  # ids, counts, calls: the column widens, the value is never cut
    screen_kind: str = ""  # how the op table draws it when not as `kind` ("bar")
    # The filter (`/`, model.filters): every alias is a key (`cat:TM`; a number column's also
    # compares: `cores<10`); a compare alias is a key for comparisons only, where the same word's
    # `key:value` belongs to another column (`device>1ms` is device time, `device:1` the device
    # id); the example shows the column in the filter prompt's hint and the glossary.
    aliases: tuple[str, ...] = ()
    compare_aliases: tuple[str, ...] = ()
    filter_example: str = ""

    @property
    def numeric(self) -> bool:
        """A number (filters compare it: `cores<10`)."""
        return self.kind in NUMERIC_KINDS

    @property
    def align(self) -> str:
        return "left" if self.kind in ("op", "text", "bound") else "right"

    def fmt(self, v: object) -> str:
        return FORMATTERS[self.kind](v, self.digits)

    @property
    def coloured(self) -> bool:
        """The column has a colour rule (SEVERITY): every front end draws it."""
        return self.key in SEVERITY

    def severity(self, v: object, row: dict[str, object] | None = None) -> Severity | None:
        rule = SEVERITY.get(self.key)
        return rule(v) if rule else None

    def fmt_array(self, values: np.ndarray) -> list[str]:
        """Formatted cells of a whole column (float columns a unit at a time: format.fmt_floats;
        anything else one value at a time), the same text as `fmt` gives each value."""
        fast = fmt_floats(self.kind, values, self.digits) if self.kind in NUMERIC_KINDS else None
        if fast is not None:
            return fast
        f, d = FORMATTERS[self.kind], self.digits
        return [f(v, d) for v in values]


#: Kinds of number columns (the others are text).
NUMERIC_KINDS = frozenset({"id", "int", "us", "pct", "num"})


def _text(v: object, _: int = 0) -> str:
    return "" if is_missing(v) or v is None else str(v)


FORMATTERS: dict[str, Callable[[object, int], str]] = {
    "id": lambda v, d: fmt_int(v), "int": lambda v, d: fmt_int(v),
    "us": lambda v, d: fmt_us(v), "pct": lambda v, d: fmt_pct(v, d),
    "num": lambda v, d: fmt_num(v, d), "text": _text, "op": _text, "bound": _text,
}

SEVERITY: dict[str, Callable[[Any], Severity | None]] = {
    "op_to_op_us": lambda v: Severity.BAD if not is_missing(v) and float(v) > GAP_LIMIT_US
    else None,
    "cores": lambda v: Severity.BAD if not is_missing(v) and float(v) < LOW_CORES
    else None,
    "bound": bound_severity,
    "pm_eff_pct": lambda v: Severity.WARN if not is_missing(v) and float(v) < LOW_EFF_PCT
    else None,
    "core_skew": lambda v: Severity.WARN if not is_missing(v) and float(v) >= SKEW_FLAG
    else None,
}

COLUMNS: tuple[Column, ...] = (
    Column("id", "ID", "ID", "id", "tt-perf-report's op ID: the op's line in the CSV",
           width=6, priority=1, never_cut=True, aliases=("id",)),
    Column("op_code", "Op code", "Op code", "op", "the op, with its matmul/conv size when known",
           width=24, pref=40, priority=0, aliases=("op",), filter_example="op:Matmul"),
    Column("op_type", "Op type", "Type", "text", "tt_dnn_device, tt_dnn_cpu (host) or signpost"),
    Column("device", "Device", "Dev", "int", "device id (merged views: the slowest device)",
           width=3, priority=6, never_cut=True, aliases=("dev", "device"), filter_example="dev:1"),
    Column("rank", "Rank", "Rank", "int", "the tt-run rank (host) of a multi-host run; its "
           "device ids follow the previous ranks' (tt-perf-report's merge)",
           width=4, priority=6, never_cut=True, aliases=("rank",), filter_example="rank:1"),
    Column("device_time_us", "Device time", "Device", "us",
           "DEVICE KERNEL DURATION: time the op's kernels ran", "us",
           width=9, priority=0, aliases=("time",), compare_aliases=("device",),
           filter_example="device>1ms"),
    Column("op_to_op_us", "Op-to-op gap", "Gap", "us",
           f"idle time before the op started (red above {GAP_LIMIT_US:g} us: host-bound)", "us",
           width=9, priority=1, aliases=("gap",), filter_example="gap>100us"),
    Column("total_pct", "Total % (wall)", "Wall%", "pct",
           "share of the window's wall time: device time + every op-to-op gap, host pauses "
           "included (tt-perf-report's Total %); the grouped view's Share and --summary's "
           "Total % (device) are shares of device time", "%", basis=WALL_BASIS,
           width=6, priority=1, aliases=("total",)),
    Column("cores", "Cores", "Cores", "int",
           f"cores the op ran on (red under {LOW_CORES})",
           width=5, priority=5, never_cut=True, aliases=("cores",), filter_example="cores<10"),
    Column("dram_gbps", "DRAM GB/s", "DRAM", "num", "matmul/conv DRAM bandwidth achieved",
           "GB/s", 0,
           priority=8, aliases=("gbps",)),
    Column("dram_pct", "DRAM %", "DRAM%", "pct", "DRAM GB/s as a share of the arch's peak",
           "%", 1, basis="the arch's DRAM bandwidth peak",
           width=5, pref=10, priority=3, screen_kind="bar", aliases=("dram",),
           filter_example="dram>60"),
    Column("flops", "TFLOP/s", "TFLOP/s", "num", "math throughput achieved", "TFLOP/s", 1,
           priority=8, aliases=("tflops",)),
    Column("flops_pct", "FLOPs %", "FLOP%", "pct",
           "TFLOP/s as a share of the peak at the op's math fidelity", "%", 1,
           basis="the math peak at the op's fidelity",
           width=5, pref=10, priority=3, screen_kind="bar", aliases=("flop", "flops")),
    Column("bound", "Bound", "Bound", "bound",
           "DRAM / FLOP / BOTH / SLOW / HOST; blank: not modelled",
           width=5, priority=2, aliases=("bound",), filter_example="bound:DRAM"),
    Column("math_fidelity", "Math fidelity", "Fid", "text", "LoFi, HiFi2, HiFi3 or HiFi4",
           width=5, priority=7, aliases=("fid",), filter_example="fid:LoFi"),
    Column("fidelity_desc", "Fidelity / dtypes", "Fidelity", "text",
           "matmul/conv: math fidelity with its dtypes; other ops: their dtypes",
           priority=9),
    Column("category", "Category", "Cat", "text",
           "op family, tt-perf-report's classification by op code: Compute, DM (data movement), "
           "TM (tensor manipulation), CCL (collectives), Host (fallback ops) or Other",
           width=7, priority=8, aliases=("cat", "category"), filter_example="cat:TM"),
    Column("signpost", "Signpost", "Signpost", "text", "the signpost region the op is in",
           width=18, pref=28, priority=9, aliases=("sp", "signpost"), filter_example="sp:decode"),
    Column("size", "Size", "Size", "text", "matmul M x K x N / conv size"),
    Column("config", "Config", "Config", "text",
           "conv blocking [ABH=out height|act block height, ADB double buffer, SR split reader]; "
           "halo window, stride, padding, dilation | layout",
           width=12, pref=24, priority=10),
    Column("io_dram_gbps", "DRAM traffic GB/s", "IO GB/s", "num",
           "ttdash's estimate: bytes of the op's DRAM tensors over its device time", "GB/s", 1,
           aliases=("iogbps",)),
    Column("io_dram_pct", "DRAM traffic %", "IO%", "pct",
           "the DRAM traffic estimate as a share of the DRAM peak", "%", 1,
           basis="the arch's DRAM bandwidth peak", aliases=("io",)),
    Column("corrupt", "Corrupt timing", "Corrupt", "text",
           "the profiler's timing for this row is impossible; left out of totals"),
    Column("overlap_us", "Overlap", "Overlap", "us",
           "kernel time that ran while an earlier op on the same device still ran (sub-devices; "
           "tt-perf-report main)", "us",
           width=9, priority=4, aliases=("overlap",)),
    Column("busy_us", "Busy", "Busy", "us", "kernel time less its overlap", "us",
           aliases=("busy",)),
    Column("gap_signed_us", "Gap (signed)", "Gap±", "us",
           "the op-to-op gap with negative values kept (tt-perf-report main shows them; "
           "totals leave them out)", "us", aliases=("sgap",)),
    Column("global_call_count", "Global call count", "Call", "int",
           "GLOBAL CALL COUNT: the op's number in the program (joins live rows and reports)",
           width=6, priority=6, never_cut=True, aliases=("call",)),
    Column("slowest_risc", "Slowest RISC", "RISC", "text",
           "the RISC whose kernel ran longest: BRISC/NCRISC move data, TRISC0-2 compute, "
           "ERISC ethernet (files with per-RISC times)",
           width=6, priority=1, aliases=("risc",), filter_example="risc:NCRISC"),
    Column("pm_eff_pct", "Model eff %", "Eff%", "pct",
           "PM IDEAL (the profiler's performance model) / the kernel's duration: 100% runs as "
           f"fast as the model (yellow under {LOW_EFF_PCT:g}%); blank: unmodelled (no model, "
           "not known to be fine)", "%", 0, basis="the op's PM IDEAL time",
           width=5, priority=4, aliases=("eff",), filter_example="eff<30"),
    Column("recoverable_us", "Recoverable", "Recov", "us",
           "kernel time above the performance model: duration - PM IDEAL (0 when faster than "
           "the model); blank: unmodelled", "us",
           width=8, priority=5, aliases=("recoverable", "rec"), filter_example="rec>10us"),
    Column("pm_bound", "Model bound", "PM", "text",
           "what bounds the performance model: compute (PM COMPUTE) or bandwidth "
           "(PM BANDWIDTH), the larger of the two", width=4, priority=9, aliases=("pm",)),
    Column("core_skew", "Core skew", "Skew", "num",
           "DEVICE KERNEL DURATION PER CORE MAX / AVG: how much longer the op's slowest core ran "
           f"than its average core (1.00: even; yellow from {SKEW_FLAG:g}: a third of its time "
           "or more the grid waits for its slowest cores)", "x", 2,
           width=5, priority=9, aliases=("skew",)),
    Column("grid_pct", "Grid %", "Grid", "pct",
           "CORE COUNT as a share of the AVAILABLE WORKER CORE COUNT (blank in files without it): "
           f"under {LOW_GRID_PCT:g}% the op ran on a fraction of the chip", "%",
           0, basis="the available worker cores", width=5, priority=9, aliases=("grid",)),
    Column("dispatch_cq_us", "Dispatch CQ time", "CQ", "us",
           "DISPATCH TOTAL CQ CMD OP TIME: the dispatch core's time on the op's command-queue "
           "commands (captures that profiled the dispatch cores)", "us",
           width=8, priority=9, aliases=("cq",)),
    Column("go_wait_us", "Go-signal wait", "GoWait", "us",
           "DISPATCH GO SEND WAIT TIME: the dispatch core's wait on the op's go signal to its "
           "workers (captures that profiled the dispatch cores)", "us",
           width=8, priority=9, aliases=("gowait",)),
    Column("ccl_bytes", "CCL bytes", "CCL B", "num",
           "a collective's bytes each device sends over its Ethernet links: the ring algorithm's "
           "S x (n-1)/n (x2 for all-reduce), S the whole array (NCCL's bus-bandwidth rule)",
           "B", 0, width=8, priority=9, aliases=("cclbytes",)),
    Column("ccl_gbps", "CCL bus GB/s", "Bus GB/s", "num",
           "a collective's (all-gather, reduce-scatter, all-reduce, all-to-all) bus bandwidth: "
           "its CCL bytes over its kernel time, comparable with one link's peak whatever the "
           "number of devices", "GB/s", 1, width=8, priority=9, aliases=("bus",)),
    Column("ccl_link_pct", "CCL link %", "Link%", "pct",
           "the bus bandwidth as a share of the op's links' peak: num_links (ATTRIBUTES) x the "
           "arch's Ethernet link peak in one direction", "%", 0,
           basis="num_links x the arch's Ethernet link peak", width=5, priority=9,
           aliases=("link",)),
    Column("in0_memory", "Input 0 memory", "in0", "text",
           "where the op's first input tensor lives (INPUT_0_MEMORY: DRAM or L1, interleaved or "
           "height/width/block sharded); tt-perf-report's summary groups ops by op code and it, "
           "as in `Matmul (in0:dram_interleaved)`",
           width=12, priority=10, aliases=("mem", "in0"), filter_example="mem:dram"),
)
BY_KEY: dict[str, Column] = {c.key: c for c in COLUMNS}


def column(key: str) -> Column:
    return BY_KEY[key]


#: The op table's columns, in order (widths and priorities are the columns' own).
SCREEN_FIELDS = ("id", "op_code", "device", "rank", "device_time_us", "op_to_op_us", "overlap_us",
                 "total_pct", "cores", "dram_pct", "flops_pct", "bound", "math_fidelity",
                 "category", "config", "global_call_count", "signpost")
#: Whole numbers never cut: their column widens to the widest value.
NEVER_CUT = frozenset(c.key for c in COLUMNS if c.never_cut)
#: Report table: columns with this priority or more give way before the op code is shortened;
#: then those above KEEP_PRIORITY; the rest (ID, device time, gap, Total) never.
EARLY_DROP_PRIORITY, KEEP_PRIORITY = 6, 1


def filter_aliases() -> dict[str, str]:
    """Filter key -> column, from the columns' aliases (model.filters.FILTER_KEYS)."""
    return {a: c.key for c in COLUMNS for a in c.aliases}


def compare_aliases() -> dict[str, str]:
    """Comparison-only filter key -> column (`device>1ms`: device time)."""
    return {a: c.key for c in COLUMNS for a in c.compare_aliases}


#: Fields of `report --format json` ops, in order.
JSON_FIELDS = ("id", "op_code", "op_type", "device", "device_time_us", "op_to_op_us", "total_pct",
               "cores", "dram_gbps", "dram_pct", "flops", "flops_pct", "bound", "math_fidelity",
               "signpost", "pm_eff_pct", "recoverable_us", "pm_bound", "core_skew", "grid_pct",
               "ccl_gbps", "ccl_link_pct")
#: Fields of `report --format csv` and exports.
CSV_FIELDS = JSON_FIELDS + ("category", "size", "config", "fidelity_desc", "io_dram_gbps",
                            "io_dram_pct", "corrupt", "global_call_count", "overlap_us",
                            "busy_us", "gap_signed_us", "ccl_bytes", "dispatch_cq_us",
                            "go_wait_us")
#: Text fields (formula-neutralised in csv).
TEXT_FIELDS = tuple(c.key for c in COLUMNS if c.kind in ("op", "text", "bound")
                    and c.key != "corrupt")
#: Integer fields (Int64 in machine outputs).
INT_FIELDS = frozenset(c.key for c in COLUMNS if c.kind in ("id", "int"))
#: Columns of the human tables (report table and markdown), in order.
TABLE_FIELDS = ("id", "total_pct", "bound", "op_code", "device", "device_time_us", "op_to_op_us",
                "cores", "dram_gbps", "dram_pct", "flops", "flops_pct", "pm_eff_pct",
                "core_skew", "fidelity_desc", "config", "overlap_us")
#: `report --summary --group-by`: tt-perf-report's summary groupings (memory is its default).
SUMMARY_GROUP_BY = ("memory", "op", "category")
#: The fields `y` copies (tab-separated).
COPY_FIELDS = ("id", "op_code", "size", "device", "device_time_us", "op_to_op_us", "total_pct",
               "cores", "dram_pct", "flops_pct", "bound", "math_fidelity")


def op_fields(fields: tuple[str, ...], ops: pd.DataFrame, counters: list[str] | None = None
              ) -> tuple[str, ...]:
    """`fields` and what these ops have beyond them: the tt-run rank after the device (a
    multi-host run), then the slowest RISC (with per-RISC times) and the `counters` columns
    (View.counter_names) under their file names."""
    from .read.counters import RISC_NAMES

    out = list(fields)
    if "rank" in ops.columns and "rank" not in out:
        out.insert(out.index("device") + 1 if "device" in out else len(out), "rank")
    if counters and any(c in RISC_NAMES for c in counters):
        out.append("slowest_risc")
    out += [c for c in counters or () if c not in out]
    return tuple(out)


def export_frame(ops: pd.DataFrame, fields: tuple[str, ...]) -> pd.DataFrame:
    """The ops with machine-friendly types (every machine output and the run history): ints
    as Int64, "" bound as missing, floats rounded to 6 decimals except total_pct (a share of
    1e-6 % would lose its digits)."""
    import numpy as np
    import pandas as pd

    out = ops[list(fields)].copy(deep=False)  # (a new frame already: fields are replaced)
    for f in fields:
        if f == "corrupt":
            continue
        if f in INT_FIELDS or (out[f].dtype == "float32"  # the loader's whole numbers
                               and not np.isinf(out[f].to_numpy()).any()):
            out[f] = out[f].astype("Float64").round().astype("Int64")
        elif f == "bound":  # (a categorical's "" category dropped: NaN, as pandas 3 replaces it)
            col = out[f]
            if isinstance(col.dtype, pd.CategoricalDtype):
                out[f] = col.cat.remove_categories([""]) if "" in col.cat.categories else col
            else:
                out[f] = col.replace("", None)
        elif out[f].dtype == "float64" and f != "total_pct":  # a tiny share keeps its digits
            with np.errstate(all="ignore"):  # 1e300 cells: rounding overflows harmlessly
                out[f] = out[f].round(6)
    return out


def legend() -> list[tuple[str, str]]:
    """(term, meaning) lines for help screens and the README: bounds, colours, markers."""
    rows = [(b.value, b.meaning) for b in Bound]
    rows += [("blank bound", f"{UNMODELLED}: tt-perf-report models only matmuls and "
              "convolutions; other ops get device time and gap, no DRAM/FLOP figures"),
             (BY_KEY["total_pct"].short, f"Total % (tt-perf-report's): share of {WALL_BASIS}; "
              "host pauses make it small"),
             ("Share (grouped)", f"share of {DEVICE_BASIS} (as --summary's Total % (device))"),
             ("bars", "DRAM% and FLOP% as a share of the peak (8 steps per cell)"),
             ("red gap", f"op-to-op gap above {GAP_LIMIT_US:g} us: the device waited for "
              "the host"),
             ("red cores", f"fewer than {LOW_CORES} cores"),
             ("yellow Eff%", f"under {LOW_EFF_PCT:g}% of the op's performance model (report's "
              "table; the op table when `a` adds the column)"),
             ("yellow Skew", f"the op's slowest core ran {SKEW_FLAG:g}x its average core or "
              "longer (report's table; the op table when `a` adds the column)"),
             ("dispatch / pauses", f"op-to-op gaps up to {PAUSE_ABOVE_US:g} us are dispatch "
              "(steady state); longer ones are host pauses (compile, warm-up, Python)"),
             ("! op / corrupt", "impossible profiler timing: shown, left out of totals"),
             ("red op code", "host fallback op"),
             ("! N warnings", "data-trust warnings (missing device data, a trace never "
              "replayed, a clock the arch contradicts, corrupt timings): listed in help"),
             ("device (rt window)", DISPATCH_TIMING)]
    return rows
