"""The caches (model.cache, model.analysis_cache, model.compare.stored) load what they find in
the user's cache folder: a file or folder another user owns or could have written is refused
(a miss: parsed, analysed or diffed again), and the folders ttdash makes are private (0700)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from test_analysis_cache import _analyses, _report
from test_diff_cache import _diff, two_sides

from ttdash.model.compare import diff as mdiff
from ttdash.model.read import analysis_cache, cache


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def sides(tmp_path) -> tuple[Path, Path]:
    return two_sides(tmp_path)


def _work(monkeypatch) -> list:
    """What is done again from now on: 1 an analysis, 2 a parse, "diff", "hash" (the whole
    source hashed: its alias not read)."""
    done = _analyses(monkeypatch)
    real, sha = mdiff.diff_traces, analysis_cache.sha256_of
    monkeypatch.setattr(mdiff, "diff_traces",
                        lambda *a, **k: done.append("diff") or real(*a, **k))
    monkeypatch.setattr(analysis_cache, "sha256_of", lambda *a: done.append("hash") or sha(*a))
    return done


def test_the_folders_ttdash_makes_are_private(sides, cached, tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "RACY_NS", -(10**30))
    old = os.umask(0)  # whatever the umask
    try:
        _diff(*sides, tmp_path / "out", "csv")
    finally:
        os.umask(old)
    assert _mode(cached) == 0o700 and _mode(cached.parent) == 0o700
    kinds = {p.suffix for p in cached.iterdir()}
    assert kinds == {".parquet", ".view", ".digest", ".diff"}
    assert all(_mode(p) & 0o077 == 0 for p in cached.iterdir())


@pytest.mark.parametrize("suffix,redone", [(".parquet", 2), (".view", 1), (".digest", "hash"),
                                           (".diff", "diff")])
@pytest.mark.parametrize("how", ["group", "others", "owner"])
def test_a_cache_file_anyone_else_could_have_written_is_not_read(suffix, redone, how, sides,
                                                                 cached, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setattr(cache, "RACY_NS", -(10**30))  # every file long settled: aliases kept
    out = tmp_path / "out"
    if suffix == ".diff":
        def run(*flags: str) -> bytes:
            return _diff(*sides, out, "json", *flags)
    else:  # a report reads the copy, the view and the alias (a diff would read none of them)
        def run(*flags: str) -> bytes:
            return _report(sides[0], out, "json", *flags)
    want = run("--no-cache")
    assert run() == want
    files = list(cached.glob(f"*{suffix}"))
    assert files
    if suffix == ".parquet":  # the copy is read when there is no analysis to read
        for f in cached.glob("*.view"):
            f.unlink()
    for f in files:
        if how == "owner":  # another user's file (the folders still this user's)
            mine = os.geteuid()
            monkeypatch.setattr(cache, "trusted_dir", lambda: True)
            monkeypatch.setattr(os, "fstat", _owned_by(mine + 1, files))
        else:
            os.chmod(f, 0o620 if how == "group" else 0o602)
    with monkeypatch.context() as m:
        done = _work(m)
        assert run() == want
        assert redone in done, done


def _owned_by(uid: int, files: list[Path]):
    """os.fstat, saying `uid` owns the files `files` (by inode)."""
    real = os.fstat
    inodes = {f.stat().st_ino for f in files}

    def fstat(fd):
        st = real(fd)
        if st.st_ino not in inodes:
            return st
        fields = list(st)
        fields[stat.ST_UID] = uid
        return os.stat_result(fields)

    return fstat


@pytest.mark.parametrize("how", ["others", "owner"])
def test_a_cache_folder_anyone_else_could_write_in_is_not_used(how, sides, cached, tmp_path,
                                                               monkeypatch):
    out = tmp_path / "out"
    want = _diff(*sides, out, "json")
    before = {p: p.stat().st_mtime_ns for p in cached.iterdir()}
    if how == "others":
        os.chmod(cached, 0o777)
    else:
        mine = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: mine + 1)
    assert not cache.trusted_dir()
    with monkeypatch.context() as m:
        done = _work(m)
        assert _diff(*sides, out, "json") == want
        assert {1, 2, "diff"} <= set(done), done
    # and nothing is written into it
    assert {p: p.stat().st_mtime_ns for p in cached.iterdir()} == before
    if how == "others":
        os.chmod(cached.parent, 0o757)  # the folder above: the same
        os.chmod(cached, 0o700)
        assert not cache.trusted_dir()
        os.chmod(cached.parent, 0o700)
        assert cache.trusted_dir()
