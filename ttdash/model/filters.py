"""The filter language of the op tables (`/`): free text, `key:value` and comparisons.

    matmul                 text: the op code contains it (case-insensitive)
    cat:TM  sp:decode      key:value: the column contains the value; key:=VALUE: equals it
    cores<10  device>1ms   key OP number on a number column; OP is < <= > >= = !=
    -cat:TM  !gap>100us    a leading - or ! negates a term; terms are ANDed; "quotes" keep spaces

The keys are the column spec's (model.columns): every alias of a Column is a key, and a number
column's key also compares (`cores<10`, `cores:<10`; `cores:10` is `cores=10`). A compare alias
is a key for comparisons only: `device>1ms` compares the device time while `device:1` (and
`dev:1`, `dev>1`) is the device id; a comparison on such a word needs a unit (`device>1` is
refused as ambiguous). Times take ns, us, ms or s (a bare number is us), shares an optional `%`.
A missing value (a host op's device time, an unmodelled op's DRAM %) never matches a comparison,
so it matches the comparison's negation. Every term is vectorised over the frame. A filter is at
most MAX_FILTER_CHARS long and MAX_FILTER_TERMS terms (the TUI's `/` and the MCP server's
`top_ops` parse the same text: a pasted megabyte is refused in one line, not parsed for minutes).
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import BY_KEY, NUMERIC_KINDS, compare_aliases, filter_aliases


@dataclass(frozen=True)
class ExtraKey:
    """A filter key on a field that is not a Column of the spec (the diff table's own)."""

    key: str
    field: str
    kind: str
    title: str
    meaning: str
    examples: tuple[str, ...] = ()


#: The diff table's own fields (model.diff.DiffResult.display_frame).
DIFF_EXTRA_KEYS = (
    ExtraKey("status", "status", "text", "Status",
             "added (only in B), removed (only in A) or matched; a matched op at another "
             "position is moved (status:matched includes it)",
             ("status:added", "status:removed", "status:matched")),
    ExtraKey("delta", "delta_us", "us", "Δ time",
             "B's device time less A's (negative: faster in B)", ("delta>100us",)),
)
#: The columns of the spec the diff table carries, and its field holding each ("A→B" bounds).
DIFF_FIELDS = {"op_code": "op_code", "signpost": "signpost", "bound": "bounds", "id": "id"}

#: Key -> field of the trace, live and workload tables: the column spec's aliases.
FILTER_KEYS: dict[str, str] = filter_aliases()
#: The diff table's keys: the spec's for the columns it has, and its own.
DIFF_FILTER_KEYS: dict[str, str] = {k: DIFF_FIELDS[f] for k, f in FILTER_KEYS.items()
                                    if f in DIFF_FIELDS} \
    | {e.key: e.field for e in DIFF_EXTRA_KEYS}

_EXTRA_KINDS = {e.field: e.kind for e in DIFF_EXTRA_KEYS} | {"bounds": "text"}
_EXTRA_TITLES = {e.field: e.title for e in DIFF_EXTRA_KEYS} | {"bounds": "Bound A→B"}

#: Comparison operators, longest first (the parser tries them in this order).
COMPARE_OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "<=": np.less_equal, ">=": np.greater_equal, "!=": np.not_equal,
    "<": np.less, ">": np.greater, "=": np.equal}
#: Time units in us (a time column's bare number is us).
TIME_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}

_OP = "|".join(re.escape(o) for o in COMPARE_OPS)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COMPARISON = re.compile(rf"([A-Za-z_]\w*)({_OP})(.*)", re.S)
_LEADING_OP = re.compile(rf"({_OP})?(.*)", re.S)
_VALUE = re.compile(rf"\s*({_NUMBER})\s*(\S*)\s*")
# "cores < 10", "device > 1 ms" -> "cores<10", "device>1ms" (only for known keys)
_SPACED = re.compile(rf"(?<![\w:])([A-Za-z_]\w*)\s*({_OP})\s*({_NUMBER})"
                     r"(?:\s+(ns|us|µs|μs|ms|s|%)(?![\w%]))?")


#: The longest filter text, in characters (4 KiB), and the most terms it may have.
MAX_FILTER_CHARS = 4096
MAX_FILTER_TERMS = 64


class FilterError(ValueError):
    """A filter the user typed that cannot mean anything (unknown key, bad value)."""


@dataclass(frozen=True)
class Term:
    field: str
    value: str
    negate: bool = False
    op: str = ""  # a comparison (<, <=, >, >=, =, !=) of a number column; "": a text match
    number: float = math.nan  # the comparison's operand in the column's unit (us, %)


def field_kind(field: str) -> str:
    """The kind of a filterable field (model.columns kinds: us, pct, int, text, ...)."""
    spec = BY_KEY.get(field)
    return spec.kind if spec is not None else _EXTRA_KINDS.get(field, "text")


def field_title(field: str) -> str:
    spec = BY_KEY.get(field)
    return spec.title if spec is not None else _EXTRA_TITLES.get(field, field)


def _what(field: str) -> str:
    """A field in words: its meaning's first clause ("device id"), else its title."""
    spec = BY_KEY.get(field)
    return spec.meaning.split(" (")[0] if spec is not None else field_title(field).lower()


def comparison_keys(keys: dict[str, str]) -> dict[str, str]:
    """Key -> field for `key OP value`: the keys, and the spec's compare aliases of the fields
    they reach (`device` -> device time when the keys reach the device time)."""
    fields = set(keys.values())
    return keys | {a: f for a, f in compare_aliases().items() if f in fields}


def _first_keys(keys: dict[str, str]) -> dict[str, str]:
    """Field -> its first key."""
    first: dict[str, str] = {}
    for k, f in keys.items():
        first.setdefault(f, k)
    return first


@dataclass(frozen=True)
class Filter:
    text: str = ""
    keys: tuple[tuple[str, str], ...] = tuple(FILTER_KEYS.items())

    @classmethod
    def for_keys(cls, text: str, keys: dict[str, str]) -> Filter:
        return cls(text, tuple(keys.items()))

    def terms(self) -> list[Term]:
        """The parsed terms; FilterError (one line, naming the term) when one cannot mean
        anything: an unknown key (the valid ones listed), a bad number or unit."""
        if len(self.text) > MAX_FILTER_CHARS:
            raise FilterError(f"the filter is {len(self.text):,} characters long; a filter "
                              f"takes at most {MAX_FILTER_CHARS:,}")
        colon = dict(self.keys)
        compare = comparison_keys(colon)

        def tighten(m: re.Match[str]) -> str:
            if m.group(1).lower() not in compare:
                return m.group(0)
            return m.group(1) + m.group(2) + m.group(3) + (m.group(4) or "")

        text = _SPACED.sub(tighten, self.text)
        try:  # "quoted terms" may hold spaces
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        if len(words) > MAX_FILTER_TERMS:
            raise FilterError(f"the filter has {len(words):,} terms; a filter takes at most "
                              f"{MAX_FILTER_TERMS}")
        return [_Parser(colon, compare).term(w) for w in words]

    def mask(self, ops: pd.DataFrame) -> np.ndarray:
        """Rows matching every term (text case-insensitive); signpost rows are kept only when
        the filter is empty, so a filtered table lists ops alone."""
        terms = self.terms()
        if not terms:
            return np.ones(len(ops), dtype=bool)
        keep = ~ops["is_signpost"].to_numpy(dtype=bool)
        for t in terms:
            hit = term_mask(ops, t)
            keep &= ~hit if t.negate else hit
        return keep


def term_mask(ops: pd.DataFrame, t: Term) -> np.ndarray:
    """The rows one term matches, before its negation."""
    if t.field not in ops.columns:
        return np.zeros(len(ops), dtype=bool)
    if t.op:
        v = numbers(ops[t.field])
        with np.errstate(invalid="ignore"):
            return ~np.isnan(v) & COMPARE_OPS[t.op](v, t.number)
    if t.field == "status":
        st = ops["status"].to_numpy(dtype=object)
        want = t.value.lower().removeprefix("=")  # status:added, status=added
        return (st == want) | ((want == "matched") & (st == "moved"))
    if t.value.startswith("=") and len(t.value) > 1:  # key:=VALUE, exact
        s = ops[t.field].astype("string").fillna("").str.lower()
        return (s == t.value[1:].lower()).to_numpy(dtype=bool)
    s = ops[t.field].astype("string").fillna("")
    return s.str.contains(re.escape(t.value), case=False, regex=True).to_numpy(dtype=bool)


def numbers(s: pd.Series) -> np.ndarray:
    """A column as float64, NaN where missing or not a number."""
    try:
        return s.to_numpy(dtype="float64", na_value=np.nan)
    except (TypeError, ValueError):
        return pd.to_numeric(s.astype(object), errors="coerce") \
            .to_numpy(dtype="float64", na_value=np.nan)


@dataclass(frozen=True)
class _Parser:
    colon: dict[str, str]  # key -> field for key:value
    compare: dict[str, str]  # key -> field for key OP value

    def term(self, raw: str) -> Term:
        negate = raw[:1] in ("-", "!") and len(raw) > 1
        term = raw[1:] if negate else raw
        m = _COMPARISON.fullmatch(term)
        if m:
            key, op, value = m.groups()
            field = self.compare.get(key.lower())
            if field is None:
                raise FilterError(f"unknown filter key {key!r} in {term!r}; keys that compare: "
                                  f"{self.number_keys()} (op:TEXT finds any text in the op "
                                  "code)")
            return self.comparison(term, key.lower(), field, op, value, negate)
        key, sep, value = term.partition(":")
        if not (sep and key and not value.startswith(":")):  # "ttnn::add" is text, not a key
            return Term("op_code", term, negate)
        field = self.colon.get(key.lower())
        if field is None:
            valid = ", ".join(f"{k}:" for k in _first_keys(self.colon).values())
            raise FilterError(f"unknown filter key {key + ':'!r}; valid keys: {valid} "
                              "(or plain text for the op code; - or ! negates; numbers also "
                              "compare: cores<10)")
        if not value:
            raise FilterError(f"{term!r} needs a value after the colon")
        if field_kind(field) in NUMERIC_KINDS:  # cores:10, cores:<10
            lead = _LEADING_OP.fullmatch(value)
            assert lead is not None  # the pattern matches any text
            return self.comparison(term, key.lower(), field, lead.group(1) or "=",
                                   lead.group(2), negate, colon_form=True)
        return Term(field, value, negate)

    def number_keys(self) -> str:
        return ", ".join(k for f, k in _first_keys(self.compare).items()
                         if field_kind(f) in NUMERIC_KINDS)

    def comparison(self, term: str, key: str, field: str, op: str, value: str, negate: bool,
                   colon_form: bool = False) -> Term:
        kind, title = field_kind(field), field_title(field)
        if kind not in NUMERIC_KINDS:  # text: = and != match exactly
            if op not in ("=", "!="):
                raise FilterError(f"{term!r}: {key} is text ({title}); < and > compare "
                                  f"numbers: use {key}:TEXT, {key}=TEXT or {key}!=TEXT")
            if not value:
                raise FilterError(f"{term!r} needs a value after {op}")
            return Term(field, "=" + value, negate != (op == "!="))
        m = _VALUE.fullmatch(value)
        if m is None:
            what = "needs a number" if not value.strip() else f"has {value!r}, not a number"
            raise FilterError(f"{term!r} {what} after {key}{':' if colon_form else ''}{op} "
                              f"({title}{', a time: 100us, 1.5ms' if kind == 'us' else ''})")
        x, unit = float(m.group(1)), m.group(2)
        other = self.compare.get(key) if colon_form else self.colon.get(key)
        if kind == "us":
            if unit and unit.lower() not in TIME_UNITS:
                raise FilterError(f"{term!r}: unknown unit {unit!r}; {title} takes ns, us, ms "
                                  "or s (a bare number is us)")
            if not unit and other not in (None, field):
                num = m.group(1)
                raise FilterError(
                    f"{term!r} is ambiguous: {key}{op}… compares the {title.lower()} and needs a "
                    f"unit ({key}{op}{num}us, {key}{op}{num}ms); the {_what(other)} is "
                    f"{_first_keys(self.colon)[other]}{op}{num} (or {key}:{num})")
            if unit.lower() == "ns":  # divided, correctly rounded: 1234ns == 1.234 us
                x /= 1000
            elif unit:
                x *= TIME_UNITS[unit.lower()]
        elif unit and not (kind == "pct" and unit == "%"):
            hint = ""
            if other is not None and other != field and unit.lower() in TIME_UNITS:
                hint = f"; {key}{op}{m.group(1)}{unit} (no colon) compares the " \
                       f"{field_title(other).lower()}"
            raise FilterError(f"{term!r}: {title} is a plain number"
                              f"{' or a %' if kind == 'pct' else ''}, not {unit!r}{hint}")
        if not math.isfinite(x):
            raise FilterError(f"{term!r}: {m.group(1)!r} is too large")
        return Term(field, value, negate, op, x)


def filter_examples(keys: dict[str, str]) -> tuple[list[str], list[str]]:
    """The spec's example terms valid with `keys`: (key:value ones, comparisons)."""
    examples = [c.filter_example for c in BY_KEY.values() if c.filter_example]
    examples += [ex for e in DIFF_EXTRA_KEYS for ex in e.examples]
    matches: list[str] = []
    comparisons: list[str] = []
    for ex in examples:
        try:
            Filter.for_keys(ex, keys).terms()
        except FilterError:
            continue
        (comparisons if _COMPARISON.fullmatch(ex) else matches).append(ex)
    return matches, comparisons


def filter_hint(keys: dict[str, str]) -> str:
    """The one-line hint under the filter prompt of a table whose filter takes `keys`
    (FILTER_KEYS, DIFF_FILTER_KEYS), generated from the column spec's examples."""
    matches, comparisons = filter_examples(keys)
    parts = ["text matches the op code"]
    if matches:
        parts.append("keys " + " ".join(matches))
    if comparisons:
        parts.append("compare " + " ".join(comparisons) + " (< <= > >= = !=, ns/us/ms/s)")
    parts += ["-term or !term excludes", "terms are ANDed", "empty clears"]
    return "; ".join(parts)
