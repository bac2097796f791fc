"""The telemetry strip of `watch` and `run`: every Tenstorrent device's temperature, power and
AICLK, read from sysfs every few seconds (health.telemetry), throttling marked, each reading
kept with the run. Hidden on a host without a Tenstorrent device."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from ..health.telemetry import Reading, Telemetry, append_record

INTERVAL_S = 2.0


def reading_text(r: Reading) -> Text:
    """Compact ("dev1 82C 60W 700MHz HOT"): eight devices should fit a wide line."""
    s = r.sample
    bits = [f"dev{r.device if r.device is not None else '?'}"]
    if s.temp_c is not None:
        bits.append(f"{s.temp_c:.0f}C")
    if s.power_w is not None:
        bits.append(f"{s.power_w:.0f}W")
    if s.aiclk_mhz is not None:
        bits.append(f"{s.aiclk_mhz:.0f}MHz")
    t = Text(" ".join(bits))
    if r.throttled:
        t.append(" HOT" if r.hot else " THROTTLED", style="bold reverse")
    return t


class TelemetryStrip(Static):
    DEFAULT_CSS = """
    TelemetryStrip { height: 1; background: $panel; padding: 0 1; text-wrap: nowrap;
                     text-overflow: ellipsis; }
    """

    def __init__(self, record_for: Path | None = None, **kw) -> None:
        """`record_for`: the profiler directory whose run the readings are kept with."""
        super().__init__(**kw)
        self.record_for = record_for
        self.telemetry = Telemetry()
        self.display = bool(self.telemetry.devices)

    def on_mount(self) -> None:
        if self.telemetry.devices:
            self.sample()
            self.set_interval(INTERVAL_S, self.sample)

    def sample(self) -> None:
        readings = self.telemetry.read()
        if self.record_for is not None:
            append_record(self.record_for, readings)
        line = Text("telemetry ", style="bold")
        # throttled devices first: on a narrow screen they are what must not be cut off
        for i, r in enumerate(sorted(readings, key=lambda r: not r.throttled)):
            if i:
                line.append(" · ")
            line.append_text(reading_text(r))
        n = self.telemetry.throttled_readings()
        if n:
            line.append(f" · throttled in {n} of {len(self.telemetry.readings)} readings",
                        style="bold")
        line.no_wrap, line.overflow = True, "ellipsis"
        self.update(line)
