"""The analysis cache (model.analysis_cache): a second run prints byte for byte what the first
did without analysing again; a changed byte, another option, another ttdash or a damaged file is
a miss, never a stale answer; the same content under another name is a hit; eviction keeps to
the cache's own files; `--no-cache` keeps nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPORT_FIXTURES, real_dir

from ttdash.cli import main
from ttdash.model import trace as trace_mod
from ttdash.model.read import analysis_cache, cache, loader

FORMATS = ("table", "csv", "json", "markdown", "perfetto")
GENERATED = Path(__file__).resolve().parent.parent / "fixtures" / "generated"
#: one device with signposts, 8 devices (merged: annotate_overlap, merge_devices), a generated
#: multi-device trace
FILES = [real_dir() / "tt-perf-report__bh20_oft.csv",
         real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
         GENERATED / "n300_2dev_report.csv"]


def _analyses(monkeypatch, done: list | None = None) -> list:
    """Counts the analyses (Trace.view) and CSV parses from now on, into `done` when given
    (one list for several counters: `a(m) + b(m)` would be a new list, never appended to)."""
    done = [] if done is None else done
    view, parse = trace_mod.Trace.view, loader._parse
    monkeypatch.setattr(trace_mod.Trace, "view",
                        lambda *a, **k: done.append(1) or view(*a, **k))
    monkeypatch.setattr(loader, "_parse", lambda *a, **k: done.append(2) or parse(*a, **k))
    return done


def _main(argv: list[str]) -> int:
    """The CLI in this process, the environment as it was after (--no-cache sets
    TTDASH_NO_CACHE for the process)."""
    before = os.environ.get("TTDASH_NO_CACHE")
    try:
        return main(argv)
    finally:
        if before is None:
            os.environ.pop("TTDASH_NO_CACHE", None)
        else:
            os.environ["TTDASH_NO_CACHE"] = before


def _report(src: Path, out: Path, fmt: str, *flags: str) -> bytes:
    assert _main(["report", str(src), "-f", fmt, "-o", str(out), "--force", *flags]) == 0
    return out.read_bytes()


@pytest.mark.parametrize("src", FILES, ids=lambda p: p.name)
def test_a_second_run_prints_the_first_runs_bytes_without_analysing(src, cached, tmp_path,
                                                                     monkeypatch):
    """Every format: cold with the cache off, the first run (which stores the view), and a
    second one that neither parses nor analyses print the same bytes."""
    path = tmp_path / src.name  # (the report's File: line names it: the same in every run)
    shutil.copyfile(src, path)
    out = tmp_path / "out"
    for fmt in FORMATS:
        want = _report(path, out, fmt, "--no-cache")
        assert _report(path, out, fmt) == want, fmt
        assert len(list(cached.glob("*.view"))) == 1
        with monkeypatch.context() as m:
            done = _analyses(m)
            assert _report(path, out, fmt) == want, fmt
            assert not done, f"{fmt}: analysed again ({done})"


def test_options_that_change_the_view_are_their_own_entries(cached, tmp_path, monkeypatch):
    src = FILES[1]
    out = tmp_path / "out"
    for flags in ([], ["--per-device"], ["--pause-above", "5"], ["--arch", "wormhole_b0"],
                  ["--perf-report-window"]):
        want = _report(src, out, "json", "--no-cache", *flags)
        assert _report(src, out, "json", *flags) == want, flags
        with monkeypatch.context() as m:
            done = _analyses(m)
            assert _report(src, out, "json", *flags) == want, flags
            assert not done
    assert len(list(cached.glob("*.view"))) == 5


def _touch_middle(path: Path) -> None:
    """One digit past the fingerprinted first and last 64 KiB (or of a small file) changed in
    place, size and mtime kept (tar, rsync -t)."""
    data = bytearray(path.read_bytes())
    st = os.stat(path)
    k = next(i for i in range(len(data) // 2, len(data)) if 49 <= data[i] <= 56)
    data[k] += 1
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("racy", [True, False])
def test_any_byte_change_is_analysed_again(racy, cached, tmp_path, monkeypatch):
    """racy: the file was changed just before (its whole content is hashed on every read);
    else it looks long settled, and the change still moves its ctime (a new identity)."""
    # (racy however long a loaded machine takes between the write and the read, or never)
    monkeypatch.setattr(cache, "RACY_NS", 10**30 if racy else -(10**30))
    path = tmp_path / "ops.csv"
    shutil.copyfile(FILES[1], path)
    out = tmp_path / "out"
    _report(path, out, "csv")
    _touch_middle(path)
    want = _report(path, out, "csv", "--no-cache")
    with monkeypatch.context() as m:
        done = _analyses(m)
        assert _report(path, out, "csv") == want
        assert 1 in done  # analysed again
    assert len(list(cached.glob("*.view"))) == 2


def test_the_same_content_under_another_name_is_a_hit(cached, tmp_path, monkeypatch):
    a, b = tmp_path / "a" / "ops.csv", tmp_path / "b" / "renamed.csv"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copyfile(FILES[0], p)
    out = tmp_path / "out"
    _report(a, out, "table")
    want = _report(b, out, "table", "--no-cache")
    assert str(b).encode() in want
    with monkeypatch.context() as m:
        done = _analyses(m)
        assert _report(b, out, "table") == want  # its own path in the File: line
        assert _main(["history", "add", str(b), "--store", str(tmp_path / "store")]) == 0
        assert not done
    assert len(list(cached.glob("*.view"))) == 1


def test_a_hard_link_is_not_hashed_again_a_copy_is(cached, tmp_path, monkeypatch):
    """The hash of a file's whole content is remembered by its identity less its path: another
    name of the same inode (a hard link, 1.6 CPU-s of SHA-256 at a million ops) is not read
    through again; a copy (another inode) is, and a file changed since is."""
    a = tmp_path / "a" / "ops.csv"
    a.parent.mkdir()
    shutil.copyfile(FILES[0], a)
    link, copy = tmp_path / "link.csv", tmp_path / "copy.csv"
    os.link(a, link)
    shutil.copyfile(a, copy)
    monkeypatch.setattr(cache, "RACY_NS", -(10**30))  # settled files (a racy one is hashed
    hashed: list[Path] = []                              # every time, whatever its name)
    real = analysis_cache.sha256_of
    monkeypatch.setattr(analysis_cache, "sha256_of", lambda p: hashed.append(p) or real(p))
    out = tmp_path / "out"
    want = _report(a, out, "csv")
    assert hashed == [a]
    assert _report(link, out, "csv") == want and hashed == [a]
    assert _report(copy, out, "csv") == want and hashed == [a, copy]
    assert _report(a, out, "csv") == want and hashed == [a, copy]
    _touch_middle(link)  # the same inode, changed: hashed again under either name
    _report(a, out, "csv")
    assert hashed == [a, copy, a]


def damages(data: bytes) -> list[bytes]:
    """A stored file's bytes cut in half, less its last byte, zeroed, its trailer's hash
    altered, one bit flipped."""
    mid = len(data) // 2
    return [data[:mid], data[:-1], b"\0" * len(data), data[:-40] + b"x" * 32 + data[-8:],
            data[:mid] + bytes([data[mid] ^ 1]) + data[mid + 1:]]


def test_a_new_ttdash_or_a_damaged_file_is_a_miss(cached, tmp_path, monkeypatch):
    src, out = FILES[0], tmp_path / "out"
    want = _report(src, out, "json")
    [entry] = cached.glob("*.view")
    with monkeypatch.context() as m:  # another model or report code: another name
        m.setattr(analysis_cache, "_CODE", ["another ttdash"])
        done = _analyses(m)
        assert _report(src, out, "json") == want
        assert 1 in done
    for damaged in damages(entry.read_bytes()):
        entry.write_bytes(damaged)
        with monkeypatch.context() as m:
            done = _analyses(m)
            assert _report(src, out, "json") == want
            assert 1 in done
    other = next(e for e in cached.glob("*.view") if e != entry)  # the other code's entry
    entry.write_bytes(other.read_bytes())  # another key's analysis put at this name
    with monkeypatch.context() as m:
        done = _analyses(m)
        assert _report(src, out, "json") == want
        assert 1 in done


def test_no_cache_keeps_nothing_and_eviction_keeps_to_its_own_files(cached, tmp_path,
                                                                     monkeypatch):
    out = tmp_path / "out"
    _report(FILES[0], out, "csv", "--no-cache")
    assert not cached.exists()
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")
    _report(FILES[0], out, "csv")
    assert not cached.exists()
    monkeypatch.delenv("TTDASH_NO_CACHE")
    _report(FILES[0], out, "csv")
    views = list(cached.glob("*.view"))
    assert len(views) == 1 and len(list(cached.glob("*.digest"))) == 1
    foreign = [cached / ("0" * 40 + ".view"), cached / ("1" * 40 + ".digest"),
               cached / "notes.txt"]
    for f in foreign:
        f.write_bytes(b"not ttdash's")
    stale = cached / ("2" * 40 + ".view.abc.tmp")
    stale.write_bytes(cache.VIEW_MAGIC + b"partial")
    os.utime(stale, (0, 0))
    cache.evict(0)  # everything of its own goes, nothing else
    assert sorted(cached.iterdir()) == sorted(foreign)
    _report(FILES[2], out, "csv")  # a size bound counts the analyses too
    older = set(cached.glob("*.view")) - set(foreign)
    total = sum(f.stat().st_size for f in cached.iterdir() if f not in foreign)
    monkeypatch.setenv("TTDASH_CACHE_MAX_MB", str((total - 1) / (1 << 20)))
    _report(FILES[0], out, "csv")
    assert not older & set(cached.iterdir())  # the least recently used analysis went
    assert set(cached.glob("*.view")) - set(foreign) == set(views)  # the one just made stays
    assert set(foreign) <= set(cached.iterdir())


def test_diff_reads_either_side_from_the_cache(cached, tmp_path, monkeypatch):
    a, b = FILES[0], real_dir() / REPORT_FIXTURES[2]
    out = tmp_path / "d.json"
    argv = ["diff", str(a), str(b), "-f", "json", "-o", str(out), "--force"]
    assert _main([*argv, "--no-cache"]) == 0
    want = out.read_bytes()
    _report(a, tmp_path / "x", "csv")  # the baseline alone cached
    with monkeypatch.context() as m:
        done = _analyses(m)
        assert _main(argv) == 0
        assert out.read_bytes() == want
        assert done.count(1) == 1  # the candidate only
    with monkeypatch.context() as m:
        done = _analyses(m)
        assert _main(argv) == 0
        assert out.read_bytes() == want
        assert not done


@pytest.mark.parametrize("src", FILES, ids=lambda p: p.name)
def test_the_cached_view_is_the_analysed_one_dtypes_and_all(src, cached, monkeypatch):
    from ttdash.commands.common import view_of
    from ttdash.commands.options import WindowOptions

    opts = WindowOptions()
    fresh = view_of(str(src), opts, "lazy")
    assert "_acache" in fresh.__dict__ and len(list(cached.glob("*.view"))) == 1
    with monkeypatch.context() as m:
        done = _analyses(m)
        again = view_of(str(src), opts, "lazy")
        assert not done
    for a, b in ((again.ops, fresh.ops), (again.trace.ordered, fresh.trace.ordered),
                 (again.trace.signposts, fresh.trace.signposts)):
        pd.testing.assert_frame_equal(a, b)  # values, dtypes (object text stays object), index
    assert again.summary() == fresh.summary()
    assert again.trace.path == src and again.window == fresh.window
    assert again.trace.wide is not None  # open's details: every column of a row, on demand
    row = int(fresh.ops["id"].iloc[0])
    pd.testing.assert_series_equal(again.trace.row(row).sort_index(),
                                   fresh.trace.row(row).sort_index(), check_dtype=False)


def _derived(monkeypatch, done: list | None = None) -> list:
    """Counts, from now on, what a report or diff works out from a view besides the analysis:
    the advice rules' summary, "where the time goes", the CSV columns read again for a diff
    (into `done` when given)."""
    from ttdash.model.read import attributes
    from ttdash.report import advice, where

    done = [] if done is None else done
    summarise, groups, read = advice.summarise, where._top_groups, attributes._read_csv_columns
    monkeypatch.setattr(advice, "summarise", lambda *a, **k: done.append("advice")
                        or summarise(*a, **k))
    monkeypatch.setattr(where, "_top_groups", lambda *a, **k: done.append("where")
                        or groups(*a, **k))
    monkeypatch.setattr(attributes, "_read_csv_columns", lambda *a, **k: done.append("csv")
                        or read(*a, **k))
    return done


@pytest.mark.parametrize("fmt", ("table", "markdown", "json"))
def test_a_second_report_keeps_the_advice_and_where_the_time_goes(fmt, cached, tmp_path,
                                                                  monkeypatch):
    """The advice summary and "where the time goes" are kept with the view: the first run
    makes them (and stores them), the second prints the same bytes without making them."""
    src, out = FILES[1], tmp_path / "out"
    want = _report(src, out, fmt, "--no-cache")
    with monkeypatch.context() as m:
        done = _derived(m)
        assert _report(src, out, fmt) == want
        assert {"advice", "where"} <= set(done)
    with monkeypatch.context() as m:
        done = _analyses(m, _derived(m))
        assert _report(src, out, fmt) == want
        assert not done, done
    with monkeypatch.context() as m:  # another pause threshold: its own view, its own advice
        done = _derived(m)
        _report(src, out, fmt, "--pause-above", "5")
        assert "advice" in done


def test_a_diff_reads_what_it_compares_in_its_one_parse(cached, tmp_path, monkeypatch):
    """A diff reads the columns it compares (ATTRIBUTES) with the analysis columns, in its one
    parse of each file, cache or not; its view is written once for a file and its hard link
    (one entry), and a second diff reads nothing. From a view another command kept (the
    analysis columns alone) it reads them from the CSV again and keeps them with the view.
    Every run prints the same bytes."""
    a = tmp_path / "a.csv"
    shutil.copyfile(FILES[0], a)
    b = tmp_path / "b.csv"
    os.link(a, b)
    out = tmp_path / "d.csv"

    def diff(x: Path, y: Path, *flags: str) -> bytes:
        assert _main(["diff", str(x), str(y), "-f", "csv", "-o", str(out), "--force",
                      *flags]) == 0
        return out.read_bytes()

    with monkeypatch.context() as m:
        done = _derived(m)
        want = diff(a, b, "--no-cache")
        assert "csv" not in done, done
    writes: list[Path] = []
    write = analysis_cache.Entry.write
    monkeypatch.setattr(analysis_cache.Entry, "write",
                        lambda self, v: writes.append(self.file) or write(self, v))
    with monkeypatch.context() as m:
        done = _derived(m)
        assert diff(a, b) == want
        assert "csv" not in done, done
    assert len(writes) == 1 and len(list(cached.glob("*.view"))) == 1
    with monkeypatch.context() as m:
        done = _analyses(m, _derived(m))
        assert diff(a, b) == want
        assert not done, done
    assert len(writes) == 1  # nothing new to keep

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "later"))  # an empty cache, where
    c = tmp_path / "c.csv"  # the same content is first kept by a report: no ATTRIBUTES
    shutil.copyfile(FILES[0], c)
    d = tmp_path / "d2.csv"
    os.link(c, d)
    assert _main(["report", str(c), "-f", "json", "-o", str(tmp_path / "r.json")]) == 0
    with monkeypatch.context() as m:
        done = _analyses(m, _derived(m))
        assert diff(c, d) == want
        assert sorted(map(str, done)) == ["csv", "csv"], done  # each side's, no analysis
    with monkeypatch.context() as m:
        done = _analyses(m, _derived(m))
        assert diff(c, d) == want
        assert not done, done


def test_a_second_history_add_does_not_work_out_the_signatures_again(cached, tmp_path,
                                                                     monkeypatch):
    """`history add` keeps the ops' signatures and the run's sums (per op code, per region)
    with the view (written once, with them): a second add of the same file (another store)
    reads neither the CSV nor the raw input columns again, sums nothing again, and stores the
    same op rows and the same run row."""
    import pyarrow.parquet as pq

    from ttdash.history import record
    from ttdash.model.compare import signature

    src = tmp_path / FILES[2].name
    shutil.copyfile(FILES[2], src)
    writes: list[Path] = []
    write = analysis_cache.Entry.write
    monkeypatch.setattr(analysis_cache.Entry, "write",
                        lambda self, v: writes.append(self.file) or write(self, v))

    def add(store: Path) -> tuple[pd.DataFrame, list[dict]]:
        assert _main(["history", "add", str(src), "--store", str(store)]) == 0
        files = sorted(store.rglob("*.parquet"))
        ops = [f for f in files if "ops" in f.parts or f.name.startswith("ops")]
        runs = [r for f in files if "runs" in f.parts for r in pq.read_table(f).to_pylist()]
        assert ops and len(runs) == 1, files
        return pd.concat([pq.read_table(f).to_pandas() for f in ops], ignore_index=True), \
            [{k: v for k, v in r.items() if k != "added_at"} for r in runs]

    first, first_run = add(tmp_path / "s1")
    assert len(writes) == 1
    with monkeypatch.context() as m:
        done = _analyses(m)
        texts, sums = [], []
        real, groups = signature.signature_text, record._groups
        m.setattr(signature, "signature_text", lambda *a: texts.append(1) or real(*a))
        m.setattr(record, "_groups", lambda *a: sums.append(1) or groups(*a))
        second, second_run = add(tmp_path / "s2")
        assert not done and not texts and not sums, (done, texts, sums)
    assert len(writes) == 1  # nothing new to keep
    assert second.drop(columns=["run_id"], errors="ignore").equals(
        first.drop(columns=["run_id"], errors="ignore"))
    assert first["signature"].notna().all() and first["signature"].nunique() > 1
    assert second_run == first_run and len(first_run[0]["op_codes"]) > 1


def test_frames_sharing_columns_are_read_back_sharing_them(tmp_path):
    """A stored frame whose columns are another's (the why-slow figures' window of the trace
    table: `shared_columns`, no copy) is read back sharing them, numbers, categoricals and
    object text alike, with its own index and labels; a column of the same values that is not
    the same memory stays its own (a second run held ~110 MB more of a million ops than the
    first, each frame's copy of the same columns)."""
    import numpy as np

    from ttdash.model.columns import shared_columns

    n = analysis_cache.BIG + 7
    rng = np.random.default_rng(3)
    table = pd.DataFrame({"t": rng.random(n), "k": pd.Categorical(rng.choice(["a", "b"], n)),
                          "s": pd.Series(rng.choice(["x", "y", None], n), dtype=object),
                          "i": np.arange(n)})
    narrow = shared_columns(table, ["t", "s", "k"])
    alike = pd.DataFrame({"t": table["t"].to_numpy().copy()})  # equal values, other memory
    record = {"what": "test"}
    with open(tmp_path / "v", "w+b") as f:
        analysis_cache.dump({"table": table, "narrow": narrow, "alike": alike}, f, record)
    got = analysis_cache.load(tmp_path / "v", record)
    for name, frame in (("table", table), ("narrow", narrow), ("alike", alike)):
        pd.testing.assert_frame_equal(got[name], frame)
    for c in ("t", "s"):
        assert np.shares_memory(got["narrow"][c].to_numpy(), got["table"][c].to_numpy())
    assert np.shares_memory(got["narrow"]["k"].array.codes, got["table"]["k"].array.codes)
    assert not np.shares_memory(got["alike"]["t"].to_numpy(), got["table"]["t"].to_numpy())
