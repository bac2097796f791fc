"""The program cache, from `PROGRAM HASH` and `PROGRAM CACHE HIT` (V2.1 files and later): which
runs compiled a program, and which missed the cache for a program already compiled (a recompile:
a cache cleared or evicted, as tt-xla lost performance to in its issue #3162).

* A row's program is its PROGRAM HASH on its device; the first row of a (device, hash) pair is a
  *first run*: the program was compiled for it. Metal-trace replay rows are left out: a replay
  does not look the program up, and its row carries the capture's hash and flag.
* The flag is *live* when it says True on some row. Then a miss (False) of a program already run
  on that device is a *recompile*.
* The flag is *stale* when it says False on every row although some program ran again on its
  device: tt-metal's profiler serialises an op's info once per program hash and repeats that
  first record (its op-info cache; `TT_METAL_PROFILER_NO_CACHE_OP_INFO=1`, or tracy
  `--no-op-info-cache`, records each run's own flag). Nothing is counted from a stale flag; the
  data-trust warnings say so.
* The *steady state* is the view's window when it starts after the file's first op (a signpost
  marks it): a program first run inside it was compiled inside the measured part. A window that
  is the whole file has no steady state to check; the last new program is named instead.

Counts are of ops, not rows: the devices of a multi-device op count once (its op id, GLOBAL
CALL COUNT >> 10, when the file numbers ops that way; else each row).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..columns import aggregated
from ..read.cells import by_unique
from ..read.readers import HOST_MARKER, MAX_DEVICE_ID, num, text, whole

HASH, HIT = "PROGRAM HASH", "PROGRAM CACHE HIT"
REPLAY = "METAL TRACE REPLAY SESSION ID"


def codes_of(frame: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A text column as (an int code a row, -1 missing; the distinct texts as objects): a
    categorical's own codes, no string made per row."""
    if name not in frame.columns:
        return np.full(len(frame), -1, dtype=np.int64), np.array([], dtype=object)
    codes, uniques = pd.factorize(frame[name], use_na_sentinel=True)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _flag(v: object) -> float:
    s = str(v).strip().lower()
    return 1.0 if s in ("true", "1", "1.0") else 0.0 if s in ("false", "0", "0.0") else np.nan


@dataclass
class Programs:
    """Per row of a table in report order (the trace's `ordered`)."""
    usable: np.ndarray  # a device op with a program hash, not a trace replay
    first: np.ndarray  # its program's first run on its device
    hit: np.ndarray  # 1.0 a cache hit, 0.0 a miss, NaN unknown
    live: bool  # the flag says True somewhere: a real lookup result
    op_key: np.ndarray  # the op a row belongs to (its devices' rows share it)
    devices: int
    programs: int  # distinct hashes
    op: np.ndarray  # each row's op code, as a code into op_names (-1: none)
    op_names: np.ndarray

    @property
    def stale_repeats(self) -> int:
        """Runs of an already-run program flagged a miss while the flag is never True."""
        if self.live:
            return 0
        return int((self.usable & ~self.first & (self.hit == 0)).sum())


#: The last table's facts (the trust warnings, the collectives and the report's section all
#: ask for them of the same trace's table); one item, replaced whole (threads load traces).
_LAST: list[tuple[weakref.ref[pd.DataFrame], Programs | None] | None] = [None]


def programs(ordered: pd.DataFrame) -> Programs | None:
    """The program facts of every row; None when the file has no PROGRAM HASH."""
    last = _LAST[0]
    if last is not None and last[0]() is ordered:
        return last[1]
    found = _programs(ordered)
    _LAST[0] = (weakref.ref(ordered), found)
    return found


def _programs(ordered: pd.DataFrame) -> Programs | None:
    if HASH not in ordered.columns:
        return None
    n = len(ordered)
    op, names = codes_of(ordered, "OP CODE")
    host_name = np.array([HOST_MARKER in str(x) for x in names] + [False], dtype=bool)
    host = host_name[op]  # (code -1 takes the trailing False)
    is_sp = (text(ordered, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    codes, uniques = pd.factorize(ordered[HASH], use_na_sentinel=True)
    dev = whole(num(ordered, "DEVICE ID"), 0, MAX_DEVICE_ID)
    usable = (codes >= 0) & ~is_sp & ~host & np.isnan(num(ordered, REPLAY))
    pair = np.where(usable, np.nan_to_num(dev, nan=-1.0).astype(np.int64) * (len(uniques) + 1)
                    + codes, -1)
    first = np.zeros(n, dtype=bool)
    if usable.any():
        at = np.flatnonzero(usable)
        _, idx = np.unique(pair[at], return_index=True)
        first[at[idx]] = True
    hit = by_unique(ordered[HIT], _flag) if HIT in ordered.columns else np.full(n, np.nan)
    gcc = whole(num(ordered, "GLOBAL CALL COUNT"), 0, 2.0 ** 53)  # 1e300: no call count
    ids = ordered["ID"].to_numpy(dtype=np.int64) if "ID" in ordered else np.arange(2, n + 2)
    both = usable & ~np.isnan(gcc) & ~np.isnan(dev)
    g = np.nan_to_num(gcc).astype(np.int64)
    encoded = both.any() and bool(((g[both] & 1023) == dev[both]).all())
    op_key = np.where(both, g >> 10, -ids) if encoded else ids
    return Programs(usable=usable, first=first, hit=hit, live=bool((hit[usable] == 1).any()),
                    op_key=op_key, devices=len(np.unique(dev[usable & ~np.isnan(dev)])),
                    programs=len(np.unique(codes[usable])), op=op, op_names=names)


@dataclass(frozen=True)
class CacheSummary:
    """The program cache over a view's window: the report's section and JSON's
    `program_cache`."""
    programs: int
    devices: int
    flag: str  # "live"; "stale" (never True, repeats flagged False); "absent" (no column);
    #            "no_repeats" (never True, and each program ran once on its device)
    steady_from_id: int | None  # the window's first op, when it starts after the file's
    recompiles: pd.DataFrame  # per op code: ops, first_id (live flag only)
    new_programs: pd.DataFrame  # per op code: first runs inside the steady state
    misses: int  # ops missing the cache inside the window (live flag only)
    repeats: int  # runs of a program already run on their device (the whole file)
    last_new_id: int | None  # the file's last first run
    last_new_at_pct: float | None  # how far into the file's device ops it came

    def as_dict(self) -> dict[str, Any]:
        def rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return [{"op_code": str(r.op_code), "ops": int(r.ops), "first_id": int(r.first_id)}
                    for r in frame.itertuples(index=False)]
        return {"programs": self.programs, "devices": self.devices, "flag": self.flag,
                "steady_from_id": self.steady_from_id, "misses": self.misses,
                "repeats": self.repeats,
                "recompiles": rows(self.recompiles), "new_programs": rows(self.new_programs),
                "last_new_id": self.last_new_id,
                "last_new_at_pct": None if self.last_new_at_pct is None
                else round(self.last_new_at_pct, 3)}


def _per_op_code(ordered: pd.DataFrame, p: Programs, mask: np.ndarray) -> pd.DataFrame:
    at = np.flatnonzero(mask)
    frame = pd.DataFrame({"op": p.op[at], "key": p.op_key[at],
                          "first_id": ordered["ID"].to_numpy()[at]})
    frame = frame.drop_duplicates(["op", "key"])
    out = aggregated(frame.groupby("op", sort=False, observed=True), ops=("key", "size"),
                     first_id=("first_id", "min"))
    out = out.sort_values(["ops", "first_id"], ascending=[False, True]).reset_index()
    names = np.append(p.op_names, None)  # (code -1 takes the trailing None)
    return pd.DataFrame({"op_code": names[out["op"].to_numpy()], "ops": out["ops"].to_numpy(),
                         "first_id": out["first_id"].to_numpy()})


def cache_summary(ordered: pd.DataFrame, window: pd.DataFrame) -> CacheSummary | None:
    """The program cache over `window` (the view's rows of `ordered`, every device's); None
    when the file has no PROGRAM HASH or no device op with one."""
    p = programs(ordered)
    if p is None or not p.usable.any():
        return None
    n = len(ordered)
    in_window = np.zeros(n, dtype=bool)
    at = ordered.index.get_indexer(window.index)
    in_window[at[at >= 0]] = True
    used = np.flatnonzero(p.usable)
    in_used = used[in_window[used]]
    steady = in_used.size and in_used[0] > used[0]
    ids = ordered["ID"].to_numpy()
    steady_mask = in_window & p.usable if steady else np.zeros(n, dtype=bool)
    flag = "absent" if HIT not in ordered.columns else "live" if p.live else \
        "stale" if p.stale_repeats else "no_repeats"
    miss = in_window & p.usable & (p.hit == 0) if p.live else np.zeros(n, dtype=bool)
    firsts = np.flatnonzero(p.first)
    last = int(firsts[-1])
    misses = _per_op_code(ordered, p, miss)
    return CacheSummary(
        programs=p.programs, devices=p.devices, flag=flag,
        steady_from_id=int(ids[in_used[0]]) if steady else None,
        recompiles=_per_op_code(ordered, p, miss & ~p.first),
        new_programs=_per_op_code(ordered, p, steady_mask & p.first),
        misses=int(misses["ops"].sum()) if len(misses) else 0,
        repeats=int((p.usable & ~p.first).sum()),
        last_new_id=int(ids[last]),
        last_new_at_pct=float(np.searchsorted(used, last) + 1) / len(used) * 100)
