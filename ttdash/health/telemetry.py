"""Live device telemetry for `watch` and `run`: a reading of every Tenstorrent device's sensors
from sysfs (probe.Device.sample: a few small files, no device access), with throttling marked,
and a bounded record of the readings."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from .probe import AICLK_BUSY, AICLK_IDLE, Device, Roots, Sample, pci_devices

#: Readings kept (one per device per interval; an hour at the 2 s default).
KEEP = 1800


@dataclass(frozen=True)
class Reading:
    t: float  # time.time()
    device: int | None
    arch: str
    sample: Sample

    @property
    def hot(self) -> bool:
        s = self.sample
        return s.temp_c is not None and s.temp_limit_c is not None and s.temp_c >= s.temp_limit_c

    @property
    def throttled(self) -> bool:
        """AICLK between the arch's idle and busy clocks (a busy chip held back), or hot."""
        a, busy, idle = self.sample.aiclk_mhz, AICLK_BUSY.get(self.arch), AICLK_IDLE.get(self.arch)
        slow = a is not None and busy is not None and idle is not None and idle + 1 < a < busy - 1
        return slow or self.hot

    def as_dict(self) -> dict:
        s = self.sample
        return {"time": self.t, "device": self.device, "arch": self.arch,
                "temp_c": s.temp_c, "power_w": s.power_w, "aiclk_mhz": s.aiclk_mhz,
                "temp_limit_c": s.temp_limit_c, "power_limit_w": s.power_limit_w,
                "throttled": self.throttled}


class Telemetry:
    """The devices found once; `read()` samples them all and keeps the readings."""

    def __init__(self, roots: Roots | None = None) -> None:
        self.devices: list[Device] = [d for d in pci_devices(roots or Roots.from_env())
                                      if d.class_dir is not None or d.hwmon_dir is not None]
        self.readings: deque[Reading] = deque(maxlen=KEEP * max(len(self.devices), 1))

    def read(self) -> list[Reading]:
        now = time.time()
        out = [Reading(now, d.index, d.arch, d.sample()) for d in self.devices]
        self.readings.extend(out)
        return out

    def throttled_readings(self) -> int:
        return sum(r.throttled for r in self.readings)
