"""The report's option values, importable without pandas (the CLI builds its parser from them)."""

from __future__ import annotations

#: What `report --top` ranks by (--rank-by): the field of each choice. Device time by default:
#: a share of wall time ranks ops by the host pauses before them (a 3 us op after a 1 s pause
#: outranks a 30 ms one).
RANK_FIELDS = {"device": "device_time_us", "gap": "op_to_op_us", "share": "total_pct"}
RANK_WORDS = {"device": "device time", "gap": "op-to-op gap",
              "share": "share of wall time (Total %: device time + op-to-op gap, host pauses "
                       "included)"}
DEFAULT_RANK = "device"
#: `report --advice`: grouped (default), every entry (tt-perf-report's layout), none.
ADVICE_MODES = ("summary", "full", "none")
