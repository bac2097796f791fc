"""Per-RISC kernel times and utilisation counters: what the profiler measured beyond the device
time. The columns a file has a value in are read with the analysis columns (numbers only: a few
bytes a row) and passed through to every op, its details, JSON/CSV and the op table's optional
columns; the slowest RISC of each op is named."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...format import is_missing

if TYPE_CHECKING:
    from .readback import ReadLater

#: The RISC-V cores of a Tensix (and the Ethernet core) and what each runs in a ttnn op.
RISC_ROLES = {
    "BRISC": "data movement, writer",
    "NCRISC": "data movement, reader",
    "TRISC0": "compute, unpack",
    "TRISC1": "compute, math",
    "TRISC2": "compute, pack",
    "ERISC": "ethernet",
}
#: data movement and compute within this share of each other: neither is the bottleneck
BALANCED = 0.05
RISC_COLUMN = "DEVICE {} KERNEL DURATION [ns]"
RISC_NAMES = frozenset(RISC_COLUMN.format(r) for r in RISC_ROLES)
#: Utilisation columns the profiler names (V1 and later); any other column with UTIL, COUNTER,
#: "(%)" or "(ratio)" in its name is shown too (tt-metal's perf-counter metrics are named
#: "<metric> Min|Median|Max|Avg (%)", or "(ratio)" for the unbounded ones).
UTILISATION = ("PM FPU UTIL (%)", "NOC UTIL (%)", "MULTICAST NOC UTIL (%)", "DRAM BW UTIL (%)",
               "DRAM BW UTIL PER CTRL", "ETH BW UTIL (%)", "NPE CONG IMPACT (%)")
_COUNTER_MARKS = ("UTIL", "COUNTER", "(%)", "(RATIO)")


def is_counter(name: str) -> bool:
    """A per-RISC kernel duration, a utilisation column or any column named like a hardware
    counter (UTIL, COUNTER, "(%)" or "(ratio)" in its name)."""
    return name in RISC_NAMES or name in UTILISATION or (
        not name.startswith("_") and any(m in name.upper() for m in _COUNTER_MARKS))


def counter_columns(header: list[str]) -> list[str]:
    """The counter columns of a header, in file order."""
    return [h for h in dict.fromkeys(header) if isinstance(h, str) and is_counter(h)]


def counter_values(column: pd.Series) -> np.ndarray:
    """A counter column as numbers (its compact dtype kept; text cells are missing)."""
    if column.dtype.kind in "iuf":
        return column.to_numpy()
    return pd.to_numeric(column.astype(object), errors="coerce").to_numpy(dtype="float64",
                                                                          na_value=np.nan)


def slowest_riscs(frame: pd.DataFrame) -> pd.Categorical:
    """Per row, the RISC whose kernel ran longest (missing without per-RISC times; as in
    risc_times, NaN, 0 and inf are no time). One column at a time: no rows x RISCs matrix."""
    best = np.full(len(frame), -np.inf)
    codes = np.full(len(frame), -1, dtype=np.int8)
    for k, risc in enumerate(RISC_ROLES):
        name = RISC_COLUMN.format(risc)
        if name in frame.columns:
            with np.errstate(invalid="ignore"):
                t = counter_values(frame[name]).astype("float64", copy=False)
                longer = np.isfinite(t) & (t > 0) & (t > best)
            best[longer], codes[longer] = t[longer], k
    return pd.Categorical.from_codes(codes, categories=list(RISC_ROLES))


def present_counters(trace: ReadLater, memo: dict[str, Any]) -> list[str]:
    """The counter columns of the trace's table with a value (an "all" read keeps the empty
    ones), found once (`memo`: the trace's); a table the analysis cache stored reads only its
    counter columns back."""
    names = memo.get("_counter_names")
    if names is None:
        table = trace.ordered_columns(counter_columns(list(trace.ordered_labels)))
        names = memo["_counter_names"] = [c for c in table.columns if table[c].notna().any()]
    return list(names)


def with_counters(ops: pd.DataFrame, trace: ReadLater, memo: dict[str, Any]) -> pd.DataFrame:
    """`ops` (rows of a view: their "id" is the trace row they show) with that row's counter
    columns, under their file names, and `slowest_risc` when there are per-RISC times. Looked up
    when asked (a chunk of output, the columns picked on screen): a million-op view does not
    carry them. `memo` keeps the ID -> row position map of the trace's table and its counter
    columns (the table's own Series: no copy; of a table the analysis cache stored, those
    columns read alone)."""
    names = present_counters(trace, memo)
    if not names or "id" not in ops.columns:
        return ops
    by_id = memo.get("_rows_by_id")
    if by_id is None:  # (the table may be in host-time order rather than by ID)
        if "ID" not in trace.ordered_labels:
            return ops
        id_col = trace.ordered_columns(["ID"])["ID"]
        ids = id_col.to_numpy(dtype=np.int64)
        order = None if id_col.is_monotonic_increasing else np.argsort(ids, kind="stable")
        by_id = memo["_rows_by_id"] = (ids if order is None else ids[order], order)
    counters = memo.get("_counter_rows")
    if counters is None or list(counters) != names:  # (each a column of the table: no copy)
        table = trace.ordered_columns(names)
        counters = memo["_counter_rows"] = {n: table[n] for n in names}
    sorted_ids, order = by_id
    want = ops["id"].to_numpy(dtype="float64")
    # IDs are whole numbers: searched as int64 (float64 keys made numpy cast the table's
    # million IDs to float64 on every chunk of output, 24 ms each)
    with np.errstate(invalid="ignore"):
        key = np.nan_to_num(want, nan=-1, posinf=-1, neginf=-1).astype(np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, key), max(len(sorted_ids) - 1, 0))
    found = (sorted_ids[at] == want) if len(sorted_ids) else np.zeros(len(want), bool)
    pos = at if order is None else order[at]

    def values(name: str) -> np.ndarray:
        v = counter_values(counters[name].iloc[pos])
        if found.all():
            return v
        v = v.astype("float64")  # an op with no row of the table (a view of other rows)
        v[~found] = np.nan
        return v

    rows = pd.DataFrame({n: values(n) for n in names})
    extra: dict[str, Any] = {}
    if any(n in RISC_NAMES for n in names):
        extra["slowest_risc"] = slowest_riscs(rows)
    extra.update((n, rows[n].to_numpy()) for n in names)
    out = ops.copy(deep=False)  # not assign(): that copies every column of a 1M-op view
    for name, column in extra.items():
        out[name] = column
    return out


def _number(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def risc_times(row: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(RISC, kernel time in ns) for every RISC with a positive time, in RISC_ROLES order."""
    out = []
    for risc in RISC_ROLES:
        ns = _number(row.get(RISC_COLUMN.format(risc)))
        if ns is not None and ns > 0:
            out.append((risc, ns))
    return out


def slowest_risc(row: Mapping[str, Any]) -> str | None:
    """The RISC whose kernel ran longest and what that suggests (data movement or compute
    bound; balanced when the two are within 5%), or None without per-RISC times."""
    times = risc_times(row)
    if not times:
        return None
    risc, ns = max(times, key=lambda t: t[1])
    role = RISC_ROLES[risc]
    dm = max((t for r, t in times if RISC_ROLES[r].startswith("data")), default=0.0)
    compute = max((t for r, t in times if RISC_ROLES[r].startswith("compute")), default=0.0)
    if role == "ethernet":
        hint = "the ethernet core (a CCL op) ran longest"
    elif dm and compute and abs(dm - compute) <= BALANCED * max(dm, compute):
        hint = "data movement and compute take about as long: neither alone is the bottleneck"
    elif role.startswith("data"):
        hint = "the op waits on data: look at the data layout, sharding and NOC traffic"
    else:
        hint = "compute bound on the cores: fidelity, dtypes and the core grid decide it"
    return f"{risc} ({role}), {ns / 1000:,.2f} us: {hint}"


def counter_cells(row: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(column, value) of the utilisation and hardware-counter columns the row has a value
    in: the known ones first, then any other column named like a counter."""
    def present(name: str) -> bool:
        v = row.get(name)
        return not is_missing(v) and str(v).strip() != ""

    known = [c for c in UTILISATION if present(c)]
    other = [c for c in row if isinstance(c, str) and c not in UTILISATION
             and c not in RISC_NAMES and is_counter(c) and present(c)]
    return [(c, row[c]) for c in known + other]
