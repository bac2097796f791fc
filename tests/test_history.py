"""The run history (`ttdash history`): the Parquet store read back by DuckDB exactly, add / list /
trend / check / sql, labels, safety (concurrent adds, corrupt and foreign files, bad stores),
compaction, and `--record` on watch and run."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPORT_FIXTURES, run_ttdash, wait_until
from history_fixture import CLIP, T0, add_run, make_store, scaled_copy

from ttdash.cli import main
from ttdash.history import store as store_mod
from ttdash.history.store import Store

ROOT = Path(__file__).resolve().parent


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def duck(store_root: Path, table: str, query: str = "SELECT * FROM t") -> pd.DataFrame:
    glob = f"{store_root}/{table}/**/*.parquet"
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{glob}', hive_partitioning=true)")
    cur = con.execute(query)  # fetchall: the arrow/pandas methods were renamed across releases
    return pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description])


# --------------------------------------------------------------------------- the store, exactly
def test_duckdb_reads_exactly_the_added_runs_and_ops(real, tmp_path, capsys):
    files = [real / f for f in REPORT_FIXTURES[:8]]
    store = tmp_path / "store"
    rc, out, err = cli(capsys, "history", "add", "--store", str(store), *map(str, files),
                       "--label", "model=zoo", "--label", "commit=abc123")
    assert rc == 0, err
    assert out.count(" added ") == len(files)
    runs = duck(store, "runs")
    assert len(runs) == len(files) and runs["run_id"].is_unique
    assert set(runs["file"]) == {str(f.resolve()) for f in files}
    ops = duck(store, "ops")
    for f in files:
        run = runs[runs["file"] == str(f.resolve())].iloc[0]
        mine = ops[ops["run_id"] == run["run_id"]].sort_values("id", kind="stable")
        rc, text, err = cli(capsys, "report", str(f), "--format", "csv")
        want = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
        assert len(mine) == len(want) == run["ops"], f.name
        assert mine["id"].tolist() == want["id"].tolist()
        assert mine["op_code"].fillna("").tolist() == want["op_code"].fillna("").tolist()
        assert mine["device_time_us"].fillna(-1).round(6).tolist() == \
            want["device_time_us"].fillna(-1).round(6).tolist()
        assert mine["op_to_op_us"].sum() == pytest.approx(want["op_to_op_us"].sum(), rel=1e-9)
        assert (mine["arch"] == run["arch"]).all()
        assert run["device_time_us"] == pytest.approx(
            want["device_time_us"].sum(), rel=1e-9)
        assert all(s.startswith(c or "") for s, c in zip(mine["signature"], mine["op_code"]))
    labels = duck(store, "runs", "SELECT map_extract(labels, 'model') AS m FROM t")
    assert all(list(m) == ["zoo"] for m in labels["m"])


def test_same_content_is_kept_once_and_labels_from_ci(real, tmp_path, capsys, monkeypatch):
    store = tmp_path / "store"
    copy = str(shutil.copy(CLIP, tmp_path / "copy.csv"))  # same bytes, another path
    monkeypatch.setenv("GITHUB_SHA", "deadbeef")
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    assert cli(capsys, "history", "add", "--store", str(store), str(CLIP))[0] == 0
    rc, out, _ = cli(capsys, "history", "add", "--store", str(store), copy, str(CLIP))
    assert rc == 0 and out.count("kept once") == 2
    rc, out, _ = cli(capsys, "history", "list", "--store", str(store), "-f", "json")
    doc = json.loads(out)
    assert len(doc["runs"]) == 1
    r = doc["runs"][0]
    assert set(r) >= {"run_id", "added_at", "file", "arch", "ops", "device_time_us", "labels"}
    assert r["labels"]["commit"] == "deadbeef" and r["labels"]["branch"] == "main"
    assert r["arch"] == "wormhole_b0" and r["ops"] == 1872
    assert len(duck(store, "ops")) == 1872


# --------------------------------------------------------------------------- list / trend
def test_list_newest_first_where_and_last(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.05, 0.95, 1.01])
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri, "-f", "json")
    runs = json.loads(out)["runs"]
    assert [r["run_id"] for r in runs] == ids[::-1]
    assert runs[-1]["change_pct"] is None
    assert runs[-2]["change_pct"] == pytest.approx(
        (runs[-2]["steady_us"] / runs[-1]["steady_us"] - 1) * 100)
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri, "-f", "json",
                     "--where", "batch=9", "--last", "1")
    last = json.loads(out)["runs"]
    assert [r["run_id"] for r in last] == [ids[3]]
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri, "-f", "json", "--last",
                     "1")
    assert json.loads(out)["runs"][0]["change_pct"] == pytest.approx(runs[0]["change_pct"])
    # --store before the action, and arch/window as --where keys
    rc, out, _ = cli(capsys, "history", "--store", store.uri, "list", "-f", "json", "--where",
                     "arch=wormhole_b0", "--where", "window=whole file")
    assert rc == 0 and len(json.loads(out)["runs"]) == 4
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri)
    lines = out.splitlines()
    assert lines[0].startswith("4 runs in ") and lines[1].split()[:3] == ["Added", "(UTC)",
                                                                           "Run"]
    assert ids[3] in lines[2] and "wormhole_b0" in lines[2] and "batch=9" in lines[2]
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri, "-f", "csv")
    frame = pd.read_csv(io.StringIO(out))
    assert frame["run_id"].tolist() == ids[::-1] and "labels" in frame
    rc, out, _ = cli(capsys, "history", "list", "--store", store.uri, "-f", "markdown")
    assert out.startswith("| Added (UTC) | Run |") and out.count("\n") == 6
    assert re.search(r"\| [+-]\d+\.\d\d% \|", out) and "'+" not in out  # numbers stay numbers


def test_trend_of_an_op_code_and_a_region(real, tmp_path, capsys):
    store, ids, paths = make_store(tmp_path, [1.0, 1.1])
    rc, out, _ = cli(capsys, "history", "trend", "--store", store.uri, "--op",
                     "MinimalMatmulOp", "-f", "json")
    rows = json.loads(out)["runs"]
    assert [r["run_id"] for r in rows] == ids  # oldest first
    for r, p in zip(rows, paths):
        rc, text, _ = cli(capsys, "report", str(p), "-f", "csv")
        ops = pd.read_csv(io.StringIO(text))
        mm = ops[ops["op_code"] == "MinimalMatmulOp"]
        assert r["ops"] == len(mm) > 0
        assert r["device_time_us"] == pytest.approx(mm["device_time_us"].sum(), rel=1e-9)
    assert rows[1]["change_pct"] > 0
    rc, out, err = cli(capsys, "history", "trend", "--store", store.uri, "--op", "NoSuchOp")
    assert rc == 2 and "no run in the selection has op code NoSuchOp" in err  # #33.11
    # a region: bh20_oft has signposts
    other = tmp_path / "bh"
    add_run(Store.open(str(other)), real / "tt-perf-report__bh20_oft.csv", T0)
    rc, out, _ = cli(capsys, "history", "trend", "--store", str(other), "--region",
                     "(before first signpost)", "-f", "json")
    (row,) = json.loads(out)["runs"]
    assert 0 < row["ops"] < 1571


# --------------------------------------------------------------------------- check
def test_check_gates_against_the_median_of_the_last_runs(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.02, 0.98, 1.01])
    same = scaled_copy(CLIP, tmp_path / "same.csv", 1.005)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(same),
                       "--fail-above", "3")
    assert rc == 0, err
    assert out.startswith("ok: steady state ") and "of the last 4 matching runs" in out
    # one op code 40% slower: a regression, and that op code is the first culprit
    slow = scaled_copy(CLIP, tmp_path / "slow.csv", 1.4, op_code="MinimalMatmulOp")
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(slow),
                       "--fail-above", "3", "-f", "json")
    assert rc == 1 and err.startswith("ttdash: REGRESSION: steady state ")
    doc = json.loads(out)
    assert doc["regression"] and doc["pct"] > 3 and doc["baseline_runs"] == ids
    assert doc["culprits"][0]["op_code"] == "MinimalMatmulOp"
    assert doc["culprits"][0]["delta_us"] > 0
    # the REGRESSION line once: on stdout with a table there, on stderr with json (above)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(slow),
                       "--fail-above", "3")
    assert rc == 1 and out.startswith("REGRESSION: steady state ") and "REGRESSION" not in err
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(slow),
                       "--fail-above", "3", "-o", str(tmp_path / "check.txt"))
    assert rc == 1 and out == "" and err.startswith("ttdash: REGRESSION: steady state ")
    # --last and --where narrow the history
    rc, out, _ = cli(capsys, "history", "check", "--store", store.uri, str(slow),
                     "--fail-above", "3", "--last", "2", "--where", "batch=9", "-f", "json")
    assert json.loads(out)["baseline_runs"] == [ids[1], ids[3]]
    # a stored run is not its own history
    rc, out, _ = cli(capsys, "history", "check", "--store", store.uri,
                     str(tmp_path / "run0_1.csv"), "--fail-above", "3", "-f", "json")
    assert ids[0] not in json.loads(out)["baseline_runs"]


def test_check_without_comparable_runs_fails_closed(real, tmp_path):
    store, _, _ = make_store(tmp_path, [1.0])
    bh = real / "tt-perf-report__bh_p100_dlv3.csv"  # another arch
    res = run_ttdash("history", "check", "--store", store.uri, str(bh), "--fail-above", "5")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "no earlier run matches (arch blackhole" in res.stderr
    res = run_ttdash("history", "check", "--store", store.uri, str(CLIP), "--fail-above", "5",
                     "--where", "model=none")
    assert res.returncode == 2 and "model=none" in res.stderr


def _edited(dst: Path, rows: slice | None = None, factor: float = 1.0, blank: bool = False,
            drop: slice | None = None) -> Path:
    """CLIP with only `rows` kept / `drop` rows removed, device durations times `factor`
    (or blank)."""
    df = pd.read_csv(CLIP, dtype=str, keep_default_na=False)
    if rows is not None:
        df = df.iloc[rows]
    if drop is not None:
        df = df.drop(df.index[drop])
    dur = "DEVICE KERNEL DURATION [ns]"
    v = pd.to_numeric(df[dur], errors="coerce")
    if blank:
        df[dur] = ""
    else:
        df.loc[v.notna(), dur] = (v[v.notna()] * factor).round().astype("int64").astype(str)
    df.to_csv(dst, index=False)
    return dst


def test_check_refuses_what_diff_refuses(real, tmp_path, capsys):
    """#37.1: history check applies diff's refusals through the same rules (model.gate):
    these four passed as "90.60% faster", "5% slower" unnoticed, "96.73% faster" and a false
    "29.5% slower" before."""
    store, _, _ = make_store(tmp_path, [1.0, 1.02, 0.98, 1.01])
    n = len(pd.read_csv(CLIP))
    # no device timings at all: exit 2, not "faster"
    blank = _edited(tmp_path / "blank.csv", blank=True)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(blank),
                       "--fail-above", "2")
    assert (rc, out) == (2, "") and err.count("\n") == 1
    assert "cannot trust this comparison" in err and "no valid device time" in err
    # the last 10% missing, the rest 5% slower: the candidate stops early (exit 2)
    cut = _edited(tmp_path / "cut.csv", rows=slice(0, int(n * 0.9)), factor=1.05)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(cut),
                       "--fail-above", "2")
    assert rc == 2 and "the candidate stops early: its last 188 ops" in err
    # a 19-op fragment that is not the program's start is not this program: every stored run
    # is left out, exit 2 (#46.2: the program's first 19 ops are a run cut short, below)
    tiny = _edited(tmp_path / "tiny.csv", rows=slice(1, 20), factor=0.5)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(tiny),
                       "--fail-above", "2")
    assert rc == 2 and "no earlier run of this program: 4 runs match" in err
    assert "at most 1% of their ops align" in err
    head = _edited(tmp_path / "head.csv", rows=slice(0, 19), factor=0.5)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(head),
                       "--fail-above", "2")
    assert rc == 2 and "its ops are the baseline's first ops, as a full profiler buffer" in err
    # 10% of ops gone from the middle, the rest 5% slower: the totals say faster, the ops
    # both ran say 5% slower: a regression (exit 1), both numbers in the verdict
    middle = _edited(tmp_path / "middle.csv", drop=slice(n // 2, n // 2 + n // 10),
                     factor=1.05)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(middle),
                       "--fail-above", "2", "-f", "json")
    doc = json.loads(out)
    assert rc == 1 and doc["regression"] and doc["pct"] < 0
    assert doc["common_pct"] == pytest.approx(5.0, abs=1.5) and doc["gate_pct"] > 2
    # #50.6: the line says what failed (the ops both ran), never "faster" under REGRESSION
    assert "REGRESSION: the ops both ran are +" in err and "faster" not in err
    assert "not like for like" in err
    # the same run unchanged still passes, with no common-ops clause
    same = scaled_copy(CLIP, tmp_path / "same.csv", 1.0)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(same),
                       "--fail-above", "2", "-f", "json")
    assert rc == 0 and json.loads(out)["common_pct"] is None, err


def test_check_keeps_other_programs_out_of_the_baseline(real, tmp_path, capsys):
    """#37.1: another model of the same arch (no labels to tell them apart) is left out by
    its op sequence, not gated against: bh_p100_dlv3 against stored CLIP runs was a false
    "REGRESSION ... 234.54% slower"."""
    clip = real / "tt-perf-report__bh_64_clip_encoder_1.csv"
    dlv3 = real / "tt-perf-report__bh_p100_dlv3.csv"
    store, ids, _ = make_store(tmp_path, [1.0, 1.01], src=clip)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(dlv3),
                       "--fail-above", "5")
    assert rc == 2 and out == "" and "no earlier run of this program" in err
    # with a run of the same program stored as well, only that one is the baseline
    add_run(store, dlv3, T0 + timedelta(days=9))
    again = scaled_copy(dlv3, tmp_path / "dlv3_again.csv", 1.001)
    rc, out, err = cli(capsys, "history", "check", "--store", store.uri, str(again),
                       "--fail-above", "5", "-f", "json")
    doc = json.loads(out)
    assert rc == 0 and len(doc["baseline_runs"]) == 1 and doc["baseline_runs"][0] not in ids
    assert sorted(o["run_id"] for o in doc["other_programs"]) == sorted(ids)
    assert "left out 2 runs of other programs" in err


# --------------------------------------------------------------------------- sql
def test_sql_over_the_store(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.1])
    rc, out, _ = cli(capsys, "history", "sql", "--store", store.uri, "-f", "json",
                     "SELECT r.run_id, count(*) AS n FROM ops o JOIN runs r USING (run_id) "
                     "GROUP BY r.run_id, r.added_at ORDER BY r.added_at")
    doc = json.loads(out)
    assert doc["columns"] == ["run_id", "n"] and doc["rows"] == [[ids[0], 1872], [ids[1], 1872]]
    rc, out, _ = cli(capsys, "history", "sql", "--store", store.uri, "-f", "json",
                     "SELECT 'nan'::DOUBLE AS x, DATE '2026-01-02' AS d, 1.5::DECIMAL(4,2) AS m")
    assert json.loads(out)["rows"] == [[None, "2026-01-02", "1.50"]]
    res = run_ttdash("history", "sql", "--store", store.uri, "SELEC nonsense")
    assert res.returncode == 2 and res.stderr.startswith("ttdash: SQL: ")
    assert "Traceback" not in res.stderr


# --------------------------------------------------------------------------- safety
def _add_in_child(store: str, path: str) -> None:
    sys.exit(main(["history", "add", "--store", store, path]))


def test_concurrent_adds_keep_every_run_once(real, tmp_path):
    paths = [scaled_copy(CLIP, tmp_path / f"c{i}.csv", 1 + i / 100) for i in range(3)]
    store = str(tmp_path / "store")
    jobs = [str(p) for p in paths] + [str(paths[0]), str(paths[0])]  # the same run 3 times
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_add_in_child, args=(store, p)) for p in jobs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * len(jobs)
    runs = duck(Path(store), "runs")
    assert len(runs) == 3 and runs["run_id"].is_unique
    assert duck(Path(store), "ops", "SELECT count(*) AS n FROM t")["n"][0] == 3 * 1872
    leftovers = [p for p in Path(store).rglob(".tmp-*")]
    assert leftovers == []


def test_corrupt_and_foreign_files_are_named_and_the_rest_reads(real, tmp_path):
    store, ids, _ = make_store(tmp_path, [1.0, 1.1])
    part = Path(store.root) / "runs" / "arch=wormhole_b0"
    (part / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    pq.write_table(pa.table({"x": [1, 2]}), part / "foreign.parquet")
    good = pq.read_table(next(part.glob("run-*.parquet")))
    blank = good.set_column(good.column_names.index("added_at"), "added_at",
                            pa.nulls(1, good.schema.field("added_at").type))
    pq.write_table(blank, part / "blank.parquet")  # a row with no added_at: not a run
    res = run_ttdash("history", "list", "--store", store.uri, "-f", "json")
    assert res.returncode == 0, res.stderr
    assert [r["run_id"] for r in json.loads(res.stdout)["runs"]] == ids[::-1]
    lines = res.stderr.splitlines()
    assert len(lines) == 3 and "Traceback" not in res.stderr
    assert any("blank.parquet: 1 row(s) without run_id, added_at, ops" in ln for ln in lines)
    assert any("broken.parquet: unreadable" in ln for ln in lines)
    assert any("foreign.parquet: not a ttdash runs file" in ln for ln in lines)


@pytest.mark.parametrize("case", ["under a file", "a file"])  # missing: an empty list (#33.11)
def test_bad_stores_exit_2_with_one_line(tmp_path, case):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = {"missing": tmp_path / "nothing", "under a file": blocker / "store",
             "a file": blocker}[case]
    res = run_ttdash("history", "list", "--store", str(store))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert str(store) in res.stderr and "Traceback" not in res.stderr
    if case != "missing":
        fixture = ROOT / "fixtures" if (ROOT / "fixtures").is_dir() else ROOT.parent / "fixtures"
        csv = next(fixture.rglob("*.csv"))
        res = run_ttdash("history", "add", "--store", str(store), str(csv))
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.startswith(f"ttdash: {store}") and "cannot write" in res.stderr
        assert blocker.read_text() == "x"


def test_read_only_store_exit_2_and_still_reads(real, tmp_path):
    """A store the user cannot write (made immutable with chattr: root ignores permissions)."""
    store, ids, _ = make_store(tmp_path, [1.0])
    other = scaled_copy(CLIP, tmp_path / "other.csv", 1.1)
    lock = subprocess.run(["chattr", "-R", "+i", store.root], capture_output=True, text=True)
    assert lock.returncode == 0, f"chattr is needed for this test: {lock.stderr}"
    try:
        res = run_ttdash("history", "add", "--store", store.uri, str(other))
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith(f"ttdash: {store.uri}: cannot write to the store: ")
        assert "Traceback" not in res.stderr
        res = run_ttdash("history", "list", "--store", store.uri, "-f", "json")
        assert [r["run_id"] for r in json.loads(res.stdout)["runs"]] == ids
    finally:
        subprocess.run(["chattr", "-R", "-i", store.root], check=True)


def test_a_failed_run_row_leaves_no_ops_behind(real, tmp_path, monkeypatch):
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history.record import build
    from ttdash.model.errors import TraceError

    store = Store.open(str(tmp_path / "store"))
    record = build(load_view(str(CLIP), WindowOptions()))
    real_write = Store._write

    def failing(self, directory, name, write):
        if name.startswith("run-"):
            raise TraceError(self.uri, "cannot write to the store: No space left on device")
        return real_write(self, directory, name, write)

    monkeypatch.setattr(Store, "_write", failing)
    with pytest.raises(TraceError):
        store.add(record)
    assert not list(Path(store.root).rglob("*.parquet"))


def test_file_uri_store(real, tmp_path, capsys):
    uri = (tmp_path / "s").as_uri()
    assert uri.startswith("file:///")
    assert cli(capsys, "history", "add", "--store", uri, str(CLIP))[0] == 0
    rc, out, _ = cli(capsys, "history", "list", "--store", uri, "-f", "json")
    assert len(json.loads(out)["runs"]) == 1 and (tmp_path / "s" / "runs").is_dir()


def test_default_store_is_ttdash_history_then_xdg(real, tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    res = run_ttdash("history", "add", str(CLIP), env=env, unset=["TTDASH_HISTORY"])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "xdg" / "ttdash" / "history" / "runs").is_dir()
    res = run_ttdash("history", "add", str(CLIP), env={**env, "TTDASH_HISTORY":
                                                       str(tmp_path / "h")})
    assert res.returncode == 0 and (tmp_path / "h" / "ops").is_dir()


def test_many_runs_are_compacted_and_each_read_once(real, tmp_path, monkeypatch):
    monkeypatch.setattr(store_mod, "COMPACT_ABOVE", 3)
    small = real / "tt-perf-report__bh20_oft_integral_image_trace.csv"
    store = Store.open(str(tmp_path / "store"))
    ids = [add_run(store, scaled_copy(small, tmp_path / f"s{i}.csv", 1 + i / 10),
                   T0 + timedelta(hours=i)) for i in range(9)]
    part = Path(store.root) / "runs" / "arch=blackhole_p150"
    assert len(list(part.glob("*.parquet"))) <= 4
    assert [r["run_id"] for r in store.runs()] == ids
    runs = duck(Path(store.root), "runs")
    assert sorted(runs["run_id"]) == sorted(ids)


def test_labels_and_names_stay_inert(real, tmp_path, capsys):
    store = str(tmp_path / "store")
    cli(capsys, "history", "add", "--store", store, str(CLIP), "--label",
        "note=[bold red]x[/] \x1b[31mred\x1b[0m", "--label", "@cmd=HYPERLINK(1)")
    rc, out, _ = cli(capsys, "history", "list", "--store", store)
    assert "\x1b" not in out and "[bold red]x[/]" in out
    rc, out, _ = cli(capsys, "history", "list", "--store", store, "-f", "csv")
    labels = pd.read_csv(io.StringIO(out))["labels"][0]
    assert labels.startswith("'@cmd=HYPERLINK(1) ")  # a spreadsheet shows it, never runs it
    rc, out, err = cli(capsys, "history", "add", "--store", store, str(CLIP), "--label", "nokey")
    assert rc == 2 and "--label 'nokey' is not KEY=VALUE" in err


# --------------------------------------------------------------------------- --record
async def test_watch_record_adds_the_finished_report_outside_the_watched_dir(tmp_path):
    from ttdash.commands.history import recorder
    from ttdash.sim import simulate_run
    from ttdash.tui.watch import watch_app

    root = tmp_path / "profiler"
    root.mkdir()
    store = tmp_path / "store"
    app = watch_app(root, refresh=0.1, record=recorder(str(store)))
    async with app.run_test(size=(110, 32)) as pilot:
        screen = app.screen
        report = simulate_run(root, n_ops=120, speed=0)
        await wait_until(pilot, lambda: "recorded run" in screen.watch_status[1], timeout=30)
    runs = Store.open(str(store)).runs()
    assert len(runs) == 1 and runs[0]["file"] == str(report.resolve())
    assert runs[0]["ops"] == 120
    assert not any(p.suffix == ".parquet" for p in root.rglob("*"))


def test_watch_record_ignores_reports_that_were_there_before(tmp_path):
    import asyncio

    from ttdash.sim import simulate_run
    from ttdash.tui.watch import watch_app

    root = tmp_path / "profiler"
    simulate_run(root, n_ops=50, speed=0)
    old = os.path.getmtime(next(root.rglob("ops_perf_results_*.csv")))
    os.utime(next(root.rglob("ops_perf_results_*.csv")), (old - 60, old - 60))
    calls = []
    app = watch_app(root, refresh=0.1, record=lambda p: calls.append(p) or "recorded")

    async def go():
        async with app.run_test(size=(110, 32)) as pilot:
            await wait_until(pilot, lambda: app.screen.mode == "report", timeout=30)
            await pilot.pause()

    asyncio.run(go())
    assert calls == []


def test_run_no_tui_record(tmp_path):
    store = tmp_path / "store"
    root = tmp_path / "prof"
    res = run_ttdash("run", "--dir", str(root), "--no-tui", "--record", "--store", str(store),
                     "--", sys.executable, str(ROOT / "workloads" / "sim_workload.py"),
                     "--ops", "80", "--report")
    assert res.returncode == 0, res.stderr
    assert "ttdash run: recorded run " in res.stderr
    runs = Store.open(str(store)).runs()
    assert len(runs) == 1 and runs[0]["ops"] == 80


def test_one_file_under_other_analysis_settings_is_another_run(real, tmp_path, capsys):
    store = str(tmp_path / "store")
    f = str(real / "tt-perf-report__bh20_oft.csv")
    outs = [cli(capsys, "history", "add", "--store", store, f, *extra)[1]
            for extra in ((), ("--signpost", "2"), ("--per-device",), ("--pause-above", "50"),
                          ("--signpost", "2"))]
    assert [o.split()[1] for o in outs] == ["added"] * 4 + ["already"]
    runs = Store.open(store).runs()
    assert len(runs) == 4 and len({r["window"] for r in runs}) == 2
    from ttdash.history.record import stored_view

    for r in runs:  # what `enter` and `d` in `ttdash history` open: the view as it was added
        view = stored_view(r, Path(r["file"]))
        tot = view.totals()
        assert (tot["ops"], view.merged, view.description) == (r["ops"], not r["per_device"],
                                                               r["window"])
        assert tot["steady_us"] == pytest.approx(r["steady_us"], rel=1e-12)
    # check compares only runs analysed the same way: the whole file, merged, 1000 us pauses
    rc, out, err = cli(capsys, "history", "check", "--store", store, f, "--fail-above", "1",
                       "-f", "json")
    assert rc == 2 and "no earlier run matches" in err and "--pause-above 1000" in err
    same = scaled_copy(Path(f), tmp_path / "same.csv", 1.0)  # another run_id, same numbers
    rc, out, err = cli(capsys, "history", "check", "--store", store, str(same),
                       "--fail-above", "1", "--pause-above", "50", "-f", "json")
    assert rc == 0 and len(json.loads(out)["baseline_runs"]) == 1
    assert json.loads(out)["pct"] == pytest.approx(0.0, abs=1e-9)


def test_add_goes_on_after_a_bad_file_and_usage_errors(real, tmp_path, capsys):
    store = str(tmp_path / "store")
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a,report\n1,2,3\n")
    rc, out, err = cli(capsys, "history", "add", "--store", store, str(bad), str(CLIP))
    assert rc == 2 and out.split()[1] == "added" and err.startswith(f"ttdash: {bad}")
    for args, msg in ((("history", "list", "--store", ""), "empty store path"),
                      (("history", "trend", "--store", store, "--op", ""), "empty value"),
                      (("history", "sql", "--store", store, " "), "empty value"),
                      (("watch", str(tmp_path), "--once", "--record"), "not with --once"),
                      (("watch", str(tmp_path), "--store", store), "give --record too")):
        res = run_ttdash(*args)
        assert res.returncode == 2 and msg in res.stderr and res.stderr.count("\n") == 1, args


def test_null_metrics_rows_are_skipped_and_named(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.1])
    part = Path(store.root) / "runs" / "arch=wormhole_b0"
    good = pq.read_table(next(part.glob("run-*.parquet")))
    row = good.to_pylist()[0]
    row.update(run_id="f" * 16, steady_us=None)
    pq.write_table(pa.Table.from_pylist([row], schema=good.schema), part / "spark-out.parquet")
    for args in (("list",), ("trend",), ("check", str(CLIP), "--fail-above", "50")):
        rc, out, err = cli(capsys, "history", *args, "--store", store.uri)
        assert rc == 0 and "spark-out.parquet: 1 row(s) without" in err, (args, err)


def test_sql_names_a_corrupt_file_and_reads_the_rest(real, tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0], name="st[1]")  # glob characters in the path
    junk = next((Path(store.root) / "ops").rglob("run_id=*")) / "junk.parquet"
    junk.write_text("junk")
    rc, out, err = cli(capsys, "history", "sql", "--store", store.uri, "-f", "json",
                       "SELECT count(*) FROM ops")
    assert rc == 0 and json.loads(out)["rows"] == [[1872]]
    assert "junk.parquet: unreadable" in err


def test_readers_during_a_compaction_see_every_run(real, tmp_path, monkeypatch):
    """A read that lists files, then finds some merged away, reads again."""
    small = real / "tt-perf-report__bh20_oft_integral_image_trace.csv"
    store = Store.open(str(tmp_path / "store"))
    monkeypatch.setattr(store_mod, "COMPACT_ABOVE", 100)
    ids = [add_run(store, scaled_copy(small, tmp_path / f"s{i}.csv", 1 + i / 10),
                   T0 + timedelta(hours=i)) for i in range(6)]
    real_read = Store._read
    compacted = []

    def read_then_compact(self, path, columns):
        if not compacted:  # the first file read: another process compacts right now
            compacted.append(None)
            compacted[0] = Store.open(self.uri).compact("arch=blackhole_p150", above=1)
        return real_read(self, path, columns)

    monkeypatch.setattr(Store, "_read", read_then_compact)
    assert [r["run_id"] for r in store.runs()] == ids and store.skipped == []
    assert compacted == [6]


def test_a_remote_store_that_does_not_answer_is_one_line(tmp_path):
    import threading

    from ttdash.model.errors import TraceError

    release = threading.Event()

    class Silent:  # a filesystem client retrying forever (gs:// without network)
        def get_file_info(self, path):
            release.wait(30)

    store = Store(uri="gs://bucket/hist", fs=Silent(), root="bucket/hist")
    try:
        with pytest.raises(TraceError) as exc:
            store._probe(timeout=0.2)
    finally:
        release.set()
    assert exc.value.oneline() == ("gs://bucket/hist: no answer in 0.2 s (network, bucket name "
                                   "or credentials?)")


def test_compaction_tidies_what_a_dead_add_left(real, tmp_path, monkeypatch):
    small = real / "tt-perf-report__bh20_oft_integral_image_trace.csv"
    store = Store.open(str(tmp_path / "store"))
    add_run(store, small, T0)
    root = Path(store.root)
    orphan = root / "ops" / "arch=blackhole_p150" / "run_id=00000000deadbeef"
    orphan.mkdir(parents=True)
    (orphan / "ops.parquet").write_bytes(b"x")
    young = root / "ops" / "arch=blackhole_p150" / "run_id=00000000cafecafe"  # an add running
    young.mkdir()
    tmp = root / "runs" / "arch=blackhole_p150" / ".tmp-0123"
    tmp.write_bytes(b"half")
    hour_ago = time.time() - 2 * store_mod.STALE_S
    for p in (orphan, tmp):
        os.utime(p, (hour_ago, hour_ago))
    monkeypatch.setattr(store_mod, "COMPACT_ABOVE", 1)
    add_run(store, scaled_copy(small, tmp_path / "s.csv", 1.1), T0 + timedelta(hours=1))
    assert not orphan.exists() and not tmp.exists() and young.exists()
    assert len(duck(root, "runs")) == 2


def test_a_runs_groups_are_exact_sums_by_name_missing_names_with_empty_ones():
    """record._groups: per name (a categorical or text; a missing name is "", one group with
    an empty one), ops counted and times summed exactly (1e16 + 1 - 1e16 is 1, not 0), names
    in order."""
    import pandas as pd

    from ttdash.history.record import _groups

    names = pd.Series(pd.Categorical(["b", None, "a", "", "b", "a", "b"]))
    device = [1e16, 2.0, 1.0, 3.0, 1.0, 0.5, -1e16]
    steady = [1.0, 1.0, 1e16, 1.0, 1.0, -1e16, 1.0]
    got = _groups(names, device, steady)
    assert got == [{"name": "", "ops": 2, "device_us": 5.0, "steady_us": 2.0},
                   {"name": "a", "ops": 2, "device_us": 1.5, "steady_us": 0.0},
                   {"name": "b", "ops": 3, "device_us": 1.0, "steady_us": 3.0}]
    assert _groups(names.astype(object).fillna("").to_numpy(dtype=object), device, steady) \
        == got
