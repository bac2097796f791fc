"""Fake sysfs / procfs / dev trees for `ttdash doctor` and the telemetry strip: the files tt-kmd
and the Linux PCI and hwmon code write, with the formats they write them in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEVICE_IDS = {"grayskull": "0xfaca", "wormhole": "0x401e", "blackhole": "0xb140"}


@dataclass
class Card:
    arch: str = "wormhole"
    card: str = "n150"
    speed: str = "16.0 GT/s PCIe"
    max_speed: str = "16.0 GT/s PCIe"
    width: int = 16
    max_width: int = 16
    temp_c: float | None = 45.0
    power_w: float | None = 35.0
    aiclk: int | None = 1000
    temp_max_c: float | None = None
    power_max_w: float | None = None
    bound: bool = True  # tt-kmd bound (class device, hwmon, /dev node)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def fake_host(root: Path, cards: list[Card], *, hugepages_1g: int = 16,
              driver: str | None = "2.1.0") -> dict[str, str]:
    """Build the trees under `root`; returns the environment that points ttdash at them."""
    sys_, proc, dev = root / "sys", root / "proc", root / "dev"
    for p in (sys_, proc, dev):
        p.mkdir(parents=True, exist_ok=True)
    pci = sys_ / "bus" / "pci" / "devices"
    write(pci / "0000:00:00.0" / "vendor", "0x8086")  # the host bridge: not ours
    write(pci / "0000:00:00.0" / "device", "0x1234")
    for i, c in enumerate(cards):
        d = pci / f"0000:0{i + 1}:00.0"
        write(d / "vendor", "0x1e52")
        write(d / "device", DEVICE_IDS[c.arch])
        write(d / "current_link_speed", c.speed)
        write(d / "max_link_speed", c.max_speed)
        write(d / "current_link_width", str(c.width))
        write(d / "max_link_width", str(c.max_width))
        if not c.bound:
            continue
        cls = d / "tenstorrent" / f"tenstorrent!{i}"
        write(cls / "tt_card_type", c.card)
        write(cls / "tt_fw_bundle_ver", "18.7.0.0")
        if c.aiclk is not None:
            write(cls / "tt_aiclk", str(c.aiclk))
        hw = d / "hwmon" / f"hwmon{i + 3}"
        write(hw / "name", c.arch)
        label = "asic1_temp" if c.arch == "wormhole" else "asic_temp"
        if c.temp_c is not None:
            write(hw / "temp1_input", str(int(c.temp_c * 1000)))
            write(hw / "temp1_label", label)
        if c.power_w is not None:
            write(hw / "power1_input", str(int(c.power_w * 1_000_000)))
        if c.temp_max_c is not None:
            write(hw / "temp1_max", str(int(c.temp_max_c * 1000)))
        if c.power_max_w is not None:
            write(hw / "power1_max", str(int(c.power_max_w * 1_000_000)))
        write(dev / "tenstorrent" / str(i), "")
    if driver is not None:
        write(sys_ / "module" / "tenstorrent" / "version", driver)
    hp = sys_ / "kernel" / "mm" / "hugepages" / "hugepages-1048576kB"
    write(hp / "nr_hugepages", str(hugepages_1g))
    write(hp / "free_hugepages", str(hugepages_1g))
    write(proc / "meminfo", "MemTotal:       65536000 kB\nHugePages_Total:       0\n"
          "HugePages_Free:        0\nHugepagesize:       2048 kB\n")
    return {"TTDASH_SYSFS_ROOT": str(sys_), "TTDASH_PROC_ROOT": str(proc),
            "TTDASH_DEV_ROOT": str(dev)}
