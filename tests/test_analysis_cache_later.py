"""What the analysis cache reads back only when it is used (model.read.analysis_cache's `_LATER`
and `_APART`): a second `report -f json` never makes the trace table nor the why-slow figures'
window of it, and has one guide rule's entries at a time; what is read later is the file that
was checked, whatever was put at its name since."""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import real_dir

from ttdash.cli import main
from ttdash.model.read import analysis_cache, readback


def _run(src, out, fmt: str, *flags: str) -> bytes:
    """`ttdash report SRC -f FMT -o OUT --force FLAGS` in process; the bytes written."""
    before = os.environ.get("TTDASH_NO_CACHE")
    try:
        assert main(["report", str(src), "-f", fmt, "-o", str(out), "--force", *flags]) == 0
    finally:  # (--no-cache sets it for the process)
        if before is None:
            os.environ.pop("TTDASH_NO_CACHE", None)
        else:
            os.environ["TTDASH_NO_CACHE"] = before
    return out.read_bytes()


def _report(src, out, *flags: str) -> bytes:
    return _run(src, out, "json", *flags)


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


def test_a_stored_frames_columns_are_read_alone(tmp_path):
    """A frame stored apart tells its labels without being read, and gives some of its
    columns without the others being read; a column read and alive is shared, not read
    again."""
    n = analysis_cache.BIG + 2  # (a multiple of 3)
    table = pd.DataFrame({"t": np.arange(n, dtype="float64"), "k": np.arange(n) % 7,
                          "s": pd.Series(["a", "b", None] * (n // 3), dtype=object),
                          "c": pd.Categorical(["x", "y", "z"] * (n // 3))})
    record = {"what": "test"}
    with open(tmp_path / "v", "w+b") as f:
        analysis_cache.dump(Owner(), f, record, later={"table": table})
    later = analysis_cache.load(tmp_path / "v", record).__dict__["_later"]["table"]
    built: list = []
    build = later._reader.build
    later._reader.build = lambda k, only=None: built.append(only) or build(k, only)
    assert list(later.labels) == ["t", "k", "s", "c"] and not built
    part = later.select(["c", "s", "absent"])
    assert built == [["c", "s", "absent"]]
    assert list(part.columns) == ["s", "c"]  # (the table's order)
    pd.testing.assert_frame_equal(part, table[["s", "c"]])
    again = later.select(["s", "c", "t"])
    # a column alive is shared, not read again
    assert np.shares_memory(again["s"].to_numpy(), part["s"].to_numpy())
    assert np.shares_memory(later.select(["t"])["t"].to_numpy(), again["t"].to_numpy())
    pd.testing.assert_frame_equal(again, table[["t", "s", "c"]])
    pd.testing.assert_frame_equal(later(), table)


def _table_read_whole(monkeypatch) -> list:
    """The trace tables read whole from the analysis cache (Later calls of `ordered`) from now
    on: the list they are appended to."""
    whole: list = []
    call = readback.Later.__call__

    def read(self):
        got = call(self)
        if isinstance(got, pd.DataFrame) and "OP CODE" in got.columns:
            whole.append(got)
        return got

    monkeypatch.setattr(readback.Later, "__call__", read)
    return whole


#: real files with what decides the header's facts: replay sessions, signpost iterations, an op
#: sequence, several devices, host ops
_AFTER_CSV = ("tt-perf-report__wh_clip_encoder_2.csv", "tt-perf-report__bh20_oft.csv",
              "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
              "tt-perf-report__bh20_oft_integral_image_trace.csv",
              "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv")


def test_a_report_after_a_csv_report_reads_only_the_columns_it_uses(cached, tmp_path,
                                                                    monkeypatch):
    """After a csv run kept the view, a table, json or markdown run writes what a run without
    the cache writes, reading the trace table's columns it needs alone (the iterations', the
    why-slow figures', the guide rules'), never the whole table (77 columns, ~250 MB of a
    million ops: a table run after a csv run peaked at 890 MiB reading it for the ranks);
    storing the grown view again copies the table as it was stored, unread."""
    monkeypatch.setattr(analysis_cache, "BIG", 16)  # (a small trace's frames as a large one's)
    whole = _table_read_whole(monkeypatch)
    views: list = []
    read = analysis_cache.Entry.read
    monkeypatch.setattr(analysis_cache.Entry, "read",
                        lambda self, lazy=False: views.append(read(self, lazy)) or views[-1])
    for name in _AFTER_CSV:
        src = real_dir() / name
        for fmt in ("table", "json", "markdown"):
            want = _run(src, tmp_path / f"want.{fmt}", fmt, "--no-cache")
            for f in cached.glob("*.view"):
                f.unlink()
            _run(src, tmp_path / "out.csv", "csv")
            views.clear()
            assert _run(src, tmp_path / f"out.{fmt}", fmt) == want, (name, fmt)
            assert views and "ordered" not in views[0].trace.__dict__, (name, fmt)
            assert _run(src, tmp_path / f"out.{fmt}", fmt) == want, (name, fmt)  # stored again
        assert not whole, name
    # what was copied is the table: read back, it is the one a cold read makes
    from ttdash.model.trace import Trace

    pd.testing.assert_frame_equal(views[-1].trace.ordered, Trace.load(src).ordered)


def _labels_read(module) -> set[str]:
    """Every string constant in `module`'s source (the column labels it names among them)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(module))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def test_the_columns_read_alone_are_every_column_their_readers_name():
    """The iterations and the why-slow figures read only some columns of a table the cache has
    not read back; a column their code names but they leave out would read as missing (NaN,
    silently). Every column label of the real files named in iterations.py is in its READ (or
    an input's shape), every one named in progcache.py and ccl.py (which read the why-slow
    table) in whyslow's _READ (or its prefixes), and every one the data warnings read in the
    columns Trace.warnings gives them."""
    from ttdash.model.analysis import ccl, iterations, progcache, whyslow
    from ttdash.model.trace import Trace

    labels = set()
    for f in real_dir().glob("*.csv"):
        try:
            labels |= set(Trace.load(f).ordered.columns)
        except Exception:  # (an excerpt that is no report)
            continue
    assert {"OP CODE", "GLOBAL CALL COUNT", "PROGRAM HASH", "INPUT_0_W"} <= labels
    named = _labels_read(iterations) & labels
    assert named and all(c in iterations.READ or iterations._is_shape(c) for c in named), \
        sorted(c for c in named if c not in iterations.READ)
    for module in (progcache, ccl):
        named = _labels_read(module) & labels
        left_out = [c for c in named if c not in whyslow._READ
                    and not c.startswith(("INPUT_0_", "OUTPUT_", "_ATTR_"))]
        assert named and not left_out, (module.__name__, left_out)
    # the data warnings (Trace.warnings): trust.py's and progcache's in its read_columns,
    # rankarch's in its READ
    from ttdash.model.analysis import trust
    from ttdash.model.live import rankarch

    given = trust.read_columns(labels)
    for module in (trust, progcache):
        named = _labels_read(module) & labels
        assert named and named <= set(given), (module.__name__, sorted(named - set(given)))
    named = _labels_read(rankarch) & (labels | {rankarch.RANK})
    assert named and named <= set(rankarch.READ), sorted(named - set(rankarch.READ))


def test_signatures_and_a_diff_after_csv_runs_read_only_the_columns_they_use(cached, tmp_path,
                                                                             monkeypatch):
    """The ops' signatures (`history add`, `history check`) and a diff of two files a csv run
    kept are those of a run without the cache, the trace tables never read whole (a `history
    add` after a csv run peaked at 952 MiB of a million ops reading it for the signatures)."""
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.model.compare.signature import signature_codes

    monkeypatch.setattr(analysis_cache, "BIG", 16)
    a = real_dir() / "tt-perf-report__bh_p100_dlv3.csv"
    b = real_dir() / "tt-perf-report__bh_64_clip_encoder_1.csv"
    want = tmp_path / "want.json"
    assert main(["diff", str(a), str(a), "-f", "json", "-o", str(want), "--no-cache"]) in (0, 1)
    os.environ.pop("TTDASH_NO_CACHE", None)
    cold = signature_codes(load_view(str(b), WindowOptions()))
    for src in (a, b):
        _run(src, tmp_path / "out.csv", "csv")
    whole = _table_read_whole(monkeypatch)
    view = load_view(str(b), WindowOptions())
    assert "ordered" in view.trace.__dict__["_later"]  # (from the cache)
    got = signature_codes(view)
    np.testing.assert_array_equal(got[0], cold[0])
    np.testing.assert_array_equal(got[1], cold[1])
    out = tmp_path / "out.json"
    assert main(["diff", str(a), str(a), "-f", "json", "-o", str(out)]) in (0, 1)
    assert out.read_bytes() == want.read_bytes()
    assert not whole


def test_a_first_json_run_keeps_the_guide_entries_in_the_cache_folder_not_in_memory(
        cached, tmp_path, monkeypatch):
    """The first json run with the cache on writes each guide rule's entries (to be stored with
    the view) to a file of the cache's folder as the rule makes them, unlinked at once, and
    reads them back when used: no rule's frame is alive while the next rule runs; so are the
    per-op reasons once the why keys are made. What it
    writes, and what the second run writes, is what a run without the cache writes; nothing
    is left in the folder but the cache's own files. Entries that cannot be written stay in
    memory, as they were."""
    from ttdash.model.analysis import guides

    monkeypatch.setattr(analysis_cache, "BIG", 16)
    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    want = _run(src, tmp_path / "want.json", "json", "--no-cache")
    given: list = []
    kinds: list[str] = []
    spill = analysis_cache.Entry.spilled

    def spilled(self, frame):
        given.append(weakref.ref(frame))
        kinds.append("reasons" if "why_class" in frame.columns else "guide")
        return spill(self, frame)

    monkeypatch.setattr(analysis_cache.Entry, "spilled", spilled)
    rules, alive = list(guides.RULES), []

    def watched(find):
        def run(g):
            alive.append(sum(r() is not None for r in given))
            return find(g)
        return run

    monkeypatch.setattr(guides, "RULES", [watched(f) for f in rules])
    assert _run(src, tmp_path / "out.json", "json") == want
    assert len(given) > 2 and alive[-1] == 0 and not any(alive)
    assert kinds[0] == "reasons" and kinds.count("guide") == len(kinds) - 1  # (the why keys')
    assert sorted(f.suffix for f in cached.iterdir()) == [".digest", ".parquet", ".view"]
    assert _run(src, tmp_path / "out.json", "json") == want  # (from the view stored)
    assert len(alive) == len(rules)  # (the rules not run again)

    entry = analysis_cache.Entry.of(src, "test")
    frame = pd.DataFrame({"a": np.arange(40)})
    later = spill(entry, frame)
    assert isinstance(later, readback.Later)
    pd.testing.assert_frame_equal(later(), frame)

    def fails(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(analysis_cache, "dump", fails)
    assert spill(entry, frame) is frame
    assert sorted(f.suffix for f in cached.iterdir()) == [".digest", ".parquet", ".view"]


def test_the_data_warnings_of_a_stored_table_read_only_their_columns(cached, tmp_path,
                                                                      monkeypatch):
    """A view stored before its data warnings were asked for (`open` stores it first) finds
    them from the columns they read alone, never the whole table (a million ops' second `open`
    peaked above its first reading it): the warnings of a run without the cache, on files that
    have each kind (a clock that is not the arch's, a full device buffer, a trace never
    replayed, utilisation beyond 100%, counters on part of the ops, ranks of two archs)."""
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.sim.run import simulate_run

    monkeypatch.setattr(analysis_cache, "BIG", 2)  # (a 4-row excerpt's table stored apart)
    fixtures = Path(__file__).parents[1] / "fixtures" / "edge"
    ttrun = tmp_path / "ttrun"
    for r, arch in enumerate(("wormhole_b0", "blackhole")):
        simulate_run(ttrun / f"rank{r}", n_ops=40, speed=0, seed=1, arch=arch,
                     timestamp=f"2026_01_01_00_00_0{r}")
    sources = [real_dir() / "tt-perf-report__bh20_oft.csv",
               real_dir() / "ttnn-visualizer__smoke_ops_perf_results_n300__EXCERPT_first5lines.csv",
               *(fixtures / f"{n}.csv" for n in ("clock_mismatch", "device_buffer_full",
                                                  "trace_not_replayed")), ttrun]
    kinds = set()
    for src in sources:
        os.environ["TTDASH_NO_CACHE"] = "1"
        try:
            cold = load_view(str(src), WindowOptions())
            want = [w.as_dict() for w in cold.warnings()]
        finally:
            os.environ.pop("TTDASH_NO_CACHE")
        kinds |= {w["kind"] for w in want}
        if src == ttrun:  # (ranks merged are not kept: their table as if stored)
            cold.trace.__dict__["_later"] = {"ordered": _Stored(cold.trace.__dict__.pop("ordered"))}
            cold.trace.__dict__.pop("_warnings")
            assert [w.as_dict() for w in cold.warnings()] == want
            continue
        _run(src, tmp_path / "out.csv", "csv")
        view = load_view(str(src), WindowOptions())
        assert "ordered" in view.trace.__dict__["_later"], src  # (from the cache)
        view.trace.__dict__.pop("_warnings")  # (as `open` stores it)
        whole = _table_read_whole(monkeypatch)
        assert [w.as_dict() for w in view.warnings()] == want, src
        assert not whole, src
    assert {"clock_mismatch", "device_data_missing_tail", "trace_not_replayed",
            "values_beyond_limits", "counters_incomplete", "ranks_mixed_arch"} <= kinds


class _Stored:
    """A table as the analysis cache's Later has it: its labels, and columns read alone; read
    whole, a failure."""

    def __init__(self, table: pd.DataFrame):
        self.table, self.labels = table, table.columns

    def select(self, labels) -> pd.DataFrame:
        return self.table[[c for c in self.table.columns if c in set(labels)]]

    def __call__(self):
        raise AssertionError("the whole table read")


async def test_a_second_open_reads_only_the_columns_its_first_screen_uses(cached, monkeypatch):
    """`open` stores the view with its data warnings (the header's), before its first screen
    asks for the counter columns (the op table's optional columns): the second `open` finds
    those, and an op's counters, from their columns alone, never the whole table (a million
    ops' second open peaked above its first reading it for both), and they are the first's."""
    from ttdash.commands.common import view_of
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_app

    monkeypatch.setattr(analysis_cache, "BIG", 16)
    src = str(real_dir() / "tt-perf-report__bh20_oft.csv")  # (counters, a data warning)
    seen = []
    for k in range(2):
        view = view_of(src, WindowOptions(), "lazy")
        if k:
            assert "ordered" in view.trace.__dict__["_later"]  # (from the cache)
            assert "_warnings" in view.trace.__dict__ and "_counter_names" not in \
                view.trace.__dict__  # (what the first open stored)
            whole = _table_read_whole(monkeypatch)
        async with open_app(view).run_test(size=(120, 40)) as pilot:
            await pilot.pause()
        seen.append(([w.as_dict() for w in view.warnings()], view.counter_names,
                     view.with_counters(view.ops.iloc[::50])))
    assert not whole
    (warned, names, rows), (warned2, names2, rows2) = seen
    assert warned and warned2 == warned and names and names2 == names
    pd.testing.assert_frame_equal(rows2, rows)
    assert set(names) <= set(rows.columns)
