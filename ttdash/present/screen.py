"""The TUI's tables on present.table's specs: a column as the TUI draws it (`on_screen`: its head
as its title, the op label uncut), a spec's SCREEN columns (`screen_spec`), the trace's counter
columns (`counter_column`) and the run list's change colour (`change_rule`). The cells are
present.table.cells', as for the text outputs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..model.columns import Severity
from .labels import op_labels
from .table import SCREEN, Column, Rule, TableSpec, _op_rule
from .values import format_values


def _screen_op_labels(ops: pd.DataFrame) -> list[str]:
    """The op label uncut (the TUI's table cuts it to its column's width, with "…")."""
    return op_labels(ops, limit=1 << 30)


def on_screen(c: Column) -> Column:
    """A column as the TUI's tables draw it: its head as its title; an op column labelled with
    its size and coloured by its flags (host fallback, corrupt timing), uncut."""
    if c.kind == "op" and c.key == "op_code":
        c = replace(c, texts=_screen_op_labels, rule=c.rule or _op_rule)
    return replace(c, title=c.head, short=None)


def screen_spec(spec: TableSpec) -> TableSpec:
    """`spec`'s SCREEN columns as the TUI draws them (on_screen)."""
    return TableSpec(spec.name, tuple(on_screen(c) for c in spec.on(SCREEN)), spec.meaning)


def _whole_or_2(values: np.ndarray) -> list[str]:
    """A hardware counter: whole numbers as such, others with 2 decimals."""
    x = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    whole = np.isfinite(x) & (np.mod(x, 1) == 0)
    return [("" if not np.isfinite(v) else f"{v:,.0f}" if w else f"{v:,.2f}")
            for v, w in zip(x, whole)]


def counter_column(name: str, title: str, width: int, kind: str) -> Column:
    """A counter column of the trace's file (the TUI's `a` picker): `kind` "ns" a per-RISC
    kernel time (drawn in us, as the device time), "pct" a utilisation, else a number."""
    if kind == "ns":
        return Column(name, title, "us", name, unit="us", width=width, priority=1,
                      texts=lambda f: format_values("us", pd.to_numeric(
                          f[name], errors="coerce").to_numpy(float) / 1000))
    if kind == "pct":
        return Column(name, title, "pct", name, unit="%", width=width, priority=1)
    return Column(name, title, "num", name, width=width, priority=1,
                  texts=lambda f: _whole_or_2(f[name].to_numpy()))


def change_rule(limit_pct: float) -> Rule:
    """A change in percent coloured from `limit_pct` on: slower bad, faster good."""
    def rule(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
        x = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
        out = np.full(len(x), None, dtype=object)
        with np.errstate(invalid="ignore"):
            out[x >= limit_pct], out[x <= -limit_pct] = Severity.BAD, Severity.GOOD
        return out
    return rule
