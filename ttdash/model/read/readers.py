"""Reading the raw rows' columns: the accessors every per-op computation shares (model.metrics,
model.ccl, model.progcache...), with tt-perf-report's coercion. Kept apart from metrics so the
modules metrics builds on can read cells without importing metrics back."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .cells import by_unique, dtype_size

HOST_MARKER = "(torch)"
INVALID_GAP_MIN_NS = 1_000_000
MAX_CORES = float(1 << 20)
MAX_DEVICE_ID = float(1 << 16)  # no system has more chips; larger ids are corrupt cells


# ---------------------------------------------------------------- column access helpers

def col(df: pd.DataFrame, name: str) -> pd.Series:
    """A column, or an all-missing one when the file lacks it (every column is optional)."""
    if name in df.columns:
        return df[name]
    return pd.Series(np.nan, index=df.index, dtype="float64")


def text(df: pd.DataFrame, name: str) -> pd.Series:
    """A text column as pandas strings (missing -> <NA>); a categorical's categories are
    converted once and taken by code (not a string made per row)."""
    if name not in df.columns:  # (no float column made first: a live refresh reads ~20)
        return pd.Series(pd.array(np.full(len(df), None, dtype=object), dtype="string"),
                         index=df.index, copy=False)
    s = df[name]
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories.astype("string").array
        return pd.Series(cats.take(s.cat.codes.to_numpy(), allow_fill=True), index=s.index)
    return s.astype("string")


def num(df: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 with non-finite values as NaN (a new array)."""
    if name not in df.columns:  # the file lacks it (a live refresh reads ~30 such per chunk)
        return np.full(len(df), np.nan)
    s = df[name]
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iuf":  # numbers: to_numeric keeps them
        a = s.to_numpy(dtype="float64", copy=True)
    else:
        a = np.array(pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64",
                                                                na_value=np.nan))
    a[~np.isfinite(a)] = np.nan
    return a


def whole(a: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Keep whole numbers in [lo, hi]; anything else becomes NaN (tt-perf-report's coercion)."""
    out = a.copy()
    bad = np.isnan(out) | (out != np.floor(np.nan_to_num(out))) | (out < lo) | (out > hi)
    out[bad] = np.nan
    return out


def contains(s: pd.Series, needle: str) -> np.ndarray:
    """Substring test per distinct value (missing -> False)."""
    return by_unique(s, lambda v: float(needle in str(v)), 0.0).astype(bool)


def tensor_dim(df: pd.DataFrame, tensor: str, dim: str) -> np.ndarray:
    """Padded size of one tensor dimension (the loader made shape cells numeric); NaN if none."""
    return num(df, f"{tensor}_{dim}")


def dtype_bytes(s: pd.Series) -> np.ndarray:
    return by_unique(s, dtype_size, 4.0)


def tensor_names(df: pd.DataFrame) -> list[str]:
    """Every INPUT_n / OUTPUT_n tensor the header describes, in order."""
    names: list[str] = []
    for c in df.columns:
        if c.startswith(("INPUT_", "OUTPUT_")) and c.endswith("_MEMORY"):
            names.append(c[: -len("_MEMORY")])
    return names


# ---------------------------------------------------------------- validity

def invalid_duration(dur_ns: np.ndarray, gap_ns: np.ndarray) -> np.ndarray:
    """The profiler's corrupt-timing signature (or no usable duration at all)."""
    with np.errstate(invalid="ignore"):
        bad = np.isnan(dur_ns) | (dur_ns < 0)
        swamp = (~np.isnan(gap_ns) & (gap_ns < -INVALID_GAP_MIN_NS)
                 & (np.abs(gap_ns) > np.maximum(dur_ns * 0.5, INVALID_GAP_MIN_NS)))
    return bad | swamp


# ---------------------------------------------------------------- bytes per element

BLOCK_FLOAT_BYTES = {"BFLOAT8_B": 1088 / 1024, "BFLOAT4_B": 576 / 1024, "BFLOAT2_B": 320 / 1024}


def io_dtype_size(dtype: object) -> float:
    name = str(dtype).strip().upper()
    for key, size in BLOCK_FLOAT_BYTES.items():
        if key in name:
            return size
    return dtype_size(dtype)
