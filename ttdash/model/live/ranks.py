"""The live table of a multi-host run whose ranks come and go: one rank's rows dropped, the
other ranks' rows kept (a rank's folder deleted, or its device re-opened, must not clear the
table of every rank)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..arch import ArchSpec
from ..trace import View, infer_clock
from .rankarch import RANK, arch_of, mixed_arch_warning
from .table import LiveModel


class RankedLiveModel(LiveModel):
    """`LiveModel` whose rows can be dropped one rank at a time (`drop_rank`); ranks of
    different archs are a warning of its view (`ranks_mixed_arch`), as in the merged report."""

    def view(self) -> View:
        view = super().view()
        if len(self.ranks) > 1:
            known = self.__dict__.setdefault("_rank_arch", {})  # rank -> its arch, once known
            raw = view.trace.ordered
            if RANK in raw.columns and any(r not in known for r in self.ranks.values()):
                ranks = raw[RANK].to_numpy(dtype="float64")
                for r in set(self.ranks.values()) - set(known):
                    rows = ranks == float(r)
                    spec: ArchSpec | None = arch_of(raw.loc[rows], infer_clock) \
                        if rows.any() else None
                    if spec is not None:
                        known[r] = spec
            warning = mixed_arch_warning(None, infer_clock, known)
            if warning is not None:
                view.data_warnings = [warning]
        return view

    def rank_of_source(self, source: Path) -> int | None:
        """The rank of a live source (`<rank dir>/.logs/<file>.csv`); None outside a rank."""
        return self.ranks.get(Path(source).absolute().parent.parent)

    def drop_rank(self, rank: int | None) -> int:
        """Drop every row of `rank` (None: the rows of no rank, the root's own `.logs`); the
        others are kept in their order and analysed again as if the rank had never sent any
        (totals, device numbering, shares). Returns the rows dropped."""
        self._analyse_pending()
        dropped = 0
        if len(self._raw):
            raw = self._raw.frame()
            ranks = (raw["_rank"].to_numpy(dtype="float64") if "_rank" in raw.columns
                     else np.full(len(raw), np.nan))
            gone = np.isnan(ranks) if rank is None else ranks == float(rank)
            dropped = int(gone.sum())
            if dropped:
                kept = raw.loc[~gone].reset_index(drop=True).copy()
                arrivals = self._arrivals.copy()
                # every count and store back to empty; arch and clock stay while other rows
                # do (a rank alone, its device re-opened for a new run: detected again)
                self.reset(Path(), keep_arch=bool(len(kept)))
                self._arrivals = arrivals
                if len(kept):
                    self._converted = [kept]
                    self.total_rows = len(kept)
                    self._analyse_pending()
        self.sources = {s for s in self.sources if self.rank_of_source(s) != rank}
        self.__dict__.get("_rank_arch", {}).pop(rank, None)
        self._cache = None
        return dropped
