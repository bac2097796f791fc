"""Other engines read what ttdash wrote (#49): the DuckDB queries of docs/commands/history.md run
on a store ttdash made, and give what `history list --format json` and the stored ops give; the
files keep a layout a warehouse reads in place (hive folders, UTC timestamps, one type per column
in every file)."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from history_fixture import SHARED_REAL, T0, make_store

from ttdash.cli import main
from ttdash.history import schema as sch
from ttdash.history.store import Store

DOC = Path(__file__).resolve().parent.parent / "docs" / "commands" / "history.md"
SMALL = SHARED_REAL / "tt-perf-report__bh20_oft_integral_image_trace.csv"


def _doc_queries() -> list[str]:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)
    text = "\n".join(ln for b in blocks for ln in b.splitlines()
                     if not ln.lstrip().startswith("--"))
    return [q.strip() for q in text.split(";") if q.strip()]


def _digits_run(store: Store) -> str:
    """A run whose id is all digits (as 1 in ~2,000 are): DuckDB would type such a partition
    as a number unless told otherwise."""
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history.record import build

    rec = build(load_view(str(SMALL), WindowOptions()), labels={"model": "oft"}, now=T0)
    rec = replace(rec, run_id="0000000000000042", row={**rec.row, "run_id": "0000000000000042"})
    assert store.add(rec)
    return rec.run_id


@pytest.fixture
def fleet_store(real, tmp_path):
    store, ids, _ = make_store(tmp_path, [1.0, 1.04, 0.98], labels={"model": "clip"})
    ids.append(_digits_run(store))
    return store, ids


def test_the_docs_duckdb_queries_give_what_ttdash_gives(fleet_store, capsys):
    store, ids = fleet_store
    assert main(["history", "list", "--store", store.uri, "-f", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"][::-1]  # oldest first
    queries = _doc_queries()
    assert len(queries) == 3, queries
    con = duckdb.connect()
    try:
        got = [con.execute(q.replace("STORE", store.root)).fetchall() for q in queries]
    finally:
        con.close()
    # each run's device and steady-state time
    assert sorted((r[0], r[1], r[3], r[4]) for r in got[0]) == sorted(
        (r["run_id"], r["arch"], r["device_time_us"], r["steady_us"]) for r in listed)
    assert len(got[0]) == len(ids) == 4
    assert all(r[2].utcoffset() is not None for r in got[0])  # with its time zone
    # the median steady state per model and day
    groups: dict[tuple, list[float]] = {}
    for r in listed:
        key = (r["arch"], r["labels"].get("model"), r["added_at"][:10])
        groups.setdefault(key, []).append(r["steady_us"])
    want = {k: (len(v), statistics.median(v) / 1e3) for k, v in groups.items()}
    assert {(a, m, str(d.date())): (n, pytest.approx(s)) for a, m, d, n, s in got[1]} == want
    # op codes' device time per run, from the stored ops themselves
    per: dict[tuple, list[float]] = {}
    for r in store.runs():
        ops = store.run_ops(r, ["op_code", "device_time_us"]).to_pylist()
        sums: dict[str, float] = {}
        for o in ops:
            sums[o["op_code"]] = sums.get(o["op_code"], 0.0) + (o["device_time_us"] or 0.0)
        for code, us in sums.items():
            per.setdefault((code, r["arch"]), []).append(us)
    top = sorted(((k, sum(v) / len(v)) for k, v in per.items()), key=lambda x: -x[1])[:20]
    assert [(c, a) for c, a, _ in got[2]] == [k for k, _ in top]
    assert [u for _, _, u in got[2]] == pytest.approx([u for _, u in top])


def test_the_files_keep_a_warehouse_layout(fleet_store):
    store, ids = fleet_store
    root = Path(store.root)
    for table, declared in (("runs", sch.RUNS), ("ops", sch.OPS)):
        files = sorted((root / table).rglob("*.parquet"))
        assert files
        for f in files:
            folders = f.relative_to(root / table).parts[:-1]
            assert [p.split("=")[0] for p in folders] == (
                ["arch"] if table == "runs" else ["arch", "run_id"]), f
            schema = pq.read_schema(f)
            assert [(n, t) for n, t in zip(schema.names, schema.types)] == [
                (fld.name, fld.type) for fld in declared], f  # one type per column, every file
    assert sch.RUNS.field("added_at").type == pa.timestamp("us", tz="UTC")
    assert sch.RUNS.field("run_at").type == pa.timestamp("us", tz="UTC")
