"""The tuning-guide rules (model.guides registers them): tile padding, fusion candidates, data
formats. Each is a function of the op rows and their raw rows (guides.GuideInput) returning an
entries frame; every figure is computed on arrays, messages once per distinct combination of
what they say (`messages`), op IDs joined in by array string concatenation.

What the CSV does not say and these rules infer (docs/advice.md):
* padding: the logical size of a dimension is the bracketed number of a V2+ shape cell
  (``32[19]``: padded 32, logical 19); files before V2 have none, and no padding is found.
  An op's work is M*K*N (times the batch) for a matmul, else its output's (or input 0's)
  volume; its padded share is 1 - logical work / padded work.
* fusion: an eltwise op is taken to run "on the output" of the op one or two places before it
  (same device) when one of its two inputs has exactly that op's output shape (padded W, Z, Y, X);
  the profiler records no tensor identities, so two same-shaped tensors cannot be told apart.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from ..read.cells import by_unique, factorize_rows, first_rows
from ..read.readers import contains, io_dtype_size, num, text
from .guide_base import (
    GuideInput,
    dispatch_gaps,
    empty_entries,
    filled,
    kinds_of,
    make_entries,
)

#: Op codes (first word, without a DeviceOperation/Operation/Op suffix) taken as eltwise.
ELTWISE = frozenset({"Binary", "BinaryNg", "Unary", "Ternary", "Where", "Eltwise",
                     "EltwiseBinary", "EltwiseUnary", "UnaryWithParam"})
#: How many ops back an eltwise op's producer is looked for.
LOOKBACK = 2
_SUFFIXES = ("DeviceOperation", "Operation", "Op")
_CELL = re.compile(r"^\s*(\d+)\s*\[\s*(\d+)\s*\]\s*$")


def short_code(code: object) -> str:
    """The op code's first word without a DeviceOperation/Operation suffix."""
    base = (str(code).split(maxsplit=1) or [""])[0]
    for suffix in _SUFFIXES[:2]:
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return base


def _is_eltwise(code: object) -> float:
    base = short_code(code)
    if base.endswith("Op") and len(base) > 2:
        base = base[:-2]
    return float(base in ELTWISE)


def _logical_cell(cell: object) -> float:
    m = _CELL.match(str(cell))
    if m:
        return float(m.group(2))
    try:
        v = float(str(cell))
    except ValueError:
        return np.nan
    return v if np.isfinite(v) and v >= 1 else np.nan


def padded(rows: pd.DataFrame, t: str, d: str) -> np.ndarray:
    return num(rows, f"{t}_{d}")


def logical(rows: pd.DataFrame, t: str, d: str) -> np.ndarray:
    """A dimension's logical size: a `_LOGICAL` column (the loader adds one where some cell's
    logical size differs from its padded one), else the V2 text cells (a read that kept every
    column), else the padded size (call only when has_logical: the file says logical sizes)."""
    if f"{t}_{d}_LOGICAL" in rows.columns:
        return np.fmin(num(rows, f"{t}_{d}_LOGICAL"), padded(rows, t, d))
    cells = f"{t}_{d}_PAD[LOGICAL]"
    if cells in rows.columns:
        return by_unique(rows[cells], _logical_cell)
    return padded(rows, t, d)


def has_logical(rows: pd.DataFrame) -> bool:
    """Whether the rows say logical sizes (V2+ shape cells, read as text or by the loader)."""
    return any(c.endswith(("_LOGICAL", "_PAD[LOGICAL]")) for c in rows.columns)


def _in_dram(rows: pd.DataFrame, t: str) -> np.ndarray:
    return contains(text(rows, f"{t}_MEMORY"), "DRAM")


def _volume(rows: pd.DataFrame, t: str,
            fn: Callable[[pd.DataFrame, str, str], np.ndarray] = padded) -> np.ndarray:
    w, z, y, x = (fn(rows, t, d) for d in "WZYX")
    return w * z * y * x


def per_value(s: pd.Series, fn: Callable[[object], str], default: str = "") -> np.ndarray:
    """`fn` of each distinct value of a column, spread back (object array; missing: default)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    return np.array([fn(u) for u in uniques] + [default], dtype=object)[codes]


def messages(keys: list[pd.Series], fn: Callable[[np.ndarray], list[str]]) -> np.ndarray:
    """`fn(positions)` (one message per given position) made on one row of each distinct
    combination of `keys` and spread back to every row, as an object array (cells'
    by_unique_rows, without a fixed-width string array as large as the rows)."""
    group = factorize_rows(keys)
    return np.array(fn(first_rows(group)), dtype=object)[group]


def _device_ops(ops: pd.DataFrame) -> np.ndarray:
    """Device ops with a trustworthy timing (host fallbacks, signposts and ops with the
    profiler's corrupt timing are never named: nothing known is at stake)."""
    ok = ~ops["is_host"].to_numpy(dtype=bool) & ~ops["is_signpost"].to_numpy(dtype=bool)
    return ok & ~ops["corrupt"].to_numpy(dtype=bool) if "corrupt" in ops else ok


# ------------------------------------------------------------------ 1. tile padding
def _pad_text(p: float, lo: float) -> str:
    return f"{lo:g}->{p:g}"


#: Ops per chunk of the padding rule (its dozen float arrays per op stay a few MB per chunk
#: instead of 440 MB on a million ops).
PAD_CHUNK = 1 << 17


def _padding_dims(rows: pd.DataFrame, is_mm: np.ndarray
                  ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Padded and logical (rows or M, columns or K, N, work) of each row: a matmul's M, K, N
    and batch*M*K*N, else its output's (or input 0's) Y, X and volume."""
    has_out = ~np.isnan(_volume(rows, "OUTPUT_0"))
    work = "OUTPUT_0", "INPUT_0"
    dims = {}
    for kind in ("p", "l"):
        memo: dict[tuple[str, str], np.ndarray] = {}
        read = padded if kind == "p" else logical

        def fn(rows: pd.DataFrame, t: str, d: str,
               memo: dict[tuple[str, str], np.ndarray] = memo,
               read: Callable[[pd.DataFrame, str, str], np.ndarray] = read) -> np.ndarray:
            if (t, d) not in memo:  # each column read once
                memo[(t, d)] = read(rows, t, d)
            return memo[(t, d)]

        t_y = np.where(has_out, fn(rows, work[0], "Y"), fn(rows, work[1], "Y"))
        t_x = np.where(has_out, fn(rows, work[0], "X"), fn(rows, work[1], "X"))
        vol = np.where(has_out, _volume(rows, work[0], fn), _volume(rows, work[1], fn))
        m, k, n = fn(rows, "INPUT_0", "Y"), fn(rows, "INPUT_0", "X"), fn(rows, "INPUT_1", "X")
        batch = fn(rows, "INPUT_0", "W") * fn(rows, "INPUT_0", "Z")
        dims[kind] = (np.where(is_mm, m, t_y), np.where(is_mm, k, t_x), n,
                      np.where(is_mm, batch * m * k * n, vol))
    return dims["p"], dims["l"]


def _padding_tile(g: GuideInput, rows: pd.DataFrame, at: int, is_mm: np.ndarray,
                  keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """padding_tile's entries among `rows` (the ops from position `at` on; `keep`: the ops the
    rule may name, `is_mm`: the matmuls, both over `rows`): their positions, messages and
    savings."""
    (py, px, pn, pw), (ly, lx, ln, lw) = _padding_dims(rows, is_mm)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where((pw > 0) & (lw > 0) & (lw < pw), 1.0 - lw / pw, 0.0)
    local = np.flatnonzero(keep & (share > 0))
    if not len(local):
        return None
    pos = local + at
    pct = np.round(share[local] * 100, 1)
    mm = is_mm[local]
    py, ly, px, lx, pn, ln = (a[local] for a in (py, ly, px, lx, pn, ln))

    def words(first: np.ndarray) -> list[str]:
        out = []
        for i in first:
            names = ("M", "K", "N") if mm[i] else ("Y", "X")
            pairs = [(py[i], ly[i]), (px[i], lx[i])] + ([(pn[i], ln[i])] if mm[i] else [])
            told = [f"{nm} {_pad_text(p, lo)}" for nm, (p, lo) in zip(names, pairs)
                    if np.isfinite(p) and np.isfinite(lo) and lo < p]
            what = ", ".join(told) or "outer dims"
            out.append(f"padded {what}: {pct[i]:g}% of its work")
        return out

    keys = [pd.Series(mm), pd.Series(py), pd.Series(ly), pd.Series(px), pd.Series(lx),
            pd.Series(np.where(mm, pn, np.nan)), pd.Series(np.where(mm, ln, np.nan)),
            pd.Series(pct)]
    message = messages(keys, words)
    dev = np.nan_to_num(g.ops["device_time_us"].to_numpy(dtype="float64",
                                                         na_value=np.nan)[pos])
    return pos, message, dev * share[local]


def find_padding(g: GuideInput) -> pd.DataFrame:
    """padding_tile: ops whose padded work exceeds the logical one; padding_tilize: the
    TilizeWithValPadding ops that pad. The ops a chunk at a time (PAD_CHUNK)."""
    ops, rows = g.ops, g.rows
    if not len(ops) or not has_logical(rows):
        return empty_entries()
    code = ops["op_code"]
    device = _device_ops(ops)
    tilize = contains(code, "TilizeWithValPadding") & device
    is_mm = contains(code, "Matmul") & device
    keep = device & ~tilize
    parts = []  # (positions, messages, savings, kind) of each chunk's entries, then tilize's
    for at in range(0, len(ops), PAD_CHUNK):
        end = min(at + PAD_CHUNK, len(ops))
        part = _padding_tile(g, rows.iloc[at:end], at, is_mm[at:end], keep[at:end])
        if part is not None:
            parts.append((*part, "padding_tile"))
    tpos = np.flatnonzero(tilize)
    if len(tpos):
        oy, oly = padded(rows, "OUTPUT_0", "Y")[tpos], logical(rows, "OUTPUT_0", "Y")[tpos]
        ox, olx = padded(rows, "OUTPUT_0", "X")[tpos], logical(rows, "OUTPUT_0", "X")[tpos]
        pads = ((oly < oy) | (olx < ox))
        tpos, oy, oly, ox, olx = tpos[pads], oy[pads], oly[pads], ox[pads], olx[pads]

        def tilize_words(first: np.ndarray) -> list[str]:
            out = []
            for i in first:
                told = [f"{nm} {_pad_text(p, lo)}" for nm, p, lo in
                        (("Y", oy[i], oly[i]), ("X", ox[i], olx[i])) if lo < p]
                out.append(f"pads {', '.join(told)} to whole 32x32 tiles while tilizing")
            return out

        if len(tpos):
            message = messages([pd.Series(oy), pd.Series(oly), pd.Series(ox),
                                      pd.Series(olx)], tilize_words)
            parts.append((tpos, message, np.full(len(tpos), np.nan), "padding_tilize"))
    if not parts:
        return empty_entries()
    # one frame made of every chunk's arrays (not a frame per chunk concatenated: the two
    # held at once were ~110 MB of a million ops' 1M entries)
    pos, message, saving = (np.concatenate([p[k] for p in parts]) for k in range(3))
    kind = kinds_of([(len(p[0]), p[3]) for p in parts])
    del parts
    return make_entries(g, pos, kind, message, saving_us=saving)


# ------------------------------------------------------------------ 2. fusion candidates
def _shift(a: np.ndarray, k: int, fill: float = np.nan) -> np.ndarray:
    out = np.full_like(a, fill)
    out[k:] = a[:-k] if k else a
    return out


def _producers(g: GuideInput, elt: np.ndarray, cand: np.ndarray, dev_id: np.ndarray,
               at: int, end: int) -> np.ndarray:
    """The producer position of each op from `at` to `end` (-1: none), read from the rows
    LOOKBACK before `at` on."""
    lo = max(at - LOOKBACK, 0)
    rows = g.rows.iloc[lo:end]
    n = end - lo
    out = [padded(rows, "OUTPUT_0", d) for d in "WZYX"]
    ins = [[padded(rows, t, d) for d in "WZYX"] for t in ("INPUT_0", "INPUT_1")]
    elt, cand, dev_id = elt[lo:end], cand[lo:end], dev_id[lo:end]
    producer = np.full(n, -1, dtype=np.int64)
    for k in range(LOOKBACK, 0, -1):  # the nearer producer wins: assigned last
        prev = [_shift(o, k) for o in out]
        known = np.all([~np.isnan(p) for p in prev], axis=0)
        match = np.zeros(n, dtype=bool)
        for t in ins:
            match |= np.all([a == b for a, b in zip(t, prev)], axis=0)
        same_dev = np.ones(n, dtype=bool)
        if not g.merged:
            pd_ = _shift(dev_id, k)
            same_dev = (dev_id == pd_) | (np.isnan(dev_id) & np.isnan(pd_))
        ok = elt & known & match & same_dev & (_shift(cand, k, 0.0) > 0)
        producer = np.where(ok, np.arange(n) - k + lo, producer)
    return producer[at - lo:]


def _volume_at(rows: pd.DataFrame, t: str, pos: np.ndarray) -> np.ndarray:
    """_volume(rows, t)[pos], a column at a time (no whole-column products)."""
    w, z, y, x = (padded(rows, t, d)[pos] for d in "WZYX")
    return w * z * y * x


def _digits(ids: np.ndarray) -> np.ndarray:
    """IDs as text, an object array (numpy's str of int64: a fixed-width array of them would
    take 84 bytes an ID)."""
    out = np.empty(len(ids), dtype=object)
    out[:] = list(map(str, ids.astype(np.int64).tolist()))
    return out


def _pick(cond: np.ndarray, yes: object, no: object) -> np.ndarray:
    """np.where as an object array of references (a str constant is one object, not a
    fixed-width copy per row)."""
    if isinstance(no, str):
        out = filled(len(cond), no)
    else:
        out = np.empty(len(cond), dtype=object)
        out[:] = no
    out[cond] = yes if isinstance(yes, str) else np.asarray(yes, dtype=object)[cond]
    return out


def _joined(*parts: object) -> np.ndarray:
    """Each row's parts (arrays, or one str for every row) joined, as an object array: each
    message made once, with no array of half-made strings per part (a million-op trace's
    fusion messages are 200,000 strings; six steps of `+` left 60 MB of freed ones mapped)."""
    n = max(len(p) for p in parts if isinstance(p, np.ndarray))
    cols = [itertools.repeat(p, n) if isinstance(p, str) else p for p in parts]
    out = np.empty(n, dtype=object)
    out[:] = list(map("".join, zip(*cols)))
    return out


def find_fusion(g: GuideInput) -> pd.DataFrame:
    """fusion_matmul / fusion_eltwise: each eltwise op on the output of a matmul, or of an
    eltwise op, one or two ops before it (a chain from a matmul is the matmul's). The shapes
    are compared a chunk of ops at a time (PAD_CHUNK)."""
    ops, rows = g.ops, g.rows
    n = len(ops)
    if n < 2:
        return empty_entries()
    code = ops["op_code"]
    device = _device_ops(ops)
    elt = by_unique(code, _is_eltwise, 0.0).astype(bool) & device
    mm = contains(code, "Matmul") & device
    cand = (elt | mm).astype(float)
    dev_id = ops["device"].to_numpy(dtype="float64", na_value=np.nan) \
        if "device" in ops else np.full(n, np.nan)
    producer = np.concatenate([_producers(g, elt, cand, dev_id, at, min(at + PAD_CHUNK, n))
                               for at in range(0, n, PAD_CHUNK)])
    del dev_id, cand
    member = producer >= 0
    if not member.any():
        return empty_entries()
    root = np.where(member, producer, np.arange(n))
    while True:  # pointer jumping: each op's chain head in log2(chain length) passes
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    pos = np.flatnonzero(member)
    src, head = producer[pos], root[pos]
    del producer, root, member
    out_bytes = _volume_at(rows, "OUTPUT_0", src) * by_unique(
        text(rows, "OUTPUT_0_DATATYPE"), io_dtype_size, 2.0)[src]
    dram = _in_dram(rows, "OUTPUT_0")
    traffic = np.where(dram[src], 2.0 * np.nan_to_num(out_bytes), 0.0)
    gap = dispatch_gaps(g)[pos]
    peak = g.dram_gbps if np.isfinite(g.dram_gbps) and g.dram_gbps > 0 else np.nan
    saving = gap + traffic / (peak * 1e3)
    if isinstance(code.dtype, pd.CategoricalDtype):  # (its codes: no factorize of 1M rows)
        codes, uniques = code.cat.codes.to_numpy(), code.cat.categories
    else:
        codes, uniques = pd.factorize(code, use_na_sentinel=True)
    short_of = np.array([short_code(u) for u in uniques] + [""], dtype=object)
    short_pos, short_src, short_head = (short_of[codes[i]] for i in (pos, src, head))
    binary = by_unique(code, lambda c: float(short_code(c).startswith("Binary")),
                       0.0).astype(bool)[pos]
    del codes
    from_mm = mm[head]
    # the other operand of a binary op: smaller than the intermediate (a bias, a scale: what a
    # fused matmul takes), or as large (a residual add or a gate: a second full read)
    vol = [_volume_at(rows, t, pos) for t in ("INPUT_0", "INPUT_1")]
    inter = _volume_at(rows, "OUTPUT_0", src)
    other = np.where(vol[0] == inter, vol[1], vol[0])
    with np.errstate(invalid="ignore"):
        broadcast = other < inter
    operand = _pick(np.isnan(other) | ~binary, "",
                    _pick(broadcast, ", with a broadcast operand (bias, scale)",
                          ", with a full-size second operand (residual, gate)"))
    chain = src != head
    ident = ops["id"].to_numpy()
    message = _joined(short_pos, " on the output of ", short_src, " ID ", _digits(ident[src]),
                      operand, _pick(chain, " (chain from ", ""), _pick(chain, short_head, ""),
                      _pick(chain, " ID ", ""), _pick(chain, _digits(ident[head]), ""),
                      _pick(chain, ")", ""), _pick(dram[src], "; a DRAM round trip", ""))
    del short_pos, short_src, short_head, binary, vol, inter, other, broadcast, operand, chain, \
        src, head, out_bytes, gap, dram  # (not held while the entries are made: ~25 MB)
    # the matmuls' entries, then the eltwise ops', in the order of their IDs when there are
    # both (one frame made: no frame per kind concatenated and sorted, three copies at once)
    order = np.concatenate([np.flatnonzero(from_mm), np.flatnonzero(~from_mm)])
    if from_mm.any() and not from_mm.all():
        order = order[np.argsort(ident[pos[order]], kind="stable")]
    kind = filled(len(order), "fusion_eltwise")  # (one str per kind, not per entry)
    kind[from_mm[order]] = "fusion_matmul"
    return make_entries(g, pos[order], kind, message[order], saving_us=saving[order],
                        dram_bytes=traffic[order])


# ------------------------------------------------------------------ 3. data formats
def find_formats(g: GuideInput) -> pd.DataFrame:
    """format_float32: matmuls/convs with a FLOAT32 operand; format_fidelity: at HiFi4."""
    ops, rows = g.ops, g.rows
    if not len(ops):
        return empty_entries()
    device = _device_ops(ops)
    analysed = ops["analysis"].isin(["full", "flops_only"]).to_numpy(dtype=bool) & device
    tensors = ("INPUT_0", "INPUT_1", "OUTPUT_0")
    dts = [per_value(rows[f"{t}_DATATYPE"], lambda v: str(v).strip().upper())
           if f"{t}_DATATYPE" in rows.columns else np.full(len(ops), "", dtype=object)
           for t in tensors]
    is32 = [d == "FLOAT32" for d in dts]
    fp32 = analysed & np.any(is32, axis=0)
    fid = per_value(ops["math_fidelity"], lambda v: (str(v).split() or [""])[0])
    hifi4 = analysed & (fid == "HiFi4")
    peak = g.dram_gbps if np.isfinite(g.dram_gbps) and g.dram_gbps > 0 else np.nan
    frames = []
    pos = np.flatnonzero(fp32)
    if len(pos):
        fp32_bytes = np.zeros(len(ops))
        for t, f in zip(tensors, is32):
            fp32_bytes += np.where(f & _in_dram(rows, t), np.nan_to_num(_volume(rows, t)) * 4.0,
                                   0.0)
        in_dram = np.sum([f & _in_dram(rows, t) for t, f in zip(tensors, is32)], axis=0)

        def words(first: np.ndarray) -> list[str]:
            out = []
            for i in first:
                j = pos[i]
                which = ", ".join(f"{t.lower().replace('put_', '')} {d[j] or '?'}"
                                  for t, d in zip(("in0", "in1", "out"), dts))
                out.append(f"FLOAT32 operands ({which}; {int(in_dram[j])} FLOAT32 tensor"
                           f"{'' if in_dram[j] == 1 else 's'} in DRAM)")
            return out

        message = messages([pd.Series(d[pos]) for d in dts]
                                 + [pd.Series(in_dram[pos])], words)
        frames.append(make_entries(g, pos, "format_float32", message,
                                   saving_us=fp32_bytes[pos] * 0.5 / (peak * 1e3),
                                   dram_bytes=fp32_bytes[pos]))
    pos = np.flatnonzero(hifi4)
    if len(pos):
        dev = np.nan_to_num(ops["device_time_us"].to_numpy(dtype="float64",
                                                           na_value=np.nan)[pos])
        pct = ops["flops_pct"].to_numpy(dtype="float64", na_value=np.nan)[pos]
        bound = dev * np.clip(np.nan_to_num(pct), 0.0, 100.0) / 100.0
        weights = dts[1][pos]
        route = {"BFLOAT8_B": "HiFi2 for bfloat8_b weights",
                 "BFLOAT4_B": "LoFi for bfloat4_b weights",
                 "BFLOAT16": "bfloat8_b weights at HiFi2"}

        def fid_words(first: np.ndarray) -> list[str]:
            return [f"HiFi4 with {weights[i] or 'unknown'} weights: the guides use "
                    f"{route.get(str(weights[i]), 'HiFi2 or LoFi with block-float weights')}"
                    for i in first]

        message = messages([pd.Series(weights)], fid_words)
        frames.append(make_entries(g, pos, "format_fidelity", message, saving_us=bound / 2,
                                   flop_bound_us=bound))
    return pd.concat(frames, ignore_index=True) if frames else empty_entries()
