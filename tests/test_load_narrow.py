"""A million ops' `open` under 800 MiB (#51) without changing a value: the parsed blocks are held
with their numbers narrowed as the frame will hold them (model.read.narrow), a column some block
cannot narrow is wide in all of them, and the trace's frame shares the loaded columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ttdash.model import Trace
from ttdash.model.read import loader, narrow


def _csv(path, rows: int = 3000) -> None:
    k = np.arange(rows)
    big = np.where(k < rows - 5, k, 1 << 40)  # wide only in the last block
    lines = ["OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns],HOST START TS,GLOBAL CALL COUNT,"
             "PM FPU UTIL (%),CORE COUNT,DEVICE ID"]
    for i in range(rows):
        lines.append(f"Op{i % 7},tt_dnn_device,{1000 + i},{big[i]},{i * 1024},"
                     f"{(i % 13) / 3 if i % 5 else ''},{i % 64 or ''},0")
    path.write_text("\n".join(lines) + "\n")


def test_parsed_blocks_are_narrow_and_the_frame_is_unchanged(tmp_path, monkeypatch):
    src = tmp_path / "ops.csv"
    _csv(src)
    monkeypatch.setattr(loader, "BLOCK", 1 << 14)  # several blocks
    held: dict[str, pa.DataType] = {}
    real = loader._to_columns

    def to_columns(holder, skip_empty=frozenset()):
        held.update({f.name: f.type for f in holder[0].schema})
        assert holder[0].column(0).num_chunks > 1
        return real(holder, skip_empty)

    monkeypatch.setattr(loader, "_to_columns", to_columns)
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")
    got = loader.read_ops_csv(src, columns="all").df
    assert held["DEVICE KERNEL DURATION [ns]"] == pa.int32()
    assert held["GLOBAL CALL COUNT"] == pa.int32()
    assert held["HOST START TS"] == pa.int64()  # one block beyond int32: every block wide
    assert held["CORE COUNT"] == pa.int32()  # (missing cells stay missing)
    assert held["PM FPU UTIL (%)"] == pa.float64()  # fractions
    monkeypatch.setattr(loader, "narrow_batch", lambda b: b)
    monkeypatch.setattr(loader, "table_of", lambda bs: pa.Table.from_batches(bs))
    wide = loader.read_ops_csv(src, columns="all").df
    pd.testing.assert_frame_equal(got, wide, check_exact=True)
    for c in got.columns:
        assert type(got[c].array) is type(wide[c].array), c


def test_narrow_array_follows_compact():
    assert narrow.narrow_array(pa.array([1, None, -(1 << 31)])).type == pa.int32()
    assert narrow.narrow_array(pa.array([1 << 31])).type == pa.int64()
    assert narrow.narrow_array(pa.array([None], pa.int64())).type == pa.int32()
    assert narrow.narrow_array(pa.array([2.0, None, float("inf")])).type == pa.float32()
    assert narrow.narrow_array(pa.array([0.5])).type == pa.float64()
    assert narrow.narrow_array(pa.array([float(1 << 25)])).type == pa.float64()


def test_the_traces_frame_shares_the_loaded_columns(tmp_path, monkeypatch):
    """Trace.from_table makes no copy of a frame already in report order (pandas 2's
    reset_index copied every column: a million ops' frame twice at once)."""
    src = tmp_path / "ops.csv"
    _csv(src, rows=50)
    monkeypatch.setenv("TTDASH_NO_CACHE", "1")
    table = loader.read_ops_csv(src)
    before = table.df["DEVICE KERNEL DURATION [ns]"].to_numpy()
    trace = Trace.from_table(table)
    after = trace.ordered["DEVICE KERNEL DURATION [ns]"].to_numpy()
    assert np.shares_memory(before, after)
    assert "_region" not in table.df.columns
