"""Keeping untrusted text inert in exported files."""

from __future__ import annotations

import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(v: object) -> object:
    """A text cell a spreadsheet would evaluate gets a leading apostrophe; numbers pass."""
    if isinstance(v, str) and v.startswith(FORMULA_PREFIXES):
        return "'" + v
    return v


def neutralise_series(s: pd.Series) -> pd.Series:
    st = s.astype("string")
    risky = st.str.match(r"^[=+\-@\t\r]").fillna(False)
    return st.where(~risky, "'" + st)


def md_cell(v: object) -> str:
    """Text for a markdown table cell: pipes, backslashes, HTML and newlines made inert."""
    s = "" if v is None else str(v)
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("`", "\\`").replace("\n", " ").replace("\r", " ")
    return str(neutralise_formula(s)) if s[:1] in "=+@" else s
