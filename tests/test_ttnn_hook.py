"""ttdash.hooks.ttnn against fake ttnn packages (tests/fake_ttnn): rows written, live view,
errors contained, unregistering, old ttnn without the callback API."""

from __future__ import annotations

import csv
import importlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT

from ttdash.hooks import ttnn as hook
from ttdash.live import CsvTailer
from ttdash.model.live.table import LiveModel

FAKE = ROOT / "tests" / "fake_ttnn"
FAKE_OLD = FAKE / "old"


def _drop_ttnn_modules(monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "ttnn" or m.startswith("ttnn.")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def load_ttnn(monkeypatch):
    """load_ttnn(FAKE or FAKE_OLD) -> that fake ttnn, importable as `ttnn` for this test."""

    def load(path: Path):
        _drop_ttnn_modules(monkeypatch)
        monkeypatch.syspath_prepend(str(path))
        mod = importlib.import_module("ttnn")
        assert Path(mod.__file__).resolve().parent.parent == path.resolve()
        if hasattr(mod.device, "reset"):
            mod.device.reset()
        return mod

    yield load
    hook.uninstall()
    for name in [m for m in sys.modules if m == "ttnn" or m.startswith("ttnn.")]:
        del sys.modules[name]


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def expected(records, dropped_before: dict[int, int] | None = None):
    """What the CSV should say for ``records`` (one device, no drops unless given)."""
    out, prev_end = [], {}
    for i, r in enumerate(records):
        gap = "" if r.chip_id not in prev_end or (dropped_before or {}).get(i) else \
            str(round((r.start_timestamp - prev_end[r.chip_id]) / r.frequency))
        if (dropped_before or {}).get(i):
            prev_end.clear()
        out.append({"GLOBAL CALL COUNT": str(r.runtime_id), "DEVICE ID": str(r.chip_id),
                    "DEVICE KERNEL DURATION [ns]":
                        str(round((r.end_timestamp - r.start_timestamp) / r.frequency)),
                    "OP TO OP LATENCY [ns]": gap,
                    "DEVICE KERNEL START CYCLE": str(r.start_timestamp),
                    "DEVICE KERNEL END CYCLE": str(r.end_timestamp),
                    "DROPPED": str((dropped_before or {}).get(i, 0))})
        prev_end[r.chip_id] = r.end_timestamp
    return out


def test_importing_ttdash_never_imports_ttnn():
    """Even with a ttnn importable, importing ttdash (and the hook module) leaves it alone."""
    code = ("import sys, ttdash, ttdash.cli, ttdash.hooks, ttdash.hooks.ttnn, ttdash.runner, "
            "ttdash.tui.run\nassert 'ttnn' not in sys.modules, 'ttnn imported'\n"
            "from ttdash.hooks import ttnn as h\nassert 'ttnn' not in sys.modules\n"
            "import ttnn\nprint('fake ttnn importable', ttnn.__version__)\n")
    env = dict(os.environ, PYTHONPATH=str(FAKE))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert "fake ttnn importable 0.81.1" in res.stdout


def test_rows_written_match_records_from_another_thread(load_ttnn, tmp_path):
    ttnn = load_ttnn(FAKE)
    dev = ttnn.device
    assert hook.install(tmp_path) is True
    assert hook.install(tmp_path) is True  # idempotent: still one registration
    assert len(dev.registered()) == 1
    csv_path = tmp_path / ".logs" / hook.REALTIME_CSV
    assert csv_path.exists() and read_rows(csv_path) == []  # header at install

    a = dev.make_records(1024, 5)
    b = dev.make_records(1029, 4, start=a[-1].end_timestamp + 900)
    c = dev.make_records(2048, 3, chip=1, frequency=1.35, start=50_000)
    dev.emit([dev.ProgramRealtimeRecordBatch(a), dev.ProgramRealtimeRecordBatch(b, dropped=3),
              dev.ProgramRealtimeRecordBatch(c)])
    assert dev.delivery_threads and dev.delivery_threads[0] != threading.main_thread().name
    assert dev.callback_errors == []

    rows = read_rows(csv_path)
    assert len(rows) == 12
    want = expected(a + b, dropped_before={5: 3}) + expected(c)
    for got, exp in zip(rows, want):
        assert {k: got[k] for k in exp} == exp
    assert rows[0]["OP NAME"] == "matmul" and rows[1]["OP NAME"] == "binary"
    assert rows[0]["DEVICE ARCH"] == "wormhole_b0" and rows[-1]["DEVICE ARCH"] == "blackhole"
    assert rows[0]["KERNEL SOURCES"].split("|") == list(a[0].kernel_sources)
    assert rows[5]["OP TO OP LATENCY [ns]"] == ""  # records were lost just before it
    st = hook.status()
    assert st["rows"] == 12 and st["dropped"] == 3 and st["batches"] == 3
    assert st["ttnn_version"] == "0.81.1" and not st["disabled"]

    assert hook.uninstall() is True
    assert dev.registered() == {} and dev.unregistered == [1]
    assert hook.uninstall() is False
    dev.emit([dev.ProgramRealtimeRecordBatch(dev.make_records(9000, 2))])  # after uninstall
    assert len(read_rows(csv_path)) == 12


def test_csv_is_tailed_into_live_model_with_device_time(load_ttnn, tmp_path):
    ttnn = load_ttnn(FAKE)
    dev = ttnn.device
    assert hook.install(tmp_path)
    recs = dev.make_records(1024, 10, ticks=(4_000, 6_000), gap=500)
    dev.emit([dev.ProgramRealtimeRecordBatch(recs[:6]),
              dev.ProgramRealtimeRecordBatch(recs[6:])])
    path = tmp_path / ".logs" / hook.REALTIME_CSV
    live = LiveModel(tmp_path)
    with CsvTailer(path) as tailer:
        res = tailer.poll()
        assert live.add_rows(path, res.header, res.rows, res.lines) == 10
    view = live.view()
    tot = view.totals()
    assert tot["ops"] == 10
    assert tot["device_time_us"] == pytest.approx(50.0)  # 5 x 4 us + 5 x 6 us at 1 GHz
    assert tot["op_to_op_us"] == pytest.approx(9 * 0.5)
    assert view.trace.arch.name == "wormhole_b0"
    assert list(view.ops["op_code"][:2]) == ["matmul", "binary"]

    # ...and `ttdash watch` finds it among the live sources.
    from ttdash.commands.watch import watch_state

    state = watch_state(tmp_path)
    assert state["live"]["ops"] == 10 and str(path) in state["live"]["sources"]


class Poison:
    def __int__(self):
        raise RuntimeError("bad timestamp")

    __index__ = __int__

    def __float__(self):
        raise RuntimeError("bad timestamp")


@pytest.mark.parametrize("fault", ["bad record", "SystemExit in writer", "file closed"])
def test_callback_errors_never_propagate(load_ttnn, tmp_path, caplog, monkeypatch, fault):
    ttnn = load_ttnn(FAKE)
    dev = ttnn.device
    assert hook.install(tmp_path)
    dev.emit([dev.ProgramRealtimeRecordBatch(dev.make_records(1, 3))])
    writer = hook._hook.writer
    if fault == "bad record":
        bad = dev.ProgramRealtimeRecord(4, 0, Poison(), 10, 1.0)
        batch = dev.ProgramRealtimeRecordBatch([bad])
    else:
        batch = dev.ProgramRealtimeRecordBatch(dev.make_records(4, 2))
        if fault == "SystemExit in writer":
            def boom(_):
                raise SystemExit(9)
            monkeypatch.setattr(writer, "write_batch", boom)
        else:
            writer._fh.close()  # e.g. a disk gone: writing raises ValueError/OSError
    with caplog.at_level(logging.WARNING, logger="ttdash.hooks.ttnn"):
        dev.emit([batch, dev.ProgramRealtimeRecordBatch(dev.make_records(10, 2))])
    assert dev.callback_errors == []  # nothing reached ttnn's thread
    st = hook.status()
    assert st["disabled"] and st["error"]
    disabled = [r for r in caplog.records if "disabled" in r.getMessage()]
    assert len(disabled) == 1 and "\n" not in disabled[0].getMessage()
    assert st["rows"] == 3  # the batch after the failure was ignored
    assert hook.uninstall() is True and dev.registered() == {}


def test_older_ttnn_without_the_callback_api(load_ttnn, tmp_path, caplog):
    load_ttnn(FAKE_OLD)
    with caplog.at_level(logging.WARNING, logger="ttdash.hooks.ttnn"):
        assert hook.install(tmp_path) is False
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1
    assert "0.70.1" in msgs[0] and "realtime profiler callback" in msgs[0]
    assert "only the device profiler's own .logs" in msgs[0]
    assert not hook.is_installed() and not (tmp_path / ".logs").exists()


def test_no_ttnn_at_all(monkeypatch, tmp_path, caplog):
    monkeypatch.setitem(sys.modules, "ttnn", None)  # `import ttnn` raises ImportError
    with caplog.at_level(logging.WARNING, logger="ttdash.hooks.ttnn"):
        assert hook.install(tmp_path) is False
    assert len(caplog.records) == 1 and "cannot import ttnn" in caplog.records[0].getMessage()


def test_single_record_callbacks_of_ttnn_071(load_ttnn, tmp_path):
    """ttnn 0.71-0.75 call back once per record (0.71/0.72 name the id program_id)."""
    ttnn = load_ttnn(FAKE)
    dev = ttnn.device
    monkey_shape = dev.SHAPE
    dev.SHAPE = "record"
    try:
        assert hook.install(tmp_path / "run.csv")
        recs = dev.make_records(77, 4)
        dev.emit([dev.ProgramRealtimeRecordBatch(recs)])
    finally:
        dev.SHAPE = monkey_shape
    rows = read_rows(tmp_path / "run.csv")
    assert [r["GLOBAL CALL COUNT"] for r in rows] == ["77", "78", "79", "80"]
    assert [{k: r[k] for k in e} for r, e in zip(rows, expected(recs))] == expected(recs)


def test_writer_accepts_dicts_lists_and_recovers_a_deleted_file(tmp_path):
    path = tmp_path / ".logs" / hook.REALTIME_CSV
    path.parent.mkdir()
    path.write_text("old run\n")
    w = hook.RealtimeCsvWriter(path)  # fresh: the old file is replaced
    assert path.read_text().splitlines() == [",".join(hook.COLUMNS)]
    n = w.write_batch({"records": [{"runtime_id": 1, "chip_id": 0, "start_timestamp": 100,
                                    "end_timestamp": 1450, "frequency": 1.35,
                                    "op_name": 'Matmul "x", y'}], "dropped": 0})
    assert n == 1
    path.unlink()  # deleted behind the writer's back
    assert w.write_batch([{"runtime_id": 2, "device_id": 1, "start": 0, "end": 2000,
                           "frequency": 1000}]) == 1  # MHz given: scaled
    w.close()
    assert w.write_batch([{"runtime_id": 3}]) == 0  # closed: nothing, no error
    rows = read_rows(path)
    assert len(rows) == 1 and rows[0]["GLOBAL CALL COUNT"] == "2"
    assert rows[0]["DEVICE KERNEL DURATION [ns]"] == "2000" and rows[0]["DEVICE ID"] == "1"


def test_writer_quotes_untrusted_names(tmp_path):
    path = tmp_path / "x.csv"
    w = hook.RealtimeCsvWriter(path)
    w.write_batch([{"runtime_id": 1, "chip_id": 0, "start_timestamp": 100,
                    "end_timestamp": 1450, "frequency": 1.35, "op_name": 'Matmul "x", y'}])
    w.close()
    rows = read_rows(path)
    assert rows[0]["OP NAME"] == 'Matmul "x", y'
    assert rows[0]["DEVICE KERNEL DURATION [ns]"] == "1000"


def test_op_name_from_kernel_sources():
    f = hook.op_name_from_sources
    assert f(("ttnn/cpp/ttnn/operations/data_movement/transpose/device/kernels/compute/t.cpp",
              )) == "transpose"
    # a shared reader kernel does not name the op: the compute kernel does
    assert f(("ttnn/cpp/ttnn/operations/eltwise/unary/device/kernels/dataflow/reader.cpp",
              "ttnn/cpp/ttnn/operations/normalization/layernorm/device/kernels/compute/ln.cpp",
              )) == "layernorm"
    assert f(("tt_metal/kernels/dataflow/reader_unary.cpp",)) == ""
    assert f(()) == ""


def test_hook_workload_under_ttdash_run_unregisters_at_exit(tmp_path):
    """End to end: a workload installs the hook on the fake ttnn and exits without uninstall();
    `ttdash run --no-tui` sums the hook's rows, and the callback was unregistered at exit."""
    env = dict(os.environ, PYTHONPATH=str(FAKE), FAKE_TTNN_TRACE="1")
    env.pop("TT_METAL_PROFILER_DIR", None)
    res = subprocess.run([sys.executable, "-m", "ttdash", "run", "--no-tui", "--dir",
                          str(tmp_path), "--", sys.executable,
                          str(ROOT / "tests" / "workloads" / "hook_workload.py"), "40"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "hook installed: True" in res.stdout and "rows written: 40" in res.stdout
    assert "fake-ttnn: unregistered callback 1" in res.stderr  # by the hook's atexit
    assert "dropped 2 record(s)" in res.stderr
    summary = res.stderr.strip().splitlines()[-1]
    assert summary.startswith("ttdash run: workload exited with 0")
    assert "40 ops" in summary and hook.REALTIME_CSV in summary
