"""What changed around the run: the facts of each side of a diff that are not its ops.

From the file: the arch (``DEVICE ARCH``, the device log or the clock), the clock (cycles over
nanoseconds, ``Trace.clock_mhz``), the device count, the worker cores available (harvesting)
and the ttnn / tt-metal version when a column says it (a header naming ``VERSION``). From the
readings ``run``, ``watch --record`` and ``doctor`` keep (``health.telemetry``), when there are
any: the AICLK (median), the hottest temperature, throttled readings, and the firmware and driver
versions when the readings carry them.

A change of clock explains a uniform slowdown: the profiler's nanoseconds are cycles divided by
the clock, so at equal cycles the device time changes by ``clock_a / clock_b - 1``
(:func:`clock_note`). The verdict names every difference (:func:`differences`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from statistics import median
from typing import Any

import numpy as np

from ..read.loader import version_columns
from ..trace import View

#: Clocks closer than this (relative) are the same clock (the inference's rounding).
CLOCK_TOLERANCE = 0.02
#: A device-time change within this of what the clock predicts (relative, at least
#: CLOCK_EXPLAINS_MIN_PCT points) is explained by the clock.
CLOCK_EXPLAINS = 0.2
CLOCK_EXPLAINS_MIN_PCT = 2.0
#: reading key -> what it holds, for the versions a reading may carry
FIRMWARE_KEYS = ("firmware", "fw_bundle_ver", "tt_fw_bundle_ver")
DRIVER_KEYS = ("driver", "driver_version")


@dataclass(frozen=True)
class RunContext:
    """One side's facts (None: not known)."""

    arch: str | None = None
    clock_mhz: float | None = None
    devices: int | None = None
    worker_cores: int | None = None
    version: str | None = None
    aiclk_mhz: float | None = None  # median of the recorded readings
    temp_c_max: float | None = None
    throttled: int | None = None  # readings marked throttled
    readings: int = 0
    firmware: str | None = None
    driver: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_context(view: View, extra: dict[str, np.ndarray] | None = None,
                readings: list[dict[str, Any]] | None = None) -> RunContext:
    """The facts of `view`; `extra`: its ops' version columns (attributes.extra_columns);
    `readings`: the telemetry recorded while it ran."""
    t = view.trace
    ops = view.op_rows
    cores = ops["available_cores"].to_numpy(dtype="float64") if "available_cores" in ops \
        else np.zeros(0)
    cores = cores[np.isfinite(cores)]
    version = None
    for name in version_columns(t.header):
        vals = [v for v in (extra or {}).get(name, ()) if v]
        if vals:
            version = " ".join(sorted(set(map(str, vals))))
            break
    tel = _telemetry(readings or [])
    return RunContext(arch=t.arch.name, clock_mhz=t.clock_mhz, devices=len(t.devices) or None,
                      worker_cores=int(cores.max()) if len(cores) else None, version=version,
                      **tel)


def with_readings(ctx: RunContext, readings: list[dict[str, Any]]) -> RunContext:
    """`ctx` with the telemetry of `readings` (unchanged without any)."""
    tel = _telemetry(readings)
    return replace(ctx, **tel) if tel else ctx


def _telemetry(readings: list[dict[str, Any]]) -> dict[str, Any]:
    if not readings:
        return {}

    def nums(key: str) -> list[float]:
        return [float(r[key]) for r in readings if isinstance(r.get(key), (int, float))
                and not isinstance(r.get(key), bool)]

    def texts(keys: tuple[str, ...]) -> str | None:
        found = sorted({str(r[k]) for r in readings for k in keys if r.get(k)})
        return ", ".join(found) if found else None

    aiclk, temp = nums("aiclk_mhz"), nums("temp_c")
    return {"aiclk_mhz": median(aiclk) if aiclk else None,
            "temp_c_max": max(temp) if temp else None,
            "throttled": sum(bool(r.get("throttled")) for r in readings),
            "readings": len(readings), "firmware": texts(FIRMWARE_KEYS),
            "driver": texts(DRIVER_KEYS)}


@dataclass(frozen=True)
class ContextChange:
    key: str
    label: str
    baseline: Any
    candidate: Any
    unit: str = ""

    def text(self) -> str:
        def show(v: Any) -> str:
            if v is None:
                return "unknown"
            if isinstance(v, float):
                return f"{v:g}"
            return str(v)
        return f"{self.label} {show(self.baseline)} -> {show(self.candidate)}{self.unit}"

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "candidate": self.candidate}


def _clock_differs(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) > CLOCK_TOLERANCE * max(a, b)


def differences(a: RunContext, b: RunContext) -> list[ContextChange]:
    """What differs between the two sides (a fact known on one side only is not a difference,
    except a telemetry version: firmware and driver are compared when both sides recorded)."""
    out = []
    for key, label, unit in (("arch", "arch", ""), ("version", "version", ""),
                             ("devices", "devices", ""), ("worker_cores", "worker cores", "")):
        va, vb = getattr(a, key), getattr(b, key)
        if va is not None and vb is not None and va != vb:
            out.append(ContextChange(key, label, va, vb, unit))
    if _clock_differs(a.clock_mhz, b.clock_mhz):
        out.append(ContextChange("clock_mhz", "clock", a.clock_mhz, b.clock_mhz, " MHz"))
    if _clock_differs(a.aiclk_mhz, b.aiclk_mhz):
        out.append(ContextChange("aiclk_mhz", "AICLK", a.aiclk_mhz, b.aiclk_mhz, " MHz"))
    for key, label in (("firmware", "firmware"), ("driver", "driver")):
        va, vb = getattr(a, key), getattr(b, key)
        if va is not None and vb is not None and va != vb:
            out.append(ContextChange(key, label, va, vb))
    if (a.throttled or 0) != (b.throttled or 0) and a.readings and b.readings:
        out.append(ContextChange("throttled", "throttled readings",
                                 f"{a.throttled} of {a.readings}",
                                 f"{b.throttled} of {b.readings}"))
    return out


def clock_note(a: RunContext, b: RunContext, device_pct: float | None) -> str | None:
    """What a change of clock (the file's, else the recorded AICLK) does to device time, and
    whether it explains the change seen: "at equal cycles the clock change alone makes device
    time +25.0%: it explains the +25.1% seen"."""
    for ca, cb, what in ((a.clock_mhz, b.clock_mhz, "clock"),
                         (a.aiclk_mhz, b.aiclk_mhz, "AICLK")):
        if not _clock_differs(ca, cb):
            continue
        assert ca is not None and cb is not None
        expected = (ca / cb - 1.0) * 100.0
        text = f"at equal cycles the {what} change alone makes device time {expected:+.1f}%"
        if device_pct is not None and abs(device_pct - expected) <= max(
                CLOCK_EXPLAINS_MIN_PCT, CLOCK_EXPLAINS * abs(expected)):
            text += f": it explains the {device_pct:+.1f}% seen"
        elif device_pct is not None:
            text += f"; device time changed {device_pct:+.1f}%"
        return text
    return None
