"""A column's values as the tables show them, a whole column at a time (present.table's
`Column.format`): the number kinds through format.fmt_floats (each distinct value once), the
text kinds through format.fmt_texts, the others value by value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from ..format import (
    fmt_floats,
    fmt_pct,
    fmt_saving,
    fmt_share,
    fmt_texts,
    fmt_us,
    is_missing,
    signed_pct,
)
from ..history.query import labels_text
from ..model.columns import FORMATTERS
from ..model.read.text import clean_text

#: Kinds formatted a unit at a time (format.fmt_floats).
NUMBER_KINDS = frozenset({"id", "int", "us", "pct", "num"})


def _per_value(f: Callable[[object], str], values: Any) -> list[str]:
    return [f(v) for v in np.asarray(values, dtype=object)]


def signed_us(v: object) -> str:  # (+ only above zero; blank when missing)
    s = fmt_us(v)
    return "+" + s if s and float(v) > 0 else s  # type: ignore[arg-type]


def _count(v: object) -> str:
    return "" if is_missing(v) else f"{int(v):,}"  # type: ignore[call-overload]


def _share(v: object) -> str:
    return "" if is_missing(v) else f"{v:,.2f}%"


def _label(v: object) -> str:
    return "" if is_missing(v) else str(clean_text(str(v)))


def _gnum(v: object) -> str:
    return "" if is_missing(v) else f"{v:,g}"


#: What an op without a performance model says in the why view's model column.
NO_MODEL = "no model"


def _model_pct(v: object) -> str:
    return NO_MODEL if is_missing(v) else fmt_pct(v)


def _labels(v: object) -> str:
    return labels_text(v if isinstance(v, Mapping) else None)


def _time(v: object) -> str:
    if v is None:
        return ""
    return v.strftime("%Y-%m-%d %H:%M") if isinstance(v, datetime) else str(v)


def format_values(kind: str, values: Any, digits: int = 1) -> list[str]:
    """Texts of a column of `kind`: the number kinds through format.fmt_floats (each distinct
    float once), the text kinds through format.fmt_texts, the others value by value."""
    if kind in NUMBER_KINDS:
        fast = fmt_floats(kind, values, digits)
        if fast is not None:
            return fast
        f = FORMATTERS[kind]
        return [f(v, digits) for v in np.asarray(values, dtype=object)]
    if kind in ("text", "op", "bound", "status"):
        texts = fmt_texts(values)
        if texts is not None:
            return texts
        return _per_value(lambda v: FORMATTERS["text"](v, 0), values)
    one: Callable[[object], str] = {"dus": signed_us, "dpct": signed_pct, "count": _count,
                                    "share": _share, "label": _label, "gnum": _gnum,
                                    "time": _time, "labels": _labels, "saving": fmt_saving,
                                    "pshare": lambda v: "" if is_missing(v) else fmt_share(v),
                                    "model_pct": _model_pct}[kind]
    return _per_value(one, values)
