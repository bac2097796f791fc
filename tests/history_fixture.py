"""Run-history stores for tests: runs of one real trace with their device times scaled (each a
different file content, so a different run), added at known times with known labels."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
from conftest import SHARED_REAL

CLIP = SHARED_REAL / "tt-perf-report__wh_clip_encoder_2.csv"  # callers take the `real` fixture
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
DURATION = "DEVICE KERNEL DURATION [ns]"


def scaled_copy(src: Path, dst: Path, factor: float, op_code: str | None = None) -> Path:
    """`src` with every op's (or only `op_code`'s) device kernel duration times `factor`."""
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    dur = pd.to_numeric(df[DURATION], errors="coerce")
    hit = dur.notna() & ((df["OP CODE"] == op_code) if op_code else True)
    df.loc[hit, DURATION] = (dur[hit] * factor).round().astype("int64").astype(str)
    df.to_csv(dst, index=False)
    return dst


def add_run(store, path: Path, when: datetime, labels: dict[str, str] | None = None,
            **window) -> str:
    """Add `path` (whole file) to `store` as if at `when`; its run_id."""
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history.record import build

    record = build(load_view(str(path), WindowOptions(**window)), labels=labels, now=when)
    store.add(record)
    return record.run_id


def make_store(tmp_path: Path, factors: list[float], labels: dict[str, str] | None = None,
               src: Path = CLIP, name: str = "store"):
    """A store at tmp_path/name with one run per factor (added a day apart, oldest first);
    (store, [run_id, ...], [csv path, ...])."""
    from ttdash.history.store import Store

    store = Store.open(str(tmp_path / name))
    ids, paths = [], []
    for i, f in enumerate(factors):
        p = scaled_copy(src, tmp_path / f"run{i}_{f:g}.csv", f)
        ids.append(add_run(store, p, T0 + timedelta(days=i),
                           {**(labels or {}), "batch": str(8 + i % 2)}))
        paths.append(p)
    return store, ids, paths
