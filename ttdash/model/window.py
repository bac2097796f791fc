"""Which rows of a trace to analyse (model.trace applies it; model.iterations finds the "steady"
window's rows), and the column that names metal-trace replay sessions."""

from __future__ import annotations

from dataclasses import dataclass

REPLAY_COLUMN = "METAL TRACE REPLAY SESSION ID"


@dataclass(frozen=True)
class Window:
    """Which rows to analyse.

    mode "default": tt-perf-report's default (after the first row named like the last
    signpost; the whole file when there are none). "all": the whole file (--ignore-signposts).
    "region": from signpost number `region` (1-based) to the next signpost. "range":
    tt-perf-report's --start-signpost / --end-signpost. "replay": the ops of metal-trace replay
    session `region`. "steady": the iterations after the warm-up (model.iterations).
    """

    mode: str = "default"
    region: int | None = None
    start: str | None = None
    end: str | None = None
