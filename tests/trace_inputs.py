"""Traces for the schema tests (tests/test_json_schemas.py, tests/test_mcp_outputs.py) in the
shapes that broke a schema: recorded telemetry beside a report, a run with ops gone."""

from __future__ import annotations

import json
from pathlib import Path


def middle_dropped(src: Path, dst: Path, factor: float = 1.05) -> Path:
    """`src` less a tenth of its rows from the middle, the rest `factor` slower: a history
    check whose common-ops change (common_pct) differs from the whole runs'."""
    import pandas as pd

    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    n = len(df)
    df = df.drop(df.index[n // 2:n // 2 + n // 10])
    dur = pd.to_numeric(df["DEVICE KERNEL DURATION [ns]"], errors="coerce")
    hit = dur.notna()
    df.loc[hit, "DEVICE KERNEL DURATION [ns]"] = (dur[hit] * factor).round().astype("int64") \
        .astype(str)
    df.to_csv(dst, index=False)
    return dst


def profiler_run(root: Path, src: Path, state: Path, readings: list[dict]) -> Path:
    """A profiler directory holding `src` as its report, with `readings` recorded for it as
    `watch` and `run` keep them (test_diff_cause and test_mcp_outputs use it)."""
    from ttdash.health.telemetry import record_path

    report = root / "reports" / "2026_01_01_00_00_00" / "ops_perf_results_2026_01_01_00_00_00.csv"
    report.parent.mkdir(parents=True)
    report.write_bytes(src.read_bytes())
    rec = record_path(root, {"XDG_STATE_HOME": str(state)})
    assert rec is not None
    rec.parent.mkdir(parents=True, exist_ok=True)
    t = report.stat().st_mtime - 60
    rec.write_text("".join(json.dumps({"time": t + k, "device": 0, "arch": "wormhole",
                                       "root": str(root), **r}) + "\n"
                           for k, r in enumerate(readings)))
    return root
