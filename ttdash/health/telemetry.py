"""Live device telemetry for `watch` and `run`: a reading of every Tenstorrent device's sensors
from sysfs (probe.Device.sample: a few small files, no device access), with throttling marked,
and a bounded record of the readings."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .probe import Device, Roots, Sample, clock_throttled, driver_version, pci_devices

#: Readings kept (one per device per interval; an hour at the 2 s default).
KEEP = 1800


@dataclass(frozen=True)
class Reading:
    t: float  # time.time()
    device: int | None
    arch: str
    sample: Sample
    firmware: str | None = None  # the card's firmware bundle (tt_fw_bundle_ver)
    driver: str | None = None  # tt-kmd's version (/sys/module/tenstorrent/version)

    @property
    def hot(self) -> bool:
        s = self.sample
        return s.temp_c is not None and s.temp_limit_c is not None and s.temp_c >= s.temp_limit_c

    @property
    def throttled(self) -> bool:
        """AICLK between the arch's idle and busy clocks (a busy chip held back), or hot."""
        return clock_throttled(self.arch, self.sample.aiclk_mhz) or self.hot

    def as_dict(self) -> dict:
        s = self.sample
        return {"time": self.t, "device": self.device, "arch": self.arch,
                "temp_c": s.temp_c, "power_w": s.power_w, "aiclk_mhz": s.aiclk_mhz,
                "temp_limit_c": s.temp_limit_c, "power_limit_w": s.power_limit_w,
                "throttled": self.throttled, "firmware": self.firmware, "driver": self.driver}


class Telemetry:
    """The devices found once; `read()` samples them all and keeps the readings."""

    def __init__(self, roots: Roots | None = None) -> None:
        self.roots = roots or Roots.from_env()
        self.devices: list[Device] = [d for d in pci_devices(self.roots)
                                      if d.class_dir is not None or d.hwmon_dir is not None]
        self.readings: deque[Reading] = deque(maxlen=KEEP * max(len(self.devices), 1))

    def read(self) -> list[Reading]:
        now = time.time()
        driver = driver_version(self.roots) if self.devices else None  # reloadable: read anew
        out = [Reading(now, d.index, d.arch, d.sample(), d.attrs.get("tt_fw_bundle_ver"), driver)
               for d in self.devices]
        self.readings.extend(out)
        return out

    def throttled_readings(self) -> int:
        return sum(r.throttled for r in self.readings)


# ---------------------------------------------------------------- kept with the run
#
# `watch` and `run` append each reading to a file of their own per profiler directory, under
# $XDG_STATE_HOME/ttdash/telemetry/ (never in the watched directory). A report of that directory
# then finds the readings taken while its run went on: those after the previous report was
# written and up to its own.

MAX_RECORD_BYTES = 8 << 20  # past this the older half is dropped


def record_path(root: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """Where `root`'s readings are kept (None: no state directory, e.g. no home)."""
    env = os.environ if env is None else env
    try:
        state = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    except RuntimeError:  # no $HOME and no passwd entry
        return None
    name = str(Path(root).expanduser().resolve()).encode("utf-8", "surrogateescape")
    key = hashlib.sha1(name).hexdigest()[:16]
    return state / "ttdash" / "telemetry" / f"{key}.jsonl"


def append_record(root: Path, readings: list[Reading]) -> None:
    """Best effort: telemetry must never stop a watch (a read-only home, a full disk)."""
    if not readings:
        return
    path = record_path(root)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            for r in readings:
                fh.write(json.dumps({**r.as_dict(), "root": str(root)}) + "\n")
        if path.stat().st_size > MAX_RECORD_BYTES:
            lines = _read_record(path).splitlines(keepends=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(lines[len(lines) // 2:]), encoding="utf-8")
            os.replace(tmp, path)
    except OSError:
        pass


def _read_record(path: Path) -> str:
    """The record's text: a regular file only (a FIFO put there is not waited on), at most
    twice MAX_RECORD_BYTES of it, bytes that are not UTF-8 replaced. OSError when unreadable."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(2 * MAX_RECORD_BYTES)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def run_root(report: Path) -> Path | None:
    """The profiler directory of `.../reports/[NAME/]<ts>/ops_perf_results_<ts>.csv`."""
    for parent in list(Path(report).parents)[1:3]:
        if parent.name == "reports":
            return parent.parent
    return None


#: A run's readings go back at most this far before its report when the directory has no
#: earlier report (a watch left open overnight is not the run).
MAX_RUN_S = 6 * 3600.0


def readings_for_report(report: Path, devices: list[int] | None = None) -> list[dict]:
    """The recorded readings taken during the run `report` came from: after the previous report
    of its directory was written (at most MAX_RUN_S before), up to this one; of the run's
    `devices` when the readings name any of them (else of every device on the host)."""
    root = run_root(report)
    path = record_path(root) if root is not None else None
    if path is None:
        return []
    try:
        end = Path(report).stat().st_mtime
        lines = _read_record(path).splitlines()
    except OSError:
        return []
    start = end - MAX_RUN_S
    for other in (root / "reports").glob("**/ops_perf_results_*.csv"):
        try:
            m = other.stat().st_mtime
        except OSError:
            continue
        if start < m < end - 1:
            start = m
    out = []
    for line in lines:
        try:
            r = json.loads(line)
            t = float(r["time"])
            if not isinstance(r.get("device"), (int, type(None))):
                continue
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue  # a torn last line from a killed process; not a reading
        if start < t <= end:
            out.append(r)
    if devices:
        mine = [r for r in out if r.get("device") in set(devices)]
        out = mine or out
    return out


def summarize(readings: list[dict]) -> dict | None:
    """{"readings", "throttled", "devices", "temp_c_max", "power_w_max", "aiclk_mhz_min"}."""
    if not readings:
        return None

    def pick(key: str, fn):
        vals = [r[key] for r in readings if isinstance(r.get(key), (int, float))]
        return fn(vals) if vals else None

    return {"readings": len(readings), "throttled": sum(bool(r.get("throttled"))
                                                         for r in readings),
            "devices": sorted({r.get("device") for r in readings if r.get("device") is not None}),
            "temp_c_max": pick("temp_c", max), "power_w_max": pick("power_w", max),
            "aiclk_mhz_min": pick("aiclk_mhz", min)}


def summary_line(s: dict | None) -> str:
    if not s:
        return ""
    bits = [f"{s['readings']} readings of devices {', '.join(map(str, s['devices']))}"]
    if s["temp_c_max"] is not None:
        bits.append(f"max {s['temp_c_max']:.0f} C")
    if s["aiclk_mhz_min"] is not None:
        bits.append(f"min AICLK {s['aiclk_mhz_min']:.0f} MHz")
    state = f"THROTTLED in {s['throttled']}" if s["throttled"] else "not throttled"
    return f"Telemetry during the run: {state} ({'; '.join(bits)})"
