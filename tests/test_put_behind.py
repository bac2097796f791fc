"""report.export.put_behind: what a writer thread writes is what was sent, in order, whatever the
stream; report.safe.records_later: records_json's bytes in two halves."""

from __future__ import annotations

import io
import os

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir

from ttdash.model import Trace
from ttdash.model.columns import JSON_FIELDS, export_frame, op_fields
from ttdash.report import export, safe

ITEMS = ["{", b'"a":', lambda: b"x" * 3000, "\u00e9\u4e2d", lambda: "t\u00fc", ","]


def _sent(out, items=ITEMS, ahead: int = 1) -> None:
    with export.put_behind(out, ahead=ahead) as send:
        for k in range(0, len(items), 2):
            send(*items[k:k + 2])


def _want() -> bytes:
    made = [i() if callable(i) else i for i in ITEMS]
    return b"".join(i.encode() if isinstance(i, str) else i for i in made)


@pytest.mark.parametrize("ahead", [1, 3])
@pytest.mark.parametrize("reserve_from", [1, 1 << 20])
def test_a_file_gets_every_item_in_order_and_no_byte_more(tmp_path, monkeypatch, ahead,
                                                         reserve_from):
    """Into a regular file (its space reserved ahead of each write from RESERVE_FROM bytes):
    the bytes sent, after what was written before, and the file's size is theirs."""
    monkeypatch.setattr(export, "RESERVE_FROM", reserve_from)
    p = tmp_path / "out.json"
    with open(p, "w", encoding="utf-8", newline="") as fh:
        fh.write("head:")  # (still in the text layer's buffer: flushed first)
        _sent(fh, ahead=ahead)
        fh.write(":tail")
    assert p.read_bytes() == b"head:" + _want() + b":tail"
    assert os.path.getsize(p) == len(b"head:" + _want() + b":tail")


def test_a_file_opened_to_append_and_a_text_stream_get_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "RESERVE_FROM", 1)
    p = tmp_path / "out.json"
    p.write_bytes(b"before\n")
    with open(p, "a", encoding="utf-8", newline="") as fh:
        _sent(fh)
    assert p.read_bytes() == b"before\n" + _want()
    text = io.StringIO()  # no binary stream under it: written at once, as text
    _sent(text)
    assert text.getvalue() == _want().decode("utf-8")
    latin = io.TextIOWrapper(io.BytesIO(), encoding="latin-1", errors="replace")
    _sent(latin)  # not UTF-8: through the text layer, which encodes it
    latin.flush()
    assert latin.buffer.getvalue() == _want().decode().encode("latin-1", "replace")


def test_an_error_in_the_thread_reaches_the_caller(tmp_path):
    def fails() -> bytes:
        raise ValueError("made in the thread")

    with open(tmp_path / "x", "w", encoding="utf-8") as fh, pytest.raises(ValueError):
        with export.put_behind(fh) as send:
            send("a", fails)
            for _ in range(3):
                send("b")


def test_records_later_writes_records_json():
    """The ops of a real trace and a frame the column path does not take (a list): the bytes
    records_json writes."""
    trace = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
    view = trace.view()
    ops = view.op_rows.iloc[:5000]
    frame = export_frame(view.with_counters(ops), op_fields(JSON_FIELDS, ops,
                                                            view.counter_names))
    for f in (frame, frame.assign(ids=pd.Series([[1, 2]] * len(frame), dtype=object)),
              frame.assign(x=np.where(np.arange(len(frame)) % 3, np.nan, 1.5))):
        assert bytes(safe.records_later(f)()) == bytes(safe.records_json(f, bare=True,
                                                                         raw=True))
