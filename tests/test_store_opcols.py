"""The store's op rows built from a view's columns as Arrow arrays (ttdash/history/opcols.py)
equal, value for value and null for null, what they were built as before: each batch through
model.columns.export_frame, its text nulled, pandas' conversion and a signature per batch
(`_reference` below). Real reports, a view of every generated fixture, and cells no report had
(missing whole numbers, a "" bound, text categories with holes, a loader's float32 counts, a
column of a type the fast paths do not know) in batches of five rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import ROOT

from ttdash.commands.common import load_view
from ttdash.commands.options import WindowOptions
from ttdash.history import opcols, schema
from ttdash.model.columns import export_frame
from ttdash.model.compare import signature
from ttdash.model.compare.signature import signature_text

REAL = ROOT.parent / "shared" / "fixtures" / "real"
GENERATED = ROOT / "fixtures" / "generated"
REPORTS = sorted([*(p for p in REAL.glob("*.csv") if "profile_log_device" not in p.name),
                  *GENERATED.glob("*_report.csv")])


def _reference(view) -> pa.Table:
    """The op rows as the store built them before opcols (schema.op_batches of 2026-12-05)."""
    model_fields = tuple(n for n in schema.OPS.names if n not in schema.OWN_OP_FIELDS)
    texts = [f.name for f in schema.OPS if f.type == pa.string() and f.name in model_fields]
    flags = [f.name for f in schema.OPS if f.type == pa.bool_() and f.name in model_fields]
    ops = view.op_rows
    batches = []
    for start in range(0, max(len(ops), 1), schema.BATCH):
        part = ops.iloc[start:start + schema.BATCH]
        frame = export_frame(part, model_fields)
        for f in texts:
            frame[f] = frame[f].astype(object).where(frame[f].notna(), None)
        for f in flags:
            frame[f] = frame[f].astype(bool)
        frame["signature"] = signature_text(view, part)
        frame["is_host"] = part["is_host"].to_numpy(dtype=bool)
        batches.append(pa.RecordBatch.from_pandas(frame, schema=schema.OPS,
                                                  preserve_index=False))
    return pa.Table.from_batches(batches, schema=schema.OPS)


def _built(view) -> pa.Table:
    return pa.Table.from_batches(list(schema.op_batches(view)), schema=schema.OPS)


def _assert_same(view) -> None:
    got, want = _built(view), _reference(view)
    assert got.num_rows == want.num_rows == len(view.op_rows)
    for name in schema.OPS.names:
        assert got[name].equals(want[name]), (name, got[name].slice(0, 5),
                                              want[name].slice(0, 5))


def _batches(monkeypatch, rows: int) -> None:
    monkeypatch.setattr(schema, "BATCH", rows)
    monkeypatch.setattr(opcols, "BATCH", rows)
    monkeypatch.setattr(signature, "SIGNATURE_SLICE", 2 * rows)  # two batches' signatures at once


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: Path(p).name)
def test_every_report_stores_the_same_op_rows(path, monkeypatch):
    assert REPORTS, "no reports found"
    _batches(monkeypatch, 4096)
    _assert_same(load_view(str(path), WindowOptions()))


def test_cells_no_report_had_store_as_before(monkeypatch):
    _batches(monkeypatch, 5)
    view = load_view(str(GENERATED / "bh_classic_report.csv"), WindowOptions())
    ops = view.ops.copy()
    n = len(ops)
    holes = np.arange(n) % 3 == 0
    ops["device"] = np.where(holes, np.nan, ops["device"].to_numpy(dtype="float64"))
    ops["cores"] = np.where(holes, np.nan, 0.5 + np.arange(n) % 2)  # halves round to even
    bound = ops["bound"].astype(object).to_numpy().copy()
    bound[holes] = ""
    bound[np.arange(n) % 5 == 0] = None
    ops["bound"] = pd.Categorical(bound)
    ops["math_fidelity"] = pd.Categorical(np.where(holes, None, "HiFi4"))
    ops["config"] = ops["config"].astype(object)  # plain text, not a categorical
    ops["dram_gbps"] = np.where(holes, np.nan, 1e300 * np.arange(n))  # rounding overflows
    ops["flops"] = (np.arange(n) * 1.5).astype("float32")  # a loader's whole numbers
    ops["global_call_count"] = pd.array(np.where(holes, None, np.arange(n)), dtype="Int64")
    ops["total_pct"] = np.where(holes, np.nan, 1e-9 * np.arange(n))
    view.ops = ops
    assert view.op_rows is not None and len(view.op_rows) > 2 * schema.BATCH
    _assert_same(view)
    stored = _built(view)
    assert stored["device"].null_count > 0 and stored["bound"].null_count > 0
    assert set(stored["cores"].drop_null().to_pylist()) == {0, 2}  # 0.5 -> 0, 1.5 -> 2


def test_no_ops_give_one_empty_batch():
    view = load_view(str(GENERATED / "bh_classic_report.csv"), WindowOptions())
    view.ops = view.ops.iloc[:0]
    (batch,) = schema.op_batches(view)
    assert batch.num_rows == 0 and batch.schema.equals(schema.OPS)
    assert _reference(view).equals(pa.Table.from_batches([batch]))
