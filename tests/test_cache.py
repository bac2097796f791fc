"""The columnar cache: a warm read equals a fresh parse, a changed file is a miss, nothing is
written beside the trace, the size bound holds, `--no-cache` keeps nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPORT_FIXTURES, assert_frame_equal, each_real_file, real_dir, run_ttdash
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ttdash.cli import main
from ttdash.model.errors import TraceError
from ttdash.model.read import cache, loader


def _no_parse(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("parsed the CSV although an unchanged copy is cached")
    monkeypatch.setattr(loader, "_parse", fail)


@pytest.mark.parametrize("name", each_real_file())
def test_a_warm_read_equals_a_fresh_parse(name, cached, monkeypatch):
    path = real_dir() / name
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")
    fresh_of = {c: loader.read_ops_csv(path, columns=c) for c in ("analysis", "all")}
    assert not cached.exists()
    monkeypatch.delenv("TTDASH_NO_CACHE")
    for columns, fresh in fresh_of.items():
        cold = loader.read_ops_csv(path, columns=columns)
        assert len(list(cached.glob("*.parquet"))) == 1
        with monkeypatch.context() as m:
            _no_parse(m)
            warm = loader.read_ops_csv(path, columns=columns)
        for got in (cold, warm):
            assert_frame_equal(got.df, fresh.df)
            assert got.header == fresh.header
    with monkeypatch.context() as m:  # the full copy serves the analysis columns too
        _no_parse(m)
        again = loader.read_ops_csv(path)
    assert_frame_equal(again.df, fresh_of["analysis"].df)


def _copy(src: Path, dst: Path, times: int = 1) -> Path:
    lines = src.read_bytes().splitlines(keepends=True)
    dst.write_bytes(lines[0] + b"".join(lines[1:]) * times)
    return dst


def test_a_changed_file_is_parsed_again_and_the_trace_dir_is_untouched(cached, tmp_path,
                                                                         monkeypatch):
    runs = tmp_path / "profiler"
    runs.mkdir()
    path = _copy(real_dir() / REPORT_FIXTURES[7], runs / "ops.csv")
    first = loader.read_ops_csv(path)
    assert sorted(os.listdir(runs)) == ["ops.csv"]
    _copy(real_dir() / REPORT_FIXTURES[7], path, times=2)  # new size, new mtime
    second = loader.read_ops_csv(path)
    assert len(second.df) == 2 * len(first.df)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same size, touched
    with monkeypatch.context() as m:
        parsed = []
        real_parse = loader._parse
        m.setattr(loader, "_parse", lambda *a, **k: parsed.append(1) or real_parse(*a, **k))
        third = loader.read_ops_csv(path)
    assert parsed and len(third.df) == len(second.df)
    assert sorted(os.listdir(runs)) == ["ops.csv"]  # nothing ever written beside the trace


def test_a_file_changed_while_read_or_broken_leaves_no_copy(cached, tmp_path, monkeypatch):
    path = _copy(real_dir() / REPORT_FIXTURES[7], tmp_path / "ops.csv")
    real_parse = loader._parse

    def parse_then_touch(*a, **k):
        out = real_parse(*a, **k)
        os.utime(path, ns=(0, 10**9))  # the profiler rewrote it meanwhile
        return out
    monkeypatch.setattr(loader, "_parse", parse_then_touch)
    loader.read_ops_csv(path)
    assert not list(cached.glob("*"))
    monkeypatch.setattr(loader, "_parse", real_parse)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5] = lines[5].rstrip(b"\r\n") + b',"extra"\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceError) as err:
        loader.read_ops_csv(path)
    assert err.value.line == 6
    assert not list(cached.glob("*"))  # no copy and no temporary file of the failed read


def test_the_size_bound_evicts_the_least_recently_used(cached, tmp_path):
    paths = [_copy(real_dir() / name, tmp_path / f"{k}.csv")
             for k, name in enumerate(REPORT_FIXTURES[:3])]
    copies = []
    for k, p in enumerate(paths):
        loader.read_ops_csv(p)
        copies.append(cache.Slot.of(p).file)
        os.utime(copies[-1], (1000 * (k + 1), 1000 * (k + 1)))  # used in this order
    loader.read_ops_csv(paths[0])  # a hit: the first is now the most recently used
    size = {f: f.stat().st_size for f in copies}
    cache.evict(size[copies[0]] + size[copies[2]])
    assert sorted(cached.glob("*")) == sorted([copies[0], copies[2]])
    stale = cached / f"{'a' * 40}.parquet.k1_x.tmp"  # a killed read's temporary file
    stale.write_bytes(b"PAR1x")
    os.utime(stale, (1, 1))
    cache.evict(1 << 40)
    assert not stale.exists()
    cache.evict(0)
    assert not list(cached.glob("*"))


@pytest.mark.parametrize("value, limit", [
    ("12", 12 << 20), ("0.5", 1 << 19), ("inf", sys.maxsize), ("-inf", 0), ("-3", 0),
    ("1e400", sys.maxsize), ("nan", 4096 << 20), ("lots", 4096 << 20), (None, 4096 << 20)])
def test_the_size_limit_from_the_environment(value, limit, monkeypatch):
    if value is None:
        monkeypatch.delenv("TTDASH_CACHE_MAX_MB", raising=False)
    else:
        monkeypatch.setenv("TTDASH_CACHE_MAX_MB", value)
    assert cache.max_bytes() == limit


def test_an_unusable_cache_dir_only_costs_the_copy(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    got = loader.read_ops_csv(real_dir() / REPORT_FIXTURES[7])
    assert len(got.df) > 0


def test_report_caches_large_traces_and_no_cache_keeps_none(tmp_path):
    big = _copy(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv", tmp_path / "big.csv", 2)
    assert big.stat().st_size >= cache.MIN_BYTES
    outs = []
    for flags, xdg in (([], "a"), ([], "a"), (["--no-cache"], "b")):
        env = {"XDG_CACHE_HOME": str(tmp_path / xdg)}
        r = run_ttdash("report", str(big), "-f", "csv", *flags, env=env, unset=["TTDASH_NO_CACHE"])
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert len(list((tmp_path / "a" / "ttdash" / "traces").glob("*.parquet"))) == 1
    assert not (tmp_path / "b").exists()
    assert sorted(os.listdir(tmp_path)) == ["a", "big.csv"]


@pytest.mark.parametrize("name", each_real_file())
def test_a_lazy_row_is_the_row_of_a_full_read(name, cached, monkeypatch):
    """open keeps only the analysis columns in memory; an op's details (every column) come
    from the cached copy, value for value what a full read holds, cold and warm."""
    from ttdash.format import cell_text
    from ttdash.model.trace import Trace

    path = real_dir() / name
    full = Trace.load(path, columns="all")
    ids = full.ordered["ID"].to_numpy()
    picks = sorted({int(ids[0]), int(ids[-1]), int(ids[len(ids) // 2])})
    for _ in ("cold", "warm"):
        lazy = Trace.load(path, columns="lazy")
        assert lazy.wide is not None
        assert "ATTRIBUTES" not in lazy.ordered.columns or "ATTRIBUTES" not in full.header
        for rid in picks:
            a, b = full.row(rid), lazy.row(rid)
            assert list(a.index) == list(b.index) and a.name == b.name
            for col in a.index:
                assert cell_text(a[col]) == cell_text(b[col]), (rid, col)
    for f in cached.glob("*.parquet"):  # the copy is gone (evicted): the analysis columns
        f.unlink()
    row = lazy.row(picks[0])
    assert row["OP CODE"] == full.row(picks[0])["OP CODE"]


def test_lazy_without_a_cache_reads_every_column(tmp_path, monkeypatch):
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")
    from ttdash.model.trace import Trace

    t = Trace.load(real_dir() / REPORT_FIXTURES[7], columns="lazy")
    assert t.wide is None and "ATTRIBUTES" in t.ordered.columns


def test_detail_cells_read_as_the_file_wrote_them():
    import numpy as np

    from ttdash.format import cell_text

    assert cell_text(np.float32(3258005.0)) == "3258005"  # not 3.258005e+06
    assert cell_text(np.float64(1024.0)) == cell_text(np.int32(1024)) == "1024"
    assert cell_text(0.25) == "0.25" and cell_text(np.float32(np.nan)) == ""
    assert cell_text(pd.NA) == "" and cell_text(True) == "True" and cell_text("=x") == "=x"
    assert cell_text(1e300) == "1e+300"


def test_no_stderr_progress_unless_stderr_is_the_process_own_terminal(monkeypatch):
    """A full-screen app replaces sys.stderr with a capture that claims to be a terminal (and
    watch --record loads a report in its worker thread): a progress bar there would draw over
    the screen."""
    import io
    import sys
    import threading

    from ttdash.commands.progress import on_stderr
    from ttdash.model import progress

    class Capture(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Capture())
    with on_stderr():
        assert progress._SINK.get() is None
    seen = []
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    monkeypatch.setattr(sys.__stderr__, "isatty", lambda: True, raising=False)

    def worker() -> None:
        with on_stderr():
            seen.append(progress._SINK.get())
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [None]
    with on_stderr():  # the main thread on its own terminal: shown
        assert progress._SINK.get() is not None


# What is read back is this source's, as it is now: a same-size change with its mtime restored,
# another trace's copy, a flipped bit or a FIFO is a miss (parsed again), never wrong numbers.

SMALL = REPORT_FIXTURES[4]  # 40 KB: quick to parse many times


def _fresh(path: Path, columns: str = "all"):
    """A parse with the cache off (what any read must return), or the TraceError it raises."""
    os.environ["TTDASH_NO_CACHE"] = "1"
    try:
        return loader.read_ops_csv(path, columns=columns).df
    except TraceError as exc:
        return exc
    finally:
        del os.environ["TTDASH_NO_CACHE"]


def _read(path: Path, columns: str = "all"):
    try:
        return loader.read_ops_csv(path, columns=columns).df
    except TraceError as exc:
        return exc


def _same(got, want) -> None:
    if isinstance(want, TraceError):
        assert isinstance(got, TraceError) and str(got) == str(want)
    else:
        assert not isinstance(got, TraceError), got
        assert_frame_equal(got, want)


def _parses(monkeypatch) -> list[int]:
    """Counts the CSV parses from now on (`_fresh` parses too: call it before)."""
    parsed: list[int] = []
    real_parse = loader._parse
    monkeypatch.setattr(loader, "_parse", lambda *a, **k: parsed.append(1) or real_parse(*a, **k))
    return parsed


def _rewrite(path: Path, data: bytes, mtime_ns: int) -> None:
    """Rewrite in place (same inode), then put the mtime back, as tar, rsync -t or touch -d."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.fixture
def settled(cached, monkeypatch):
    """Every source looks long unchanged: its copy is trusted on its stamp and fingerprint
    alone, without hashing the whole file (the path a large trace takes)."""
    monkeypatch.setattr(cache, "RACY_NS", -(10**30))
    return cached


_ORIGINAL = (real_dir() / SMALL).read_bytes()
_DIGITS = [i for i in range(_ORIGINAL.index(b"\n") + 1, len(_ORIGINAL))
           if 48 <= _ORIGINAL[i] <= 57]


@pytest.mark.slow  # 25 examples of 5 reads, 9 CPU-s; the single changes below stay fast
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pos=st.sampled_from(_DIGITS), digit=st.integers(0, 9))
def test_any_change_of_the_bytes_changes_what_the_cache_returns(cached, tmp_path, monkeypatch,
                                                                pos, digit):
    """A digit of a data row changed in place, the size and the mtime kept: the read returns
    what a parse of the new bytes does; the unchanged file before it was served from the copy."""
    new = bytearray(_ORIGINAL)
    new[pos] = 48 + (_ORIGINAL[pos] - 48 + 1 + digit % 9) % 10  # always another digit
    path = tmp_path / "ops.csv"
    if not path.exists():
        path.write_bytes(_ORIGINAL)
    mtime = 1_700_000_000 * 10**9
    _rewrite(path, _ORIGINAL, mtime)
    want_old, want_new = _fresh(path), None
    _same(_read(path), want_old)  # cold (or a stale copy of the last example's bytes refused)
    with monkeypatch.context() as m:
        parsed = _parses(m)
        _same(_read(path), want_old)
        assert not parsed  # the copy was used
        _rewrite(path, bytes(new), mtime)
        assert os.stat(path).st_size == len(_ORIGINAL)
        want_new = _fresh(path)
        # a digit in a column the analysis does not keep (or one rounding to the same value)
        # changes nothing to compare: such an example says nothing and is drawn again
        assume(isinstance(want_new, TraceError) or not want_new.equals(want_old))
        _same(_read(path), want_new)


def _middle_changed(src: bytes) -> bytes:
    """`src` with one digit past the fingerprinted first and last 64 KiB changed."""
    k = next(i for i in range(len(src) // 2, len(src)) if 49 <= src[i] <= 56)
    return src[:k] + bytes([src[k] + 1]) + src[k + 1:]


def test_a_same_size_rewrite_with_the_mtime_restored_is_a_miss(settled, tmp_path, monkeypatch):
    path = _copy(real_dir() / REPORT_FIXTURES[7], tmp_path / "ops.csv")
    data = path.read_bytes()
    mtime = os.stat(path).st_mtime_ns
    _same(_read(path), _fresh(path))
    _rewrite(path, _middle_changed(data), mtime)
    want = _fresh(path)
    parsed = _parses(monkeypatch)
    _same(_read(path), want)
    assert parsed


def test_a_recent_change_the_stamp_cannot_see_is_caught_by_the_whole_file_hash(
        cached, tmp_path, monkeypatch):
    """Within one tick of a coarse filesystem clock a rewrite keeps even the ctime (simulated:
    the stamp blind to it): a copy made of a recently changed file holds a hash of all of it."""
    monkeypatch.setattr(cache, "_stamp", lambda s: (s.st_size, s.st_mtime_ns, 0, s.st_ino, 0))
    monkeypatch.setattr(cache, "RACY_NS", 10**30)  # "recent" however long a loaded machine takes
    path = _copy(real_dir() / REPORT_FIXTURES[7], tmp_path / "ops.csv")
    mtime = os.stat(path).st_mtime_ns
    _same(_read(path), _fresh(path))
    assert cache.Slot.of(path).racy
    _rewrite(path, _middle_changed(path.read_bytes()), mtime)
    want = _fresh(path)
    parsed = _parses(monkeypatch)
    _same(_read(path), want)
    assert parsed


def test_a_copy_put_in_place_of_a_removed_file_is_a_miss(settled, tmp_path, monkeypatch):
    """`rm A; cp -p B A`: the same size and mtime, perhaps the freed inode."""
    a = _copy(real_dir() / REPORT_FIXTURES[7], tmp_path / "a.csv")
    b = tmp_path / "b.csv"
    b.write_bytes(_middle_changed(a.read_bytes()))
    was = os.stat(a)
    os.utime(b, ns=(was.st_atime_ns, was.st_mtime_ns))
    _same(_read(a), _fresh(a))
    a.unlink()
    shutil.copy2(b, a)
    assert os.stat(a).st_mtime_ns == was.st_mtime_ns and os.stat(a).st_size == was.st_size
    want = _fresh(b)
    parsed = _parses(monkeypatch)
    _same(_read(a), want)
    assert parsed


def test_another_traces_copy_put_in_place_is_refused_and_replaced(settled, tmp_path,
                                                                   monkeypatch):
    a = _copy(real_dir() / SMALL, tmp_path / "a.csv")
    b = tmp_path / "b.csv"  # another run of the same model: the same columns
    b.write_bytes(_middle_changed(a.read_bytes()))
    for p in (a, b):
        loader.read_ops_csv(p, columns="all")
    mine, theirs = cache.Slot.of(a).file, cache.Slot.of(b).file
    shutil.copy2(theirs, mine)
    want = _fresh(a)
    parsed = _parses(monkeypatch)
    _same(_read(a), want)
    assert parsed
    assert mine.read_bytes() != theirs.read_bytes()  # the bad copy was replaced
    parsed.clear()
    _same(_read(a), want)
    assert not parsed


def test_flipped_bits_in_a_copy_are_never_read_as_numbers(settled, tmp_path):
    """Without page checksums 15 of these 25 flips gave wrong numbers."""
    path = _copy(real_dir() / REPORT_FIXTURES[7], tmp_path / "ops.csv")
    want = _fresh(path)
    loader.read_ops_csv(path, columns="all")
    entry = cache.Slot.of(path).file
    good = entry.read_bytes()
    footer = len(good) - 8 - int.from_bytes(good[-8:-4], "little")
    rng = random.Random(1)
    for _ in range(25):
        bad = bytearray(good)
        bad[rng.randrange(4, footer)] ^= 1 << rng.randrange(8)  # in the pages
        entry.write_bytes(bytes(bad))
        _same(_read(path), want)


def test_a_fifo_at_the_copys_name_is_not_waited_on(settled, tmp_path):
    path = _copy(real_dir() / SMALL, tmp_path / "ops.csv")
    entry = cache.Slot.of(path).file
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(_read(path)), daemon=True)
    reader.start()
    reader.join(30)
    hung = reader.is_alive()
    if hung:  # let the blocked open return, so the test ends
        os.close(os.open(entry, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(30)
    assert not hung, "the read waited on a FIFO in the cache folder"
    _same(got[0], _fresh(path))
    assert stat.S_ISREG(os.lstat(entry).st_mode)  # replaced by a real copy


def test_eviction_deletes_only_its_own_copies(tmp_path, monkeypatch):
    """traces/ a symlink to a folder of other files, a directory, a FIFO, a symlink, files
    named like copies that it did not write: none is deleted, and eviction still works."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TTDASH_NO_CACHE", raising=False)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "cache" / "ttdash").mkdir(parents=True)
    (tmp_path / "cache" / "ttdash" / "traces").symlink_to(other)
    foreign_parquet = other / f"{'b' * 40}.parquet"
    pd.DataFrame({"x": [1, 2]}).to_parquet(foreign_parquet)
    (other / f"{'c' * 40}.parquet.k1_x.tmp").write_bytes(b"not ours")
    (other / "notes.txt").write_text("keep me")
    (other / f"{'d' * 40}.parquet").mkdir()
    os.mkfifo(other / f"{'e' * 40}.parquet")
    (other / f"{'f' * 40}.parquet").symlink_to(other / "notes.txt")
    for name in ("notes.txt", f"{'b' * 40}.parquet", f"{'c' * 40}.parquet.k1_x.tmp"):
        os.utime(other / name, (1, 1))  # the oldest, and long stale
    foreign = sorted(os.listdir(other))
    paths = [_copy(real_dir() / name, tmp_path / f"{k}.csv")
             for k, name in enumerate((SMALL, REPORT_FIXTURES[1]))]
    for p in paths:
        loader.read_ops_csv(p)
    copies = [cache.Slot.of(p).file.name for p in paths]
    assert sorted(os.listdir(other)) == sorted(foreign + copies)
    cache.evict(0)
    assert sorted(os.listdir(other)) == foreign
    assert (other / "notes.txt").read_text() == "keep me"


def _feed(data: bytes) -> tuple[int, threading.Thread]:
    """A pipe's read end and the thread writing `data` into it (closing it after)."""
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as fh:
            fh.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return r, t


def test_a_pipe_is_read_once_without_the_cache(cached, real, capsys):
    """`report <(cmd)` and `/dev/stdin` were refused ("not a regular file") since FIFOs were:
    a pipe is read in full once and analysed as the file would be, and nothing is cached (a
    pipe's content cannot be found again); a regular file still is."""
    src = real / "tt-perf-report__bh20_oft.csv"
    assert main(["report", str(src), "-f", "json"]) == 0
    want = json.loads(capsys.readouterr().out)
    copies = sorted(cached.glob("*"))
    assert copies  # the regular file: its copy made
    r, t = _feed(src.read_bytes())
    try:
        assert main(["report", f"/dev/fd/{r}", "-f", "json"]) == 0
    finally:
        os.close(r)
    t.join(10)
    got = json.loads(capsys.readouterr().out)
    assert got["file"] == f"/dev/fd/{r}"
    assert {**got, "file": None} == {**want, "file": None}  # the same analysis
    assert sorted(cached.glob("*")) == copies  # nothing more cached


def test_a_named_fifo_is_read_and_a_device_refused(tmp_path, real, capsys):
    """A named FIFO with its writer's data waiting is read; one nobody writes to, and a
    character device, are one line at once (never a wait)."""
    src = real / "tt-perf-report__bh20_oft_integral_image_trace.csv"  # < 64 KiB: one buffer
    assert main(["report", str(src), "-f", "csv"]) == 0
    want = capsys.readouterr().out
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer may open
    try:
        with open(fifo, "wb") as fh:
            fh.write(src.read_bytes())  # waits in the pipe, the writer gone
        assert main(["report", str(fifo), "-f", "csv"]) == 0
    finally:
        os.close(held)
    assert capsys.readouterr().out == want
    for path, says in ((Path("/dev/zero"), "a character device, not a CSV file or a pipe; "
                        "refusing to read it"),
                       (fifo, "a pipe that gave nothing (no writer, or it wrote nothing)")):
        assert main(["report", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"ttdash: {path}: {says}\n"
