"""One run history for a fleet of CI runners (#49): twelve `history add` processes and two
compactions at the same moment on one store (every run once, with all its ops; readers never
see half a run), and stored files whose bytes changed on disk (#50.6): never a silently changed
sum."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import run_ttdash
from history_fixture import make_store, scaled_copy
from test_store_faults import _direct_duckdb

from ttdash.cli import main
from ttdash.history.store import Store

SMALL = "tt-perf-report__bh20_oft_integral_image_trace.csv"
PARTITION = "arch=blackhole_p150"  # the small trace's
WRITERS = 12
#: A compaction in a loop in its own process until the stop file exists (bounded in count).
COMPACTOR = """
import os, sys, time
from ttdash.history.store import Store
root, stop, merged = sys.argv[1], sys.argv[2], 0
for _ in range(3000):
    if os.path.exists(stop):
        break
    if os.path.isdir(root):
        merged += Store.open(root).compact(sys.argv[3], above=1)
    time.sleep(0.02)  # not a wait for anything: leaves the two cores to the adds
print(merged)
"""


def end_all(stop: Path, procs: list[subprocess.Popen]) -> None:
    """Tell the compactors to stop (`stop` made) and kill whatever still runs."""
    stop.touch()
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def failed_writers(writers: list[subprocess.Popen], results: list[tuple[str, str]]) -> list[str]:
    """The stderr of each writer that did not exit 0 (an assertion's message)."""
    return [e for w, (_, e) in zip(writers, results) if w.returncode]


def _seen(store: Store) -> dict[str, int]:
    """{run_id: ops stored} of every run a reader lists now, each checked whole: its stored
    ops are all there (as many as its row says)."""
    out = {}
    for r in store.runs(["ops"]):
        assert r["run_id"] not in out, f"run {r['run_id']} listed twice"
        n = store.run_ops(r, ["op_code"]).num_rows
        assert n == r["ops"], f"run {r['run_id']} listed with {n} of its {r['ops']} ops"
        out[r["run_id"]] = n
    return out


@pytest.mark.slow  # ~15 s: twelve interpreters on two cores
def test_twelve_writers_and_two_compactions_lose_nothing(real, tmp_path, capsys):
    paths = [scaled_copy(real / SMALL, tmp_path / f"w{i}.csv", 1 + i / 10)
             for i in range(WRITERS)]
    root = tmp_path / "store"
    stop = tmp_path / "stop"
    cmd = [sys.executable, "-m", "ttdash", "history", "add", "--store", str(root)]
    procs = [subprocess.Popen([sys.executable, "-c", COMPACTOR, str(root), str(stop),
                               PARTITION], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    writers = [subprocess.Popen([*cmd, str(p), "--label", f"writer={i}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i, p in enumerate(paths)]
    procs += writers
    seen: dict[str, int] = {}
    reads = 0
    try:
        deadline = time.monotonic() + 150
        while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
            if root.is_dir() and (root / "runs").is_dir():
                now = _seen(Store.open(str(root)))
                assert set(seen) <= set(now), "a run listed before is gone"
                seen = now
                reads += 1
        results = [w.communicate(timeout=60) for w in writers]
        stop.touch()
        merged = [int(c.communicate(timeout=60)[0]) for c in procs[:2]]
    finally:
        end_all(stop, procs)
    assert [w.returncode for w in writers] == [0] * WRITERS, failed_writers(writers, results)
    assert all(" added " in out for out, _ in results)
    assert reads > 0 and sum(merged) > 0  # readers and compactions ran while the adds did
    ids = {out.split()[0] for out, _ in results}
    store = Store.open(str(root))
    assert set(_seen(store)) == ids and store.skipped == []
    rc = main(["history", "list", "--store", str(root), "-f", "json"])
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert rc == 0 and sorted(r["run_id"] for r in listed) == sorted(ids)
    assert sorted(r["labels"]["writer"] for r in listed) == sorted(map(str, range(WRITERS)))
    runs, ops = _direct_duckdb(root)  # DuckDB over the files, as the store's docstring says
    assert sorted(runs) == sorted(ids) and len(ops) == sum(r["ops"] for r in listed)
    assert not list(root.rglob(".tmp-*"))


def test_changed_bytes_in_stored_files_never_change_a_sum_silently(real, tmp_path, capsys):
    """30 seeded tries: one bit flipped anywhere in one stored file (ops or runs) gives the same
    sums, or a line naming the file; never other numbers unsaid (the store's pages carry
    checksums, which every ttdash reader verifies)."""
    store, ids, _ = make_store(tmp_path, [1.0, 1.1])
    root = Path(store.root)
    files = sorted(root.rglob("*.parquet"))
    assert len(files) == 4
    query = ("SELECT 'ops', run_id, id, device_time_us, op_to_op_us FROM ops UNION ALL "
             "SELECT 'runs', run_id, NULL, device_time_us, steady_us FROM runs ORDER BY ALL")

    def sums() -> tuple[list, str]:
        """Every value the sums add (DuckDB's own sum is not bit-exact from run to run: it
        adds in parallel), the sums per table, and stderr."""
        rc = main(["history", "sql", "--store", str(root), "-f", "json", query])
        out, err = capsys.readouterr()
        if rc == 2:  # pyarrow read the file, DuckDB cannot: named, exit 2
            assert "corrupt (DuckDB cannot read it" in err, err
            return [], err
        assert rc == 0, err
        rows = json.loads(out)["rows"]
        totals = [math.fsum(r[i] or 0 for r in rows if r[0] == t)
                  for t in ("ops", "runs") for i in (-2, -1)]
        return [rows, totals], err

    want, err = sums()
    assert err == "" and len(want[0]) == 2 * 1872 + 2
    def chunks(path: Path) -> list[tuple[int, int]]:
        """The byte ranges of the file's column chunks (page headers and pages)."""
        meta = pq.read_metadata(path)
        out = []
        for c in (meta.row_group(r).column(i) for r in range(meta.num_row_groups)
                  for i in range(meta.num_columns)):
            start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            out.append((start, start + c.total_compressed_size))
        return out

    ranges = {path: chunks(path) for path in files}
    rng = random.Random(49)
    outcomes = {"same": 0, "named": 0, "in pages": 0, "in pages, named": 0}
    for attempt in range(30):
        path = files[attempt % len(files)]
        data = path.read_bytes()
        pos = rng.randrange(4, len(data) - 8)  # not the PAR1 magic: that is not Parquet
        in_pages = any(start <= pos < end for start, end in ranges[path])
        outcomes["in pages"] += in_pages
        flipped = bytearray(data)
        flipped[pos] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        try:
            got, err = sums()
            rel = str(path.relative_to(root))
            if err:
                assert err.count("\n") == 1 and rel in err, (attempt, pos, err)
                assert ("skipped" in err or "remove or restore it" in err)
                assert "Traceback" not in err
                outcomes["named"] += 1
                outcomes["in pages, named"] += in_pages
            else:
                assert got == want, (attempt, rel, pos, got, want)
                outcomes["same"] += 1
        finally:
            path.write_bytes(data)
    # Most of a column chunk's bytes are page data, which the checksums cover (the rest: page
    # headers, whose statistics no reader uses). Outside the chunks is the footer, which no
    # checksum covers: a flip there is either harmless or named by the schema check.
    assert outcomes["in pages"] >= 8, outcomes
    assert outcomes["in pages, named"] >= 0.6 * outcomes["in pages"], outcomes


@pytest.mark.parametrize("table,name,changed", [
    ("runs", b"added_at", b"adeed_at"),  # the flip the seeded test met: a run left the views
    ("ops", b"device_time_us", b"device_time_ua"),  # every device time null, the sums lower
    ("runs", b"steady_us", b"st\xf2ady_us"),  # not UTF-8: pyarrow raised UnicodeDecodeError
])
def test_a_column_renamed_in_a_footer_is_named_not_read_as_nulls(real, tmp_path, capsys, table,
                                                                  name, changed):
    """No checksum covers a Parquet footer: a byte changed there can rename a column. A file of
    this schema version must hold every declared field; one without is named and skipped by
    `history sql` (and `history list` for runs) and fails the gate naming it, as a bad page
    does."""
    store, ids, paths = make_store(tmp_path, [1.0, 1.1])
    root = Path(store.root)
    path = sorted(root.rglob("run-*.parquet" if table == "runs" else "ops.parquet"))[0]
    data = path.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(name, footer)  # the schema's element (the chunks' paths come after it)
    path.write_bytes(data[:at] + changed + data[at + len(name):])
    rel = str(path.relative_to(root))
    rc = main(["history", "sql", "--store", str(root), "-f", "json",
               f"SELECT count(*) AS n FROM {table}"])
    out, err = capsys.readouterr()
    assert rc == 0 and err.count("\n") == 1 and rel in err and "skipped" in err, err
    assert json.loads(out)["rows"] == [[1872 if table == "ops" else 1]]
    if table == "runs":
        assert main(["history", "list", "--store", str(root), "-f", "json"]) == 0
        out, err = capsys.readouterr()
        assert rel in err and len(json.loads(out)["runs"]) == 1, err
    else:
        res = run_ttdash("history", "check", "--store", store.uri, str(paths[1]),
                         "--fail-above", "50")
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert rel in res.stderr and "Traceback" not in res.stderr


def test_a_corrupt_ops_file_fails_the_gate_naming_it(real, tmp_path):
    store, ids, paths = make_store(tmp_path, [1.0, 1.1])
    ops = sorted(Path(store.root).rglob("ops.parquet"))[0]
    data = bytearray(ops.read_bytes())
    meta = pq.read_metadata(ops).row_group(0)
    chunk = meta.column(meta.to_dict()["columns"].index(next(
        c for c in meta.to_dict()["columns"] if c["path_in_schema"] == "device_time_us")))
    data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x10  # a device time
    ops.write_bytes(bytes(data))
    res = run_ttdash("history", "check", "--store", store.uri, str(paths[1]), "--fail-above",
                     "50")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert str(ops.relative_to(store.root)) in res.stderr and "corrupt" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_listing_that_races_a_new_folder_is_tried_again(real, tmp_path):
    """pyarrow 16 fails a listing whose folder another writer makes meanwhile ("Cannot list
    directory ...: No such file or directory"): one of twelve concurrent adds exited 2 on it in
    the lowest-dependency CI pass. The store lists again; a listing that keeps failing is
    still one line naming the store."""
    st = make_store(tmp_path, [1.0])[0]
    real_info = type(st.fs).get_file_info
    fails = {"left": 2}

    class Racing(type(st.fs)):  # the listing fails as pyarrow 16's race makes it fail
        def get_file_info(self, what):
            if not isinstance(what, list) and hasattr(what, "recursive") and fails["left"]:
                fails["left"] -= 1
                raise FileNotFoundError("Cannot list directory '.../runs'. Detail: [errno 2] "
                                        "No such file or directory")
            return real_info(self, what)

    st.fs = Racing()
    assert len(st.runs()) == 1 and fails["left"] == 0
    fails["left"] = 99
    with pytest.raises(Exception, match="cannot list the store"):
        st.runs()
