"""What the host says about its Tenstorrent cards, read from sysfs and procfs only (never the
device files): PCI functions of vendor 0x1e52, their PCIe link, the tt-kmd class devices with
their ARC telemetry (`tt_aiclk`, ...) and hwmon sensors, the driver version, 1 GiB HugePages.

Paths (tt-kmd docs/sysfs-attributes.md, hwmon.c and the Linux PCI sysfs ABI):
  SYS/bus/pci/devices/BDF/{vendor,device,current_link_speed,max_link_speed,current_link_width,
      max_link_width}; BDF/tenstorrent/tenstorrent!N/ (tt_aiclk, tt_card_type, ...);
  BDF/hwmon/hwmonM/{name,temp1_input (m°C),power1_input (uW),temp1_max,power1_max, *_label};
  SYS/module/tenstorrent/version; SYS/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages;
  PROC/meminfo. The roots are $TTDASH_SYSFS_ROOT (/sys) and $TTDASH_PROC_ROOT (/proc), for tests.
"""

from __future__ import annotations

import math
import os
import re
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

VENDOR = 0x1E52
#: PCI device id -> arch family (tt-kmd enumerate.h)
DEVICE_IDS = {0xFACA: "grayskull", 0x401E: "wormhole", 0xB140: "blackhole"}
#: AICLK when busy / when idle, MHz (tt-umd's arch implementations; Grayskull: e150's spec).
AICLK_BUSY = {"grayskull": 1202.0, "wormhole": 1000.0, "blackhole": 1350.0}
AICLK_IDLE = {"grayskull": 0.0, "wormhole": 500.0, "blackhole": 800.0}
#: Die temperature above which the chip throttles, when hwmon has no temp1_max: the Grayskull
#: and Wormhole spec's operating range ends at 75 C; Blackhole's firmware thm_limit is 90 C.
TEMP_LIMIT_C = {"grayskull": 75.0, "wormhole": 75.0, "blackhole": 90.0}
#: Total board power by card type (tenstorrent.github.io specifications), W.
BOARD_POWER_W = {"e75": 75.0, "e150": 200.0, "n150": 160.0, "n300": 300.0, "p100": 300.0,
                 "p100a": 300.0, "p150": 300.0, "p150a": 300.0, "p150b": 300.0,
                 "p150c": 300.0}
GIB = 1 << 30


@dataclass(frozen=True)
class Roots:
    sys: Path
    proc: Path
    dev: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Roots:
        env = os.environ if env is None else env
        return cls(Path(env.get("TTDASH_SYSFS_ROOT", "/sys")),
                   Path(env.get("TTDASH_PROC_ROOT", "/proc")),
                   Path(env.get("TTDASH_DEV_ROOT", "/dev")))


#: At most this much of a sysfs/procfs file is read (an attribute is a line; /proc/meminfo
#: about 1.5 KiB): a file that streams forever must not fill the memory.
READ_MAX = 8 << 10
#: A read that has not returned after this long is given up (a hung device's attribute, a
#: stalled FUSE file): its thread is left blocked and the path is not read again.
READ_TIMEOUT_S = 2.0
_hung: set[str] = set()


def read(path: Path) -> str | None:
    """A sysfs file's text, stripped; None when it is missing, unreadable, not a regular file
    (a FIFO, a device: never waited on) or does not answer within READ_TIMEOUT_S. At most
    READ_MAX bytes are read."""
    key = str(path)
    if key in _hung:
        return None
    box: list[bytes | None] = []
    reader = threading.Thread(target=lambda: box.append(_read_bounded(key)), daemon=True,
                              name="ttdash-sysfs-read")
    reader.start()
    reader.join(READ_TIMEOUT_S)
    if reader.is_alive():
        _hung.add(key)
        return None
    data = box[0] if box else None
    return None if data is None else data.decode("utf-8", errors="replace").strip()


def _read_bounded(path: str) -> bytes | None:
    """At most READ_MAX bytes of a regular file, opened without blocking (O_NONBLOCK: a FIFO's
    open returns at once, and fstat then turns it away before any read)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a device file is not even opened
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            return None
        chunks, left = [], READ_MAX
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def number(text: str | None) -> float | None:
    """The leading number of a sysfs value ("16.0 GT/s PCIe", "8 GT/s", "45000")."""
    if text is None:
        return None
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
    v = float(m.group(1)) if m else None
    return v if v is not None and math.isfinite(v) else None


@dataclass(frozen=True)
class Sample:
    """One reading of a device's sensors (None: not exposed)."""

    temp_c: float | None = None
    power_w: float | None = None
    aiclk_mhz: float | None = None
    temp_limit_c: float | None = None
    power_limit_w: float | None = None


@dataclass(frozen=True)
class Device:
    bdf: str
    arch: str  # grayskull / wormhole / blackhole / "unknown (0x....)"
    index: int | None  # N of /dev/tenstorrent/N (tt-kmd's class device); None: not bound
    card: str | None
    link_speed: float | None  # GT/s
    link_speed_max: float | None
    link_width: int | None
    link_width_max: int | None
    class_dir: Path | None
    hwmon_dir: Path | None
    attrs: dict[str, str] = field(default_factory=dict)  # tt_* telemetry attributes

    def sample(self) -> Sample:
        """The sensors now: hwmon (temperature, power and their limits) and tt_aiclk."""
        h = self.hwmon_dir
        temp = power = temp_max = power_max = None
        if h is not None:
            temp = _scaled(read(h / "temp1_input"), 1e3)
            power = _scaled(read(h / "power1_input"), 1e6)
            temp_max = _scaled(read(h / "temp1_max"), 1e3)
            power_max = _scaled(read(h / "power1_max"), 1e6)
        aiclk = number(read(self.class_dir / "tt_aiclk")) if self.class_dir else None
        card = (self.card or "").split()
        return Sample(temp, power, aiclk, temp_max or TEMP_LIMIT_C.get(self.arch),
                      power_max or (BOARD_POWER_W.get(card[0]) if card else None))


def clock_throttled(arch: str, aiclk_mhz: float | None) -> bool:
    """AICLK between the arch's idle and busy clocks: a busy chip held back (temperature,
    power). At the idle clock or above the busy one it is not."""
    busy, idle = AICLK_BUSY.get(arch), AICLK_IDLE.get(arch)
    return aiclk_mhz is not None and busy is not None and idle is not None \
        and idle + 1 < aiclk_mhz < busy - 1


def _scaled(text: str | None, per_unit: float) -> float | None:
    v = number(text)
    return None if v is None else v / per_unit


def pci_devices(roots: Roots) -> list[Device]:
    """Every PCI function of vendor 0x1e52, in bus order."""
    base = roots.sys / "bus" / "pci" / "devices"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for bdf in entries:
        d = base / bdf
        if _int(read(d / "vendor")) != VENDOR:
            continue
        dev_id = _int(read(d / "device"))
        arch = DEVICE_IDS.get(dev_id or -1, f"unknown (0x{dev_id or 0:04x})")
        class_dir, index = _class_dir(d)
        hwmon = _hwmon_dir(d)
        attrs = {}
        try:  # the device may be unbound or reset between two reads
            names = sorted(os.listdir(class_dir)) if class_dir is not None else []
        except OSError:
            names, class_dir = [], None
        if class_dir is not None:
            for name in names:
                if name.startswith("tt_"):
                    value = read(class_dir / name)
                    if value is not None:
                        attrs[name] = value
        w, wm = number(read(d / "current_link_width")), number(read(d / "max_link_width"))
        out.append(Device(
            bdf=bdf, arch=arch, index=index, card=attrs.get("tt_card_type"),
            link_speed=number(read(d / "current_link_speed")),
            link_speed_max=number(read(d / "max_link_speed")),
            link_width=None if w is None else int(w), link_width_max=None if wm is None
            else int(wm), class_dir=class_dir, hwmon_dir=hwmon, attrs=attrs))
    return out


def _int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text else None
    except ValueError:
        return None


def _class_dir(pci_dir: Path) -> tuple[Path | None, int | None]:
    d = pci_dir / "tenstorrent"
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith("tenstorrent!"))
    except OSError:
        return None, None
    if not names:
        return None, None
    return d / names[0], _int(names[0].partition("!")[2])


def _hwmon_dir(pci_dir: Path) -> Path | None:
    d = pci_dir / "hwmon"
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith("hwmon"))
    except OSError:
        return None
    return d / names[0] if names else None


def driver_version(roots: Roots) -> str | None:
    return read(roots.sys / "module" / "tenstorrent" / "version")


def dev_nodes(roots: Roots) -> list[str]:
    try:
        return sorted(os.listdir(roots.dev / "tenstorrent"))
    except OSError:
        return []


def hugepages_1g(roots: Roots) -> tuple[int | None, int | None]:
    """(1 GiB pages reserved, free); None when the kernel has no 1 GiB pool."""
    d = roots.sys / "kernel" / "mm" / "hugepages" / "hugepages-1048576kB"
    total, free = number(read(d / "nr_hugepages")), number(read(d / "free_hugepages"))
    return (None if total is None else int(total)), (None if free is None else int(free))


def meminfo(roots: Roots) -> dict[str, int]:
    """/proc/meminfo as {key: value} (kB for sizes, counts for HugePages_*)."""
    out: dict[str, int] = {}
    for line in (read(roots.proc / "meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        v = number(rest)
        if v is not None:
            out[key.strip()] = int(v)
    return out
