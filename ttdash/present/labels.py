"""An op's label in the tables and the advice: its code and size ("MatmulDeviceOperation
1024x512x2048"), "! " before one with corrupt timing, cut to a width."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..format import DISTINCT_FROM, Coded, distinct


def op_labels(ops: pd.DataFrame, limit: int = 60, raw: bool = False) -> list[str]:
    """Op code and size (`raw`: the code alone), cut to `limit` cells; "! " marks a row with
    corrupt timing, as the TUI does. Each distinct (code, size, corrupt) is worded once (a
    trace repeats its ops every iteration)."""
    if len(ops) < DISTINCT_FROM:
        sizes = ops["size"] if "size" in ops and not raw else None
        return _worded(ops["op_code"].astype(object).to_numpy(),
                       [None] * len(ops) if sizes is None else sizes.astype(object).to_numpy(),
                       _corrupt(ops), limit)
    at, texts = _label_codes(ops, limit, raw)
    return np.array(texts, dtype=object)[at].tolist()


def op_label_codes(ops: pd.DataFrame, limit: int = 60, raw: bool = False) -> Coded:
    """op_labels as each distinct label (a pyarrow string array) and each row's position
    among them: a million rows' labels without a text per row."""
    import pyarrow as pa

    at, texts = _label_codes(ops, limit, raw)
    return Coded(pa.array(texts, type=pa.string()), at)


def _corrupt(ops: pd.DataFrame) -> np.ndarray:
    return np.asarray(ops["corrupt"].fillna(False).to_numpy(dtype=bool)) \
        if "corrupt" in ops else np.zeros(len(ops), dtype=bool)


def _label_codes(ops: pd.DataFrame, limit: int, raw: bool) -> tuple[np.ndarray, list[str]]:
    """Each row's position among the distinct labels, and their texts."""
    sizes = ops["size"] if "size" in ops and not raw else None
    corrupt = _corrupt(ops)
    code_at, codes = distinct(ops["op_code"])
    key = code_at.astype(np.int64)
    if sizes is not None:
        size_at, size_values = distinct(sizes)
        key = key * len(size_values) + size_at
    key = key * 2 + corrupt
    first, inverse = np.unique(key, return_index=True, return_inverse=True)[1:]
    texts = _worded(codes[code_at[first]],
                    [None] * len(first) if sizes is None else size_values[size_at[first]],
                    corrupt[first], limit)
    return inverse.reshape(-1), texts


def _worded(codes: Any, sizes: Any, corrupt: np.ndarray, limit: int) -> list[str]:
    out = []
    for code, size, bad in zip(codes, sizes, corrupt):
        s = "" if code is None or code is pd.NA else str(code)
        if isinstance(size, str) and size:
            s = f"{s} {size}"
        if bad:
            s = "! " + s
        out.append(s if len(s) <= limit else s[:limit - 1] + "…")
    return out
