"""Live device telemetry (health.telemetry) in `watch` (the strip) and `watch --once` (JSON), on
fake hosts: readings, throttling, nothing shown without a device."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace

import pyarrow.parquet as pq
from conftest import run_ttdash, wait_until
from fake_host import Card, fake_host, write

from ttdash.health.probe import Roots, Sample
from ttdash.health.telemetry import Reading, Telemetry, append_record, record_path
from ttdash.tui import telemetry as strip_module
from ttdash.tui.telemetry import TelemetryStrip
from ttdash.tui.watch import watch_app

HOT = Card(temp_c=82.0, aiclk=700, power_w=60.0)


def test_readings_and_throttling(tmp_path):
    env = fake_host(tmp_path, [Card(), HOT, Card(arch="blackhole", card="p150a", aiclk=800,
                                                 temp_c=60.0)])
    tel = Telemetry(Roots.from_env(env))
    a, b, c = tel.read()
    assert (a.device, a.sample.temp_c, a.sample.power_w, a.sample.aiclk_mhz) == (0, 45, 35, 1000)
    assert not a.throttled and b.throttled and b.hot
    assert not c.throttled  # 800 MHz is Blackhole's idle clock, 60 C under its 90 C limit
    assert b.as_dict()["throttled"] is True and b.as_dict()["temp_limit_c"] == 75.0
    tel.read()
    assert tel.throttled_readings() == 2 and len(tel.readings) == 6


async def test_strip_in_watch_shows_each_device_and_marks_throttling(tmp_path, monkeypatch):
    env = fake_host(tmp_path / "host", [Card(), HOT])
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # the mount's reading and the one this test asks for, no timer's between them: a loaded
    # machine's slow start let the 2 s timer read twice more ("throttled in 3 of 6")
    monkeypatch.setattr(strip_module, "INTERVAL_S", 3600.0)
    root = tmp_path / "profiler"
    root.mkdir()
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=(120, 30)) as pilot:
        strip = app.screen.query_one(TelemetryStrip)
        await wait_until(pilot, lambda: "dev1" in str(strip.render()))
        text = str(strip.render())
        assert strip.display
        assert "telemetry dev1 82C 60W 700MHz HOT · dev0 45C 35W 1000MHz" in text
        assert "throttled in 1 of 2 readings" in text
        # the card cools down and clocks up: the marker goes, the count stays
        hw = tmp_path / "host" / "sys" / "bus" / "pci" / "devices" / "0000:02:00.0"
        write(hw / "hwmon" / "hwmon4" / "temp1_input", "50000")
        write(hw / "tenstorrent" / "tenstorrent!1" / "tt_aiclk", "1000")
        strip.sample()
        await pilot.pause()
        text = str(strip.render())
        assert "telemetry dev0 45C 35W 1000MHz · dev1 50C 60W 1000MHz" in text and "HOT" not in text
        assert "throttled in 1 of 4 readings" in text
    # kept with the run, outside the watched directory
    kept = [json.loads(x) for x in record_path(root).read_text().splitlines()]
    assert str(record_path(root)).startswith(str(tmp_path / "state" / "ttdash" / "telemetry"))
    assert len(kept) >= 4 and [k["throttled"] for k in kept[:4]] == [False, True, False, False]
    assert sorted(p.name for p in root.iterdir()) == []


async def test_no_device_no_strip(tmp_path, monkeypatch):
    for k, v in fake_host(tmp_path / "host", []).items():
        monkeypatch.setenv(k, v)
    root = tmp_path / "profiler"
    root.mkdir()
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.screen.query_one(TelemetryStrip).display


def test_watch_once_json_has_the_telemetry(tmp_path):
    root = tmp_path / "profiler"
    root.mkdir()
    env = fake_host(tmp_path / "host", [Card(), HOT])
    doc = json.loads(run_ttdash("watch", str(root), "--once", env=env).stdout)
    assert [(t["device"], t["temp_c"], t["aiclk_mhz"], t["throttled"])
            for t in doc["telemetry"]] == [(0, 45.0, 1000.0, False), (1, 82.0, 700.0, True)]
    none = fake_host(tmp_path / "empty", [])
    assert json.loads(run_ttdash("watch", str(root), "--once", env=none).stdout)[
        "telemetry"] == []


def _run_dir(base, name: str, mtime: float, real) -> None:
    d = base / "reports" / name
    d.mkdir(parents=True)
    f = d / f"ops_perf_results_{name}.csv"
    shutil.copyfile(real / "tt-perf-report__bh_p100_dlv3.csv", f)
    os.utime(f, (mtime, mtime))


def test_report_and_diff_say_the_candidate_ran_throttled(tmp_path, real, monkeypatch):
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    base, cand = tmp_path / "base", tmp_path / "cand"
    t0 = 1_700_000_000.0
    _run_dir(base, "2025_01_01_00_00_00", t0, real)
    _run_dir(cand, "2025_01_01_00_00_00", t0, real)  # an earlier run into the same directory
    _run_dir(cand, "2025_01_02_00_00_00", t0 + 1000, real)
    hot = Sample(temp_c=82.0, power_w=60.0, aiclk_mhz=700.0, temp_limit_c=75.0)
    cool = Sample(temp_c=50.0, power_w=40.0, aiclk_mhz=1000.0, temp_limit_c=75.0)
    monkeypatch.setenv("XDG_STATE_HOME", state["XDG_STATE_HOME"])
    append_record(cand, [Reading(t0 - 50, 0, "wormhole", hot)])  # the earlier run's
    append_record(cand, [Reading(t0 + 100, 0, "wormhole", hot),
                         Reading(t0 + 200, 0, "wormhole", cool),
                         Reading(t0 + 300, 0, "wormhole", hot)])
    doc = json.loads(run_ttdash("report", str(cand), "-f", "json", env=state).stdout)
    assert doc["telemetry"] == {"readings": 3, "throttled": 2, "devices": [0],
                                "temp_c_max": 82.0, "power_w_max": 60.0, "aiclk_mhz_min": 700.0}
    table = run_ttdash("report", str(cand), env=state).stdout
    assert "Telemetry during the run: THROTTLED in 2 (3 readings of devices 0; max 82 C; min " \
           "AICLK 700 MHz)" in table
    assert "telemetry" not in json.loads(run_ttdash("report", str(base), "-f", "json",
                                                    env=state).stdout)
    r = run_ttdash("diff", str(base), str(cand), "-f", "table", env=state)
    assert "Telemetry: baseline no telemetry recorded, candidate THROTTLED in 2 of 3 readings: " \
           "the candidate ran on a throttled device" in r.stdout
    d = json.loads(run_ttdash("diff", str(base), str(cand), "-f", "json", env=state).stdout)
    assert d["telemetry"]["baseline"] is None and d["telemetry"]["candidate"]["throttled"] == 2
    # the run history keeps the run's telemetry summary
    store = str(tmp_path / "store")
    assert run_ttdash("history", "add", "--store", store, str(cand), env=state).returncode == 0
    row = pq.read_table(next((tmp_path / "store" / "runs").rglob("*.parquet"))).to_pylist()[0]
    assert row["telemetry"] == {"readings": 3, "throttled": 2, "temp_c_max": 82.0,
                                "power_w_max": 60.0, "aiclk_mhz_min": 700.0}


def test_named_runs_the_runs_devices_and_a_bounded_first_run(tmp_path, real, monkeypatch):
    """reports/NAME/<ts>/ (tt-metal's -n NAME) is found; only the run's devices count when the
    readings name them; a first run looks back at most MAX_RUN_S."""
    from ttdash.health.telemetry import MAX_RUN_S, readings_for_report

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "prof"
    t0 = 1_700_000_000.0
    d = root / "reports" / "llama" / "2025_01_01_00_00_00"
    d.mkdir(parents=True)
    f = d / "ops_perf_results_2025_01_01_00_00_00.csv"
    shutil.copyfile(real / "tt-perf-report__bh_p100_dlv3.csv", f)
    os.utime(f, (t0, t0))
    hot = Sample(temp_c=82.0, aiclk_mhz=700.0, temp_limit_c=75.0)
    append_record(root, [Reading(t0 - MAX_RUN_S - 10, 0, "wormhole", hot),  # a day-old watch
                         Reading(t0 - 100, 0, "wormhole", hot),
                         Reading(t0 - 100, 3, "wormhole", hot),
                         Reading(t0 + 30, 0, "wormhole", hot)])  # after the report: next run
    got = readings_for_report(f, [0])
    assert [(r["device"], r["time"]) for r in got] == [(0, t0 - 100)]
    assert len(readings_for_report(f, [7])) == 2  # no reading of device 7: every device's


def test_diff_names_a_firmware_and_driver_change_recorded_by_the_watch(tmp_path, real,
                                                                       monkeypatch):
    """The readings the watch records carry the card's firmware bundle and tt-kmd's version;
    `diff` names a change of either in its verdict and JSON (a card flashed between two runs)."""
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    monkeypatch.setenv("XDG_STATE_HOME", state["XDG_STATE_HOME"])
    base, cand = tmp_path / "base", tmp_path / "cand"
    t0 = 1_700_000_000.0
    _run_dir(base, "2025_01_01_00_00_00", t0, real)
    _run_dir(cand, "2025_01_02_00_00_00", t0 + 1000, real)
    host = tmp_path / "host"
    tel = Telemetry(Roots.from_env(fake_host(host, [Card()])))
    before = tel.read()[0]
    assert (before.firmware, before.driver) == ("18.7.0.0", "2.1.0")
    assert before.as_dict()["firmware"] == "18.7.0.0" and before.as_dict()["driver"] == "2.1.0"
    append_record(base, [replace(before, t=t0 - 100)])
    cls = host / "sys" / "bus" / "pci" / "devices" / "0000:01:00.0" / "tenstorrent"
    write(cls / "tenstorrent!0" / "tt_fw_bundle_ver", "18.8.0.0")
    write(host / "sys" / "module" / "tenstorrent" / "version", "2.2.0")
    after = Telemetry(tel.roots).read()[0]
    append_record(cand, [replace(after, t=t0 + 900)])
    doc = json.loads(run_ttdash("diff", str(base), str(cand), "-f", "json", env=state).stdout)
    changed = doc["context"]["changed"]
    assert changed["firmware"] == {"baseline": "18.7.0.0", "candidate": "18.8.0.0"}
    assert changed["driver"] == {"baseline": "2.1.0", "candidate": "2.2.0"}
    assert "firmware 18.7.0.0 -> 18.8.0.0" in doc["verdict"]
    assert "driver 2.1.0 -> 2.2.0" in doc["verdict"]
