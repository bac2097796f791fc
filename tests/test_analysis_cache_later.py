"""What the analysis cache reads back only when it is used (model.read.analysis_cache's `_LATER`
and `_APART`): a second `report -f json` never makes the trace table nor the why-slow figures'
window of it, and has one guide rule's entries at a time; what is read later is the file that
was checked, whatever was put at its name since."""

from __future__ import annotations

import os
import weakref

import numpy as np
import pandas as pd
from conftest import real_dir

from ttdash.cli import main
from ttdash.model.read import analysis_cache, readback


def _report(src, out, *flags: str) -> bytes:
    before = os.environ.get("TTDASH_NO_CACHE")
    try:
        assert main(["report", str(src), "-f", "json", "-o", str(out), "--force", *flags]) == 0
    finally:  # (--no-cache sets it for the process)
        if before is None:
            os.environ.pop("TTDASH_NO_CACHE", None)
        else:
            os.environ["TTDASH_NO_CACHE"] = before
    return out.read_bytes()


def test_a_second_json_report_reads_only_what_it_writes(cached, tmp_path, monkeypatch):
    """The second run writes the first's bytes without the trace table (77 columns, ~240 MiB
    of a million ops) nor the why-slow window ever made, and reads the guide rules' entries a
    rule at a time: each read once the one before is let go (all at once they were the peak
    of a million ops' second run). Asked for, they are what was stored."""
    monkeypatch.setattr(analysis_cache, "BIG", 64)  # (a small trace's frames as a large one's)
    src, out = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv", tmp_path / "out.json"
    want = _report(src, out, "--no-cache")
    assert _report(src, out) == want  # the first run keeps the view
    views: list = []
    read = analysis_cache.Entry.read
    monkeypatch.setattr(analysis_cache.Entry, "read",
                        lambda self, lazy=False: views.append(read(self, lazy)) or views[-1])
    taken: list[weakref.ref] = []
    later = readback.Later.__call__

    def one_at_a_time(self):
        assert all(r() is None for r in taken), "a rule's entries held while the next is read"
        got = later(self)
        taken.append(weakref.ref(got))
        return got

    monkeypatch.setattr(readback.Later, "__call__", one_at_a_time)
    assert _report(src, out) == want
    view = views[0]
    assert "ordered" not in view.trace.__dict__ and "ordered" in view.trace.__dict__["_later"]
    assert callable(view.__dict__["_why_window"])
    stored = view.__dict__["_guide_entries"][2]._items  # (a frame under BIG rows is inline)
    assert len(taken) == sum(isinstance(x, readback.Later) for x in stored) > 1
    monkeypatch.setattr(readback.Later, "__call__", later)
    taken.clear()
    assert len(view.trace.ordered) >= len(view.ops) and "ordered" in view.trace.__dict__
    assert view.trace.ordered is view.trace.ordered  # read once
    frames = list(view.__dict__["_guide_entries"][2])
    assert all(isinstance(f, pd.DataFrame) and len(f) for f in frames)


class Owner:
    """Something a stored frame is an attribute of."""


def test_what_is_read_later_is_the_file_that_was_checked(tmp_path):
    """A frame stored apart is read through the descriptor of the file whose checksum was
    checked: a file put at its name since (another run's) is not read; a frame the root holds
    is set at once, the same object."""
    n = analysis_cache.BIG + 5

    def stored(scale: float) -> tuple[Owner, pd.DataFrame]:
        root, table = Owner(), pd.DataFrame({"t": np.arange(n) * scale,
                                             "s": pd.Series(["a", "b"] * (n // 2) + ["c"] * (n % 2),
                                                            dtype=object)})
        root.held = table.iloc[:, :1].copy()
        return root, table

    record = {"what": "test"}
    root, table = stored(1.0)
    with open(tmp_path / "v", "w+b") as f:
        analysis_cache.dump(root, f, record, later={"table": table, "held": root.held})
    got = analysis_cache.load(tmp_path / "v", record)
    assert "table" not in got.__dict__ and isinstance(got.held, pd.DataFrame)
    other, _ = stored(2.0)
    with open(tmp_path / "w", "w+b") as f:
        analysis_cache.dump(other, f, record, later={"table": stored(2.0)[1]})
    os.replace(tmp_path / "w", tmp_path / "v")
    pd.testing.assert_frame_equal(got.__dict__["_later"]["table"](), table)
