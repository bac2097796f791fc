"""Per-RISC kernel times and utilisation counters of one op's row: what the profiler measured
beyond the device time (the details of one op; read from its raw row, so a million-op table
carries none of it)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..format import is_missing

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
#: Utilisation columns the profiler names (V1 and later); any other column with UTIL, COUNTER
#: or "(%)" in its name is shown too.
UTILISATION = ("PM FPU UTIL (%)", "NOC UTIL (%)", "MULTICAST NOC UTIL (%)", "DRAM BW UTIL (%)",
               "DRAM BW UTIL PER CTRL", "ETH BW UTIL (%)", "NPE CONG IMPACT (%)")
_COUNTER_MARKS = ("UTIL", "COUNTER", "(%)")


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
             and not c.startswith("_") and any(m in c.upper() for m in _COUNTER_MARKS)
             and present(c)]
    return [(c, row[c]) for c in known + other]
