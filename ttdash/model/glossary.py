"""The glossary: what every column, class, category, mark and word ttdash shows means.

Generated from the sources that define them: the column spec and its legend (model.columns),
the op categories (ttdash/data/categories.toml), the filter keys (model.filters). The help screen
(`?`) and the docs' glossary page (scripts/gen_docs.py) both render `glossary()`. No Textual here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from . import columns as C
from .analysis.metrics import HOST_MARKER
from .columns import (
    METRIC_NAMES,
    PAUSE_ABOVE_US,
    UNMODELLED,
    Bound,
    Column,
    filter_aliases,
    legend,
)
from .filters import DIFF_EXTRA_KEYS, TIME_UNITS, comparison_keys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Section:
    title: str
    rows: tuple[tuple[str, str], ...]  # (term, meaning)
    intro: str = ""


#: What each category of ttdash/data/categories.toml (tt-perf-report's classification) holds;
#: tests/test_glossary.py fails when the file gains a category without a line here.
CATEGORY_MEANING = {
    "Compute": "math on the Tensix cores: matmul and conv, eltwise (Binary, Unary), norms, "
               "softmax, attention, reductions, embeddings",
    "DM": "data movement: copies and moves, interleaved <-> sharded, halo, reshard, paged "
          "cache updates",
    "CCL": "collective communication between devices: all-gather, reduce-scatter, "
           "all-reduce, all-to-all, send/receive",
    "TM": "tensor manipulation: reshape, transpose, permute, slice, concat, split, pad, "
          "tilize/untilize, typecast",
}
#: The two categories ttdash gives outside the file.
EXTRA_CATEGORIES = {
    "Host": f"a host fallback op (its op code holds {HOST_MARKER}): it ran on the CPU",
    "Other": "an op code tt-perf-report's list does not name",
}


@lru_cache(maxsize=1)
def categories() -> dict[str, list[str]]:
    """Category -> its op codes, as ttdash/data/categories.toml lists them."""
    text = resources.files("ttdash").joinpath("data/categories.toml").read_text()
    return {k: list(v) for k, v in tomllib.loads(text).items()}


def column_filter(c: Column) -> str:
    """How the filter reaches a column ("" when it does not)."""
    keys = filter_aliases()
    compare = comparison_keys(keys)
    forms = []
    for k, f in keys.items():
        if f == c.key:  # `device:` is the device id, `device>` the device time
            forms.append(f"{k}<N" if c.numeric and compare[k] == c.key else f"{k}:"
                         + ("N" if c.numeric else "TEXT"))
    forms += [f"{k}<N (with a unit)" for k, f in compare.items()
              if f == c.key and keys.get(k) != c.key]
    if not forms:
        return ""
    return "filter " + ", ".join(forms) + (f"; e.g. {c.filter_example}" if c.filter_example
                                           else "")


def column_rows() -> tuple[tuple[str, str], ...]:
    rows = []
    for c in C.COLUMNS:  # (read at call time: a test adds a column)
        parts = [f"{c.title}: {c.meaning}" if c.title != c.short else c.meaning]
        if c.unit:
            parts.append(f"unit {c.unit}")
        if c.basis:
            parts.append(f"a share of {c.basis}")
        if f := column_filter(c):
            parts.append(f)
        rows.append((c.short, "; ".join(parts)))
    return tuple(rows)


def _legend_split() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """columns.legend() as (its bound lines, the rest)."""
    bounds = {b.value for b in Bound} | {"blank bound"}
    rows = legend()
    return [r for r in rows if r[0] in bounds], [r for r in rows if r[0] not in bounds]


def category_rows() -> tuple[tuple[str, str], ...]:
    rows = []
    for name, ops in categories().items():
        meaning = CATEGORY_MEANING.get(name, "")
        rows.append((name, f"{meaning} ({len(ops)} op codes)"))
    rows += list(EXTRA_CATEGORIES.items())
    return tuple(rows)


def filter_rows() -> tuple[tuple[str, str], ...]:
    units = ", ".join(u for u in TIME_UNITS if u.isascii())
    rows = [
        ("text", "a word without a key matches the op code (case-insensitive, any part)"),
        ("key:value", "the column holds the value (cat:TM, sp:decode); key:=VALUE equals it"),
        ("key<N", "compares a number column: < <= > >= = != (cores<10, dram>60, "
                  "gap>100us); key:N is key=N, key:<N is key<N"),
        ("units", f"times take {units} (a bare number is us: gap>100 is gap>100us); shares "
                  "take an optional % (dram>60%)"),
        ("missing", "an op without the value (a host op's device time, an "
                    f"{UNMODELLED} op's DRAM %) never matches a comparison, so it matches "
                    "the comparison's negation"),
        ("device>1ms / dev:1", "device>… compares the device time and needs a unit; the "
                               "device id is dev:1, dev>1 or device:1"),
        ("-term, !term", "excludes what the term matches (-cat:TM, !device>1ms)"),
        ("several terms", "ANDed; \"quotes\" keep spaces (sp:\"decode 1\"); empty clears"),
    ]
    rows += [(f"{e.key}: (diff)", f"{e.title}: {e.meaning} (e.g. {', '.join(e.examples)})")
             for e in DIFF_EXTRA_KEYS]
    rows.append(("bound: (diff)", "matches either side of the diff's Bound A→B"))
    return tuple(rows)


TIMELINE_ROWS = (
    ("lane", "one per device (one for a merged view); ▶ marks the selected lane"),
    ("▁▂▃▄▅▆▇█", "how much of the cell's stretch of time the device was busy; the colour is "
                 "the bound class with the most time in it (other: not modelled)"),
    ("·", "the device ran nothing in that stretch (or only ops the filter hides)"),
    ("▼ (sp row)", "a signpost: where the next op after it started"),
    ("≈ (cut row)", f"a host pause longer than {PAUSE_ABOVE_US:g} us was cut to "
                    f"{PAUSE_ABOVE_US:g} us there, so the ops around it fit on screen"),
    ("cut / real time", "t switches between pauses cut (the default; the title says how much "
                        "idle time was taken out) and real time"),
    ("FW cycles", "ops placed by the device firmware's own end cycles (each device its own "
                  "clock)"),
    ("time from durations + gaps", "no cycle data (live rows, old CSVs, merged views): ops "
                                   "placed one after the other by device time and gap"),
    ("┊", "an axis tick, in time from the lane's first op"),
)

DIFF_ROWS = (
    ("A / B", "A is the baseline, B the candidate"),
    ("+ / - / ~", "added in B, removed from B, matched at another position (moved)"),
    ("≈", "the change is within the op's run-to-run noise"),
    ("Δ time, Δ%", "B's device time less A's, and as a share of A's"),
    ("◂fast│slow▸", "the Δ% as a bar: left faster in B, right slower"),
    ("Bound A→B", "the bound class on each side when it changed"),
    ("Cause", "what changed between the two ops (fidelity, cores, tensors, ATTRIBUTES), as "
              "`diff -f table` names it; cut with … when narrow, whole in enter's details"),
)


def term_rows() -> tuple[tuple[str, str], ...]:
    steady = METRIC_NAMES["steady"]
    return (
        ("steady state", f"{steady}: what a run costs once compiled and warm"),
        ("wall", METRIC_NAMES["wall"]),
        ("window", "which ops count: the whole trace, tt-perf-report's window after the "
                   "first signpost, a signpost region, or a metal-trace replay (the window "
                   "options of open, report and diff)"),
        ("merged view", "several devices' rows of one op shown as one: the slowest device "
                        "(CCL ops averaged); --per-device keeps every device's row"),
    )


def glossary() -> list[Section]:
    """Every section, in the order the help screen and the docs show them."""
    bound_rows, marks = _legend_split()
    return [
        Section("Columns", column_rows(),
                "The op table's narrow title, its long title (details, report) and meaning."),
        Section("Bound classes (Bound)", tuple(bound_rows)),
        Section("Categories (Cat)", category_rows(),
                "tt-perf-report's classification by the op code's first word."),
        Section("Marks, colours and shares", tuple(marks)),
        Section("Words", term_rows()),
        Section("Filter (/)", filter_rows()),
        Section("Timeline (4)", TIMELINE_ROWS),
        Section("Diff view", DIFF_ROWS),
    ]


def glossary_rows() -> list[tuple[str, str]]:
    """Every (term, meaning), sections flattened."""
    return [row for s in glossary() for row in s.rows]
