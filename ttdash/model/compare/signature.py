"""What the diff aligns on and how noisy each op is: per-op signature ids (op code, input shapes
and dtypes), signpost-region keys, and the robust spread of an op's device time across repeated
signpost iterations. The rules are documented in :mod:`ttdash.model.compare.diff`.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..read.attributes import joint, normalise
from ..read.callcount import unnamed
from ..read.cells import factorize_rows, first_rows
from ..trace import View

if TYPE_CHECKING:
    from ..read.attributes import Coded

NOISE_MIN_SAMPLES = 3  # iterations needed for a spread estimate
NOISE_K = 2.0  # threshold in combined robust sigmas
NOISE_MAX_SIGMA = 0.25  # above this, the "iterations" do different work: no estimate
IQR_TO_SIGMA = 1.349

NO_SIGNPOST_LABEL = "(before first signpost)"


# ==================================================================== op signatures

def _shape_columns(views: list[View]) -> list[str]:
    """INPUT_n_{W,Z,Y,X} and INPUT_n_DATATYPE columns of any of the views' traces, in a fixed
    order."""
    names: set[str] = set()
    for v in views:
        for c in v.trace.ordered_labels:
            if c.startswith("INPUT_") and (c.endswith(("_W", "_Z", "_Y", "_X", "_DATATYPE"))):
                names.add(c)

    def key(c: str) -> tuple[int, str]:
        part = c.split("_")
        return (int(part[1]) if part[1].isdigit() else 1 << 30, c)

    return sorted(names, key=key)


def _raw_table(view: View, columns: list[str]) -> pd.DataFrame:
    """The trace table's "ID" and `columns` (those it has; from the analysis cache, read alone:
    a `history add` after a csv run read the whole table, 77 columns, for its signatures)."""
    return view.trace.ordered_columns(["ID", *columns])


def _raw_rows(table: pd.DataFrame, ops: pd.DataFrame, columns: list[str]
              ) -> dict[str, np.ndarray]:
    """The raw `columns` of a _raw_table for the given ops (matched by tt-perf-report ID):
    numbers as float64 (NaN when missing), text as objects (None when missing)."""
    pos = _positions(table, ops)
    return {c: _raw_column(table, pos, c) for c in columns}


def _positions(table: pd.DataFrame, ops: pd.DataFrame) -> np.ndarray:
    """Each op's row in a _raw_table (-1: none)."""
    return pd.Index(table["ID"].to_numpy()).get_indexer(ops["id"].to_numpy())


def _raw_column(ordered: pd.DataFrame, pos: np.ndarray, c: str) -> np.ndarray:
    """One raw column of a _raw_table at the rows `pos` (an array, not a frame, which would
    infer and build text)."""
    if c not in ordered.columns:
        return np.full(len(pos), None, dtype=object)
    s = ordered[c]
    number = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    if number:
        vals = s.to_numpy(dtype="float64", na_value=np.nan)
    elif isinstance(s.dtype, pd.CategoricalDtype):  # each category converted once
        cats = np.append(s.cat.categories.to_numpy(dtype=object), None)
        vals = cats[s.cat.codes.to_numpy()]  # code -1 (missing) picks the None
    else:
        vals = s.to_numpy(dtype=object)
    taken = vals[np.maximum(pos, 0)]
    lost = pos < 0
    if len(taken) and lost.any():
        taken[lost] = np.nan if number else None
    return taken


def signatures(a: View, a_ops: pd.DataFrame, b: View, b_ops: pd.DataFrame
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Signature ids and op code ids of both op tables (ids comparable across the two). The
    raw columns are taken and folded one at a time (a million ops a side: one column of both
    sides in memory, not all of them). When one side has no op names (a `.logs` device log
    written without tracy: every op is `op #<GLOBAL CALL COUNT>`) and both sides number every
    op, the ops pair on their call counts instead (call_count_ids)."""
    by_count = call_count_ids(a, a_ops, b, b_ops)
    if by_count is not None:
        ia, ib = by_count
        return ia, ib, ia, ib
    cols = _shape_columns([a, b])
    code = pd.concat([a_ops["op_code"], b_ops["op_code"]], ignore_index=True).astype(object)
    code_ids = pd.factorize(code, use_na_sentinel=True)[0].astype(np.int64)
    ta, tb = _raw_table(a, cols), _raw_table(b, cols)
    pos_a, pos_b = _positions(ta, a_ops), _positions(tb, b_ops)
    columns = chain([code.to_numpy(dtype=object)],
                    (np.concatenate([_raw_column(ta, pos_a, c), _raw_column(tb, pos_b, c)])
                     for c in cols))
    sig = factorize_rows(columns)
    n = len(a_ops)
    return sig[:n], sig[n:], code_ids[:n], code_ids[n:]


def call_count_ids(a: View, a_ops: pd.DataFrame, b: View, b_ops: pd.DataFrame
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Ids of both op tables from GLOBAL CALL COUNT (the same op of one run has the same count
    in its report and in its `.logs` rows), when one side's ops have no names and every op of
    both sides has a count, unique per side; else None. Merged several-device views pair on
    the op (count >> 10: the device id is in the low bits, and the row kept for a merged op
    may be another device's on each side)."""
    if not (unnamed(a_ops) or unnamed(b_ops)):
        return None
    keys = []
    for view, ops in ((a, a_ops), (b, b_ops)):
        if "global_call_count" not in ops.columns:
            return None
        gcc = pd.to_numeric(ops["global_call_count"], errors="coerce").to_numpy(dtype="float64")
        if np.isnan(gcc).any():
            return None
        k = gcc.astype(np.int64)
        if view.merged and len(view.trace.devices) > 1:
            k = k >> 10
        keys.append(k)
    merged = [v.merged and len(v.trace.devices) > 1 for v in (a, b)]
    if merged[0] != merged[1]:  # one side per op, the other per device row: op ids both
        keys = [k >> 10 if not m else k for k, m in zip(keys, merged)]
    if any(len(np.unique(k)) != len(k) for k in keys):
        return None
    ids = pd.factorize(np.concatenate(keys))[0].astype(np.int64)
    return ids[:len(a_ops)], ids[len(a_ops):]


def attribute_keys(a: View, a_ops: pd.DataFrame, a_cells: Coded, b: View, b_ops: pd.DataFrame,
                   b_cells: Coded) -> tuple[np.ndarray, np.ndarray]:
    """Attribute ids of both op tables (comparable across the two): op code + normalised
    ATTRIBUTES (:func:`ttdash.model.read.attributes.normalise`, as tt-metal's comparison script
    pairs ops) + shape bucket (:func:`shape_buckets`). `*_cells`: each op's ATTRIBUTES."""
    norm_a, norm_b, _ = joint(a_cells, b_cells, normalise)
    code = pd.concat([a_ops["op_code"], b_ops["op_code"]], ignore_index=True).astype(object)
    bucket = np.concatenate([shape_buckets(a, a_ops), shape_buckets(b, b_ops)])
    ids = factorize_rows([code.to_numpy(dtype=object), np.concatenate([norm_a, norm_b]), bucket])
    n = len(a_ops)
    return ids[:n], ids[n:]


def shape_buckets(view: View, ops: pd.DataFrame) -> np.ndarray:
    """Per op: the shape bucket of its first input, floor(log4(W*Z*Y*X)) of the padded dims
    (-1: no input 0). tt-metal's comparison script buckets its ops by input 0 (32x32 vs
    1024x1024); a power of four keeps one op's two sizes apart without needing their names."""
    table = _raw_table(view, [f"INPUT_0_{d}" for d in "WZYX"])
    pos = _positions(table, ops)
    vol = np.ones(len(ops))
    known = np.zeros(len(ops), dtype=bool)
    for d in "WZYX":
        v = _raw_column(table, pos, f"INPUT_0_{d}")
        v = v.astype("float64") if v.dtype != object else pd.to_numeric(
            pd.Series(v), errors="coerce").to_numpy(dtype="float64")
        ok = np.isfinite(v) & (v > 0)
        vol = np.where(ok, vol * np.where(ok, v, 1.0), vol)
        known |= ok
    with np.errstate(divide="ignore", invalid="ignore"):
        bucket = np.floor(np.log2(vol) / 2.0)
    return np.where(known, bucket, -1.0).astype(np.int64)


def signature_text(view: View, ops: pd.DataFrame, table: pd.DataFrame | None = None
                   ) -> np.ndarray:
    """Per op: its signature as text, "OpCode(INPUT_0 WxZxYxX DTYPE; INPUT_1 ...)" (what the diff
    aligns on, readable and comparable across runs). Built once per distinct signature.
    `table`: the view's _raw_table of its _shape_columns, when read already."""
    cols = _shape_columns([view])
    raw = _raw_rows(_raw_table(view, cols) if table is None else table, ops, cols)
    code = ops["op_code"].to_numpy(dtype=object)
    ids = factorize_rows([code] + [raw[c] for c in cols])
    if not len(ids):
        return np.zeros(0, dtype=object)
    first = first_rows(ids)
    inputs = sorted({c.split("_")[1] for c in cols}, key=lambda k: (not k.isdigit(), k.zfill(9)))
    text = []
    for row in first.tolist():
        parts = []
        for k in inputs:
            dims = [raw[f"INPUT_{k}_{d}"][row] for d in "WZYX" if f"INPUT_{k}_{d}" in raw]
            dims = [_dim(v) for v in dims if not pd.isna(v)]
            dtype = raw[f"INPUT_{k}_DATATYPE"][row] if f"INPUT_{k}_DATATYPE" in raw else None
            if dims or not pd.isna(dtype):
                parts.append(" ".join([f"in{k}", "x".join(dims)]
                                      + ([str(dtype)] if not pd.isna(dtype) else [])))
        name = "" if pd.isna(code[row]) else str(code[row])
        text.append(f"{name}({'; '.join(parts)})" if parts else name)
    return np.array(text, dtype=object)[ids]


#: Ops whose signatures are worked out together by signature_codes (each slice reads the raw
#: input columns of its ops: all of a million ops' at once held ~120 MB)
SIGNATURE_SLICE = 262_144


def signature_codes(view: View) -> tuple[np.ndarray, np.ndarray]:
    """signature_text of every op row of the view (view.op_rows) as (int32 codes, the distinct
    texts they index), SIGNATURE_SLICE ops at a time; kept with the view (and so in the
    analysis cache: a second `history add` or `history check` of the same file does not read
    the raw columns again)."""
    cached = view.__dict__.get("_signatures")
    if cached is not None and cached[0] is view.ops:
        return cached[1]
    ops = view.op_rows
    codes = np.empty(len(ops), dtype=np.int32)
    texts: dict[str, int] = {}
    table = _raw_table(view, _shape_columns([view]))  # (read once for every slice)
    for start in range(0, len(ops), SIGNATURE_SLICE):
        at, distinct = pd.factorize(signature_text(view, ops.iloc[start:start + SIGNATURE_SLICE],
                                                   table))
        own = np.array([texts.setdefault(t, len(texts)) for t in distinct], dtype=np.int32)
        codes[start:start + len(at)] = own[at]
    made = (codes, np.array(list(texts), dtype=object))
    view.__dict__["_signatures"] = (view.ops, made)
    return made


def _dim(v: object) -> str:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else str(v)


# ==================================================================== regions and noise

def region_keys(view: View, ops: pd.DataFrame) -> pd.Series:
    """Per op: "name\\x1foccurrence" of its signpost region ("" before the first signpost)."""
    sp = view.trace.signposts
    if not len(sp):
        return pd.Series("", index=ops.index, dtype=object)
    key = (sp["name"].astype(str) + "\x1f" + sp["occurrence"].astype(str)).to_numpy(dtype=object)
    table = pd.Series(key, index=sp["index"].to_numpy())
    return ops["region"].map(table).fillna("").astype(object)


def region_labels(view: View, ops: pd.DataFrame) -> np.ndarray:
    lab = ops["signpost"].astype(object).to_numpy(dtype=object).copy()
    missing = pd.isna(lab)
    lab[missing] = NO_SIGNPOST_LABEL if len(view.trace.signposts) else None
    return lab


def repeated_regions(view: View, ops: pd.DataFrame) -> dict[str, tuple[int, pd.Index]]:
    """Signpost names that mark iterations of a loop: for each name, its regions doing the
    name's most common work (the same sequence of op codes and input shapes and dtypes; other
    regions of that name are other work: another input size, another stage), with their op
    count; only names with two or more such regions. Sorted by name."""
    sp = view.trace.signposts
    if not len(sp) or not len(ops):
        return {}
    names = pd.Series(sp["name"].to_numpy(dtype=object), index=sp["index"].to_numpy())
    region = pd.Series(ops["region"].to_numpy())
    is_named = region.map(names).notna().to_numpy()
    named = region[is_named]
    if named.empty:
        return {}
    cols = _shape_columns([view])
    raw = _raw_rows(_raw_table(view, cols), ops, cols)
    key = factorize_rows([ops["op_code"].to_numpy(dtype=object)] + [raw[c] for c in cols])
    work = pd.Series(key[is_named]).groupby(named.to_numpy(), sort=False, observed=True).agg(
        lambda k: k.to_numpy(dtype=np.int64).tobytes())
    counts = named.groupby(named.to_numpy(), sort=False, observed=True).size()
    per = pd.DataFrame({"n": counts.to_numpy(), "work": work.reindex(counts.index).to_numpy(),
                        "name": counts.index.map(names)}, index=counts.index)
    out: dict[str, tuple[int, pd.Index]] = {}
    for nm, g in per.groupby("name", sort=True, observed=True):
        tally: dict[bytes, int] = {}
        for w in g["work"]:  # in region order: the first seen wins a tie
            tally[w] = tally.get(w, 0) + 1
        modal = max(tally, key=lambda w: tally[w])
        keep = g.index[(g["work"] == modal).to_numpy()]
        if len(keep) >= 2:
            out[nm] = (int(g.loc[keep[0], "n"]), keep)
    return out


def noise_sigma(view: View, ops: pd.DataFrame) -> tuple[np.ndarray, dict[str, int]]:
    """Per op: robust relative spread of its device time across iterations (NaN = unknown).

    Also returns {signpost name: iterations used} for the names that repeat.
    """
    sigma = np.full(len(ops), np.nan)
    sp = view.trace.signposts
    if not len(sp) or not len(ops):
        return sigma, {}
    repeated = repeated_regions(view, ops)
    if not repeated:
        return sigma, {}
    names = pd.Series(sp["name"].to_numpy(dtype=object), index=sp["index"].to_numpy())
    region = ops["region"].to_numpy()
    df = pd.DataFrame({"region": region, "name": pd.Series(region).map(names).to_numpy(),
                       "t": ops["device_time_us"].to_numpy(dtype="float64"),
                       "code": ops["op_code"].astype(object).to_numpy()})
    keep_regions = np.concatenate([r.to_numpy() for _, r in repeated.values()])
    iters = pd.Series({nm: len(r) for nm, (_, r) in repeated.items()})
    df = df[df["region"].isin(keep_regions)].copy()
    df["pos"] = df.groupby("region", sort=False, observed=True).cumcount()
    g = df.groupby(["name", "pos"], sort=False, observed=True)
    stats = pd.DataFrame({
        "n": g["t"].count(),
        "q1": g["t"].quantile(0.25),
        "med": g["t"].median(),
        "q3": g["t"].quantile(0.75),
        "codes": g["code"].nunique(dropna=False),
    })
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = (stats["q3"] - stats["q1"]) / IQR_TO_SIGMA / stats["med"]
    rel = rel.where((stats["n"] >= NOISE_MIN_SAMPLES) & (stats["codes"] == 1)
                    & (stats["med"] > 0) & (rel <= NOISE_MAX_SIGMA))
    idx = pd.MultiIndex.from_arrays([df["name"], df["pos"]])
    vals = rel.reindex(idx).to_numpy(dtype="float64")
    where = ops.index.get_indexer(df.index)
    sigma[where] = vals
    return sigma, {str(k): int(v) for k, v in iters.items()}
