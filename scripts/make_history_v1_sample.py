#!/usr/bin/env python3
"""tests/golden/history-v1: a run-history store written by the ttdash of V1_COMMIT (the last one
before the store's schema was declared: its files carry no schema version, so they are version
1), and what that ttdash's own `history list / trend / check / sql` printed over it
(expected.json). tests/test_store_schema.py reads the store with today's ttdash and asserts the
same output.

The old ttdash is taken from git (`git archive V1_COMMIT ttdash`) and run from a temporary
directory, so the files are exactly what it wrote. Inputs: fixtures/generated/bh_classic_report.csv,
the same with every device kernel duration x1.25 (a slower run of the same program), and
fixtures/generated/gs_e150_report.csv (another arch). Labels are fixed (no host or user name).

Usage: python scripts/make_history_v1_sample.py      (rewrites tests/golden/history-v1)
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "history-v1"
V1_COMMIT = "4e3b4983fb9aecdcd5c79339e60c1043acccf64b"
CHECKED = "fixtures/generated/bh_classic_report.csv"
DURATION = "DEVICE KERNEL DURATION [ns]"
#: The commands whose output is recorded ({STORE}: the store, {ROOT}: the repository).
COMMANDS = [
    ["history", "list", "--store", "{STORE}", "-f", "json"],
    ["history", "trend", "--store", "{STORE}", "-f", "json"],
    ["history", "trend", "--store", "{STORE}", "--op", "MatmulDeviceOperation", "-f", "json"],
    ["history", "check", "--store", "{STORE}", "{ROOT}/" + CHECKED, "--fail-above", "5",
     "-f", "json"],
    ["history", "sql", "--store", "{STORE}", "-f", "json",
     "SELECT * FROM runs ORDER BY run_id"],
    ["history", "sql", "--store", "{STORE}", "-f", "json",
     "SELECT * FROM ops ORDER BY run_id, id, device"],
]
DRIVER = """
import sys
from datetime import datetime, timedelta, timezone

import ttdash.history.record as record

assert record.__file__.startswith(sys.argv[1]), record.__file__  # the old ttdash, not ours
record.default_labels = lambda env=None: {"machine": "sample", "user": "ttdash"}
from ttdash.commands.common import load_view
from ttdash.commands.options import WindowOptions
from ttdash.history.store import Store

store = Store.open(sys.argv[2])
t0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
for i, spec in enumerate(sys.argv[3:]):
    path, model = spec.split("=")
    rec = record.build(load_view(path, WindowOptions()), labels={"model": model},
                       now=t0 + timedelta(hours=i))
    assert store.add(rec)
"""


def old_tree(tmp: Path) -> Path:
    """The ttdash package of V1_COMMIT under tmp/old."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", V1_COMMIT,
                           "ttdash"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(tmp / "old")  # noqa: S202 - our own repository's tree
    return tmp / "old"


def inputs(tmp: Path) -> list[str]:
    import pandas as pd

    src = tmp / "in"
    src.mkdir()
    bh = src / "bh_classic.csv"
    shutil.copyfile(ROOT / CHECKED, bh)
    slow = src / "bh_classic_slow.csv"
    df = pd.read_csv(bh, dtype=str, keep_default_na=False)
    dur = pd.to_numeric(df[DURATION], errors="coerce")
    df.loc[dur.notna(), DURATION] = (dur[dur.notna()] * 1.25).round().astype("int64").astype(str)
    df.to_csv(slow, index=False)
    gs = src / "gs_e150.csv"
    shutil.copyfile(ROOT / "fixtures/generated/gs_e150_report.csv", gs)
    for i, p in enumerate((slow, bh, gs)):  # run_at: the file's time
        os.utime(p, (1_790_000_000 + i * 60, 1_790_000_000 + i * 60))
    return [f"{slow}=llama", f"{bh}=llama", f"{gs}=llama-gs"]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ttdash-history-v1-") as tmp_name:
        tmp = Path(tmp_name)
        old = old_tree(tmp)
        store = tmp / "store"
        env = {**os.environ, "PYTHONPATH": str(old), "NO_COLOR": "1"}
        env.pop("TTDASH_HISTORY", None)
        subprocess.run([sys.executable, "-c", DRIVER, str(old), str(store), *inputs(tmp)],
                       check=True, env=env, cwd=tmp)
        where = subprocess.run([sys.executable, "-c", "import ttdash; print(ttdash.__file__)"],
                               env=env, cwd=tmp, check=True, capture_output=True, text=True)
        assert where.stdout.startswith(str(old)), where.stdout  # the commands run the old one
        recorded = []
        for args in COMMANDS:
            argv = [a.replace("{STORE}", str(store)).replace("{ROOT}", str(ROOT))
                    for a in args]
            res = subprocess.run([sys.executable, "-m", "ttdash", *argv], env=env, cwd=tmp,
                                 capture_output=True, text=True)
            out = res.stdout.replace(str(store), "{STORE}").replace(str(ROOT), "{ROOT}")
            recorded.append({"args": args, "rc": res.returncode, "stdout": json.loads(out)})
            print(f"{res.returncode}  {' '.join(args)[:100]}")
        if OUT.exists():
            shutil.rmtree(OUT)
        shutil.copytree(store, OUT / "store")
        (OUT / "expected.json").write_text(json.dumps(
            {"written_by": V1_COMMIT, "commands": recorded}, indent=1) + "\n")
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:8,d}  {p.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
