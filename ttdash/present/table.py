"""One shape of "a column" for every table, and one vectorised `cells` for all of them.

A `Column` says what a table shows of one field: its titles (`title` for the text outputs,
`short` for the TUI's narrow header), its `kind` (how it is formatted, and its JSON type:
`JSON_TYPES`), its `meaning` (the glossary line, the schema's description), whether it may be
null, its layout on screen (width, preferred width, priority) and its colour rule. A `TableSpec`
is a table's columns in order. `cells(frame, spec)` gives every shown column's texts and
severities, a whole column at a time (numbers through format.fmt_floats: each distinct value
formatted once), the same for the TUI and every text output.

The specs: `OPS` (model.columns.COLUMNS, one declaration each, with model.columns.SEVERITY's
rules), `DIFF_PAIRS` (the TUI diff table and the text outputs' regressions and improvements),
`diff_side(side)` (added and removed ops), `diff_groups(key)` (by op code, by region) and
`SUMMARY_GROUPS` (`report --summary`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..format import Coded, distinct, is_missing
from ..model.columns import COLUMNS as OP_COLUMNS
from ..model.columns import SEVERITY, Severity
from ..model.columns import Column as OpColumn
from .labels import op_label_codes
from .values import _label, format_values

#: A colour rule: (the column's values, the whole frame) -> a Severity or None per row.
Rule = Callable[[np.ndarray, pd.DataFrame], np.ndarray]
#: A column's texts made from the whole frame (an op's label: its code and size): a text per
#: row, or Coded (each distinct text once, a position per row).
Texts = Callable[[pd.DataFrame], "list[str] | Coded"]

SCREEN, TEXT = "screen", "text"
BOTH = frozenset({SCREEN, TEXT})

#: kind -> JSON type of its values, the one such map (scripts/gen_schemas.py writes each
#: schema's row object from a spec's columns: this type, `meaning` the description, `nullable`).
#: "bool", "changes" (attribute -> {baseline, candidate}) and "lines" (a list of texts) are the
#: kinds of JSON-only columns (TableSpec.json_only), never drawn.
JSON_TYPES = {"id": "integer", "int": "integer", "count": "integer", "us": "number",
              "pct": "number", "num": "number", "dus": "number", "dpct": "number",
              "share": "number", "text": "string", "op": "string", "bound": "string",
              "label": "string", "status": "string", "gnum": "number", "time": "string",
              "labels": "object", "saving": "number", "pshare": "number",
              "model_pct": "number", "bool": "boolean", "changes": "object", "lines": "array"}
#: Kinds drawn left-aligned.
LEFT_KINDS = frozenset({"op", "text", "bound", "label", "status", "time", "labels"})


@dataclass(frozen=True)
class Column:
    key: str  # the frame's field (and the json/csv name)
    title: str  # text outputs' head
    kind: str = "text"  # how it is formatted (FORMAT) and its JSON type (JSON_TYPES)
    meaning: str = ""  # the glossary line; the schema's description
    nullable: bool = True  # a row may have no value (json null)
    short: str | None = None  # the TUI's head (None: the title)
    unit: str = ""
    digits: int = 1
    width: int = 5  # the TUI: minimum cells
    pref: int = 0  # the TUI: preferred cells when space allows
    priority: int = 9  # 0: always shown; larger numbers give way first
    align: str = ""  # "" : left for text kinds, else right
    screen_kind: str = ""  # how the TUI draws it when not as `kind` (a bar, a status mark)
    where: frozenset[str] = BOTH  # SCREEN (the TUI table), TEXT (table, markdown)
    optional: bool = False  # text outputs leave it out when no row has a value
    shown: Callable[[pd.DataFrame], bool] | None = None  # text outputs: show it at all?
    texts: Texts | None = None  # its texts from the frame (else the kind's formatter)
    rule: Rule | None = None  # colour rule

    @property
    def head(self) -> str:
        return self.title if self.short is None else self.short

    @property
    def left(self) -> bool:
        return (self.align or ("left" if self.kind in LEFT_KINDS else "right")) == "left"

    @property
    def json_type(self) -> str:
        return JSON_TYPES.get(self.kind, "string")

    def format(self, values: Any) -> list[str]:
        """The texts of these values (a whole column: vectorised)."""
        return format_values(self.kind, values, self.digits)

    def format_one(self, value: object) -> str:
        return self.format(np.array([value], dtype=object))[0]


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[Column, ...]
    meaning: str = ""
    #: fields the JSON rows carry besides the columns (no front end draws them)
    json_only: tuple[Column, ...] = ()
    by_key: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_key", {c.key: c for c in self.columns})

    def json_columns(self, keys: Iterable[str]) -> tuple[Column, ...]:
        """The columns of these JSON fields, in this order: a table column or a JSON-only one
        (KeyError for a field the spec does not declare)."""
        known = {**{c.key: c for c in self.json_only}, **self.by_key}
        return tuple(known[k] for k in keys)

    def keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.columns)

    def on(self, where: str) -> tuple[Column, ...]:
        """The columns one front end shows (SCREEN or TEXT)."""
        return tuple(c for c in self.columns if where in c.where)

    def select(self, keys: Iterable[str]) -> TableSpec:
        return TableSpec(self.name, tuple(self.by_key[k] for k in keys), self.meaning,
                         self.json_only)

    def with_column(self, col: Column, after: str | None = None) -> TableSpec:
        """This spec with `col` after the column `after` (None: at the end)."""
        cols = list(self.columns)
        at = self.keys().index(after) + 1 if after is not None else len(cols)
        cols.insert(at, col)
        return TableSpec(self.name, tuple(cols), self.meaning, self.json_only)

    def replace(self, key: str, **changes: Any) -> TableSpec:
        return TableSpec(self.name, tuple(replace(c, **changes) if c.key == key else c
                                          for c in self.columns), self.meaning,
                         self.json_only)


# ------------------------------------------------------------------ colour rules
def per_value(rule: Callable[[Any], Severity | None]) -> Rule:
    """A value-by-value rule (model.columns.SEVERITY) applied once per distinct value."""
    def apply(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
        sev = np.array([rule(u) for u in uniques] + [rule(None)], dtype=object)
        return sev[codes]  # code -1: the last (a missing value's)
    return apply


def signed_rule(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
    """A change: slower (> 0) bad, faster (< 0) good."""
    x = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    out = np.full(len(x), None, dtype=object)
    with np.errstate(invalid="ignore"):
        out[x > 0], out[x < 0] = Severity.BAD, Severity.GOOD
    return out


def _flag(frame: pd.DataFrame, key: str) -> np.ndarray:
    if key not in frame:
        return np.zeros(len(frame), dtype=bool)
    return np.asarray(frame[key].fillna(False).to_numpy(dtype=bool))


def _op_rule(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
    """An op code: red for a host fallback op, yellow for corrupt timing (as the TUI)."""
    out = np.full(len(frame), None, dtype=object)
    out[_flag(frame, "is_host")] = Severity.BAD
    out[_flag(frame, "corrupt")] = Severity.WARN
    return out


def _device_rule(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
    out = np.full(len(frame), None, dtype=object)
    out[_flag(frame, "corrupt") & pd.isna(values)] = Severity.WARN
    return out


def _device_texts(ops: pd.DataFrame) -> list[str] | Coded:
    """Device time; "corrupt" where a corrupt row has none. Each distinct time worded once
    (Coded) when they are numbers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    at, values = _coded(ops["device_time_us"])
    corrupt = _flag(ops, "corrupt")
    if at is None:
        texts = format_values("us", values)
        for i in np.flatnonzero(corrupt):
            if not texts[i]:
                texts[i] = "corrupt"
        return texts
    words = formatted("us", values)
    if corrupt.any():
        blank = pc.equal(pc.utf8_length(words), 0).to_numpy(zero_copy_only=False)[at] & corrupt
        if blank.any():
            at = np.where(blank, len(words), at)
            words = pa.concat_arrays([words, pa.array(["corrupt"], type=pa.string())])
    return Coded(words, at)


def _pair_labels(frame: pd.DataFrame) -> list[str]:
    """A pair's op: its code and size."""
    codes = frame["op_code"].astype(object).to_numpy()
    sizes = frame["size"].astype(object).to_numpy() if "size" in frame else [None] * len(frame)
    out = []
    for code, size in zip(codes, sizes):
        c = "" if is_missing(code) else str(code)
        out.append(f"{c} {size}".strip() if isinstance(size, str) and size else c)
    return out


def _numbers(frame: pd.DataFrame) -> list[str]:
    return [str(i) for i in range(1, len(frame) + 1)]


def _any_value(key: str) -> Callable[[pd.DataFrame], bool]:
    return lambda f: key in f.columns and len(f) > 0 and bool(f[key].notna().any())


# ------------------------------------------------------------------ the specs
def from_op_column(c: OpColumn) -> Column:
    """A table column of the op registry's column (model.columns.COLUMNS)."""
    rule = per_value(SEVERITY[c.key]) if c.key in SEVERITY else None
    texts: Texts | None = None
    if c.key == "op_code":
        rule, texts = _op_rule, op_label_codes
    elif c.key == "device_time_us":
        rule, texts = _device_rule, _device_texts
    return Column(c.key, c.title, c.kind, c.meaning, c.key not in ("id", "op_code"), c.short,
                  c.unit, c.digits, c.width, c.pref, c.priority, c.align, c.screen_kind,
                  texts=texts, rule=rule)


#: Every op column (the op table, report's table and markdown, details, exports).
OPS = TableSpec("ops", tuple(from_op_column(c) for c in OP_COLUMNS),
                "one row per op of a view")


def _us(key: str, title: str, short: str, meaning: str, **kw: Any) -> Column:
    return Column(key, title, "us", meaning, short=short, unit="us", width=9, **kw)


#: A diff's pairs: the TUI diff table (SCREEN) and the text outputs' regressions and
#: improvements (TEXT). A column added here shows in both.
DIFF_PAIRS = TableSpec("diff_pairs", (
    Column("n", "#", "text", "rank in the list", False, where=frozenset({TEXT}),
           texts=_numbers),
    Column("op", "Op", "op", "the op code and its size", False, where=frozenset({TEXT}),
           texts=_pair_labels),
    Column("baseline_id", "Baseline ID", "id", "the baseline op's ID", short="A id", width=6,
           priority=4),
    Column("candidate_id", "Candidate ID", "id", "the candidate op's ID", short="B id",
           width=6, priority=4),
    Column("status", "Status", "status", "matched, added, removed (moved: matched elsewhere)",
           False, short="", width=1, priority=0, where=frozenset({SCREEN})),
    Column("op_code", "Op code", "op", "the op, with its matmul/conv size when known", False,
           width=22, pref=40, priority=0, where=frozenset({SCREEN})),
    _us("baseline_us", "Baseline", "A time", "the baseline op's device time", priority=0),
    _us("candidate_us", "Candidate", "B time", "the candidate op's device time", priority=0),
    Column("delta_us", "Delta", "dus", "candidate - baseline device time", short="Δ time",
           unit="us", width=9, priority=2, screen_kind="dus", rule=signed_rule),
    Column("delta_pct", "Delta %", "dpct", "the change as a share of the baseline's time",
           short="Δ%", unit="%", width=8, priority=0, screen_kind="dpct", rule=signed_rule),
    Column("delta_bar", "", "text", "the change as a diverging bar", short="◂fast│slow▸",
           width=11, pref=15, priority=3, align="left", screen_kind="dbar",
           where=frozenset({SCREEN})),
    Column("bounds", "Bound A→B", "text", "the baseline's and the candidate's bound",
           width=11, priority=5, where=frozenset({SCREEN})),
    Column("match", "Matched on", "text",
           "how the pair matched; empty for an added or removed op", False,
           where=frozenset({TEXT}),
           shown=lambda f: "match" in f.columns and len(f) > 0
           and bool((f["match"].astype(object) != "exact").any())),
    # what changed between A's op and B's (model.changes' cause text: "fidelity HiFi2 ->
    # HiFi4"); after the times at 80 columns, cut with "…" (enter shows it whole)
    Column("cause", "Cause", "text", "what changed between the two ops' attributes", width=15,
           pref=48, priority=1, optional=True),
    _us("baseline_gap_us", "Baseline gap", "A gap", "the baseline op's op-to-op gap",
        priority=6, where=frozenset({SCREEN})),
    _us("candidate_gap_us", "Candidate gap", "B gap", "the candidate op's op-to-op gap",
        priority=6, where=frozenset({SCREEN})),
    Column("region_label", "Region", "text", "the signpost region", width=16, pref=24,
           priority=7, where=frozenset({SCREEN})),
    Column("region", "Region", "text",
           "the signpost region of the op ((before first signpost) for the ops before the "
           "first); null without signposts", where=frozenset({TEXT}), optional=True),
), "a diff's matched ops, baseline against candidate", json_only=(
    Column("gap_delta_us", "Gap delta", "dus", "candidate - baseline op-to-op gap", unit="us"),
    Column("size", "Size", "text", "the op's matmul/conv size, when known"),
    Column("moved", "Moved", "bool", "the pair matched out of sequence (the op moved)", False),
    Column("within_noise", "Within noise", "bool",
           "the change is within the iteration-to-iteration noise; null when neither side has "
           "a noise estimate"),
    Column("noise_pct", "Noise", "pct",
           "the noise bound the change is compared with, %; null without one", unit="%"),
    Column("changed", "Changed", "changes",
           "what changed between the paired ops: attribute -> {baseline, candidate}; null when "
           "nothing did"),
    Column("device", "Device", "int", "the device (with --per-device)"),
))


def diff_side(side: str) -> TableSpec:
    """Added ops (`side` "candidate") or removed ones ("baseline")."""
    return TableSpec(f"diff_{side}", (
        DIFF_PAIRS.by_key["n"], DIFF_PAIRS.by_key["op"],
        Column(f"{side}_id", "ID", "id", f"the {side} op's ID"),
        Column(f"{side}_us", "Device time", "us", f"the {side} op's device time", unit="us"),
        Column(f"{side}_gap_us", "Op-to-op gap", "us", f"the {side} op's op-to-op gap",
               unit="us"),
        DIFF_PAIRS.by_key["region"],
    ), f"ops only the {side} ran")


def _counts(frame: pd.DataFrame) -> list[str]:
    return [f"{int(b)} / {int(c)}" for b, c in zip(frame["baseline_count"],
                                                   frame["candidate_count"])]


def diff_groups(key: str) -> TableSpec:
    """A diff by op code (`key` "op_code") or by signpost region ("region")."""
    head = "Op code" if key == "op_code" else "Region"
    return TableSpec(f"diff_by_{key}", (
        Column(key, head, "text", f"the group's {head.lower()}", False,
               align="left", texts=lambda f: [str(v) for v in f[key]]),
        Column("counts", "Ops (baseline / candidate)", "text",
               "ops in the group in each trace", False, align="right", texts=_counts),
        Column("baseline_us", "Baseline", "us", "the group's baseline device time", False,
               unit="us"),
        Column("candidate_us", "Candidate", "us", "the group's candidate device time", False,
               unit="us"),
        Column("delta_us", "Delta", "dus", "candidate - baseline", False, unit="us",
               rule=signed_rule),
        Column("delta_pct", "Delta %", "dpct", "the change as a share of the baseline",
               unit="%", rule=signed_rule),
        Column("share_pct", "Share of delta", "pct", "the group's share of the whole change",
               unit="%"),
        DIFF_PAIRS.by_key["cause"],
    ), "a diff's change by group", json_only=(
        Column("baseline_count", "Baseline ops", "count", "the group's ops in the baseline",
               False),
        Column("candidate_count", "Candidate ops", "count", "the group's ops in the candidate",
               False),
        Column("baseline_gap_us", "Baseline gap", "us", "the group's baseline op-to-op gaps",
               False, unit="us"),
        Column("candidate_gap_us", "Candidate gap", "us", "the group's candidate op-to-op gaps",
               False, unit="us"),
    ))


def op_groups(by: str, title: str) -> TableSpec:
    """The grouped view's table (model.query.group_ops by `by`: op code, category, memory):
    the TUI's grouped view (short titles) and its export."""
    return TableSpec(f"groups_by_{by}", (
        Column(by, title, "text", f"the group: {title.lower()}", align="left",
               texts=lambda f: ["" if v is None else str(v) for v in f[by]]),
        Column("count", "Ops", "int", "ops in the group", False, short="Count", width=6),
        Column("total_us", "Device time", "us", "the group's device time", False,
               short="Total", unit="us", width=9),
        Column("mean_us", "Mean", "us", "the mean device time of its ops", unit="us", width=9),
        Column("max_us", "Max", "us", "the longest op's device time", unit="us", width=9),
        Column("share_pct", "Share", "pct", "share of the device time of the ops shown",
               unit="%", width=6),
    ), "ops grouped by op code, category or input 0 memory")


#: `report --summary`: tt-perf-report's summary groups.
SUMMARY_GROUPS = TableSpec("summary_groups", (
    Column("name", "Group", "label", "the group: op code, input 0 memory or category", False),
    Column("device", "Device", "count", "the device id (with --per-device)", False),
    Column("op_count", "Ops", "count", "ops in the group", False),
    Column("device_time_us", "Device time", "us", "the group's device time", False, unit="us"),
    Column("total_pct", "Total % (device)", "share", "share of the device time", False,
           unit="%"),
    Column("category", "Category", "label", "the op family"),
    Column("flops_pct_min", "FLOPs% min", "share", "the lowest FLOPs % of the group's ops"),
    Column("flops_pct_max", "max", "share", "the highest FLOPs %"),
    Column("flops_pct_mean", "mean", "share", "the mean FLOPs %"),
    Column("flops_pct_std", "std", "share", "the FLOPs %'s standard deviation"),
    Column("flops_pct_weighted_mean", "weighted", "share",
           "the FLOPs % weighted by device time"),
), "ops grouped by op code and input 0 memory, op code or category")


def _group_reasons(frame: pd.DataFrame) -> list[str]:
    return [_label(f"{g}: {r}") for g, r in zip(frame["group"], frame["reason"])]


def _why_op_codes(frame: pd.DataFrame) -> list[str]:
    """The op code with its shapes, as the op table writes it (control characters visible)."""
    sizes = frame["size"].to_numpy(dtype=object) if "size" in frame else [""] * len(frame)
    out = []
    for code, size in zip(frame["op_code"].to_numpy(dtype=object), sizes):
        c = _label(code)
        out.append(f"{c} {_label(size)}" if isinstance(size, str) and size else c)
    return out


def _why_short(frame: pd.DataFrame) -> list[str]:
    from ..model.analysis import reasons

    return [reasons.short_reason(int(k), float(p), float(c), float(g)) for k, p, c, g in zip(
        frame["why_class"], frame["why_pct"], frame["cores"], frame["why_grid"])]


_DEVICE = Column("device_us", "Device", "us", "device time (us)", False, unit="us", width=9)
_SAVING = Column("saving_us", "Saving", "saving",
                 "what the reason's estimate takes off the device time; none under 0.005 us",
                 False, unit="us", width=9)
#: The why view's op codes (model.whyslow.why_contract's `by_op_code`, `group` the op code),
#: the TUI's ranking and `report`'s reasons section.
WHY_GROUPS = TableSpec("why_groups", (
    _DEVICE,
    Column("share_pct", "Share", "pshare", "share of the view's device time", False, unit="%",
           width=6),
    _SAVING,
    Column("ops", "Ops", "int", "device ops of the op code", False, width=6),
    Column("reason", "Op code: reason", "text", "the op code and its ops' main reason", False,
           width=12, align="left", texts=_group_reasons),
), "op codes by device time, each with its reason and saving", json_only=(
    Column("op_code", "Op code", "text", "the op code", False),
    Column("class", "Class", "text", "the main reason's class (its ops' device time)", False),
    Column("basis", "Basis", "text", "what the class is judged on", False),
    Column("dispatch_gap_us", "Dispatch gap", "us", "the op code's dispatch gaps (us)", False,
           unit="us"),
    Column("assumes", "Assumes", "text", "what the saving's estimate assumes", False),
    Column("try", "Try", "lines", "what to try, one line each", False),
))
#: One op code's device ops in the why view, heaviest first.
WHY_OPS = TableSpec("why_ops", (
    Column("id", "ID", "int", "the op's ID", False, width=6),
    _DEVICE,
    _SAVING,
    Column("pm_eff_pct", "Model", "model_pct",
           "the op's share of its performance model; no model: unmodelled", unit="%", width=8),
    Column("why", "Reason", "text", "the op's reason, short", False, width=26, align="left",
           texts=_why_short),
    Column("op_code", "Op code", "text", "the op code with its shapes", False, width=12,
           align="left", texts=_why_op_codes),
), "one op code's device ops with their reason")


#: `history list` and `trend`: one row per run.
RUNS = TableSpec("runs", (
    Column("added_at", "Added (UTC)", "time", "when the run was added to the store (UTC)",
           False),
    Column("run_id", "Run", "text", "the run's id (its content key)", False),
    Column("arch", "Arch", "text", "the device architecture"),
    Column("ops", "Ops", "count", "ops in the run's window"),
    Column("device_time_us", "Device", "us", "the window's device time", unit="us"),
    Column("steady_us", "Steady", "us", "device time + dispatch gaps", unit="us"),
    Column("change_pct", "Change", "dpct", "the steady time's change against the run before",
           unit="%"),
    Column("labels", "Labels", "labels", "the run's labels, label -> value", False),
), "runs of the history store", json_only=(
    Column("file", "File", "text", "the profiler CSV the run was read from"),
    Column("window", "Window", "text", "the window of the run (a signpost region or iteration)"),
))

#: `history check`: the op codes above their median.
CULPRITS = TableSpec("culprits", (
    Column("op_code", "Op code", "text", "the op code", False),
    Column("ops", "Ops", "count", "its ops in the checked run", False),
    Column("steady_us", "Steady", "us", "its time in the checked run", unit="us"),
    Column("median_us", "Median", "us", "its median over the baseline runs", unit="us"),
    Column("delta_us", "Delta", "us", "the checked run's time - the median", unit="us"),
    Column("pct", "Change", "dpct", "the change as a share of the median", unit="%"),
), "op codes of a checked run slower than their median")

#: history's (key, title, kind) tuples -> a Column's kind.
HISTORY_KINDS = {"int": "count", "pct": "dpct", "num": "gnum"}


def history_spec(name: str, fields: Iterable[tuple[str, str, str]]) -> TableSpec:
    """A spec of (key, title, kind) columns made at run time (`trend --by`, `history sql`)."""
    return TableSpec(name, tuple(Column(k, t, HISTORY_KINDS.get(kind, kind), t)
                                 for k, t, kind in fields))


# ------------------------------------------------------------------ cells
def _fit(cols: list[Column], texts: dict[str, list[str]], width: int, gap: int) -> None:
    """Leave out columns, largest priority first (the later first on a tie), until the widest
    cell of each (or its title) fits `width` with `gap` cells between columns; priority 0 never."""
    def need() -> int:
        return sum(max([len(c.title), *map(len, texts[c.key])]) for c in cols) \
            + gap * (len(cols) - 1)
    while len(cols) > 1 and need() > width:
        drop = max(cols, key=lambda c: (c.priority, cols.index(c)))
        if drop.priority == 0:
            return
        cols.remove(drop)
        del texts[drop.key]


def column_texts(c: Column, frame: pd.DataFrame) -> list[str]:
    """A column's texts for `frame`, a text per row."""
    if c.texts is None:
        return c.format(frame[c.key].to_numpy())
    made = c.texts(frame)
    if isinstance(made, Coded):
        return np.array(made.texts.to_pylist(), dtype=object)[made.at].tolist()
    return made


def _columns_of(frame: pd.DataFrame, spec: TableSpec, where: str) -> list[Column]:
    """The columns of `spec` that cells() shows for `frame` at `where`."""
    return [c for c in spec.on(where)
            if (c.texts is not None or c.key in frame.columns)
            and (not c.optional or _any_value(c.key)(frame))
            and (c.shown is None or c.shown(frame))]


#: A column with more distinct values than this is not worded once for a whole table: its texts
#: are made a chunk at a time, once for its width, once for its rows (a million distinct device
#: times' texts, kept and padded, were ~30 MB a column).
KEEP_DISTINCT = 1 << 16


def worded(frame: pd.DataFrame, spec: TableSpec, where: str = TEXT,
           chunk: int = 1 << 62) -> dict[str, tuple[int, Coded | None]]:
    """Each column cells() shows for `frame` (the same columns, the same texts), worded once
    for the whole frame: the width of its widest text, and Coded (each distinct value's text,
    a pyarrow string array, at most `chunk` of them formatted at a time; each row's position
    among them, the narrowest integers), not a text per row (a million rows). No Coded (None)
    for a column of more than KEEP_DISTINCT distinct values, or with no codes (values neither
    numbers nor categories: 1 and 1.0 are one value to a hash, two texts to a formatter; texts
    of its own given a text per row): cells() makes its texts."""
    import pyarrow.compute as pc

    out: dict[str, tuple[int, Coded | None]] = {}
    for c in _columns_of(frame, spec, where):
        if c.texts is not None:
            made = c.texts(frame)
            if not isinstance(made, Coded):
                out[c.key] = (max(map(len, made), default=0), None)
                continue
        else:
            at, values = _coded(frame[c.key])
            if at is None or len(values) > KEEP_DISTINCT:
                out[c.key] = (max((max(map(len, c.format(values[a:a + chunk])), default=0)
                                   for a in range(0, len(values), chunk)), default=0), None)
                continue
            made = Coded(formatted(c.kind, values, c.digits, chunk), at)
        widest = pc.max(pc.utf8_length(made.texts)).as_py() or 0
        if len(made.texts) > KEEP_DISTINCT:
            out[c.key] = (widest, None)
        else:
            at = np.asarray(made.at).astype(np.min_scalar_type(-len(made.texts)), copy=False)
            out[c.key] = (widest, Coded(made.texts, at))
    return out


def formatted(kind: str, values: Any, digits: int = 1, chunk: int = 1 << 16) -> Any:
    """format_values as a pyarrow string array, made `chunk` values at a time."""
    import pyarrow as pa

    return pa.chunked_array([pa.array(format_values(kind, values[a:a + chunk], digits),
                                      type=pa.string())
                             for a in range(0, len(values), chunk)],
                            type=pa.string()).combine_chunks()


def _coded(s: pd.Series) -> tuple[np.ndarray | None, np.ndarray]:
    """A column as (each row's position among its distinct values, those values as cells()
    formats them (its to_numpy)), for a column of numbers or a categorical; a column of other
    objects as (None, its values whole): 1 and 1.0 are one value to a hash, two texts to a
    formatter."""
    if isinstance(s.dtype, pd.CategoricalDtype):  # the categories its rows use, and missing
        return distinct(s)
    values = s.to_numpy()
    if values.dtype.kind == "f":
        bits = np.dtype(f"i{values.dtype.itemsize}")
        at, uniques = pd.factorize(np.ascontiguousarray(values).view(bits))
        return at, uniques.view(values.dtype)
    if values.dtype.kind in "iub":
        return pd.factorize(values)
    return None, values


def cells(frame: pd.DataFrame, spec: TableSpec, width: int | None = None, *,
          where: str = TEXT, severity: bool = True, gap: int = 2
          ) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """The texts and severities of `spec`'s columns shown by `where` (TEXT: the text outputs,
    SCREEN: the TUI), in order, each a list per row: a column formatted at once, its colour rule
    applied at once. Columns the frame lacks are left out, so are optional ones with no value;
    `width`: then those that do not fit, least useful first. `severity`: compute the colours
    (a plain output does not need them). A million rows' texts: worded()."""
    cols = _columns_of(frame, spec, where)
    texts = {c.key: column_texts(c, frame) for c in cols}
    if width is not None:
        _fit(cols, texts, width, gap)
    sev: dict[str, np.ndarray] = {}
    if severity:
        for c in cols:
            if c.rule is not None:
                values = frame[c.key].to_numpy() if c.key in frame.columns \
                    else np.full(len(frame), None, dtype=object)
                sev[c.key] = c.rule(values, frame)
    return texts, sev
