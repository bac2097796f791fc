"""A million-op report's peak (#51 item 2) without changing a byte: what each report section
freed is given back before the next one runs."""

from __future__ import annotations

import pytest
from conftest import real_dir

from ttdash import memory
from ttdash.model import Trace, Window
from ttdash.present import sections

OFT = "tt-perf-report__bh20_oft.csv"


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_each_section_gives_back_what_it_freed(monkeypatch, fmt):
    """A large view's report trims the heap after each section that works something out (the
    header's facts, the blocks after the table, the JSON keys); a small one's does not. The
    text is the same either way."""
    from ttdash.report import single

    view = Trace.load(real_dir() / OFT).view(Window("all"))
    trims: list[int] = []
    monkeypatch.setattr(memory, "trim", lambda: trims.append(1))
    small = single.render_to_string(view, fmt)
    assert not trims
    monkeypatch.setattr(memory, "SETTLE_ROWS", 1)
    view = Trace.load(real_dir() / OFT).view(Window("all"))
    assert single.render_to_string(view, fmt) == small
    parts = {"table": "facts", "markdown": "facts", "json": "json"}[fmt]
    worked = [s for s in sections.SECTIONS if getattr(s, parts)]
    assert len(trims) >= len(worked) > 2
