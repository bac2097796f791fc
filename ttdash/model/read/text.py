"""Making untrusted profiler text inert (the model's part: strip control characters)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # clean_text is used by the CLI's error line: no pandas import for it
    import pandas as pd

# C0 controls except tab, DEL, C1 controls (escape sequences start here), the Unicode bidi
# marks, overrides and isolates that reorder what a terminal shows (U+061C ARABIC LETTER MARK
# included), and the line/paragraph separators some terminals break lines on.
CONTROL_RE = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean_text(value: object) -> object:
    """Strip control and bidi characters from a string; other values pass through."""
    if isinstance(value, str):
        return CONTROL_RE.sub("", value)
    return value


def clean_series(s: pd.Series) -> pd.Series:
    """clean_text over a text column, once per distinct value (missing stays missing)."""
    import numpy as np
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):  # clean the categories, not the rows
        cats = s.cat.categories
        cleaned_cats = [clean_text(c) for c in cats]
        if all(c == u for c, u in zip(cleaned_cats, cats)):
            return s
        if len(set(cleaned_cats)) == len(cleaned_cats):
            return s.cat.rename_categories(cleaned_cats)
        s = s.astype(object)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    cleaned = [clean_text(u) for u in uniques]
    if all(c == u for c, u in zip(cleaned, uniques)):
        return s
    values = np.array(cleaned + [None], dtype=object)[codes]
    return pd.Series(values, index=s.index, dtype="string")
