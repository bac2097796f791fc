"""What the main screens look like (pytest-textual-snapshot SVGs in tests/__snapshots__)."""

from __future__ import annotations

import pytest
from conftest import ROOT, real_dir, tiered

from ttdash.model import Trace, Window
from ttdash.tui.app import open_app


def app_for(name: str, theme: str = "ttdash-dark", merge: bool = True):
    path = ROOT / name if name.startswith("fixtures/") else real_dir() / name
    return open_app(Trace.load(path, columns="all").view(Window("all"), merge=merge), theme=theme)


@pytest.mark.parametrize("size", tiered([(80, 24), (160, 48)], [(80, 24)]))
def test_open_main(snap_compare, size):
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=size,
                        press=["j", "j", "j", "j", "j", "j"])


@pytest.mark.parametrize("size", tiered([(80, 24), (160, 48)], [(80, 24)]))
def test_open_signposts(snap_compare, size):
    assert snap_compare(app_for("tt-perf-report__bh20_oft.csv"), terminal_size=size,
                        press=["o", "]", "]", "enter"])  # in file order: the 2nd signpost


def test_open_detail(snap_compare):
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=(80, 24),
                        press=["j", "j", "j", "j", "j", "j", "enter"])


def test_open_grouped(snap_compare):
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"),
                        terminal_size=(160, 48), press=["2"])


def test_open_advice_at_80x24(snap_compare):
    """`3`: the advice view, on the matmul section (bullets wrap under their bullet)."""
    assert snap_compare(app_for("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"),
                        terminal_size=(80, 24), press=["3", "G"])


def test_open_help(snap_compare):
    assert snap_compare(app_for("tt-perf-report__bh_p100_dlv3.csv"), terminal_size=(80, 24),
                        press=["question_mark"])


def test_open_light_theme_multi_device(snap_compare):
    assert snap_compare(app_for("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
                                theme="ttdash-light"), terminal_size=(160, 48))


def test_open_markup_injection(snap_compare):
    assert snap_compare(app_for("fixtures/edge/markup_injection.csv"), terminal_size=(160, 48))


def test_prompt_with_typed_text(snap_compare):
    """The filter prompt shows what was typed (a bordered Input squeezed to one line hid it)."""
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=(80, 24),
                        press=["slash", *"bound:SLOW -Reshape"])


def test_counter_columns_picked_at_80x24(snap_compare):
    """`a`: the slowest RISC and BRISC picked; the table shows them after the device time."""
    assert snap_compare(app_for("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"),
                        terminal_size=(80, 24), press=["a", "space", "down", "space", "escape"])


def test_counter_columns_screen(snap_compare):
    assert snap_compare(app_for("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"),
                        terminal_size=(80, 24), press=["a", "space", "down"])


def test_grouped_at_80x24(snap_compare):
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=(80, 24),
                        press=["2"])


def test_ansi_theme(snap_compare):
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv", theme="ttdash-ansi"),
                        terminal_size=(80, 24))


@pytest.mark.parametrize("size", tiered([(80, 24), (200, 50)], [(80, 24)]))
def test_timeline(snap_compare, size):
    """`4`: the timeline of a signposted run, pauses cut, zoomed in twice on the first op (in
    file order: the table opens on its heaviest op)."""
    assert snap_compare(app_for("tt-perf-report__bh20_oft.csv"), terminal_size=size,
                        press=["o", "4", "plus", "plus", "right", "right"])


@pytest.mark.parametrize("size", tiered([(80, 24), (200, 50)], [(80, 24)]))
def test_timeline_per_device(snap_compare, size):
    """Eight devices (--per-device): a lane each, the selected lane marked."""
    assert snap_compare(app_for("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", merge=False),
                        terminal_size=size, press=["o", "4", "right", "down"])


@pytest.mark.parametrize("size", tiered([(80, 24), (200, 50)], [(80, 24)]))
def test_roofline(snap_compare, size):
    """`5`: matmuls under the wormhole roofs, the table's op highlighted."""
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=size,
                        press=["5", "right"])


def test_why_view_at_80x24(snap_compare):
    """`6`: op codes by device time with their reason, under the lead and the model's
    headline, over what to try for the cursor's op code (the second)."""
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"), terminal_size=(80, 24),
                        press=["6", "down"])


@pytest.mark.slow
def test_why_view_at_200x50(snap_compare):
    """`6` on a wide screen: every op code's whole reason and every line of what to try."""
    assert snap_compare(app_for("tt-perf-report__wh_clip_encoder_2.csv"),
                        terminal_size=(200, 50), press=["6", "down"])
