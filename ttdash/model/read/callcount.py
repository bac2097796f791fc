"""GLOBAL CALL COUNT as an op's number: what names the ops of a device log written without
op names (`op #<count>`), and how to tell such ops apart from named ones. From mid-2025 the
count is `(op_id << 10) | device_id`; older files number the rows 1, 2, 3 (FORMATS.md)."""

from __future__ import annotations

import pandas as pd

DEVICE_BITS = 1023


def op_numbers(df: pd.DataFrame) -> pd.Series:
    """The numbers that name a device log's unnamed ops: its GLOBAL CALL COUNTs (else the
    IDs); on several devices, where every count is `(op_id << 10) | device_id`, the device
    bits cleared, so one op's rows share a name (and merge, as a report's named rows do)."""
    gcc = pd.to_numeric(df["GLOBAL CALL COUNT"] if "GLOBAL CALL COUNT" in df.columns
                        else df["ID"], errors="coerce")
    if "DEVICE ID" not in df.columns:
        return gcc
    dev = pd.to_numeric(df["DEVICE ID"], errors="coerce")
    ok = gcc.notna() & dev.notna()
    if dev[ok].nunique() < 2 or not ok.all():
        return gcc
    g = gcc.astype("int64")
    if not ((g & DEVICE_BITS) == dev.astype("int64")).all():
        return gcc
    return g - (g & DEVICE_BITS)


def op_names(df: pd.DataFrame) -> pd.Series:
    """`op #<number>` (op_numbers) for each row of a device log."""
    return "op #" + op_numbers(df).astype("Int64").astype("string")


def unnamed(ops: pd.DataFrame) -> bool:
    """Whether none of the ops (an analysed op table) has a name: each is the loader's
    `op #<count>` (a device log whose OP NAME column is empty), the count as it is or, on
    several devices, less its device bits."""
    if not len(ops) or "global_call_count" not in ops.columns:
        return False
    gcc = pd.to_numeric(ops["global_call_count"], errors="coerce")
    if gcc.isna().any():
        return False
    first = ops["op_code"].iloc[0]
    if not (isinstance(first, str) and first.startswith("op #")):
        return False  # (a named trace: a million ops' numbers not made into text)
    g = gcc.astype("int64")
    code = ops["op_code"].astype(object).astype(str).to_numpy()
    return bool(((code == ("op #" + g.astype(str)).to_numpy(dtype=object))
                 | (code == ("op #" + (g - (g & DEVICE_BITS)).astype(str))
                    .to_numpy(dtype=object))).all())
