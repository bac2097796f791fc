"""The history store's declared, versioned schema (ttdash/history/schema.py, #31): every file
carries its version; a store written before the schema was declared (version 1, no version key:
tests/golden/history-v1, made by scripts/make_history_v1_sample.py with that ttdash) reads with
the same numbers; older layouts read with their missing fields null and renamed ones mapped; a
file of a newer version is refused in one line (exit 2); the CSV column list can change without
changing what is stored."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_inproc import run_main
from conftest import ROOT
from history_fixture import T0, add_run, make_store, scaled_copy

from ttdash.cli import main
from ttdash.history import schema
from ttdash.history import store as store_mod
from ttdash.history.schema import OPS, RUNS, SCHEMA_VERSION, TABLES, VERSION_KEY
from ttdash.history.store import Store

GOLDEN = ROOT / "tests" / "golden" / "history-v1"
BH = ROOT / "fixtures" / "generated" / "bh_classic_report.csv"
NEWER = SCHEMA_VERSION + 1


def _same(got, want, where: str) -> None:
    """Equal JSON, numbers to 1e-9 relative (a float's last digit may print otherwise)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (where, got, want)
        for k in want:
            _same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    else:
        assert got == want, where


def _table(path: Path) -> str:
    """"runs" or "ops": STORE/runs/arch=A/FILE or STORE/ops/arch=A/run_id=R/FILE."""
    return "runs" if path.parent.parent.name == "runs" else "ops"


def _v1_store(tmp_path: Path) -> Path:
    store = tmp_path / "v1"
    shutil.copytree(GOLDEN / "store", store)
    return store


def _json(capsys, *args: str):
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert rc == 0, (args, err)
    return json.loads(out)


# --------------------------------------------------------------------------- version 1 reads
def test_a_store_written_before_the_schema_reads_with_the_same_numbers(tmp_path, capsys):
    store = _v1_store(tmp_path)
    files = sorted(store.rglob("*.parquet"))
    assert len(files) == 6
    for f in files:  # version 1: no key; its layout is exactly the declared one
        assert VERSION_KEY not in (pq.read_metadata(f).metadata or {}), f
        assert pq.read_schema(f).remove_metadata().equals(TABLES[_table(f)]), f
    expected = json.loads((GOLDEN / "expected.json").read_text())
    assert len(expected["commands"]) == 6
    for cmd in expected["commands"]:
        argv = [a.replace("{STORE}", str(store)).replace("{ROOT}", str(ROOT))
                for a in cmd["args"]]
        rc = main(argv)
        out, err = capsys.readouterr()
        assert rc == cmd["rc"], (argv, err)
        got = json.loads(out.replace(str(store), "{STORE}").replace(str(ROOT), "{ROOT}"))
        assert got.pop("schema_version") == 1  # JSON outputs gained it since the sample
        _same(got, cmd["stdout"], " ".join(cmd["args"][:2] + cmd["args"][4:]))
    # reading wrote nothing: the files are still version 1
    assert all(VERSION_KEY not in (pq.read_metadata(f).metadata or {}) for f in files)


def test_this_ttdash_stores_what_the_one_before_stored(tmp_path):
    """The same report added now gives the run id and op rows the version-1 store holds."""
    store = Store.open(str(tmp_path / "store"))
    run_id = add_run(store, BH, T0)
    old = pq.read_table(next(GOLDEN.glob(f"store/ops/*/run_id={run_id}/ops.parquet")))
    new = pq.read_table(next(Path(store.root).glob(f"ops/*/run_id={run_id}/ops.parquet")))
    assert new.num_rows == 12 and new.replace_schema_metadata(None).equals(old.replace_schema_metadata(None))
    old_run = pq.read_table(next(GOLDEN.glob(f"store/runs/*/run-{run_id}.parquet"))).to_pylist()
    new_run = pq.read_table(next(Path(store.root).glob(f"runs/*/run-{run_id}.parquet")))
    same = [c for c in RUNS.names if c not in ("added_at", "run_at", "file", "labels")]
    assert new_run.select(same).to_pylist() == [{c: old_run[0][c] for c in same}]


# --------------------------------------------------------------------------- versions written
def test_every_file_written_carries_the_version(tmp_path, monkeypatch):
    monkeypatch.setattr(store_mod, "COMPACT_ABOVE", 2)
    store, ids, _ = make_store(tmp_path, [1.0, 1.1, 1.2, 1.3], src=BH)
    root = Path(store.root)
    files = sorted(root.rglob("*.parquet"))
    assert list(root.glob("runs/*/runs-*.parquet")), "no merged runs file: compaction not tested"
    assert len(list(root.glob("ops/*/*/ops.parquet"))) == 4
    for f in files:
        meta = pq.read_metadata(f).metadata or {}
        assert meta.get(VERSION_KEY) == str(SCHEMA_VERSION).encode(), f
        assert pq.read_schema(f).remove_metadata().equals(TABLES[_table(f)]), f
    assert [r["run_id"] for r in store.runs()] == ids


def test_the_stored_schema_is_not_the_csv_column_list(tmp_path, monkeypatch):
    """A column added to (and one taken from) report csv's fields, as a new column spec entry
    would: the stored op files keep the declared fields."""
    from ttdash.model import columns

    added = columns.Column("in0_dtype", "Input 0 dtype", "in0 dtype", "text", "test column")
    monkeypatch.setitem(columns.BY_KEY, "in0_dtype", added)
    monkeypatch.setattr(columns, "CSV_FIELDS", tuple(
        f for f in columns.CSV_FIELDS if f != "config") + ("in0_dtype",))
    store = Store.open(str(tmp_path / "store"))
    add_run(store, BH, T0)
    (f,) = Path(store.root).glob("ops/*/*/ops.parquet")
    stored = pq.read_schema(f).remove_metadata()
    assert stored.equals(OPS), stored.names
    assert "config" in stored.names and "in0_dtype" not in stored.names


def test_op_batches_given_to_add_are_written_as_declared(tmp_path):
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history.record import build

    record = build(load_view(str(BH), WindowOptions()), now=T0)
    (batch,) = schema.op_batches(record.view)
    wider = batch.append_column("extra", pa.array(["x"] * batch.num_rows))
    store = Store.open(str(tmp_path / "store"))
    assert store.add(record, batches=[wider])
    (f,) = Path(store.root).glob("ops/*/*/ops.parquet")
    assert pq.read_table(f).replace_schema_metadata(None).equals(pa.Table.from_batches([batch]))


# --------------------------------------------------------------------------- older layouts
def test_a_runs_file_without_window_spec_reads_with_it_null(tmp_path, capsys):
    """The first stores (2026-11-24, before window_spec) have no window_spec column."""
    store = _v1_store(tmp_path)
    (f,) = store.glob("runs/arch=grayskull_e150/run-*.parquet")
    old = pq.read_table(f)
    pq.write_table(old.drop_columns(["window_spec"]).replace_schema_metadata(None), f)
    runs = Store.open(str(store)).runs()
    assert len(runs) == 3
    gs = [r for r in runs if r["arch"] == "grayskull_e150"]
    assert len(gs) == 1 and gs[0]["window_spec"] is None and gs[0]["ops"] == 64
    doc = _json(capsys, "history", "trend", "--store", str(store), "-f", "json")
    assert len(doc["runs"]) == 3
    doc = _json(capsys, "history", "sql", "--store", str(store), "-f", "json",
                "SELECT arch, window_spec IS NULL FROM runs ORDER BY arch, run_id")
    assert doc["rows"] == [["blackhole_p150", False], ["blackhole_p150", False],
                           ["grayskull_e150", True]]


def test_op_fields_no_file_has_are_null_everywhere(tmp_path, capsys):
    store = _v1_store(tmp_path)
    for f in store.glob("ops/*/*/ops.parquet"):  # a layout before gap_signed_us
        t = pq.read_table(f)
        pq.write_table(t.drop_columns(["gap_signed_us"]).replace_schema_metadata(None), f)
    doc = _json(capsys, "history", "sql", "--store", str(store), "-f", "json",
                "SELECT count(*), count(gap_signed_us), count(op_code) FROM ops")
    assert doc["rows"] == [[88, 0, 88]]
    st = Store.open(str(store))
    ops = st.run_ops(st.runs()[0], ["op_code", "gap_signed_us"])
    assert ops.schema.field("gap_signed_us").type == pa.float64()
    assert ops["gap_signed_us"].null_count == ops.num_rows == 12


def test_a_renamed_field_is_read_under_its_old_name(tmp_path, capsys, monkeypatch):
    """The mechanism, with a rename that did not happen: say version 2 renamed op_name to
    op_code. A version-1 file with op_name reads as op_code, in Store and in SQL, beside a
    version-2 file that has op_code."""
    monkeypatch.setattr(schema, "RENAMED", {2: {"ops": {"op_name": "op_code"}}})
    store = _v1_store(tmp_path)
    add_run(Store.open(str(store)), scaled_copy(BH, tmp_path / "bh.csv", 1.1),
            T0 + timedelta(days=1))
    renamed = []
    for f in store.glob("ops/*/*/ops.parquet"):
        t = pq.read_table(f)
        if VERSION_KEY not in (t.schema.metadata or {}):
            pq.write_table(t.rename_columns(["op_name" if c == "op_code" else c
                                             for c in t.column_names]), f)
            renamed.append(f)
    assert len(renamed) == 3
    st = Store.open(str(store))
    runs = st.runs()
    assert len(runs) == 4
    for r in runs:
        codes = st.run_ops(r, ["op_code"])["op_code"].to_pylist()
        assert codes and all(codes), r["run_id"]
    doc = _json(capsys, "history", "sql", "--store", str(store), "-f", "json",
                "SELECT count(*), count(op_code) FROM ops")
    assert doc["rows"] == [[88 + 12, 88 + 12]]


# --------------------------------------------------------------------------- newer versions
def _stamp(path: Path, version: bytes) -> None:
    t = pq.read_table(path)
    pq.write_table(t.replace_schema_metadata({**(t.schema.metadata or {}),
                                              VERSION_KEY: version}), path)


def _newer_line(path: Path) -> str:
    return (f"ttdash: {path}: written by a newer ttdash (schema {NEWER}, this one reads up to "
            f"{SCHEMA_VERSION}): upgrade ttdash\n")


@pytest.mark.parametrize("table", ["runs", "ops"])
def test_a_newer_file_is_one_line_and_exit_2(tmp_path, table):
    store, ids, paths = make_store(tmp_path, [1.0, 1.1], src=BH)
    pattern = f"runs/*/run-{ids[0]}.parquet" if table == "runs" else \
        f"ops/*/run_id={ids[0]}/ops.parquet"
    (f,) = Path(store.root).glob(pattern)
    _stamp(f, str(NEWER).encode())
    s = store.uri
    other = tmp_path / "other.csv"
    shutil.copyfile(BH.with_name("gs_e150_report.csv"), other)
    commands = [("history", "check", "--store", s, str(paths[1]), "--fail-above", "5"),
                ("history", "sql", "--store", s, "SELECT count(*) FROM ops")]
    if table == "runs":  # (the ops of a run are read by check and sql only)
        commands += [("history", "list", "--store", s), ("history", "trend", "--store", s),
                     ("history", "add", "--store", s, str(other), str(BH))]
    for args in commands:
        res = run_main(*args)
        assert (res.returncode, res.stdout, res.stderr) == (2, "", _newer_line(f)), args
    with pytest.raises(schema.NewerSchema) as exc:
        Store.open(s).runs() if table == "runs" else Store.open(s).readable("ops")
    assert exc.value.version == NEWER
    assert not list(Path(store.root).glob("runs/arch=grayskull_e150"))  # add wrote nothing


def test_a_version_that_is_no_number_is_named_and_the_rest_reads(tmp_path, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.1], src=BH)
    (f,) = Path(store.root).glob(f"runs/*/run-{ids[0]}.parquet")
    _stamp(f, b"two")
    rc = main(["history", "list", "--store", store.uri, "-f", "json"])
    out, err = capsys.readouterr()
    assert rc == 0 and [r["run_id"] for r in json.loads(out)["runs"]] == [ids[1]]
    assert err.count("\n") == 1 and "not a ttdash runs file (schema version 'two'" in err


def test_file_version_reads_the_key():
    assert schema.file_version(None) == 1
    assert schema.file_version({b"ARROW:schema": b"x"}) == 1
    assert schema.file_version({VERSION_KEY: b"2"}) == 2
    for bad in (b"0", b"-1", b"2.0", b""):
        with pytest.raises(ValueError):
            schema.file_version({VERSION_KEY: bad})


def test_the_schema_page_lists_the_declared_fields():
    """docs/history-schema.md's tables: every declared field, in order, with its scalar type."""
    import re

    text = (ROOT / "docs" / "history-schema.md").read_text()
    words = {pa.string(): "string", pa.int64(): "int64", pa.float64(): "double",
             pa.bool_(): "bool"}
    for table, head in (("runs", "## `runs/`"), ("ops", "## `ops/`")):
        section = text.split(head, 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M)
        assert [n for n, _ in rows] == TABLES[table].names, table
        for name, kind in rows:
            t = TABLES[table].field(name).type
            if t in words:
                assert kind.strip() == words[t], (table, name, kind)
    assert f'`"{SCHEMA_VERSION}"`' in text and "ttdash.schema_version" in text
    assert VERSION_KEY == b"ttdash.schema_version"
