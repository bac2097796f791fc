"""Export from the TUI by file name: the suffix picks the format from the one registry
(report.formats), the op rows in the table's order, the diff through `diff --format`'s writers."""

from __future__ import annotations

import json

import pandas as pd
from conftest import real_dir

from ttdash.model import Trace, Window
from ttdash.model.compare.diff import diff_traces
from ttdash.tui.app import open_app
from ttdash.tui.diffview import diff_app
from ttdash.tui.optable import OpTable

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"


def view_of(name: str):
    return Trace.load(real_dir() / name, columns="all").view(Window("all"))


async def _export(app, pilot, target) -> None:
    await pilot.press("e")
    app.screen.query_one("Input").value = str(target)
    await pilot.press("enter")
    for _ in range(50):
        await pilot.pause()
        if target.exists():
            break


async def test_export_picks_the_writer_by_suffix(tmp_path):
    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.screen.query_one(OpTable)
        await pilot.press("slash", *"Matmul", "enter")
        app.screen.sort_by("op_to_op_us")
        want = [int(i) for i in v.ops["id"].to_numpy()[t.rows]]
        assert want != sorted(want)  # not the file's order: the export must keep the table's
        await _export(app, pilot, tmp_path / "v.json")
        doc = json.loads((tmp_path / "v.json").read_text())
        assert [o["id"] for o in doc["ops"]] == want  # the table's rows, in its order
        await _export(app, pilot, tmp_path / "v.perfetto.json")
        trace = json.loads((tmp_path / "v.perfetto.json").read_text())
        assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == len(want)
        await _export(app, pilot, tmp_path / "v.txt")
        assert "Matmul" in (tmp_path / "v.txt").read_text()
        await _export(app, pilot, tmp_path / "v.csv")
        ids = pd.read_csv(tmp_path / "v.csv")["id"].tolist()
        assert ids == want
        await _export(app, pilot, tmp_path / "v.xlsx")
        assert not (tmp_path / "v.xlsx").exists()
        msgs = [str(n.message) for n in app._notifications]
        assert any("no export format" in m and ".perfetto.json" in m for m in msgs), msgs


async def test_diff_export_picks_the_writer_by_suffix(tmp_path):
    app = diff_app(diff_traces(view_of(WH), view_of(BH)))
    async with app.run_test(size=(120, 36)) as pilot:
        await _export(app, pilot, tmp_path / "d.json")
        doc = json.loads((tmp_path / "d.json").read_text())
        assert {"baseline", "candidate", "verdict"} <= set(doc)
        await _export(app, pilot, tmp_path / "d.txt")
        assert "Baseline" in (tmp_path / "d.txt").read_text()


async def test_grouped_export_by_suffix(tmp_path):
    app = open_app(view_of(WH))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await _export(app, pilot, tmp_path / "g.md")
        assert (tmp_path / "g.md").read_text().startswith("| Op code | Ops | Device time |")
        await _export(app, pilot, tmp_path / "g.json")  # the op view's formats only
        assert not (tmp_path / "g.json").exists()
        msgs = [str(n.message) for n in app._notifications]
        assert any("no export format" in m and ".md" in m and ".json" not in m.split("in ")[-1]
                   for m in msgs), msgs
