"""The run history under kill -9 (#37.5): an add killed before any one of its write steps (in a
forked child, by os._exit: none of the add's own clean-up runs) leaves a store on which every
reader agrees (list, trend, check, sql's views, Store.runs/run_ops, DuckDB reading the files as
the store's docstring says), and adding the run again completes it; `history sql` with no result, with columns of one name, and over a
store under `run_id=`/`arch=` folders."""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import duckdb
import pyarrow.fs as pafs
import pytest
from history_fixture import T0, add_run, make_store, scaled_copy

import ttdash.history.store as store_mod
from ttdash.cli import main
from ttdash.commands.common import load_view
from ttdash.commands.options import WindowOptions
from ttdash.history.record import build
from ttdash.history.store import Store

SMALL = "tt-perf-report__bh20_oft_integral_image_trace.csv"
KILLED = 77  # the child's exit code when it was killed at the step asked


def _record(real: Path, tmp_path: Path, factor: float, hours: int):
    path = scaled_copy(real / SMALL, tmp_path / f"s{factor:g}.csv", factor)
    return build(load_view(str(path), WindowOptions()), now=T0 + timedelta(hours=hours))


def _add_killed_at(root: Path, record, step: int, compact_above: int = 1) -> bool:
    """Add `record` to the store at `root` in a forked child that dies (os._exit) just before
    its `step`-th write (1: the first); True when it died there, False when the add finished
    first. Compaction is forced (compact_above) and every leftover is old enough to tidy."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            done = [0]

            def tick() -> None:
                done[0] += 1
                if done[0] == step:
                    os._exit(KILLED)

            class Faulty(pafs.LocalFileSystem):
                def create_dir(self, *a, **k):
                    tick()
                    return super().create_dir(*a, **k)

                def open_output_stream(self, *a, **k):
                    tick()
                    return super().open_output_stream(*a, **k)

                def move(self, *a, **k):
                    tick()
                    return super().move(*a, **k)

                def delete_file(self, *a, **k):
                    tick()
                    return super().delete_file(*a, **k)

                def delete_dir(self, *a, **k):
                    tick()
                    return super().delete_dir(*a, **k)

            for name in ("unlink", "rmdir"):  # compaction's removals, shutil.rmtree's steps
                real_call = getattr(os, name)
                setattr(os, name, lambda *a, _f=real_call, **k: (tick(), _f(*a, **k))[1])
            store_mod.COMPACT_ABOVE = compact_above
            store_mod.STALE_S = -1.0
            store = Store.open(str(root))
            store.fs = Faulty()
            store.add(record)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    assert rc in (0, KILLED), rc
    return rc == KILLED


def _cli_json(capsys, *args: str):
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert rc == 0, (args, err)
    return json.loads(out)


def _direct_duckdb(root: Path) -> tuple[list[str], list[str]]:
    """(run ids of `runs`, run ids of `ops` rows) through the docstring's own views."""
    doc = store_mod.__doc__ or ""
    views = doc[doc.index("CREATE VIEW runs"):doc.rindex(";") + 1].replace("STORE", str(root))
    con = duckdb.connect()
    try:
        for statement in views.split(";")[:2]:
            con.execute(statement)
        runs = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
        ops = [r[0] for r in con.execute("SELECT run_id FROM ops").fetchall()]
    finally:
        con.close()
    return runs, ops


def _readers(capsys, root: Path, checked: Path) -> dict[str, list[str]]:
    """The run ids every reader shows (sorted; a run twice shows twice), and per run its op
    count as each ops reader counts it ("ops:..." keys, as "RUN_ID=N" items)."""
    s = str(root)
    store = Store.open(s)
    runs = store.runs()
    got = {"Store.runs": [r["run_id"] for r in runs]}
    got["list"] = [r["run_id"] for r in _cli_json(capsys, "history", "list", "--store", s,
                                                   "-f", "json")["runs"]]
    got["trend"] = [r["run_id"] for r in _cli_json(capsys, "history", "trend", "--store", s,
                                                    "-f", "json")["runs"]]
    doc = _cli_json(capsys, "history", "check", "--store", s, str(checked), "--fail-above",
                    "1000", "-f", "json")
    got["check"] = list(doc["baseline_runs"]) + [o["run_id"] for o in doc["other_programs"]]
    q = _cli_json(capsys, "history", "sql", "--store", s, "-f", "json",
                  "SELECT run_id FROM runs")
    got["sql runs"] = [r[0] for r in q["rows"]]
    q = _cli_json(capsys, "history", "sql", "--store", s, "-f", "json",
                  "SELECT run_id, count(*) FROM ops GROUP BY run_id")
    got["sql ops"] = [r[0] for r in q["rows"]]
    got["ops:sql"] = [f"{r[0]}={r[1]}" for r in q["rows"]]
    got["ops:Store.run_ops"] = [f"{r['run_id']}={store.run_ops(r, ['op_code']).num_rows}"
                                for r in runs]
    direct_runs, direct_ops = _direct_duckdb(root)
    got["duckdb runs"] = direct_runs
    got["duckdb ops"] = sorted(set(direct_ops))
    got["ops:duckdb"] = [f"{i}={direct_ops.count(i)}" for i in set(direct_ops)]
    return {k: sorted(v) for k, v in got.items()}


def _agree(got: dict[str, list[str]], allowed: list[list[str]], where: str) -> list[str]:
    ids = got["Store.runs"]
    assert ids in allowed, (where, ids)
    for k, v in got.items():
        if not k.startswith("ops:"):
            assert v == ids, (where, k, v, ids)
    counts = {k: v for k, v in got.items() if k.startswith("ops:")}
    assert len({tuple(v) for v in counts.values()}) == 1, (where, counts)
    return ids


@pytest.mark.slow  # 9-12 s: 14 kills x 8 readers; the fast tier keeps the readers' own tests
def test_every_reader_agrees_after_an_add_killed_at_each_write(real, tmp_path, capsys):
    base = Store.open(str(tmp_path / "base"))
    ids = [add_run(base, scaled_copy(real / SMALL, tmp_path / f"b{i}.csv", 1 + i / 10),
                   T0 + timedelta(hours=i)) for i in range(2)]
    # a run whose add died after its ops were stored: ops without their run row
    orphan = _record(real, tmp_path, 1.7, 5)
    assert _add_killed_at(Path(base.root), orphan, step=4)
    assert list((Path(base.root) / "ops").rglob(f"run_id={orphan.run_id}/ops.parquet"))
    assert not list((Path(base.root) / "runs").rglob(f"*{orphan.run_id}*"))
    new = _record(real, tmp_path, 1.5, 3)
    checked = scaled_copy(real / SMALL, tmp_path / "checked.csv", 1.05)
    before, after = sorted(ids), sorted([*ids, new.run_id])
    _agree(_readers(capsys, Path(base.root), checked), [before], "the store before")

    seen, step = [], 1
    while True:
        root = tmp_path / f"step{step}"
        shutil.copytree(base.root, root)
        killed = _add_killed_at(root, new, step)
        seen.append(_agree(_readers(capsys, root, checked), [before, after],
                           f"killed before write {step}" if killed else "finished"))
        if not killed:
            break
        assert Store.open(str(root)).add(new) == (seen[-1] == before)  # adding again completes
        q = _cli_json(capsys, "history", "sql", "--store", str(root), "-f", "json",
                      "SELECT (SELECT list(run_id ORDER BY run_id) FROM runs), "
                      "(SELECT list(DISTINCT run_id ORDER BY run_id) FROM ops)")
        assert q["rows"] == [[after, after]], step
        assert sorted(r["run_id"] for r in Store.open(str(root)).runs()) == after, step
        step += 1
        assert step < 60, "the add never finished"
    # the harness reached every write: the ops, the row, the merge of run rows (one file left
    # after removing three) and the tidy-up of the orphan
    assert step > 9 and seen[0] == before and seen[-1] == after
    assert len(list((root / "runs").rglob("*.parquet"))) == 1
    assert not list((root / "ops").rglob(f"run_id={orphan.run_id}"))
    # a kill in the merge (merged file written, the old ones not all removed) left runs twice
    # in the files: every reader still listed each once
    dup = [p for p in tmp_path.glob("step*") if len(list((p / "runs").rglob("*.parquet"))) == 4]
    assert dup


def test_sql_with_no_result_prints_nothing(real, tmp_path, capsys):
    store, _, _ = make_store(tmp_path, [1.0], src=real / SMALL)
    for fmt, want in (("table", ""), ("csv", ""), ("markdown", ""),
                      ("json", '{"schema_version": 1, "columns": [], "rows": []}\n')):
        rc = main(["history", "sql", "--store", store.uri, "-f", fmt, "-- only a comment"])
        out, err = capsys.readouterr()
        assert (rc, out, err) == (0, want, ""), fmt


def test_sql_keeps_every_column_of_one_name(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.1], src=real / SMALL)
    q = "SELECT 1 AS a, 2 AS a, 3 AS a_2, 4 AS a"
    doc = _cli_json(capsys, "history", "sql", "--store", store.uri, "-f", "json", q)
    assert doc == {"schema_version": 1, "columns": ["a", "a_3", "a_2", "a_4"],
                   "rows": [[1, 2, 3, 4]]}
    assert main(["history", "sql", "--store", store.uri, "-f", "csv", q]) == 0
    assert capsys.readouterr().out == "a,a_3,a_2,a_4\n1,2,3,4\n"
    assert main(["history", "sql", "--store", store.uri, q]) == 0
    assert capsys.readouterr().out.split() == ["a", "a_3", "a_2", "a_4", "1", "2", "3", "4"]
    doc = _cli_json(capsys, "history", "sql", "--store", store.uri, "-f", "json",
                    "SELECT x.run_id, y.run_id FROM runs x JOIN runs y ON x.added_at < "
                    "y.added_at")
    assert doc == {"schema_version": 1, "columns": ["run_id", "run_id_2"], "rows": [ids]}


@pytest.mark.parametrize("above", ["run_id=X/arch=Y", "arch=Y/run_id=X"])
def test_partition_like_folders_above_the_store_label_nothing(real, tmp_path, capsys, above):
    parent = tmp_path / above
    parent.mkdir(parents=True)
    store, ids, _ = make_store(parent, [1.0, 1.1], src=real / SMALL)
    arch = store.runs()[0]["arch"]
    want = sorted([arch, i] for i in ids)
    for table in ("runs", "ops"):
        doc = _cli_json(capsys, "history", "sql", "--store", store.uri, "-f", "json",
                        f"SELECT DISTINCT arch, run_id FROM {table} ORDER BY ALL")
        assert doc["rows"] == want, table
    doc = _cli_json(capsys, "history", "list", "--store", store.uri, "-f", "json")
    assert sorted([r["arch"], r["run_id"]] for r in doc["runs"]) == want
