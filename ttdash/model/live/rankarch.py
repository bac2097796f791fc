"""The arch of every rank of a multi-host run merged into one trace: ranks on different archs
(a Wormhole host beside a Blackhole one) are a warning, not a silent sum of their times."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ..analysis.trust import DataWarning
from ..arch import ArchSpec, arch_from_clock, get_arch
from ..errors import TraceError

RANK = "_rank"
MIXED_ARCH = "ranks_mixed_arch"
#: the columns arch_of reads (with those its clock_of reads)
READ = (RANK, "DEVICE ARCH")


def arch_of(rows: pd.DataFrame, clock_of: Callable[[pd.DataFrame], float | None]
             ) -> ArchSpec | None:
    """A rank's arch: its DEVICE ARCH cells, else its clock; None when neither tells."""
    if "DEVICE ARCH" in rows.columns:
        named = rows["DEVICE ARCH"].dropna().astype(str).str.strip()
        named = named[named != ""]
        if len(named):
            try:
                return get_arch(str(named.iloc[0]))
            except TraceError:
                pass
    return arch_from_clock(clock_of(rows))


def rank_archs(ordered: pd.DataFrame, clock_of: Callable[[pd.DataFrame], float | None]
               ) -> dict[int, ArchSpec]:
    """{rank: its arch} of the ranks whose arch is known ({} for a one-host trace)."""
    if RANK not in ordered.columns:
        return {}
    ranks = ordered[RANK].to_numpy(dtype="float64")
    out = {}
    for r in np.unique(ranks[~np.isnan(ranks)]):
        spec = arch_of(ordered.loc[ranks == r], clock_of)
        if spec is not None:
            out[int(r)] = spec
    return out


def mixed_arch_warning(ordered: pd.DataFrame | None,
                       clock_of: Callable[[pd.DataFrame], float | None],
                       archs: dict[int, ArchSpec] | None = None) -> DataWarning | None:
    """A warning when the ranks merged ran on different arch families; None otherwise.
    `archs`: each rank's, when known already (else found in `ordered`)."""
    if archs is None:
        archs = rank_archs(ordered if ordered is not None else pd.DataFrame(), clock_of)
    if len({a.family for a in archs.values()}) < 2:
        return None
    named = ", ".join(f"rank {r} {a.name}" for r, a in sorted(archs.items()))
    return DataWarning(
        MIXED_ARCH,
        f"ranks of different archs merged ({named}): their device times are added across "
        "different hardware, and the peaks are the first rank's; compare the ranks one at a "
        "time (ttrun/rank<N>)",
        (("ranks", {str(r): a.name for r, a in sorted(archs.items())}),))
