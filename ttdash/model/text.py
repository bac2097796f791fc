"""Making untrusted profiler text inert (the model's part: strip control characters)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

# C0 controls except tab, DEL, C1 controls (escape sequences start here), and the Unicode bidi
# overrides/isolates that reorder what a terminal shows.
CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]")


def clean_text(value: object) -> object:
    """Strip control and bidi characters from a string; other values pass through."""
    if isinstance(value, str):
        return CONTROL_RE.sub("", value)
    return value


def clean_series(s: pd.Series) -> pd.Series:
    """clean_text over a text column, once per distinct value (missing stays missing)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    cleaned = [clean_text(u) for u in uniques]
    if all(c == u for c, u in zip(cleaned, uniques)):
        return s
    values = np.array(cleaned + [None], dtype=object)[codes]
    return pd.Series(values, index=s.index, dtype="string")
