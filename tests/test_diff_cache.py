"""The stored diff (model.compare.stored): a second `diff` of unchanged files prints the first
run's bytes without loading, aligning or comparing again; a byte changed on either side,
another option, another ttdash or a damaged file is a miss; eviction keeps to the cache's own
files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPORT_FIXTURES, real_dir
from test_analysis_cache import FILES, _analyses, _main, _touch_middle, damages

from ttdash.model.compare import diff as mdiff
from ttdash.model.compare import stored
from ttdash.model.read import analysis_cache, cache

FORMATS = ("table", "csv", "json", "markdown")


def _diffs(monkeypatch, done: list | None = None) -> list:
    """Counts the diffs worked out (diff_traces) from now on (into `done` when given)."""
    done = [] if done is None else done
    real = mdiff.diff_traces
    monkeypatch.setattr(mdiff, "diff_traces", lambda *a, **k: done.append(1) or real(*a, **k))
    return done


def _diff(a: Path, b: Path, out: Path, fmt: str, *flags: str) -> bytes:
    assert _main(["diff", str(a), str(b), "-f", fmt, "-o", str(out), "--force", *flags]) == 0
    return out.read_bytes()


def _gated(a: Path, b: Path, out: Path, fmt: str, *flags: str) -> tuple[int, bytes]:
    """The exit code (the gate's) and the output."""
    rc = _main(["diff", str(a), str(b), "-f", fmt, "-o", str(out), "--force", "--fail-above",
                "1", *flags])
    return rc, out.read_bytes()


@pytest.fixture
def sides(tmp_path) -> tuple[Path, Path]:
    return two_sides(tmp_path)


def two_sides(tmp_path: Path) -> tuple[Path, Path]:
    """Two traces copied into `tmp_path`: a.csv and b.csv."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    shutil.copyfile(FILES[0], a)
    shutil.copyfile(real_dir() / REPORT_FIXTURES[2], b)
    return a, b


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_second_diff_prints_the_same_bytes_without_diffing(fmt, sides, cached, tmp_path,
                                                              monkeypatch):
    a, b = sides
    out = tmp_path / "out"
    want = _diff(a, b, out, fmt, "--no-cache")
    with monkeypatch.context() as m:
        done = _diffs(m)
        assert _diff(a, b, out, fmt) == want
        assert done == [1]
    assert len(list(cached.glob("*.diff"))) == 1
    with monkeypatch.context() as m:  # nothing parsed, analysed or diffed
        done = _analyses(m, _diffs(m))
        assert _diff(a, b, out, fmt) == want
        gated = _gated(a, b, out, fmt)
        assert not done, done
    assert gated == _gated(a, b, out, fmt, "--no-cache")


def test_the_sides_paths_are_the_ones_given(sides, cached, tmp_path, monkeypatch):
    """The same content under other names (a copy, a hard link) is a hit that names them."""
    a, b = sides
    out = tmp_path / "out"
    _diff(a, b, out, "json")
    a2, b2 = tmp_path / "x" / "renamed_a.csv", tmp_path / "x" / "renamed_b.csv"
    a2.parent.mkdir()
    shutil.copyfile(a, a2)
    os.link(b, b2)
    want = _diff(a2, b2, out, "json", "--no-cache")
    assert b"renamed_a.csv" in want and b"renamed_b.csv" in want
    with monkeypatch.context() as m:
        done = _analyses(m, _diffs(m))
        assert _diff(a2, b2, out, "json") == want
        assert not done
    assert len(list(cached.glob("*.diff"))) == 1


@pytest.mark.parametrize("side", [0, 1])
@pytest.mark.parametrize("racy", [True, False])
def test_any_byte_change_of_either_side_is_a_miss(side, racy, sides, cached, tmp_path,
                                                  monkeypatch):
    monkeypatch.setattr(cache, "RACY_NS", 10**30 if racy else -(10**30))
    out = tmp_path / "out"
    _diff(*sides, out, "csv")
    _touch_middle(sides[side])
    want = _diff(*sides, out, "csv", "--no-cache")
    with monkeypatch.context() as m:
        done = _diffs(m)
        assert _diff(*sides, out, "csv") == want
        assert done == [1]
    assert len(list(cached.glob("*.diff"))) == 2


def test_other_options_are_their_own_entries(sides, cached, tmp_path, monkeypatch):
    out = tmp_path / "out"
    for flags in ([], ["--top", "3"], ["--pause-above", "5"], ["--per-device"]):
        want = _diff(*sides, out, "json", "--no-cache", *flags)
        assert _diff(*sides, out, "json", *flags) == want, flags
        with monkeypatch.context() as m:
            done = _diffs(m)
            assert _diff(*sides, out, "json", *flags) == want, flags
            assert not done, flags
    assert len(list(cached.glob("*.diff"))) == 4


def test_a_new_ttdash_or_a_damaged_file_is_a_miss(sides, cached, tmp_path, monkeypatch):
    out = tmp_path / "out"
    want = _diff(*sides, out, "json")
    [entry] = cached.glob("*.diff")
    with monkeypatch.context() as m:  # another format version: another name
        m.setattr(stored, "VERSION", stored.VERSION + 1)
        done = _diffs(m)
        assert _diff(*sides, out, "json") == want
        assert done == [1]
    with monkeypatch.context() as m:  # another model or report code: both sides' records
        m.setattr(analysis_cache, "_CODE", ["another ttdash"])
        done = _diffs(m)
        assert _diff(*sides, out, "json") == want
        assert done == [1]
    for damaged in damages(entry.read_bytes()):
        entry.write_bytes(damaged)
        with monkeypatch.context() as m:
            done = _diffs(m)
            assert _diff(*sides, out, "json") == want
            assert done == [1]
    others = [e for e in cached.glob("*.diff") if e != entry]
    assert len(others) == 2
    entry.write_bytes(others[0].read_bytes())  # another key's diff put at this name
    with monkeypatch.context() as m:
        done = _diffs(m)
        assert _diff(*sides, out, "json") == want
        assert done == [1]


def test_eviction_counts_and_keeps_to_its_own_diffs(sides, cached, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _diff(*sides, out, "csv")
    [entry] = cached.glob("*.diff")
    foreign = [cached / ("0" * 40 + ".diff"), cached / ("1" * 40 + ".diff.abc.tmp")]
    for f in foreign:
        f.write_bytes(b"not ttdash's")
        os.utime(f, (0, 0))
    stale = cached / ("2" * 40 + ".diff.abc.tmp")
    stale.write_bytes(cache.DIFF_MAGIC + b"partial")
    os.utime(stale, (0, 0))
    cache.evict(entry.stat().st_size + 1, keep=entry)  # (the other files are older)
    assert entry.exists() and not stale.exists()
    assert not list(cached.glob("*.view")) and all(f.exists() for f in foreign)
    cache.evict(0)
    assert sorted(cached.iterdir()) == sorted(foreign)


def test_the_interactive_view_and_several_runs_diff_the_views(sides, cached, tmp_path,
                                                              monkeypatch):
    """Several runs a side (--baseline A A2) read every run: the result is made (and not kept) each time."""
    a, b = sides
    out = tmp_path / "out"
    argv = ["diff", "--baseline", str(a), str(a), "--candidate", str(b), str(b),
            "-f", "json", "-o", str(out), "--force"]
    for _ in range(2):
        with monkeypatch.context() as m:
            done = _diffs(m)
            assert _main(argv) == 0
            assert done == [1]
    assert not list(cached.glob("*.diff"))
