"""`ttdash doctor` on fake hosts (sysfs/procfs/dev trees in the kernel's formats): every status
and what it tells the user to do; the CLI's formats and exit codes."""

from __future__ import annotations

import json

import pytest
from conftest import run_ttdash
from fake_host import Card, fake_host

from ttdash.health.doctor import exit_code, run_checks
from ttdash.health.probe import Roots

BASE_ENV = {"ARCH_NAME": "wormhole_b0"}


def checks_for(tmp_path, cards, env=None, **kw):
    roots_env = fake_host(tmp_path, cards, **kw)
    env = {**BASE_ENV, "TT_METAL_HOME": str(tmp_path), **roots_env, **(env or {})}
    checks = run_checks(env, Roots.from_env(env))
    return {c.name.split(",")[0]: c for c in checks}, checks


def test_healthy_wormhole_host_is_all_ok(tmp_path):
    by, checks = checks_for(tmp_path, [Card()])
    assert {c.status for c in checks} == {"ok"}, checks
    assert by["Tenstorrent devices"].detail == "1 found: 0000:01:00.0 wormhole n150"
    assert "Gen4 x16 (16 GT/s), as the card allows" in by["PCIe link"].detail
    assert by["kernel driver (tt-kmd)"].detail == "tt-kmd 2.1.0, /dev/tenstorrent/0"
    assert by["HugePages"].detail == "16 GiB (16 x 1 GiB, 16 free)"
    assert by["sensors"].detail == "45 C, 35 W of 160 W, AICLK 1000 MHz"
    assert exit_code(checks) == 0


def test_gen3_x8_link_warns_with_the_fix(tmp_path):
    by, _ = checks_for(tmp_path, [Card(speed="8.0 GT/s PCIe", width=8)])
    c = by["PCIe link"]
    assert c.status == "warn"
    assert c.detail.startswith("Gen3 x8 (8 GT/s), max Gen4 x16")
    assert "x8 of x16" in c.detail and "50% of the bandwidth" in c.detail
    assert "no bifurcation" in c.detail and "BIOS" in c.detail
    assert "drops the link to Gen1 when idle" in c.detail  # a Wormhole: say so


def test_old_kernel_link_format_and_slot_below_the_cards_generation(tmp_path):
    by, _ = checks_for(tmp_path, [Card(arch="blackhole", card="p150a", speed="16 GT/s",
                                       max_speed="16 GT/s", aiclk=1350)],
                       env={"ARCH_NAME": "blackhole"})
    c = by["PCIe link"]
    assert c.status == "warn" and "the slot tops out at Gen4; the card wants Gen5" in c.detail


def test_4_gib_of_hugepages_warns(tmp_path):
    by, checks = checks_for(tmp_path, [Card()], hugepages_1g=4)
    c = by["HugePages"]
    assert c.status == "warn" and c.detail.startswith("4 GiB (4 x 1 GiB, 4 free), under the "
                                                      "16 GiB the guides ask for")
    assert "hugepages-setup.sh" in c.detail and "hugepagesz=1G hugepages=16" in c.detail
    assert exit_code(checks) == 0


def test_no_hugepages_with_a_device_fails(tmp_path):
    by, checks = checks_for(tmp_path, [Card()], hugepages_1g=0)
    assert by["HugePages"].status == "fail" and exit_code(checks) == 1


def test_hot_and_throttled_device(tmp_path):
    by, _ = checks_for(tmp_path, [Card(temp_c=82.0, aiclk=700, power_w=60.0)])
    c = by["sensors"]
    assert c.status == "warn"
    assert c.detail.startswith("82 C, 60 W of 160 W, AICLK 700 MHz:")
    assert "82 C is at or above the 75 C limit" in c.detail and "airflow" in c.detail
    assert "AICLK 700 MHz is below the 1000 MHz a busy wormhole runs at: throttled" in c.detail


def test_idle_clock_is_not_throttling_and_hwmon_limits_win(tmp_path):
    by, _ = checks_for(tmp_path, [Card(aiclk=500, temp_c=80.0, temp_max_c=85.0,
                                       power_w=150.0, power_max_w=150.0)])
    c = by["sensors"]
    assert "idle clock" in c.detail and "throttled" not in c.detail
    assert "75 C" not in c.detail  # temp1_max (85 C) is the limit
    assert "power 150 W is at the 150 W board limit" in c.detail and c.status == "warn"


def test_no_device_is_a_clear_check_not_an_error(tmp_path):
    by, checks = checks_for(tmp_path, [], driver=None, hugepages_1g=0)
    assert by["Tenstorrent devices"].status == "warn"
    assert by["Tenstorrent devices"].detail.startswith("no Tenstorrent device found")
    assert by["kernel driver (tt-kmd)"].status == "unknown"
    assert by["HugePages"].status == "unknown"  # no card: nothing to reserve (#33.11)
    assert exit_code(checks) == 0


def test_device_without_driver_fails(tmp_path):
    by, checks = checks_for(tmp_path, [Card(bound=False)], driver=None)
    c = by["kernel driver (tt-kmd)"]
    assert c.status == "fail" and "sudo modprobe tenstorrent" in c.detail
    assert by["sensors"].status == "unknown"
    assert exit_code(checks) == 1


def test_driver_loaded_but_not_bound(tmp_path):
    by, _ = checks_for(tmp_path, [Card(bound=False)])
    c = by["kernel driver (tt-kmd)"]
    assert c.status == "fail" and "not bound to 0000:01:00.0" in c.detail


def test_environment_checks(tmp_path):
    by, _ = checks_for(tmp_path, [Card()], env={"ARCH_NAME": "blackhole",
                                                 "TT_METAL_HOME": str(tmp_path / "nope"),
                                                 "TT_METAL_DEVICE_PROFILER": "1"})
    assert by["ARCH_NAME"].status == "warn" and "export ARCH_NAME=wormhole_b0" in \
        by["ARCH_NAME"].detail
    assert by["TT_METAL_HOME"].status == "warn" and "no such directory" in \
        by["TT_METAL_HOME"].detail
    assert by["profiler variables"].detail.startswith("TT_METAL_DEVICE_PROFILER=1; `ttdash run` "
                                                      "sets TT_METAL_DEVICE_PROFILER=1, "
                                                      "TT_METAL_PROFILER_CPP_POST_PROCESS=1")


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_cli_formats_and_exit_codes(tmp_path, fmt):
    env = fake_host(tmp_path / "ok", [Card(speed="8.0 GT/s PCIe", width=8)])
    env["TT_METAL_HOME"] = str(tmp_path)
    r = run_ttdash("doctor", "--format", fmt, env=env)
    assert r.returncode == 0, r.stderr
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert [set(c) for c in doc["checks"]] == [{"name", "status", "detail"}] * len(
            doc["checks"])
        assert {c["status"] for c in doc["checks"]} <= {"ok", "warn", "fail", "unknown"}
        assert any(c["status"] == "warn" and "x8 of x16" in c["detail"] for c in doc["checks"])
    elif fmt == "table":
        assert r.stdout.startswith("ttdash doctor: ") and "\nWARN  PCIe link, device 0" in \
            r.stdout
    else:
        assert r.stdout.startswith("| check | status | detail |")
    bad = fake_host(tmp_path / "bad", [Card(bound=False)], driver=None)
    r = run_ttdash("doctor", "--format", fmt, env=bad)
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_tt_smi_snapshot_boards_are_checked(tmp_path):
    """The snapshot format of tt-smi's own test (tests/test_snapshot.py): strings for values."""
    snap = {"time": "2025-02-04T13:04:50", "host_info": {}, "device_info": [
        {"board_info": {"bus_id": "0000:01:00.0", "board_type": "n300 L", "pcie_speed": 3,
                        "pcie_width": "8"},
         "telemetry": {"voltage": "0.80", "current": " 60.0", "power": " 95.0", "aiclk": "700",
                       "asic_temperature": "83.5", "heartbeat": "123"}},
        {"board_info": {"bus_id": "0000:02:00.0", "board_type": "p150a", "pcie_speed": 5,
                        "pcie_width": "16"},
         "telemetry": {"power": " 40.0", "aiclk": "1350", "asic_temperature": "55.0"}}]}
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap))
    env = fake_host(tmp_path / "host", [])
    doc = json.loads(run_ttdash("doctor", "-f", "json", "--smi-snapshot", str(f), env=env).stdout)
    by = {c["name"]: c for c in doc["checks"]}
    link = by["PCIe link, board 0 (0000:01:00.0, n300 L; tt-smi snapshot)"]
    assert link["status"] == "warn" and link["detail"].startswith("Gen3 x8 (tt-smi)")
    hot = by["sensors, board 0 (0000:01:00.0, n300 L; tt-smi snapshot)"]
    assert hot["status"] == "warn" and hot["detail"].startswith("84 C, 95 W of 300 W, AICLK 700")
    assert "throttled" in hot["detail"]
    assert by["PCIe link, board 1 (0000:02:00.0, p150a; tt-smi snapshot)"]["status"] == "ok"
    assert by["sensors, board 1 (0000:02:00.0, p150a; tt-smi snapshot)"]["status"] == "ok"
    bad = tmp_path / "bad.json"
    bad.write_text('{"device_info": [}')
    r = run_ttdash("doctor", "--smi-snapshot", str(bad), env=env)
    assert r.returncode == 2 and r.stderr.startswith(f"ttdash: {bad}:1:18: not JSON")
    assert "Traceback" not in r.stderr


def test_idle_wormhole_link_warns_in_doctor_but_not_in_runs_line(tmp_path):
    from ttdash.health.doctor import warnings_line

    by, checks = checks_for(tmp_path, [Card(speed="2.5 GT/s PCIe")])
    assert by["PCIe link"].status == "warn" and "Gen1 when idle" in by["PCIe link"].detail
    assert warnings_line(checks) == ""  # an idle card at run start: not a problem yet
    _, checks = checks_for(tmp_path / "x8", [Card(speed="2.5 GT/s PCIe", width=8)])
    assert warnings_line(checks) == "doctor: 1 warned (PCIe link; ttdash doctor)"


def test_malformed_snapshot_entries_and_hostile_text(tmp_path):
    snap = {"device_info": [{"board_info": "x", "telemetry": []},
                            {"board_info": {"board_type": "n150\x1b[31m", "bus_id": "\x07"},
                             "telemetry": {"aiclk": "fast"}}]}
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap))
    env = fake_host(tmp_path / "host", [])
    r = run_ttdash("doctor", "--smi-snapshot", str(f), env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout


def test_no_home_means_no_record_not_a_crash(monkeypatch, tmp_path):
    from pathlib import Path

    from ttdash.health.telemetry import append_record, readings_for_report, record_path

    def no_home():
        raise RuntimeError("Could not determine home directory")

    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert record_path(tmp_path) is None
    append_record(tmp_path, [])
    report = tmp_path / "reports" / "ts" / "ops_perf_results_ts.csv"
    report.parent.mkdir(parents=True)
    report.write_text("x\n")
    assert readings_for_report(report) == []
