"""present/table.py: one Column/TableSpec per table and one vectorised `cells` for the TUI and the
text outputs; every colour rule of the op columns applied; a column added to a spec shows in both
front ends (docs/contributing.md, "Add a column" and "Add a table")."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.model.columns import BY_KEY, SEVERITY, Severity
from ttdash.model.compare.diff import diff_traces
from ttdash.present import table as tables
from ttdash.present.labels import op_labels
from ttdash.present.table import (
    JSON_TYPES,
    OPS,
    SCREEN,
    SUMMARY_GROUPS,
    TEXT,
    Column,
    TableSpec,
    cells,
    diff_groups,
    diff_side,
    signed_rule,
)

A = "tt-perf-report__bh_64_clip_encoder_1.csv"
B = "tt-perf-report__wh_clip_encoder_2.csv"
OPS_FILE = "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"  # per-core times, PM IDEAL


def _view(name: str):
    return Trace.load(real_dir() / name).view(Window("all"))


def _all_specs() -> list[TableSpec]:
    return [OPS, tables.DIFF_PAIRS, diff_side("baseline"), diff_side("candidate"),
            diff_groups("op_code"), diff_groups("region"), SUMMARY_GROUPS, tables.WHY_GROUPS,
            tables.WHY_OPS, tables.RUNS, tables.CULPRITS, tables.op_groups("op_code", "Op code")]


@pytest.mark.parametrize("spec", _all_specs(), ids=lambda s: s.name)
def test_every_column_has_a_kind_with_a_json_type_and_a_meaning(spec):
    assert spec.columns
    for c in spec.columns:
        assert c.kind in JSON_TYPES, (spec.name, c.key, c.kind)
        assert c.meaning.strip(), (spec.name, c.key)
        assert isinstance(c.nullable, bool)
    assert len(set(spec.keys())) == len(spec.columns)


def test_the_op_columns_are_the_registry_s():
    assert OPS.keys() == tuple(BY_KEY)
    for c in OPS.columns:
        assert (c.title, c.kind, c.meaning) == (BY_KEY[c.key].title, BY_KEY[c.key].kind,
                                                BY_KEY[c.key].meaning)


def test_cells_give_the_registry_s_text_and_every_colour_rule():
    """On a file with a performance model and per-core times: each coloured column's severities
    are its rule's, value by value (model efficiency and core skew included), and each number
    column's texts are its formatter's."""
    ops = _view(OPS_FILE).ops
    keys = [k for k in OPS.keys() if k in ops.columns]
    texts, sev = cells(ops, OPS.select(keys))
    assert set(SEVERITY) <= set(sev)  # every rule drawn: gap, cores, bound, eff, skew
    seen: dict[str, set] = {}
    for k in SEVERITY:
        want = [SEVERITY[k](v) for v in ops[k].to_numpy()]
        assert list(sev[k]) == want, k
        seen[k] = {s for s in want if s is not None}
    assert Severity.WARN in seen["pm_eff_pct"] and Severity.WARN in seen["core_skew"]
    assert Severity.BAD in seen["op_to_op_us"]
    for k in ("device_time_us", "op_to_op_us", "total_pct", "cores", "core_skew", "pm_eff_pct"):
        values = ops[k].to_numpy()
        want = [BY_KEY[k].fmt(v) for v in values]
        if k == "device_time_us":
            corrupt = ops["corrupt"].to_numpy(dtype=bool) if "corrupt" in ops else None
            want = ["corrupt" if corrupt is not None and corrupt[i] and not t else t
                    for i, t in enumerate(want)]
        assert texts[k] == want, k


def test_cells_leave_out_empty_optional_columns_and_fit_a_width():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [None, None], "c": ["x" * 30, "y"]})
    spec = TableSpec("t", (Column("a", "A", "num", "a", priority=0),
                           Column("b", "B", "text", "b", optional=True),
                           Column("c", "C", "text", "c", priority=5),
                           Column("d", "D", "int", "no such field")))
    texts, _ = cells(frame, spec)
    assert list(texts) == ["a", "c"] and texts["a"] == ["1.0", "2.0"]
    texts, _ = cells(frame, spec, width=10)
    assert list(texts) == ["a"]  # C (30 cells) gave way; A (priority 0) never does
    frame["b"] = ["cause", None]
    assert list(cells(frame, spec)[0]) == ["a", "b", "c"]


def test_signed_rule():
    got = signed_rule(np.array([1.5, -2.0, 0.0, np.nan], dtype=object), pd.DataFrame())
    assert list(got) == [Severity.BAD, Severity.GOOD, None, None]


# ------------------------------------------------------------------ add a column, once
ADDED = Column("gap_delta_us", "Gap delta", "us", "candidate - baseline op-to-op gap",
               short="Δ gap", unit="us", width=9, priority=1, rule=signed_rule)


async def test_a_column_added_to_the_diff_pairs_spec_shows_in_the_tui_and_the_text_table(
        monkeypatch):
    """The one edit of "Add a column" to a diff: a Column in present.table.DIFF_PAIRS (a field
    the model's pairs already carry). The text table's regressions and the TUI diff table both
    show it, with the same text for the same pair and its colour rule drawn."""
    from ttdash.report.diff import to_table
    from ttdash.tui.diffview import DiffTable, diff_app

    result = diff_traces(_view(A), _view(B))
    before = io.StringIO()
    to_table(result, before)
    assert "Gap delta" not in before.getvalue()
    monkeypatch.setattr(tables, "DIFF_PAIRS",
                        tables.DIFF_PAIRS.with_column(ADDED, after="delta_pct"))
    out = io.StringIO()
    to_table(result, out, width=400)  # wide enough for every column uncut
    lines = out.getvalue().splitlines()
    head = next(k for k, ln in enumerate(lines) if "Gap delta" in ln)
    assert lines[head].index("Delta %") < lines[head].index("Gap delta")
    top = result.regressions(10)
    want = ADDED.format_one(top["gap_delta_us"].iloc[0])
    assert want and want in lines[head + 1]

    app = diff_app(result)
    async with app.run_test(size=(220, 30)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(DiffTable)
        assert "gap_delta_us" in [c.key for c in t.visible_columns()]
        header = "".join(seg.text for seg in t.render_line(0))
        assert "Δ gap" in header and header.index("Δ%") < header.index("Δ gap")
        # the first row drawn (display position 0: its op is the frame's row rows[0])
        text, style = t._cell(next(c for c in t.all_columns if c.key == "gap_delta_us"), 9, 0)
        v = t.ops["gap_delta_us"].iloc[int(t.rows[0])]
        assert text == ADDED.format_one(v)
        if not np.isnan(v) and v != 0:
            assert style is not None  # the column's colour rule
    assert "gap_delta_us" not in [c.key for c in DiffTable.COLUMNS]  # the class is untouched


def test_the_diff_spec_s_screen_and_text_columns():
    screen = [c.key for c in tables.DIFF_PAIRS.on(SCREEN)]
    text = [c.key for c in tables.DIFF_PAIRS.on(TEXT)]
    assert "cause" in screen and "cause" in text  # the Cause column in both front ends
    assert screen[:4] == ["baseline_id", "candidate_id", "status", "op_code"]
    assert text[:4] == ["n", "op", "baseline_id", "candidate_id"]


def test_a_new_table_is_one_spec_in_the_text_outputs_and_the_tui_s_columns():
    """"Add a table", done once: a TableSpec; report/history.rows_table writes it as a table and
    as markdown (titles, kinds' formats, alignment), tui/diffview.screen_columns lays it out."""
    from ttdash.report.history import rows_table
    from ttdash.tui.diffview import screen_columns

    spec = TableSpec("demo", (
        Column("name", "Name", "label", "a name", False, short="N"),
        Column("n", "Count", "count", "how many", width=7, priority=0),
        Column("t", "Time", "us", "a time", unit="us", priority=3),
        Column("d", "Change", "dpct", "a change", unit="%", rule=signed_rule),
    ), "a table made in a test")
    rows = [{"name": "a\x1bb", "n": 12345, "t": 1500.0, "d": 2.5},
            {"name": "c", "n": None, "t": None, "d": -1.0}]
    out = io.StringIO()
    rows_table(rows, spec, out, "table")
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["Name", "Count", "Time", "Change"]
    assert lines[1].split()[1:] == ["12,345", "1,500", "us", "+2.50%"]
    assert "\x1b" not in out.getvalue()  # a label's control characters made visible
    assert lines[2].split() == ["c", "-1.00%"]
    md = io.StringIO()
    rows_table(rows, spec, md, "markdown")
    assert "|---|---:|---:|---:|" in md.getvalue()
    frame = pd.DataFrame(rows)
    _, sev = cells(frame, spec)
    assert list(sev["d"]) == [Severity.BAD, Severity.GOOD]
    cols = screen_columns(spec)
    assert [(c.key, c.title, "left" if c.left else "right") for c in cols] == [
        ("name", "N", "left"), ("n", "Count", "right"), ("t", "Time", "right"),
        ("d", "Change", "right")]
    assert cols[1].width == 7 and cols[1].priority == 0
    assert all(c in spec.columns or c.title == c.head for c in cols)  # the TUI's head


def test_the_op_table_draws_the_spec_s_cells_with_its_digits() -> None:
    """The TUI op table's cells are present.table.cells of OPS: a pct column with 0 digits
    (Eff%) is drawn with 0, as the text outputs write it; a colour rule colours it."""
    from ttdash.model.columns import Severity
    from ttdash.present.screen import on_screen
    from ttdash.present.table import OPS, SCREEN, TableSpec
    from ttdash.tui.optable import PICKABLE_COLUMNS

    eff = next(c for c in PICKABLE_COLUMNS if c.key == "pm_eff_pct")
    assert eff.title == OPS.by_key["pm_eff_pct"].head and eff.priority == 1
    frame = pd.DataFrame({"id": [1, 2], "op_code": ["A", "B"], "size": ["", "8x8"],
                          "pm_eff_pct": [12.34, float("nan")], "is_host": [True, False]})
    texts, sev = cells(frame, TableSpec("t", (on_screen(OPS.by_key["op_code"]), eff)),
                       where=SCREEN)
    assert texts["pm_eff_pct"] == ["12%", ""]
    assert texts["op_code"] == ["A", "B 8x8"] and sev["op_code"][0] == Severity.BAD
    assert sev["pm_eff_pct"][0] == Severity.WARN and sev["pm_eff_pct"][1] is None


async def test_the_op_table_makes_cells_again_for_rows_appended_to_a_short_block() -> None:
    """Live growth: the block of cells that was short of rows is made again with the new ones
    (the rows drawn before keep theirs); a re-sort makes every block again."""
    from textual.app import App

    from ttdash.tui.optable import OpTable

    def ops(n: int) -> pd.DataFrame:
        return pd.DataFrame({"id": np.arange(1, n + 1), "op_code": [f"Op{i}" for i in range(n)],
                             "device_time_us": np.arange(n, dtype=float) + 1.5})

    class One(App[None]):
        def compose(self):
            yield OpTable()

    app = One()
    async with app.run_test(size=(100, 20)) as pilot:
        t = app.query_one(OpTable)
        t.set_data(ops(3), np.arange(3))
        await pilot.pause()
        dev = next(c for c in t.visible_columns() if c.key == "device_time_us")
        assert t._cell(dev, 9, 2)[0] == "3.50 us"
        t.append_rows(ops(5), np.arange(5), follow=False)
        assert [t._cell(dev, 9, p)[0] for p in (2, 4)] == ["3.50 us", "5.50 us"]
        t.set_data(t.ops, np.arange(5)[::-1])  # another order: every block again
        assert t._cell(dev, 9, 0)[0] == "5.50 us"


@pytest.mark.parametrize("categorical", [False, True])
def test_op_labels_word_each_distinct_op_as_each_row_would_be(categorical):
    """op_labels words each distinct (code, size, corrupt) once: every row's label is the one
    the row on its own gets, cut to the limit, with no size, an empty size, a missing code."""
    rng = np.random.default_rng(7)
    n = 4000
    frame = pd.DataFrame({
        "op_code": rng.choice(np.array(["Matmul", "Add", None, "X" * 70], dtype=object), n),
        "size": rng.choice(np.array(["1x2", "", None, "3x4x5"], dtype=object), n),
        "corrupt": rng.random(n) < 0.1})
    if categorical:
        frame = frame.astype({"op_code": "category", "size": "category"})

    def one(code, size, bad, limit):
        s = "" if code is None or code is pd.NA else str(code)
        s = f"{s} {size}" if isinstance(size, str) and size else s
        s = "! " + s if bad else s
        return s if len(s) <= limit else s[:limit - 1] + "…"

    rows = list(zip(frame["op_code"].astype(object), frame["size"].astype(object),
                    frame["corrupt"]))
    for limit in (60, 32):
        assert op_labels(frame, limit=limit) == [one(c, s, b, limit) for c, s, b in rows]
        assert op_labels(frame, limit=limit, raw=True) == \
            [one(c, None, b, limit) for c, _, b in rows]
    labels = op_labels(frame)
    assert "! Matmul 1x2" in labels and "Add" in labels and ("X" * 59 + "…") in labels
    bare = frame[["op_code"]]
    assert op_labels(bare) == [one(c, None, False, 60) for c, _, _ in rows]


@pytest.mark.parametrize("name", [A, B, OPS_FILE])
def test_worded_columns_are_the_cells_each_distinct_value_worded_once(name, monkeypatch):
    """worded (each column's distinct values worded once, a position per row) gives every
    text cells() makes, row by row, on real files (corrupt rows' missing device time, op
    labels with and without sizes) and on values whose texts tell apart what a hash takes as
    one (-0.0 and 0.0), missing values, categoricals with unused wide categories; formatted
    `chunk` values at a time or all at once; positions in the narrowest integers; each
    column's widest text's width; a column of more distinct values than KEEP_DISTINCT (or
    values with no codes) as its width alone."""
    ops = _view(name).ops
    spec = OPS.select([k for k in OPS.keys() if k in ops.columns])
    odd = ops.head(40).copy()
    odd["device_time_us"] = [-0.0, 0.0, np.nan, 1e7] * 10
    odd["corrupt"] = [False, False, True, True, False, False, False, False] * 5  # (NaN: 2, 6)
    odd["bound"] = pd.Categorical(["DRAM", None] * 20, categories=["DRAM", "X" * 90])
    for frame in (ops, odd):
        texts, _ = cells(frame, spec, severity=False)
        for chunk, most in ((1 << 62, 1 << 16), (7, 1 << 16), (7, 8)):
            monkeypatch.setattr(tables, "KEEP_DISTINCT", most)
            words = tables.worded(frame, spec, chunk=chunk)
            assert list(words) == list(texts)
            alone = [k for k, (_, coded) in words.items() if coded is None]
            assert bool(alone) == (most == 8), alone  # too many distinct values: a width
            for key, (width, coded) in words.items():
                assert width == max(map(len, texts[key]), default=0), key
                if coded is None:
                    continue
                assert np.asarray(coded.at).dtype.itemsize <= 2  # (a few distinct values)
                assert np.array(coded.texts.to_pylist(), dtype=object)[coded.at].tolist() \
                    == texts[key], key
    monkeypatch.setattr(tables, "KEEP_DISTINCT", 1 << 16)
    assert "corrupt" in tables.worded(odd, spec)["device_time_us"][1].texts.to_pylist()
    assert "X" * 90 not in tables.worded(odd, spec)["bound"][1].texts.to_pylist()
    mixed = odd.assign(cores=pd.Series([1, 1.0, 22] * 13 + [1], dtype=object))  # no codes
    assert tables.worded(mixed, spec)["cores"] == (2, None)
