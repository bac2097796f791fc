"""Number formatting shared by the report outputs and the TUI (one definition of each unit)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and pandas are imported where used
    import numpy as np


def plural(n: int, word: str) -> str:
    """"1 rank", "2 ranks", "1,972 rows"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cell_text(v: object) -> str:
    """A raw CSV cell as the file wrote it: blank when missing, a whole number without ".0" or
    an exponent (a compact float32 column's 3258005.0 is "3258005"), other numbers in Python's
    shortest form, text as is."""
    if is_missing(v):
        return ""
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 1e16 else str(f)
    return str(v)


def is_missing(v: object) -> bool:
    """None, NaN (of any float width: a compact column's is numpy float32, not a Python
    float), or pandas' NA/NaT (shown as a blank, never as "<NA>")."""
    if v is None:
        return True
    if isinstance(v, numbers.Real):
        return math.isnan(v)
    return type(v).__name__ in ("NAType", "NaTType")


def _float(v: object) -> float | None:
    """A finite number, or None for text and other odd cells (which are shown as they are)."""
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fmt_us(v: object, width: int = 0) -> str:
    """Microseconds with thousands separators; large values in ms/s."""
    if is_missing(v):
        return ""
    x = _float(v)
    if x is None:
        return str(v)
    if abs(x) >= 1e6:
        s = f"{x / 1e6:,.2f} s"
    elif abs(x) >= 1e4:
        s = f"{x / 1e3:,.1f} ms"
    elif abs(x) >= 100:
        s = f"{x:,.0f} us"
    else:
        s = f"{x:,.2f} us" if abs(x) < 10 else f"{x:,.1f} us"
    return s.rjust(width)


#: A saving estimate under this (us) is none to speak of: printed "none", never "0.00 us"
MIN_SAVING_US = 0.005


def fmt_saving(v: object) -> str:
    """A saving estimate as fmt_us writes it; "none" where it rounds to nothing (a
    dispatch-bound op saves no device time), never "0.00 us" or a negative time."""
    if is_missing(v):
        return ""
    x = _float(v)
    return "none" if x is not None and x < MIN_SAVING_US else fmt_us(v)


def fmt_pct(v: object, digits: int = 1) -> str:
    if is_missing(v):
        return ""
    x = _float(v)
    return str(v) if x is None else f"{x:.{digits}f}%"


def fmt_share(v: object) -> str:
    """A share in a header or a legend: whole percent from 10%, one decimal under it (0.2% is
    not "0%"), "<0.1%" for a tiny one, "0%" for none."""
    if is_missing(v):
        return ""
    x = _float(v)
    if x is None:
        return str(v)
    if x == 0:
        return "0%"
    if abs(x) < 0.05:
        return "<0.1%"
    if 99.5 <= abs(x) < 99.95:  # not "100%" while something else has a share
        return f"{x:.1f}%"
    return f"{x:.0f}%" if abs(x) >= 9.95 else f"{x:.1f}%"


def fmt_num(v: object, digits: int = 0) -> str:
    if is_missing(v):
        return ""
    x = _float(v)
    return str(v) if x is None else f"{x:,.{digits}f}"


def fmt_mhz(mhz: float) -> str:
    """A clock as every front end says it: whole MHz ("1350 MHz"; the clock inferred from
    cycles and durations is a median, 1350.1, whose tenth says nothing)."""
    return f"{mhz:.0f} MHz"


def fmt_int(v: object) -> str:
    if is_missing(v):
        return ""
    x = _float(v)
    return str(v) if x is None else f"{int(x)}"


def bar(pct: object, width: int) -> str:
    """A utilisation bar of block characters (eighths), `width` cells for 100%."""
    if is_missing(pct) or width <= 0:
        return " " * max(width, 0)
    x = _float(pct)
    if x is None:
        return " " * width
    frac = max(0.0, min(1.0, x / 100.0))
    eighths = int(round(frac * width * 8))
    full, rem = divmod(eighths, 8)
    s = "█" * full + ("" if rem == 0 else " ▏▎▍▌▋▊▉"[rem])
    return s.ljust(width)[:width]


def signed_pct(v: object) -> str:
    """A change in percent with its sign: "+1.25%", "-0.40%"; "" when missing."""
    return "" if is_missing(v) else f"{float(v):+.2f}%"  # type: ignore[arg-type]


def nice_step(span: float, ticks: int) -> float:
    """A 1/2/5 x 10^k step giving about `ticks` ticks over `span`."""
    raw = span / max(ticks, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    return float(next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw))


def tick_text(v: float) -> str:
    """An axis label: 0, 250, 2.5k, 40k, 1.2M, 0.05 (no float noise, no trailing .0)."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.4g}M"
    if a >= 1e4:
        return f"{v / 1e3:.4g}k"
    return f"{v:,.4g}" if a >= 1 or v == 0 else f"{v:.2g}"


def linear_ticks(lo: float, hi: float, ticks: int = 5) -> tuple[list[float], list[str]]:
    """Round tick values at an even 1/2/5 x 10^k step covering [lo, hi], with their labels."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo], [tick_text(lo)]
    step = nice_step(hi - lo, ticks)
    first = math.ceil(lo / step - 1e-9)
    values = [round(k * step, 12) for k in range(first, int(math.floor(hi / step + 1e-9)) + 1)]
    return values, [tick_text(v) for v in values]


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Decade ticks (1, 10, 100, ...) over [lo, hi] of a log axis; 1-2-5 ticks when the range
    spans fewer than two decades."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= lo:
        return [], []
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1,) if math.log10(hi / lo) >= 2 else (1, 2, 5)
    values = [m * 10.0 ** e for e in range(a, b + 1) for m in mults
              if lo <= m * 10.0 ** e <= hi]
    values = [float(f"{v:.12g}") for v in values]
    return values, [tick_text(v) for v in values]


#: fmt_us's units: (lowest |x|, divisor, format) from the largest down.
_US_STEPS = ((1e6, 1e6, "{:,.2f} s"), (1e4, 1e3, "{:,.1f} ms"), (100.0, 1.0, "{:,.0f} us"),
             (10.0, 1.0, "{:,.1f} us"), (0.0, 1.0, "{:,.2f} us"))


def fmt_floats(kind: str, values: object, digits: int = 1) -> list[str] | None:
    """A whole float column formatted as fmt_us / fmt_pct / fmt_num / fmt_int format each value
    (`kind`: us, pct, num, int/id), with the same text for every value, a unit's values at a time
    (no per-value type checks: 10x fewer Python calls on a 100,000-row table), each distinct
    value once (by its bits: -0.0 is not 0.0; a trace's columns repeat values, every iteration
    of a model the same ops); None when the values are not floats (the per-value formatters
    handle anything)."""
    import numpy as np

    a = np.asarray(values)
    if a.dtype.kind not in "fiu":
        return None
    x = np.ascontiguousarray(a.astype("float64", copy=False))
    if len(x) < DISTINCT_FROM:
        return _fmt_floats(kind, x, digits)
    import pandas as pd

    codes, bits = pd.factorize(x.view(np.int64))
    texts = _fmt_floats(kind, bits.view(np.float64), digits)
    if texts is None:
        return None
    return np.array(texts, dtype=object)[codes].tolist()


#: Columns from this many values are formatted a distinct value at a time.
DISTINCT_FROM = 64


def _fmt_floats(kind: str, x: np.ndarray, digits: int) -> list[str] | None:
    """fmt_floats of float64 values, each value formatted."""
    import numpy as np

    out = np.full(len(x), "", dtype=object)
    finite = np.isfinite(x)
    odd = np.flatnonzero(~finite & ~np.isnan(x))  # inf: shown as the value itself
    out[odd] = [str(v) for v in x[odd].tolist()]
    if kind == "us":
        ax = np.abs(x)
        left = finite.copy()
        for low, div, form in _US_STEPS:
            sel = np.flatnonzero(left & (ax >= low))
            left[sel] = False
            out[sel] = list(map(form.format, (x[sel] / div if div != 1.0 else x[sel]).tolist()))
        return out.tolist()
    sel = np.flatnonzero(finite)
    vals = x[sel].tolist()
    if kind == "pct":
        out[sel] = list(map(f"{{:.{digits}f}}%".format, vals))
    elif kind == "num":
        out[sel] = list(map(f"{{:,.{digits}f}}".format, vals))
    elif kind in ("int", "id"):
        out[sel] = list(map(str, map(int, vals)))
    else:
        return None
    return out.tolist()


@dataclass(frozen=True)
class Coded:
    """A column's texts as each distinct value's (`texts`, a pyarrow string array; null: a
    missing value) and each row's position among them (`at`, integers, pyarrow or numpy; null:
    a row with none): the writers join, pad or escape the few distinct texts, not every row's
    (report.safe's records and padded rows, present.table.cells(coded=True))."""
    texts: Any
    at: Any


def distinct(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Values (a Series or an array) as (each one's position among the distinct values, those
    values as objects); the missing ones (None, NaN, NA) share one position, the last, holding
    the first of them as it is. What a per-value wording needs to word each value once."""
    import numpy as np
    import pandas as pd

    at, uniques = pd.factorize(values, use_na_sentinel=True)
    missing = np.flatnonzero(at < 0)
    out = np.empty(len(uniques) + bool(len(missing)), dtype=object)
    out[:len(uniques)] = np.asarray(uniques, dtype=object)
    if len(missing):
        first = values.iloc[missing[0]] if isinstance(values, pd.Series) else values[missing[0]]
        out[-1] = first
        at = np.where(at < 0, len(uniques), at)
    return at, out


def fmt_texts(values: object) -> list[str] | None:
    """A text column's cells as the tables show each value (blank when missing, else `str`),
    each distinct value converted once; None unless every present value is a str (a column
    mixing numbers and text goes value by value: a hash table would take 1 and 1.0 as one)."""
    import numpy as np
    import pandas as pd

    a = np.asarray(values, dtype=object)
    if pd.api.types.infer_dtype(a, skipna=True) not in ("string", "empty"):
        return None
    codes, uniques = pd.factorize(a, use_na_sentinel=True)
    texts = np.empty(len(uniques) + 1, dtype=object)
    texts[:-1] = uniques
    texts[-1] = ""  # code -1: missing (None, NaN, NA)
    return texts[codes].tolist()
