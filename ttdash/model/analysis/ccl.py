"""Collective (CCL) ops against the Ethernet links: the bytes each device moves, its bus bandwidth
and the share of its links' peak, per op and over devices and iterations.

Bytes and bandwidth follow NCCL's bus-bandwidth convention (nccl-tests doc/PERFORMANCE.md), the
standard cost of the ring algorithm: with ``n`` devices in the op's group and ``S`` the size of
the whole array in bytes,

* all-gather: ``S = n x input``; each device sends ``S (n-1)/n`` (the other ``n-1`` pieces);
* reduce-scatter: ``S = input``; each device sends ``S (n-1)/n``;
* all-reduce: ``S = input``; each device sends ``2 S (n-1)/n`` (a reduce-scatter then an
  all-gather);
* all-to-all: ``S = input``; each device sends ``S (n-1)/n``.

``ccl_bytes`` is that per-device amount, ``ccl_gbps`` = ccl_bytes / the kernel's duration (NCCL's
*busbw*: comparable with a link's peak whatever ``n``), ``ccl_link_pct`` = ccl_gbps / (num_links x
the arch's per-link peak, one direction; data/arches.toml ``eth_link_gbps``) x 100.

Inputs: ``n`` is the op's ``ring_size`` (ATTRIBUTES), else what the shapes say (all-gather: the
largest output's elements / input 0's; reduce-scatter: input 0's / the smallest output's), else
(the aggregate only) the devices that ran it; ``num_links`` is ATTRIBUTES' (no per-link figure
without it). Sizes are padded shapes times the dtype's bytes (block floats at their tile size).
Fused ops (AllGatherMatmul, RMSAllGather) and MoE dispatch/combine (their bytes follow the
routing) are not counted.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from ..arch import ArchSpec, user_arch_file
from ..read.cells import attribute_int, by_unique
from ..read.readers import (
    HOST_MARKER,
    MAX_DEVICE_ID,
    invalid_duration,
    io_dtype_size,
    num,
    tensor_dim,
    tensor_names,
    text,
    whole,
)
from .progcache import codes_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KINDS = ("", "all_gather", "reduce_scatter", "all_reduce", "all_to_all")
#: What each device sends, as a multiple of S (n-1)/n.
_FACTOR = np.array([np.nan, 1.0, 1.0, 2.0, 1.0])
_SUFFIXES = ("DeviceOperation", "Operation", "Op")
_NOT_COUNTED = ("Matmul", "RMS", "Dispatch", "Combine", "Metadata")


def ccl_kind(op: object) -> float:
    """Index into KINDS for an op code (its first word; 0: not a collective counted here)."""
    base = (str(op).split(maxsplit=1) or [""])[0]
    for suffix in _SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
            break
    if any(word in base for word in _NOT_COUNTED):
        return 0.0
    for i, word in ((1, "AllGather"), (2, "ReduceScatter"), (3, "AllReduce"), (4, "AllToAll")):
        if word in base:
            return float(i)
    return 0.0


def kinds_of(op_code: pd.Series) -> np.ndarray:
    return by_unique(op_code, ccl_kind, 0.0).astype(np.int64)


# ------------------------------------------------------------------ the arch's link peak

@lru_cache(maxsize=8)
def _link_peaks(user_file: str | None) -> dict[str, float]:
    table: dict[str, dict[str, Any]] = {}
    sources = [resources.files("ttdash").joinpath("data/arches.toml").read_text()]
    if user_file:
        try:
            with open(user_file, encoding="utf-8") as fh:
                sources.append(fh.read())
        except OSError:
            pass  # model.arch reports an unreadable user file
    for text_ in sources:
        try:
            data = tomllib.loads(text_)
        except tomllib.TOMLDecodeError:
            continue
        for name, entry in data.items():
            if isinstance(entry, dict):
                table.setdefault(name, {}).update(entry)
    out = {}
    for name, entry in table.items():
        try:
            out[name] = float(entry.get("eth_link_gbps", np.nan))
        except (TypeError, ValueError):
            out[name] = np.nan
    return out


def link_peak_gbps(arch: ArchSpec) -> float | None:
    """One Ethernet link's peak in one direction (GB/s) for this arch; None when unknown or 0
    (no Ethernet)."""
    uf = user_arch_file()
    peak = _link_peaks(str(uf) if uf else None).get(arch.name, np.nan)
    return peak if np.isfinite(peak) and peak > 0 else None


# ------------------------------------------------------------------ ATTRIBUTES facts

def attr_number(rows: pd.DataFrame, key: str, mask: np.ndarray) -> np.ndarray:
    """A whole-number fact of the ops' ATTRIBUTES (`ring_size`, `num_links`), on the `mask` rows:
    the loader's `_ATTR_<KEY>` column when it made one, else read from ATTRIBUTES when the read
    kept it (an all-columns read), else NaN."""
    feature = f"_ATTR_{key.upper()}"
    if feature in rows.columns:
        return np.where(mask, num(rows, feature), np.nan)
    out = np.full(len(rows), np.nan)
    if "ATTRIBUTES" in rows.columns and mask.any():
        cells = text(rows, "ATTRIBUTES")[mask]
        out[mask] = by_unique(cells, attribute_int(key))
    return out


# ------------------------------------------------------------------ per op

def _elements(rows: pd.DataFrame, t: str) -> np.ndarray:
    d = [tensor_dim(rows, t, x) for x in "WZYX"]
    return d[0] * d[1] * d[2] * d[3]


def _whole_n(n: np.ndarray) -> np.ndarray:
    r = np.round(n)
    return np.where((np.abs(n - r) < 1e-6) & (r >= 2), r, np.nan)


@dataclass
class CclRows:
    """What the per-op figures rest on, for rows of collectives (NaN elsewhere)."""
    kind: np.ndarray  # index into KINDS (0: not a counted collective)
    n: np.ndarray  # devices in the op's group
    bytes: np.ndarray  # each device's bytes over its links
    links: np.ndarray  # num_links


def ccl_rows(rows: pd.DataFrame, op_code: pd.Series,
             n_fallback: np.ndarray | None = None) -> CclRows:
    """The kind, group size, bytes and links of each row (see the module docstring);
    `n_fallback`: the group size where neither ring_size nor the shapes give one."""
    n_rows = len(rows)
    kind = kinds_of(op_code)
    nan = np.full(n_rows, np.nan)
    if not kind.any():
        return CclRows(kind, nan, nan, nan)
    is_ccl = kind > 0
    with np.errstate(all="ignore"):
        in0 = _elements(rows, "INPUT_0")
        outs = [_elements(rows, t) for t in tensor_names(rows) if t.startswith("OUTPUT_")]
        out_max = np.fmax.reduce(outs) if outs else nan
        out_min = np.fmin.reduce(outs) if outs else nan
        size = by_unique(text(rows, "INPUT_0_DATATYPE"), io_dtype_size, 4.0)
        ring = _whole_n(attr_number(rows, "ring_size", is_ccl))
        by_shape = np.where(kind == 1, out_max / in0, np.where(kind == 2, in0 / out_min, np.nan))
        n = np.where(is_ccl, np.where(np.isnan(ring), _whole_n(by_shape), ring), np.nan)
        if n_fallback is not None:
            n = np.where(is_ccl & np.isnan(n), _whole_n(n_fallback.astype("float64")), n)
        array = np.where(kind == 1, n * in0, in0) * size  # NCCL's S, bytes
        moved = np.where(is_ccl, array * _FACTOR[kind] * (n - 1) / n, np.nan)
        links = attr_number(rows, "num_links", is_ccl)
        links = np.where(links >= 1, links, np.nan)
    return CclRows(kind, n, moved, links)


def ccl_columns(rows: pd.DataFrame, op_code: pd.Series, dur_ns: np.ndarray, skip: np.ndarray,
                arch: ArchSpec) -> dict[str, np.ndarray]:
    """ccl_bytes, ccl_gbps (bus bandwidth) and ccl_link_pct of each row; `skip`: rows with no
    device timing to use (signposts, host ops, corrupt rows)."""
    c = ccl_rows(rows, op_code)
    peak = link_peak_gbps(arch)
    with np.errstate(all="ignore"):
        ok = ~skip & (dur_ns > 0) & (c.bytes > 0)
        gbps = np.where(ok, c.bytes / dur_ns, np.nan)  # bytes per ns = GB/s
        pct = gbps / (c.links * peak) * 100 if peak else np.full(len(rows), np.nan)
    return {"ccl_bytes": np.where(c.kind > 0, c.bytes, np.nan), "ccl_gbps": gbps,
            "ccl_link_pct": pct}


# ------------------------------------------------------------------ over devices and iterations

def _cumcount(key: np.ndarray) -> np.ndarray:
    """Each row's number among the earlier rows with its key (0, 1, 2, ...)."""
    order = np.argsort(key, kind="stable")
    sk = key[order]
    idx = np.arange(len(key))
    first = np.maximum.accumulate(np.where(np.r_[True, sk[1:] != sk[:-1]], idx, 0))
    out = np.empty(len(key), dtype=np.int64)
    out[order] = idx - first
    return out


def _stats(values: pd.Series) -> dict[str, float | None]:
    v = values.to_numpy(dtype="float64")
    v = v[~np.isnan(v)]
    if not v.size:
        return {"min": None, "median": None, "max": None, "std": None}
    return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max()),
            "std": float(v.std())}  # population std (ddof 0)


@dataclass(frozen=True)
class CclSummary:
    """Collectives over a view's window, every device's row: the report's section and JSON's
    `ccl_bandwidth`. `runs`: one row per op run (its devices' rows together); `device_rows`: one
    per device row."""
    link_peak_gbps: float | None
    runs: pd.DataFrame
    device_rows: pd.DataFrame

    def by_op_code(self) -> list[dict[str, Any]]:
        """Per op code, most device time first: its runs and devices, bus GB/s over the device
        rows and over the runs (each run at its devices' mean duration, tt-perf-report's merged
        time), the link share, the worst cross-device skew, how many runs were first runs."""
        out = []
        r, d = self.runs, self.device_rows
        order = r.groupby("op_code", sort=False, observed=True)["device_us"].sum().sort_values(
            ascending=False, kind="stable")
        for code in order.index:
            rr, dd = r[r["op_code"] == code], d[d["op_code"] == code]
            out.append({
                "op_code": str(code), "kind": str(rr["kind"].iloc[0]), "runs": len(rr),
                "device_rows": int(dd["gbps"].notna().sum()),
                "devices": int(rr["devices"].max()),
                "n": sorted({int(x) for x in rr["n"].dropna()}),
                "links": sorted({int(x) for x in rr["links"].dropna()}),
                "device_us": float(rr["device_us"].sum()),
                "gbps_over_devices": _stats(dd["gbps"]),
                "gbps_over_runs": _stats(rr["gbps"]),
                "link_pct_median": _stats(dd["link_pct"])["median"],
                "max_skew": None if rr["skew"].isna().all() else float(rr["skew"].max()),
                "first_runs": int(rr["first_run"].sum())})
        return out

    def as_dict(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            if isinstance(v, (float, np.floating)):
                return None if v != v else round(float(v), 6)
            if isinstance(v, (np.integer, np.bool_)):
                return v.item()
            return v
        whole_ = ("first_id", "devices", "n", "links")
        runs = [{k: (None if v != v else int(v)) if k in whole_ else clean(v)
                 for k, v in row.items()} for row in self.runs.to_dict("records")]
        return {"link_peak_gbps": self.link_peak_gbps, "basis": "NCCL bus bandwidth (ring): "
                "each device's bytes over its links / kernel time; see docs why-slow",
                "by_op_code": [{k: ({kk: clean(vv) for kk, vv in v.items()}
                                    if isinstance(v, dict) else clean(v)) for k, v in g.items()}
                               for g in self.by_op_code()],
                "runs": runs}


def summarise(window: pd.DataFrame, arch: ArchSpec,
              first_run: np.ndarray | None = None) -> CclSummary | None:
    """The collectives among `window` (a view's rows of the trace, every device's, in report
    order); `first_run`: per row of `window`, the row is its program's first run on its device
    (model.progcache). None when there is none. A run is one op across its devices: the k-th
    row of an op code on each device."""
    op, names = codes_of(window, "OP CODE")
    kind_of = np.array([ccl_kind(x) for x in names] + [0.0]).astype(np.int64)
    host_of = np.array([HOST_MARKER in str(x) for x in names] + [False], dtype=bool)
    kind, host = kind_of[op], host_of[op]  # (code -1 takes the trailing entries)
    is_sp = (text(window, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    sel = (kind > 0) & ~is_sp & ~host
    if not sel.any():
        return None
    keep = [c for c in window.columns if c.startswith(("INPUT_0_", "OUTPUT_", "_ATTR_")) or c in (
        "ID", "DEVICE ID", "ATTRIBUTES", "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]")]
    rows = window[keep].iloc[np.flatnonzero(sel)]  # (a wide table: only what is read)
    op = op[sel]
    code = pd.Series(names[op], dtype=object)
    dev = np.nan_to_num(whole(num(rows, "DEVICE ID"), 0, MAX_DEVICE_ID), nan=-1.0)
    dev_code = pd.factorize(dev)[0].astype(np.int64)
    k = _cumcount(dev_code * (len(names) + 1) + op)  # the k-th row of its op code on its device
    run = pd.factorize(op * (int(k.max()) + 1) + k)[0].astype(np.int64)
    order = np.argsort(run, kind="stable")
    starts = np.flatnonzero(np.r_[True, run[order][1:] != run[order][:-1]])
    head = order[starts]  # each run's first row
    pair = np.unique(run * (int(dev_code.max()) + 1) + dev_code)  # distinct (run, device)
    devices = np.bincount(pair // (int(dev_code.max()) + 1), minlength=len(starts))
    c = ccl_rows(rows, code, n_fallback=devices[run].astype("float64"))
    dur = num(rows, "DEVICE KERNEL DURATION [ns]")
    dur[invalid_duration(dur, num(rows, "OP TO OP LATENCY [ns]")) | ~(dur > 0)] = np.nan
    peak = link_peak_gbps(arch)
    with np.errstate(all="ignore"):
        gbps = c.bytes / dur
        link_pct = gbps / (c.links * peak) * 100 if peak else np.full(len(rows), np.nan)
    ids = rows["ID"].to_numpy()
    first = first_run[sel] if first_run is not None else np.zeros(len(rows), dtype=bool)
    d = pd.DataFrame({"run": run, "op_code": code.to_numpy(dtype=object),
                      "kind": np.array(KINDS, dtype=object)[c.kind], "id": ids, "device": dev,
                      "dur_ns": dur, "n": c.n, "links": c.links, "bytes": c.bytes, "gbps": gbps,
                      "link_pct": link_pct, "first_run": first})

    def per_run(ufunc: Any, values: np.ndarray) -> np.ndarray:
        return np.asarray(ufunc.reduceat(values[order], starts))

    with np.errstate(all="ignore"):
        timed = per_run(np.add, (~np.isnan(dur)).astype(np.int64))
        mean_ns = per_run(np.add, np.nan_to_num(dur)) / timed
        has_g = per_run(np.add, (~np.isnan(gbps)).astype(np.int64))
        g_sum = per_run(np.add, np.nan_to_num(gbps))
        g_sq = per_run(np.add, np.nan_to_num(gbps) ** 2)
        g_std = np.sqrt(np.maximum(g_sq / has_g - (g_sum / has_g) ** 2, 0.0))
    runs = pd.DataFrame({
        "op_code": d["op_code"].to_numpy()[head], "kind": d["kind"].to_numpy()[head],
        "first_id": per_run(np.minimum, ids), "devices": timed, "n": c.n[head],
        "links": c.links[head], "bytes": c.bytes[head], "mean_ns": mean_ns,
        "min_ns": per_run(np.fmin, dur), "max_ns": per_run(np.fmax, dur),
        "gbps_min": per_run(np.fmin, gbps),
        "gbps_median": pd.Series(gbps).groupby(run, observed=True).median().to_numpy(),
        "gbps_max": per_run(np.fmax, gbps), "first_run": per_run(np.logical_or, first),
        "gbps_std": np.where(has_g > 0, g_std, np.nan)})
    with np.errstate(all="ignore"):
        runs["gbps"] = runs["bytes"] / runs["mean_ns"]  # at the mean duration (the merged row)
        runs["link_pct"] = runs["gbps"] / (runs["links"] * peak) * 100 if peak else np.nan
        runs["skew"] = runs["max_ns"] / runs["min_ns"]  # slowest device over the fastest
    runs["device_us"] = runs["mean_ns"] / 1000.0
    runs = runs.sort_values("first_id", kind="stable").reset_index(drop=True)
    return CclSummary(link_peak_gbps=peak, runs=runs, device_rows=d)
