"""When the live table refreshes: as soon as rows come, as often as the refreshes' own cost
allows, and never later than `--refresh` seconds after rows came.

A refresh has a fixed cost (pandas steps per column for the new rows, the screen's update and
render) and a cost per row. Refreshing more often repeats only the fixed part, so the pacer keeps
that part under `budget` of a core: the gap between two refreshes is the fixed cost over the
budget, bounded by `least` and `most` seconds. The fixed part is read off the refreshes measured
so far (their cost against their rows, a least-squares line with old refreshes fading out); while
the rows per refresh have not varied enough to tell the two parts apart, the cost a row had
when they last did is taken off (a steady Galaxy stream brings the same rows every refresh:
counting their cost as fixed made the gap grow with the rate, to `most`); before any such fit
the whole cost counts as fixed (the longer gap). So that the rows do vary, every other gap is
`dither` shorter and every other one as much longer (a stream steady from its first row, as a
Galaxy's is, had its rows alike from the start: no cost a row was ever read off it, and the
gap stayed at `most`). A slow run (a dump now and then) is shown as
soon as its rows come; a fast one (a Galaxy at 10,000 rows/s) is coalesced into refreshes a gap
apart, whose length does not grow with the rate. No Textual, no clock of its own: the caller
passes the times.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The share of one core the refreshes' fixed cost may take.
REFRESH_BUDGET = 0.15
#: The shortest gap between two refreshes (s): a burst of writes is one refresh.
LEAST_GAP_S = 0.05
#: How much of the fit a refresh's weight keeps at the next one (old ones fade out): ~30
#: refreshes count (~6 s at a Galaxy's rate). The fixed cost is the fit's mean cost less its
#: slope times the rows, and a slope read off ~10 noisy refreshes (0.9) swung the gap: a
#: Galaxy's gaps had a median of 213 ms and a p95 of 338 ms.
FADE = 0.97
#: Every other gap this much shorter, every other one longer: the rows per refresh vary by as
#: much, enough to tell a refresh's fixed cost from its rows' (the fit needs them 10% apart).
#: (The longer turns are what the slowest rows wait: 0.25 put a Galaxy's p95 ~60 ms higher.)
DITHER = 0.15
#: A refresh counts at most this many times what the fit expected of it: one pause (a full
#: garbage collection, a busy core's cold caches) is that refresh's, not the next gaps'.
SPIKE = 2.0


@dataclass
class RefreshPacer:
    """The gap between two refreshes, adapted to their measured cost.

    `most`: the longest gap (`--refresh`): rows are never held back longer. `observe(rows,
    seconds)` after each refresh (CPU seconds it cost, the screen's part included when known);
    `due(now, last)`: whether a refresh with rows waiting is due."""

    most: float = 0.5
    least: float = LEAST_GAP_S
    budget: float = REFRESH_BUDGET
    fade: float = FADE
    dither: float = DITHER
    spike: float = SPIKE

    def __post_init__(self) -> None:
        self.least = min(self.least, self.most)
        self._turn = -1.0  # the next gap is `dither` shorter (-1) or longer (+1); flips per refresh
        # faded sums of weight, rows, cost, rows^2 and rows x cost (a line cost = a + b rows)
        self._w = self._n = self._c = self._nn = self._nc = 0.0
        self.fixed = 0.0  # the fixed cost of a refresh, as fitted (s)
        #: the cost of a row (s) when the rows last varied enough to tell it (None: not yet)
        self.per_row: float | None = None

    @property
    def gap(self) -> float:
        """Seconds from one refresh to the next while rows keep coming, on average."""
        return min(self.most, max(self.least, self.fixed / self.budget))

    @property
    def next_gap(self) -> float:
        """The gap to the next refresh: `gap`, `dither` shorter or longer by turns (within
        `least` and `most`; at the least gap rows are shown as soon as they come, by turns too)."""
        gap = self.gap
        if gap <= self.least:
            return gap
        return min(self.most, max(self.least, gap * (1.0 + self._turn * self.dither)))

    def observe(self, rows: int, seconds: float) -> None:
        """A refresh of `rows` new rows cost `seconds` (CPU)."""
        if seconds < 0:
            return
        if self.per_row is not None:  # a fit: a spike counts as `spike` times what it expected
            seconds = min(seconds, self.spike * (self.fixed + self.per_row * rows))
        self._turn = -self._turn
        f = self.fade
        self._w = self._w * f + 1.0
        self._n = self._n * f + rows
        self._c = self._c * f + seconds
        self._nn = self._nn * f + float(rows) * rows
        self._nc = self._nc * f + rows * seconds
        self.fixed = self._fit()

    def _fit(self) -> float:
        mean_n, mean_c = self._n / self._w, self._c / self._w
        var = self._nn / self._w - mean_n * mean_n
        if var > (0.1 * mean_n) ** 2 and var > 0:
            per_row = (self._nc / self._w - mean_n * mean_c) / var
            self.per_row = per_row if per_row > 0 else None
            if self.per_row is not None:
                return min(mean_c, max(0.0, mean_c - per_row * mean_n))
            return mean_c
        # rows too alike: the last cost a row was seen to have is taken off, but half the cost
        # counts as fixed at least (that slope may be stale: taking off too much would refresh
        # at the least gap, past the budget); none seen yet: all of it counts as fixed
        if self.per_row is None:
            return mean_c
        return min(mean_c, max(0.5 * mean_c, mean_c - self.per_row * mean_n))

    def due(self, now: float, last: float) -> bool:
        """Rows are waiting: refresh now (the last refresh was at `last`)?"""
        return now >= last + self.next_gap

    def wait(self, now: float, last: float) -> float:
        """Seconds until a refresh of waiting rows is due (0 when it is)."""
        return max(0.0, last + self.next_gap - now)
