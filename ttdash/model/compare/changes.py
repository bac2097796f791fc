"""What changed between the two ops of each matched pair of a diff, named next to its delta.

Compared, per op, when both files can say it (a column one file lacks is not compared, except a
tensor's: the header is sized to the run's largest tensor count, so a missing ``OUTPUT_2_*``
means no op had that tensor):

=====================  ====================================  =================================
key                    from                                  cause text
=====================  ====================================  =================================
``fidelity``           ``MATH FIDELITY``                     ``fidelity HiFi2 -> HiFi4``
``cores``              ``CORE COUNT``                        ``cores 64 -> 32``
``in0.memory``         ``INPUT_0_MEMORY`` (no ``DEV_n_``)    ``in0 L1 -> DRAM``
``in0.dtype``          ``INPUT_0_DATATYPE``                  ``in0 BFLOAT16 -> BFLOAT8_B``
``in0.layout``         ``INPUT_0_LAYOUT``                    ``in0 TILE -> ROW_MAJOR``
``in0.shape``          ``INPUT_0_W/Z/Y/X`` (padded)          ``in0 1x1x32x64 -> 1x1x64x64``
``out0.*``             the ``OUTPUT_0_*`` columns            ``out0 ...``
``attributes.<path>``  an ATTRIBUTES field (attributes.py)   ``program_config.in0_block_w 4 -> 2``
``program_cache``      ``PROGRAM CACHE HIT``                 ``program cache hit -> miss``
=====================  ====================================  =================================

Listed in that order (fidelity and cores first: they explain most slowdowns); a math fidelity
read from ATTRIBUTES is the ``fidelity`` change when the column did not say it already.

Vectorised: each field is factorised once over both sides' ops (an int code per op); a pair's
*change set* is the tuple of (baseline code, candidate code) of the fields that differ, numbered
with ``cells.factorize_rows``; the text of a change set is built once (a 100k-op diff has a few
dozen sets). :class:`Compared` keeps the codes, so the TUI can show any pair's fields side by
side (:meth:`Compared.side_by_side`) without reading the files again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..columns import aggregated
from ..read.attributes import ATTRIBUTES, CACHE_HIT, Coded, coded, field_diff, flatten, joint
from ..read.cells import factorize_rows, first_rows
from ..read.text import clean_text
from ..trace import View
from .signature import _positions, _raw_column, _raw_table

#: How many changes a cause text names before "+N more".
CAUSE_ITEMS = 3
#: How many changes the per-op-code cause names.
GROUP_CAUSE_ITEMS = 2
ARROW = " -> "

_DEV_RE = re.compile(r"^DEV_\d+_")
_TENSOR_RE = re.compile(r"^(INPUT|OUTPUT)_(\d+)_(LAYOUT|DATATYPE|MEMORY|W|Z|Y|X)$")
_ORDER = {"fidelity": 0, "cores": 1, "memory": 2, "dtype": 3, "layout": 4, "shape": 5,
          "attributes": 6, "program_cache": 7}


@dataclass(frozen=True)
class Change:
    """One field that differs between the two ops of a pair."""

    key: str  # "fidelity", "cores", "in0.memory", "attributes.program_config.in0_block_w", ...
    label: str  # what the cause text names: "fidelity", "in0", "program_config.in0_block_w"
    baseline: Any  # the value shown (None: the side has none)
    candidate: Any
    kind: str = "attributes"  # fidelity, cores, memory, dtype, layout, shape, attributes, ...

    def text(self) -> str:
        b, c = _short_pair(self.key, self.baseline, self.candidate)
        return f"{self.label} {b}{ARROW}{c}"

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "candidate": self.candidate}


def cause_text(changes: tuple[Change, ...] | list[Change], items: int = CAUSE_ITEMS) -> str:
    """"fidelity HiFi2 -> HiFi4; cores 64 -> 32; +3 more" ("" when nothing changed)."""
    shown = [c.text() for c in changes[:items]]
    if len(changes) > items:
        shown.append(f"+{len(changes) - items} more")
    return "; ".join(shown)


def _show(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _short_pair(key: str, a: Any, b: Any) -> tuple[str, str]:
    """Values as the cause shows them: a memory change keeps what differs ("L1 -> DRAM" for
    L1_INTERLEAVED -> DRAM_INTERLEAVED)."""
    sa, sb = _show(a), _show(b)
    if key.endswith(".memory") and a is not None and b is not None:
        ta, tb = sa.split("_", 1), sb.split("_", 1)
        if len(ta) == len(tb) == 2 and ta[1] == tb[1] and ta[0] != tb[0]:
            return ta[0], tb[0]
    return sa, sb


@dataclass
class _Field:
    key: str
    label: str
    kind: str
    a: np.ndarray  # code per op of the baseline (-1: none)
    b: np.ndarray
    values: np.ndarray  # the value shown, per code (objects)

    def __post_init__(self) -> None:
        # the narrowest integer that holds every code: a million ops a side compare ~24
        # fields, 380 MB of int64 codes, ~50 MB of int8
        kind = np.min_scalar_type(-max(len(self.values), 1))
        self.a = self.a.astype(kind, copy=False)
        self.b = self.b.astype(kind, copy=False)


@dataclass
class FieldRow:
    """One row of a pair's side-by-side view."""

    key: str
    label: str
    baseline: Any
    candidate: Any
    changed: bool


@dataclass
class Compared:
    """The compared fields of both sides' ops (see the module docstring)."""

    fields: list[_Field] = field(default_factory=list)
    attributes: _Field | None = None  # values: the raw cells
    #: the change sets of a diff's pairs, by the ``change`` column's number
    sets: list[tuple[Change, ...]] = field(default_factory=list)
    #: per op of each side, an ATTRIBUTES cell too large to read: those ops get no attribute
    #: cause (the others keep theirs); None: none was
    unread_a: np.ndarray | None = None
    unread_b: np.ndarray | None = None

    @property
    def attributes_unread(self) -> dict[str, int]:
        """Ops whose ATTRIBUTES cell was too large to read, per side."""
        return {side: int(u.sum()) if u is not None else 0
                for side, u in (("baseline", self.unread_a), ("candidate", self.unread_b))}

    @property
    def compared(self) -> list[str]:
        """The keys compared (``attributes`` standing for every ATTRIBUTES field)."""
        return [f.key for f in self.fields] + (["attributes"] if self.attributes else [])

    # ------------------------------------------------------------ building
    @classmethod
    def of(cls, a: View, a_ops: pd.DataFrame, a_extra: dict[str, Coded], b: View,
           b_ops: pd.DataFrame, b_extra: dict[str, Coded]) -> Compared:
        out = cls()
        ta, tb = (_raw_table(v, [c for c in v.trace.ordered_labels
                                 if c == "CORE COUNT" or _TENSOR_RE.match(c)]) for v in (a, b))
        pos_a, pos_b = _positions(ta, a_ops), _positions(tb, b_ops)
        ha, hb = set(a.trace.header), set(b.trace.header)

        def ops_col(ops: pd.DataFrame, col: str) -> Coded:
            return coded(ops[col], np.arange(len(ops)))

        if "MATH FIDELITY" in ha and "MATH FIDELITY" in hb:
            out._add("fidelity", "fidelity", "fidelity", ops_col(a_ops, "math_fidelity"),
                     ops_col(b_ops, "math_fidelity"))
        if "CORE COUNT" in ha and "CORE COUNT" in hb:
            # the column's count, not the analysis's (12 for a DRAM-sharded matmul, read from
            # ATTRIBUTES: a file without ATTRIBUTES would differ from one with them)
            out._add("cores", "cores", "cores", _text_at(ta, pos_a, "CORE COUNT"),
                     _text_at(tb, pos_b, "CORE COUNT"))
        for io, k in _tensors(a, b):
            short = f"{'in' if io == 'INPUT' else 'out'}{k}"
            for kind, col in (("memory", "MEMORY"), ("dtype", "DATATYPE"),
                              ("layout", "LAYOUT")):
                name = f"{io}_{k}_{col}"
                out._add(f"{short}.{kind}", short, kind, _text_at(ta, pos_a, name),
                         _text_at(tb, pos_b, name))
            out._add_shape(short, ((_raw_column(ta, pos_a, f"{io}_{k}_{d}"),
                                    _raw_column(tb, pos_b, f"{io}_{k}_{d}")) for d in "WZYX"))
        if CACHE_HIT in a_extra and CACHE_HIT in b_extra:
            out._add("program_cache", "program cache", "program_cache", a_extra[CACHE_HIT],
                     b_extra[CACHE_HIT])
        if ATTRIBUTES in a_extra and ATTRIBUTES in b_extra:
            ca, cb, values = joint(a_extra[ATTRIBUTES], b_extra[ATTRIBUTES], _cell)
            out.attributes = _Field("attributes", "attributes", "attributes", ca, cb, values)
            out.unread_a, out.unread_b = a_extra[ATTRIBUTES].unread, b_extra[ATTRIBUTES].unread
        out.fields.sort(key=lambda f: _ORDER[f.kind])
        return out

    def _add(self, key: str, label: str, kind: str, a: Coded, b: Coded) -> None:
        ca, cb, values = joint(a, b, _SHOW.get(kind, _text))
        self.fields.append(_Field(key, label, kind, ca, cb, values))

    def _add_shape(self, label: str, dims: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        """`dims`: each dimension's (baseline, candidate) values, read one at a time (a million
        ops a side: each dimension's codes held, not the columns of all four)."""
        n = 0
        kept: list[tuple[np.ndarray, np.ndarray]] = []  # per dimension: codes, distinct values

        def folded() -> Iterator[np.ndarray]:
            nonlocal n
            for x, y in dims:
                n = len(x)
                codes, uniques = pd.factorize(np.concatenate([_number(x), _number(y)]),
                                              use_na_sentinel=True)
                del x, y
                codes = codes.astype(np.int32)
                kept.append((codes, np.append(np.asarray(uniques, dtype="float64"), np.nan)))
                yield codes

        ids = factorize_rows(folded())
        first = first_rows(ids)
        values = np.array([_shape_text([u[c[i]] for c, u in kept]) for i in first],
                          dtype=object)  # (code -1: the appended NaN)
        # a tuple with no dimension is "no tensor": code -1, like a missing text cell
        none = np.array([v is None for v in values], dtype=bool)
        codes = np.where(none, -1, np.arange(len(first)))[ids] if len(ids) else ids
        self.fields.append(_Field(f"{label}.shape", label, "shape", codes[:n], codes[n:],
                                  values))

    # ------------------------------------------------------------ pairs
    def compare(self, pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
        """The change-set number of each pair (ops ``pa[k]`` of the baseline and ``pb[k]`` of
        the candidate; -1: nothing compared differs); the sets are appended to ``sets``."""
        n = len(pa)
        out = np.full(n, -1, dtype=np.int64)
        if not n:
            return out
        cols: list[np.ndarray] = []
        any_change = np.zeros(n, dtype=bool)
        for f in self.fields + ([self.attributes] if self.attributes else []):
            ca, cb = f.a[pa], f.b[pb]
            ch = ca != cb
            if f is self.attributes:
                ch &= ~self._unread(pa, pb)  # a cell not read is no change
            if ch.any():
                any_change |= ch
                cols += [np.where(ch, ca, -2), np.where(ch, cb, -2)]
        rows = np.flatnonzero(any_change)
        if not len(rows):
            return out
        ids = factorize_rows(c[rows] for c in cols)
        first = first_rows(ids)
        base = len(self.sets)
        new_sets = [self.changes(int(pa[rows[i]]), int(pb[rows[i]])) for i in first]
        # a set whose only difference is ATTRIBUTES text that flattens alike is no change
        number = np.array([base + k if s else -1 for k, s in enumerate(new_sets)], np.int64)
        self.sets.extend(new_sets)
        out[rows] = number[ids]
        return out

    def _unread(self, pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
        """Per pair, either op's ATTRIBUTES cell too large to read."""
        out = np.zeros(len(pa), dtype=bool)
        for u, p in ((self.unread_a, pa), (self.unread_b, pb)):
            if u is not None:
                out |= u[p]
        return out

    def changes(self, ia: int, ib: int) -> tuple[Change, ...]:
        """What differs between op `ia` of the baseline and op `ib` of the candidate."""
        out: list[Change] = []
        for f in self.fields:
            ca, cb = int(f.a[ia]), int(f.b[ib])
            if ca != cb:
                out.append(Change(f.key, f.label, _value(f, ca), _value(f, cb), f.kind))
        fidelity_said = any(c.key == "fidelity" for c in out)
        fidelity_known = any(f.key == "fidelity" for f in self.fields)
        if self.attributes is not None and not self._unread(np.array([ia]),
                                                            np.array([ib]))[0]:
            f = self.attributes
            ca, cb = int(f.a[ia]), int(f.b[ib])
            if ca != cb:
                for path, va, vb in field_diff(_value(f, ca), _value(f, cb)):
                    if path.endswith("math_fidelity"):
                        if fidelity_said or fidelity_known:
                            continue
                        out.append(Change("fidelity", "fidelity", va, vb, "fidelity"))
                        fidelity_said = True
                        continue
                    out.append(Change(f"attributes.{path}", path, va, vb))
        out.sort(key=lambda c: _ORDER.get(c.kind, len(_ORDER)))  # stable: cell order kept
        return tuple(out)

    def side_by_side(self, ia: int | None, ib: int | None) -> list[FieldRow]:
        """Every compared field of op `ia` of the baseline and op `ib` of the candidate (None:
        that side has no op), the ATTRIBUTES flattened, differences marked: what a details
        view shows in two columns."""
        rows = []
        for f in self.fields:
            va = _value(f, int(f.a[ia])) if ia is not None else None
            vb = _value(f, int(f.b[ib])) if ib is not None else None
            rows.append(FieldRow(f.key, f.label, va, vb, ia is not None and ib is not None
                                 and va != vb))
        if self.attributes is not None:
            f = self.attributes
            ca = _value(f, int(f.a[ia])) if ia is not None else None
            cb = _value(f, int(f.b[ib])) if ib is not None else None
            fa = dict(flatten(ca)) if ca is not None else {}
            fb = dict(flatten(cb)) if cb is not None else {}
            for path in list(fa) + [k for k in fb if k not in fa]:
                va, vb = fa.get(path), fb.get(path)
                rows.append(FieldRow(f"attributes.{path}", path, va, vb,
                                     ia is not None and ib is not None and va != vb))
        return rows


# ==================================================================== values

def _tensors(a: View, b: View) -> list[tuple[str, int]]:
    """(INPUT/OUTPUT, n) of every tensor either file has a column of, in order; none when a
    file has no tensor column at all (a `.logs` device log: it cannot say what the tensors
    were, which is not a change)."""
    found: set[tuple[str, int]] = set()
    for t in (a.trace, b.trace):
        mine = {(m.group(1), int(m.group(2))) for c in t.ordered_labels
                if (m := _TENSOR_RE.match(c))}
        if not mine:
            return []
        found |= mine
    return sorted(found, key=lambda t: (t[0] != "INPUT", t[1]))


def _text_at(ordered: pd.DataFrame, pos: np.ndarray, name: str) -> Coded:
    """A text column of a _raw_table at rows `pos` (a column it lacks: none everywhere)."""
    if name not in ordered.columns:
        return Coded(np.full(len(pos), -1, dtype=np.int64), np.zeros(0, dtype=object))
    return coded(ordered[name], pos)


def _value(f: _Field, code: int) -> Any:
    return None if code < 0 else f.values[code]


def _text(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    s = str(clean_text(str(v))).strip()
    return s or None


def _memory(v: Any) -> str | None:
    s = _text(v)
    return _DEV_RE.sub("", s) if s else None


def _cores(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if np.isfinite(f) and f.is_integer() else None


def _cache(v: Any) -> str | None:
    s = _text(v)
    if s is None:
        return None
    return {"true": "hit", "1": "hit", "false": "miss", "0": "miss"}.get(s.lower(), s)


def _cell(v: Any) -> str | None:
    s = _text(v)
    return s.replace('""', '"') if s else None


_SHOW = {"memory": _memory, "cores": _cores, "program_cache": _cache}


def _number(v: np.ndarray) -> np.ndarray:
    if v.dtype == object:
        return pd.to_numeric(pd.Series(v), errors="coerce").to_numpy(dtype="float64")
    return v.astype("float64")


def _shape_text(dims: list[float]) -> str | None:
    if all(np.isnan(d) for d in dims):
        return None
    return "x".join("?" if np.isnan(d) else str(int(d)) if float(d).is_integer() else str(d)
                    for d in dims)


# ==================================================================== per group

def group_causes(keys: np.ndarray, change: np.ndarray, delta_us: np.ndarray,
                 sets: list[tuple[Change, ...]], items: int = GROUP_CAUSE_ITEMS
                 ) -> dict[Any, str]:
    """Per group key (an op code): its most telling changes, "fidelity HiFi2 -> HiFi4 (24 ops);
    cores 64 -> 32 (12 ops)": each change's pairs counted and their delta summed over the
    group's changed pairs, the largest |delta| first. Done per (group, change set), not per
    pair."""
    sel = change >= 0
    if not sel.any():
        return {}
    df = pd.DataFrame({"k": keys[sel], "s": change[sel], "d": np.nan_to_num(delta_us[sel])})
    g = df.groupby(["k", "s"], sort=False, observed=True)["d"].agg(["size", "sum"]).reset_index()
    rows = []
    for k, s, n, d in g.itertuples(index=False):
        for ch in sets[int(s)]:
            rows.append((k, ch.text(), int(n), float(d)))
    if not rows:
        return {}
    t = aggregated(pd.DataFrame(rows, columns=["k", "text", "n", "d"]).groupby(
        ["k", "text"], sort=False, observed=True), n=("n", "sum"), d=("d", "sum")).reset_index()
    t["abs"] = t["d"].abs()
    t = t.sort_values(["k", "abs", "n"], ascending=[True, False, False], kind="stable")
    out: dict[Any, str] = {}
    for k, part in t.groupby("k", sort=False, observed=True):
        top = part.head(items)
        text = "; ".join(f"{r.text} ({r.n} op{'s' * (r.n != 1)})" for r in top.itertuples())
        if len(part) > items:
            text += f"; +{len(part) - items} more"
        out[k] = text
    return out
