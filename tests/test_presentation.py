"""Issue #31, one presentation layer: what every output shows of a number (whole ids, readable
cursor rows in every theme, narrow report tables, JSON floats, markdown columns, header facts,
shapes and per-device labels)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import bundled_themes, real_dir, screen_text
from textual.app import App, ComposeResult

from ttdash.tui.optable import OpTable

SIZE = (80, 24)
OFT = "tt-perf-report__bh20_oft.csv"


class TableApp(App):
    def __init__(self, ops: pd.DataFrame) -> None:
        super().__init__()
        self.ops = ops

    def compose(self) -> ComposeResult:
        yield OpTable()

    def on_mount(self) -> None:
        self.query_one(OpTable).set_data(self.ops, np.arange(len(self.ops)))


def million_ops() -> pd.DataFrame:
    """The last rows of a 1,000,011-op trace: ids 999,990 .. 1,000,011."""
    ids = np.arange(999_990, 1_000_012)
    return pd.DataFrame({
        "id": ids, "op_code": ["MatmulDeviceOperation"] * len(ids),
        "device_time_us": np.full(len(ids), 12.5), "op_to_op_us": np.full(len(ids), 3.0),
        "total_pct": np.full(len(ids), 0.0001), "bound": [""] * len(ids),
        "global_call_count": ids * 1024, "is_signpost": np.zeros(len(ids), bool)})


async def test_ids_of_a_million_op_trace_are_whole_at_80x24():
    app = TableApp(million_ops())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.query_one(OpTable).action_last()
        await pilot.pause()
        text, _ = screen_text(app)
    lines = [ln.split() for ln in text.splitlines()]
    shown = [int(w[0]) for w in lines[1:] if w and w[0].isdigit()]
    assert shown and shown[-1] == 1_000_011
    assert len(set(shown)) == len(shown)  # no two ops look alike
    assert all(i >= 999_990 for i in shown)


async def test_a_cut_cell_shows_a_mark():
    """A column too narrow for its text ends it with "…", never a silent cut."""
    from ttdash.tui.optable import fit

    assert fit("1608704", 6, False) == "16087…"
    assert fit("ReshapeDeviceOperation", 8, True) == "Reshape…"
    assert fit("12", 4, False) == "  12"


async def test_call_count_of_bh20_oft_is_whole_at_80x24():
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    view = Trace.load(real_dir() / OFT, columns="all").view(Window("all"))
    pos = int(np.flatnonzero(view.ops["id"].to_numpy() == 1622)[0])
    assert int(view.ops["global_call_count"].iloc[pos]) == 1608704
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(OpTable)
        # room for the call count at 80 columns: the bars and bound give way
        table.hidden_columns = frozenset({"dram_pct", "flops_pct", "bound", "total_pct"})
        table.cursor = int(np.flatnonzero(table.rows == pos)[0])
        await pilot.pause()
        assert "global_call_count" in [c.key for c in table.visible_columns()]
        text, _ = screen_text(app)
    row = next(ln for ln in text.splitlines() if ln.split()[:1] == ["1622"])
    assert "1608704" in row.split()


# ------------------------------------------------------------------ 2: readable cursor rows
def _luminance(rgb) -> float:
    def ch(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = rgb
    return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)


def contrast(a, b) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def screen_cells(app) -> list[list[tuple[str, tuple, tuple]]]:
    """Each screen line as (text, fg rgb, bg rgb) runs, colours resolved as a terminal with the
    app's ANSI palette would show them (default colours included)."""
    from conftest import screen_console
    from rich.segment import Segment

    console = screen_console(app)
    term = app.ansi_theme
    segs = [s for s in console._record_buffer if not s.control]
    out = []
    for line in Segment.split_lines(segs):
        runs = []
        for seg in line:
            style = seg.style
            fg, bg = style.color, style.bgcolor
            fgc = fg.get_truecolor(term, foreground=True) if fg else term.foreground_color
            bgc = bg.get_truecolor(term, foreground=False) if bg else term.background_color
            if style.reverse:
                fgc, bgc = bgc, fgc
            runs.append((seg.text, tuple(fgc), tuple(bgc)))
        out.append(runs)
    return out


THEMES = ["ttdash-dark", "ttdash-light", "ttdash-ansi", "NO_COLOR"]


def test_every_bundled_theme_is_in_the_contrast_test():
    assert set(bundled_themes()) <= set(THEMES)


@pytest.mark.parametrize("theme", THEMES)
async def test_cells_readable_on_the_cursor_row_and_a_normal_row(theme, monkeypatch):
    """Each cell's text against its background, WCAG ratio >= 3:1, on the cursor row (the
    cursor's style wins over cell colours: DRAM% and FLOP% bars, red gaps) and a normal row."""
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    if theme == "NO_COLOR":
        monkeypatch.setenv("NO_COLOR", "1")
    view = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv",
                      columns="all").view(Window("all"))
    app = open_app(view, theme=None if theme == "NO_COLOR" else theme)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(OpTable)
        dram = view.ops["dram_pct"].to_numpy()
        gap = view.ops["op_to_op_us"].to_numpy()
        # the cursor on an op with a DRAM bar; the next row with a bar and a red gap
        with_bar = np.flatnonzero(~np.isnan(dram[table.rows]) & (gap[table.rows] > 6.5))
        table.cursor = int(with_bar[0])
        await pilot.pause()
        top = int(table.scroll_offset.y)
        cells = screen_cells(app)
        y0 = table.region.y + 1 + table.cursor - top
        normal = y0 + 1 if y0 + 1 < table.region.bottom else y0 - 1
        for y in (y0, normal):
            for text, fg, bg in cells[y]:
                if text.strip():
                    assert contrast(fg, bg) >= 3.0, (theme, y - y0, text, fg, bg)
        # the bars were looked at (a bar's text may share its run with the cells beside it:
        # the table makes one segment of neighbouring cells of one style)
        assert re.search(r"\d%", "".join(t for t, _, _ in cells[y0]))


# ------------------------------------------------------------------ 3: report at 80 columns
def test_report_table_at_80_columns_keeps_id_time_and_gap():
    import io

    from ttdash.model import Trace, Window
    from ttdash.report.single import to_table

    view = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv").view(Window("all"))
    buf = io.StringIO()
    to_table(view, buf, width=80)
    lines = buf.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= 80
    head = next(ln for ln in lines if ln.split()[:1] == ["ID"])
    assert {"ID", "Device", "Gap"} <= set(head.split())
    row = next(ln for ln in lines if ln.split()[:1] == ["8"])
    assert "951.8 ms" in row and "60.9 us" in row  # op 8's gap and device time
    assert "MinimalMatmulOp 32 x 12…" in row  # the op code gives way, with a mark
    # the advice's "ID n" is a row on screen
    ids = {ln.split()[0] for ln in lines if ln[:4].strip().isdigit()}
    advised = [ln.split()[1] for ln in lines if ln.strip().startswith("ID ")
               and ln.split()[1].isdigit()]
    assert advised and set(advised) <= ids
    # header lines broken between words: each piece ends and starts on a whole word
    from ttdash.report.single import summary_lines

    words = set(" ".join(lines).split())
    for line in summary_lines(view):
        assert set(line.split()) <= words, line


# ------------------------------------------------------------------ 4: shares and their basis
def test_each_share_names_its_basis():
    from ttdash.model.columns import BY_KEY, legend
    from ttdash.present.table import SUMMARY_GROUPS

    assert "wall" in BY_KEY["total_pct"].title and "wall" in BY_KEY["total_pct"].basis
    assert "device" in SUMMARY_GROUPS.by_key["total_pct"].title
    terms = dict(legend())
    assert "wall time" in terms["Wall%"] and "device time" in terms["Share (grouped)"]


# ------------------------------------------------------------------ 5: JSON numbers
def test_json_floats_have_six_decimals_and_shares_six_digits(capsys):
    import json
    import re

    from ttdash.cli import main

    assert main(["report", "-f", "json", str(real_dir() / OFT)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    pat = r'"([a-z_]+)":(-?\d+\.\d{7,})'
    long = [m for m in re.findall(pat, text) if m[0] != "total_pct"]
    assert long == [], long[:5]
    shares = [op["total_pct"] for op in doc["ops"] if op["total_pct"]]
    assert min(shares) < 1e-3  # a tiny share keeps its digits: 6 significant
    assert all(len(f"{s:.15g}".replace(".", "").lstrip("0").split("e")[0]) <= 6 for s in shares)
    assert "121.55499999999999" not in text and "8.627000000000001" not in text


# ------------------------------------------------------------------ 6: markdown columns
def test_markdown_leaves_out_columns_empty_in_every_row(capsys):
    from ttdash.cli import main

    assert main(["report", "-f", "markdown", "--no-advice",
                 str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")]) == 0
    head = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ID"))
    assert "Config" not in head and "Overlap" not in head
    assert "| Device time |" in head and "Cores" in head


# ------------------------------------------------------------------ 7: the TUI header
def test_fmt_share_keeps_small_shares():
    from ttdash.format import fmt_share

    assert fmt_share(0.22) == "0.2%" and fmt_share(0.0) == "0%" and fmt_share(0.01) == "<0.1%"
    assert fmt_share(70.59) == "71%" and fmt_share(99.78) == "99.8%"


async def test_header_at_80_columns_keeps_host_share_and_window():
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    seg = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
    app = open_app(Trace.load(real_dir() / seg).view(Window("all")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
    line2 = text.splitlines()[1]
    assert "HOST 0%" in line2 and line2.rstrip().endswith("whole file"), line2
    assert "device 5,182 us" in line2 and "…" not in line2


async def test_header_shows_a_small_share_with_its_decimal():
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    ops = "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"
    app = open_app(Trace.load(real_dir() / ops).view(Window("all")))
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        text, _ = screen_text(app)
    assert "SLOW 0.2%" in text.splitlines()[1]


# ------------------------------------------------------------------ 9: shapes, per-device sums
def test_tensor_shapes_are_whole_numbers():
    """A compact column's dims are numpy float32 (4096.0): shown as 1×1×4096×64."""
    import io

    from rich.console import Console

    from ttdash.tui.details import _tensors

    raw = pd.Series({"INPUT_0_MEMORY": "DEV_0_DRAM_INTERLEAVED", "INPUT_0_LAYOUT": "TILE",
                     "INPUT_0_DATATYPE": "BFLOAT16", "INPUT_0_W": np.float32(1.0),
                     "INPUT_0_Z": np.float32(1.0), "INPUT_0_Y": np.float32(4096.0),
                     "INPUT_0_X": np.float32(64.0)}, dtype=object)
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(_tensors(raw))
    assert "1×1×4096×64" in console.export_text()


def test_per_device_totals_say_they_are_summed(capsys):
    from ttdash.cli import main

    ds = str(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    assert main(["report", "--per-device", "--no-advice", ds]) == 0
    out = capsys.readouterr().out
    time = next(ln for ln in out.splitlines() if ln.startswith("Time:"))
    assert "pauses 722.57 s" in time and "times summed over 8 devices" in time
    assert main(["report", "--no-advice", ds]) == 0
    assert "summed" not in capsys.readouterr().out


# ------------------------------------------------------------------ 8: chart axes
def test_ticks_are_round_and_evenly_spaced():
    from ttdash.format import linear_ticks, log_ticks

    values, labels = linear_ticks(0, 131137.0 * 1.05, 4)
    assert labels == ["0", "50k", "100k"] and values == [0, 50_000, 100_000]
    values, labels = linear_ticks(0, 0.37, 4)
    assert labels == ["0", "0.1", "0.2", "0.3"]
    assert log_ticks(0.5, 4000)[1] == ["1", "10", "100", "1,000"]
    assert log_ticks(15, 300)[1] == ["20", "50", "100", "200"]


def _axis_labels(text: str) -> tuple[list[str], list[str]]:
    """(y labels left of "┤", x labels on the line under the "┬" axis) of a plotext chart."""
    import re

    lines = text.splitlines()
    ys = [m.group(1) for ln in lines if (m := re.search(r"([\d.,]+[kM]?)┤", ln))]
    ys = [y for y in ys if y != "0"]
    xs: list[str] = []
    for i, ln in enumerate(lines[:-1]):
        if "┬" in ln and "└" in ln:
            xs = re.findall(r"[\d.,]+[kM]?", lines[i + 1][ln.index("└"):])
    return ys, xs


def _mantissa(label: str) -> float:
    v = float(label.replace(",", "").rstrip("kM"))
    while v >= 10:
        v /= 10
    while 0 < v < 1:
        v *= 10
    return round(v, 6)


async def test_roofline_and_run_chart_axes_have_round_ticks():
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    view = Trace.load(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
                      columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        await pilot.pause()
        roof, _ = screen_text(app)
        await pilot.press("2")
        await pilot.pause()
        grouped, _ = screen_text(app)
    ys, xs = _axis_labels(roof)
    assert len(ys) >= 2 and len(xs) >= 1, roof
    assert all(_mantissa(t) in (1, 2, 5) for t in ys + xs), (ys, xs)  # log axes: 1-2-5
    ys, xs = _axis_labels(grouped)
    assert len(ys) >= 3 and len(xs) >= 3, grouped
    for labels in (ys, xs):
        v = sorted(float(t.replace(",", "").rstrip("k")) for t in labels)
        steps = {round(b - a, 6) for a, b in zip(v, v[1:])}
        assert len(steps) == 1 and _mantissa(str(steps.pop())) in (1, 2, 5), labels


# ------------------------------------------------------------------ one spec, one registry
def test_every_column_of_every_output_is_declared_in_the_spec(capsys):
    """json keys, csv header, markdown and table titles, the op table, copy and details
    fields: each a column of model.columns (the file's own counter columns aside)."""
    import csv
    import io
    import json

    from ttdash.cli import main
    from ttdash.model import Trace, Window
    from ttdash.model.columns import BY_KEY, COPY_FIELDS
    from ttdash.tui.optable import COLUMNS as TABLE_COLUMNS

    path = str(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    counters = set(Trace.load(path, columns="all").view(Window("all")).counter_names)
    titles = {c.title for c in BY_KEY.values()} | {c.short for c in BY_KEY.values()}
    outs = {}
    for fmt in ("json", "csv", "markdown", "table"):
        assert main(["report", "-f", fmt, "--no-advice", path]) == 0
        outs[fmt] = capsys.readouterr().out
    json_keys = set(json.loads(outs["json"])["ops"][0])
    csv_keys = set(next(csv.reader(io.StringIO(outs["csv"]))))
    md_titles = next(ln for ln in outs["markdown"].splitlines() if ln.startswith("| ID"))
    md_titles = {t.strip() for t in md_titles.strip("|").split("|")}
    assert json_keys - counters <= set(BY_KEY), json_keys - counters - set(BY_KEY)
    assert csv_keys - counters <= set(BY_KEY), csv_keys - counters - set(BY_KEY)
    assert md_titles <= titles, md_titles - titles
    head = next(ln for ln in outs["table"].splitlines() if ln.split()[:1] == ["ID"])
    assert all(any(t in head for t in (BY_KEY[k].title, BY_KEY[k].short))
               for k in ("id", "op_code", "device_time_us", "op_to_op_us", "total_pct"))
    assert {c.key for c in TABLE_COLUMNS} <= set(BY_KEY)
    assert set(COPY_FIELDS) <= set(BY_KEY)


def test_format_choices_come_from_the_registry():
    from ttdash.cli import build_parser
    from ttdash.report import formats

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command in ("report", "diff", "doctor", "watch"):
        action = next(a for a in sub.choices[command]._actions if a.dest == "format")
        assert tuple(action.choices) == formats.choices(command), command
    assert formats.for_path("x.perfetto.json").name == "perfetto"
    assert formats.for_path("x.JSON").name == "json"
    assert formats.for_path("x.md").name == "markdown"
    assert formats.for_path("x.xlsx") is None


def test_layout_and_filter_keys_come_from_the_column_spec():
    from ttdash.model.columns import BY_KEY, SCREEN_FIELDS, filter_aliases
    from ttdash.model.query import FILTER_KEYS
    from ttdash.tui.optable import COLUMNS as TABLE_COLUMNS

    assert [c.key for c in TABLE_COLUMNS] == list(SCREEN_FIELDS)
    for c in TABLE_COLUMNS:
        spec = BY_KEY[c.key]
        assert (c.title, c.width, c.priority, c.align) == \
            (spec.short, spec.width, spec.priority, spec.align)
    aliases = filter_aliases()
    assert {k: v for k, v in FILTER_KEYS.items() if v in BY_KEY} == aliases


# ------------------------------------------------------------------ one list of header facts
def test_tui_header_report_and_watch_once_state_the_same_facts(tmp_path, capsys):
    """report.header.timing_facts is the one list: the TUI header's second line, report's
    Time: and bound lines, and watch --once's JSON header hold the same facts."""
    import json

    from ttdash.cli import main
    from ttdash.live.feed import read_live
    from ttdash.model import Trace, Window
    from ttdash.report.header import timing_facts
    from ttdash.sim import simulate_run
    from ttdash.tui.app import summary_text

    seg = real_dir() / "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
    view = Trace.load(seg).view(Window("all"))
    facts = timing_facts(view)
    assert {"device", "dispatch", "pauses", "bound:HOST", "window"} <= {f.key for f in facts}
    tui = str(summary_text(view)).splitlines()[1]
    assert all(f.text in tui for f in facts), (tui, facts)
    assert main(["report", "--advice", "none", str(seg)]) == 0
    lines = capsys.readouterr().out.splitlines()
    time = next(ln for ln in lines if ln.startswith("Time: "))
    bound = next(ln for ln in lines if ln.startswith("Device time by bound: "))
    for f in facts:
        where = bound if f.key.startswith("bound:") else time
        if f.key != "window":
            assert f.text in where, (f, where)
    assert f"Window: {view.description};" in "\n".join(lines)

    root = tmp_path / "p"
    simulate_run(root, n_ops=120, speed=0)
    assert main(["watch", str(root), "--once"]) == 0
    state = json.loads(capsys.readouterr().out)
    live = read_live(root, None).model.view()
    assert state["live"]["header"] == pytest.approx(
        {f.key: f.raw for f in timing_facts(live)})
    assert state["live"]["header"]["device"] == pytest.approx(state["live"]["device_time_us"])
