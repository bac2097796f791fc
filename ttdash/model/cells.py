"""Reading individual cells: tt-perf-report's coercion rules, applied once per distinct value."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

MAX_DIM = float(1 << 32)
DRAM_SHARDED_CONFIG = "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig"
_NNZ_RE = re.compile(r"['\"]nnz['\"]\s*:\s*['\"]?(\d+)")


def by_unique(s: pd.Series, fn: Callable[[Any], Any], default: float = np.nan) -> np.ndarray:
    """Apply `fn` to each distinct value of a column and spread the results back.

    Profiler columns repeat a handful of values (dtypes, memory configs, shapes, op codes, the
    attributes of repeated layers), so this is vectorised in effect, with no per-row Python.
    """
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    values = np.array([fn(u) for u in uniques] + [default], dtype="float64")
    return values[codes]  # code -1 (missing) picks the trailing default


def interned(s: pd.Series) -> np.ndarray:
    """A text column as an object array whose equal values share one str (8 bytes a row)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    return np.array([str(u) for u in uniques] + [None], dtype=object)[codes]


def _whole_dim(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        return np.nan
    return v if np.isfinite(v) and v == int(v) and 1 <= v <= MAX_DIM else np.nan


def dim_value(cell: object) -> float:
    """A shape cell: "32[2]" -> 32 (padded), "32" -> 32; invalid -> NaN."""
    text = str(cell).strip()
    if "[" in text and "]" in text:
        text = text.split("[", 1)[0]
    return _whole_dim(text)


def dtype_size(name: object) -> float:
    """Bytes per element: first integer in the dtype name / 8, else 4 (BFLOAT8_B -> 1)."""
    m = re.search(r"\d+", str(name))
    return int(m.group()) / 8 if m else 4.0


def conv_window(attrs: object, k: int) -> float:
    """Height (k=0) or width (k=1) of a conv's window_hw attribute, as tt-perf-report reads it."""
    parts = str(attrs).split("window_hw", 1)
    if len(parts) < 2:
        return np.nan
    window = parts[1].split("; ")[0][2:-1].split(";")
    return _whole_dim(window[k]) if len(window) >= 2 else np.nan


def nnz(attrs: object) -> float:
    m = _NNZ_RE.search(str(attrs))
    return float(m.group(1)) if m else np.nan


def program_config_int(name: str) -> Callable[[object], float]:
    """A whole-number field of a matmul's program_config (in0_block_w, out_subblock_h/w), read
    only when the attributes hold a program_config, as tt-perf-report reads them."""
    pattern = re.compile(rf"{name}=(\d+)")

    def read(attrs: object) -> float:
        text = str(attrs)
        m = pattern.search(text) if "program_config" in text else None
        return float(m.group(1)) if m else np.nan
    return read


ATTRIBUTE_FEATURES = {
    "_ATTR_DRAM_SHARDED": lambda a: float(DRAM_SHARDED_CONFIG in str(a)),
    "_ATTR_WINDOW_H": lambda a: conv_window(a, 0),
    "_ATTR_WINDOW_W": lambda a: conv_window(a, 1),
    "_ATTR_NNZ": nnz,
    "_ATTR_IN0_BLOCK_W": program_config_int("in0_block_w"),
    "_ATTR_OUT_SUBBLOCK_H": program_config_int("out_subblock_h"),
    "_ATTR_OUT_SUBBLOCK_W": program_config_int("out_subblock_w"),
}
