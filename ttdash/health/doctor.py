"""`ttdash doctor`: the checks the Grayskull/Wormhole tuning guides ask for when throughput is half
what it should be (PCIe link, HugePages, driver, temperature, power, clock, environment), each
with what to do. Read-only: sysfs, procfs and the environment (probe.py), never the device."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .probe import (
    AICLK_BUSY,
    AICLK_IDLE,
    BOARD_POWER_W,
    GIB,
    TEMP_LIMIT_C,
    Device,
    Roots,
    Sample,
    clock_throttled,
    dev_nodes,
    driver_version,
    hugepages_1g,
    meminfo,
    number,
    pci_devices,
)

OK, WARN, FAIL, UNKNOWN = "ok", "warn", "fail", "unknown"
HUGEPAGES_GUIDE = 16 * GIB  # "16 GB minimum" (the Grayskull/Wormhole guides)
#: Expected PCIe generation (GT/s) per arch: Gen4 x16 for Grayskull/Wormhole, Gen5 for Blackhole.
EXPECTED_GTS = {"grayskull": 16.0, "wormhole": 16.0, "blackhole": 32.0}
GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
ARCH_NAMES = {"grayskull": "grayskull", "wormhole": "wormhole_b0", "blackhole": "blackhole"}


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok / warn / fail / unknown
    detail: str
    idle_only: bool = False  # a warning an idle device gives anyway (not for run's start line)

    def __post_init__(self) -> None:  # env, sysfs and snapshot text: printable, UTF-8
        object.__setattr__(self, "name", utf8(self.name))
        object.__setattr__(self, "detail", utf8(self.detail))

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


def utf8(text: str) -> str:
    """`text` encodable as UTF-8: a lone surrogate (an environment variable's bytes that are not
    UTF-8, a \\udXXX escape in a snapshot's JSON) shown as \\xNN or \\udXXX."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def run_checks(env: Mapping[str, str] | None = None, roots: Roots | None = None) -> list[Check]:
    env = os.environ if env is None else env
    roots = roots or Roots.from_env(env)
    devices = pci_devices(roots)
    out = [_devices_check(devices)]
    for d in devices:
        out.append(_link_check(d))
    out.append(_driver_check(roots, devices))
    out.append(_hugepages_check(roots, devices))
    for d in devices:
        out.append(_sensor_check(f"sensors, {_name(d)}", d.arch, d.sample(),
                                 d.hwmon_dir is not None or d.class_dir is not None))
    out.extend(_env_checks(env, devices))
    return out


def warnings_line(checks: list[Check]) -> str:
    """One line for a status bar: the checks that warn or fail, by name ("" when none)."""
    bad = [c for c in checks if c.status == FAIL or (c.status == WARN and not c.idle_only)]
    if not bad:
        return ""
    names = list(dict.fromkeys(c.name.split(",")[0] for c in bad))
    fails = sum(c.status == FAIL for c in bad)
    what = f"{fails} failed, {len(bad) - fails} warned" if fails else f"{len(bad)} warned"
    return f"doctor: {what} ({', '.join(names)}; ttdash doctor)"


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0


def _name(d: Device) -> str:
    return f"device {d.index if d.index is not None else '?'} ({d.bdf}, {d.arch}" + \
        (f" {d.card})" if d.card else ")")


def _devices_check(devices: list[Device]) -> Check:
    if not devices:
        return Check("Tenstorrent devices", WARN, "no Tenstorrent device found (no PCI function "
                     "of vendor 0x1e52): profiles can be read here, not made")
    kinds = ", ".join(f"{d.bdf} {d.arch}" + (f" {d.card}" if d.card else "") for d in devices)
    return Check("Tenstorrent devices", OK, f"{len(devices)} found: {kinds}")


def _gen(gts: float | None) -> str:
    return "Gen?" if gts is None else f"Gen{GEN.get(gts, '?')}"


def _link_check(d: Device) -> Check:
    name = f"PCIe link, {_name(d)}"
    if d.link_speed is None or d.link_width is None:
        return Check(name, UNKNOWN, "the kernel does not report this function's link")
    now = f"{_gen(d.link_speed)} x{d.link_width} ({d.link_speed:g} GT/s)"
    best = f"{_gen(d.link_speed_max)} x{d.link_width_max}"
    want = EXPECTED_GTS.get(d.arch)
    problems = []
    if d.link_width_max is not None and d.link_width < d.link_width_max or d.link_width < 16:
        problems.append(f"x{d.link_width} of x16: host-device transfers and dispatch get "
                        f"{d.link_width / 16:.0%} of the bandwidth; use an x16 slot wired x16 "
                        "(no bifurcation, no riser that drops lanes) and reseat the card")
    if d.link_speed_max is not None and d.link_speed < d.link_speed_max:
        idle = " (Wormhole firmware drops the link to Gen1 when idle: check again under load)" \
            if d.arch == "wormhole" else ""
        problems.append(f"running below the card's {best}{idle}; check the slot's generation "
                        "in the BIOS (PCIe speed: Auto or Gen4/Gen5)")
    elif want and d.link_speed_max is not None and d.link_speed_max < want:
        problems.append(f"the slot tops out at {_gen(d.link_speed_max)}; the card wants "
                        f"{_gen(want)}: use a {_gen(want)} slot")
    if problems:
        width_ok = d.link_width_max is not None and d.link_width >= d.link_width_max >= 16
        return Check(name, WARN, f"{now}, max {best}: " + "; ".join(problems),
                     idle_only=d.arch == "wormhole" and width_ok and len(problems) == 1)
    return Check(name, OK, f"{now}, as the card allows")


def _driver_check(roots: Roots, devices: list[Device]) -> Check:
    version = driver_version(roots)
    nodes = dev_nodes(roots)
    if version is None:
        if not devices:
            return Check("kernel driver (tt-kmd)", UNKNOWN, "not loaded (no device here)")
        return Check("kernel driver (tt-kmd)", FAIL, "not loaded: install tt-kmd (`sudo dkms "
                     "install tenstorrent/VERSION`) and `sudo modprobe tenstorrent`, or reboot")
    unbound = [d.bdf for d in devices if d.index is None]
    if unbound:
        return Check("kernel driver (tt-kmd)", FAIL, f"tt-kmd {version} is loaded but not bound "
                     f"to {', '.join(unbound)} (a Grayskull needs tt-kmd < 2.0; otherwise see "
                     "`dmesg | grep tenstorrent`)")
    if devices and not nodes:
        return Check("kernel driver (tt-kmd)", FAIL, f"tt-kmd {version} is loaded but "
                     "/dev/tenstorrent/ is empty: check udev rules and `dmesg | grep tenstorrent`")
    return Check("kernel driver (tt-kmd)", OK, f"tt-kmd {version}, /dev/tenstorrent/"
                 + (",".join(nodes) if nodes else " (no device)"))


def _hugepages_check(roots: Roots, devices: list[Device]) -> Check:
    pages, free = hugepages_1g(roots)
    mem = meminfo(roots)
    size_kb = mem.get("Hugepagesize")
    total = (pages or 0) * GIB
    if not pages and size_kb and mem.get("HugePages_Total"):  # a default pool of another size
        total = mem["HugePages_Total"] * size_kb * 1024
    need = max(HUGEPAGES_GUIDE, 4 * GIB * sum(d.arch != "grayskull" for d in devices)
               + GIB * sum(d.arch == "grayskull" for d in devices))
    fix = ("reserve 1 GiB pages: tt-system-tools' hugepages-setup.sh, or `hugepagesz=1G "
           f"hugepages={need // GIB}` on the kernel command line and reboot")
    have = f"{total / GIB:g} GiB" + (f" ({pages} x 1 GiB, {free} free)" if pages else "")
    if not devices:  # nothing here would map them: no reservation, no reboot to ask for
        return Check("HugePages", UNKNOWN, f"{have}; not checked: no Tenstorrent device here "
                     "(TT-Metal needs 1 GiB pages on the host that opens one)")
    if not pages:
        return Check("HugePages", FAIL, f"no 1 GiB HugePages ({have} in all); TT-Metal maps "
                     f"its host buffers on them: {fix}")
    if total < need:
        return Check("HugePages", WARN, f"{have}, under the {need // GIB} GiB the guides ask "
                     f"for: {fix}")
    return Check("HugePages", OK, f"{have}")


def _sensor_check(name: str, arch: str, s: Sample, exposed: bool) -> Check:
    if not exposed:
        return Check(name, UNKNOWN, "the driver exposes no sensors for this device (hwmon "
                     "missing: tt-kmd too old, or the device is not bound)")
    parts, problems = [], []
    if s.temp_c is not None:
        parts.append(f"{s.temp_c:.0f} C")
        if s.temp_limit_c is not None and s.temp_c >= s.temp_limit_c:
            problems.append(f"{s.temp_c:.0f} C is at or above the {s.temp_limit_c:.0f} C limit: "
                            "the chip throttles; check the fan / airflow (passive cards need "
                            "forced air through the heatsink)")
    if s.power_w is not None:
        parts.append(f"{s.power_w:.0f} W" + (f" of {s.power_limit_w:.0f} W"
                                              if s.power_limit_w else ""))
        if s.power_limit_w and s.power_w >= 0.95 * s.power_limit_w:
            problems.append(f"power {s.power_w:.0f} W is at the {s.power_limit_w:.0f} W board "
                            "limit: the firmware lowers the clock; check the PCIe power cables "
                            "(both 8-pin connectors where the card has two)")
    busy, idle = AICLK_BUSY.get(arch), AICLK_IDLE.get(arch)
    if s.aiclk_mhz is not None:
        parts.append(f"AICLK {s.aiclk_mhz:.0f} MHz")
        if clock_throttled(arch, s.aiclk_mhz):
            problems.append(f"AICLK {s.aiclk_mhz:.0f} MHz is below the {busy:.0f} MHz a busy "
                            f"{arch} runs at: throttled (temperature or power)")
        elif idle is not None and s.aiclk_mhz <= idle + 1:
            parts.append("idle clock")
    detail = ", ".join(parts) or "no reading"
    if problems:
        return Check(name, WARN, detail + ": " + "; ".join(problems))
    return Check(name, OK, detail)


def _env_checks(env: Mapping[str, str], devices: list[Device]) -> list[Check]:
    from ..runner import profiler_env

    out = []
    arch = env.get("ARCH_NAME")
    families = sorted({d.arch for d in devices if d.arch in ARCH_NAMES})
    if arch is None:
        out.append(Check("ARCH_NAME", OK, "not set (current TT-Metal detects the arch)"))
    elif families and arch not in {ARCH_NAMES[f] for f in families}:
        want = " or ".join(ARCH_NAMES[f] for f in families)
        out.append(Check("ARCH_NAME", WARN, f"{arch!r}, but the devices here are {want}: "
                         f"`export ARCH_NAME={ARCH_NAMES[families[0]]}` or unset it"))
    else:
        out.append(Check("ARCH_NAME", OK, repr(arch)))
    home = env.get("TT_METAL_HOME")
    if home is None:
        out.append(Check("TT_METAL_HOME", OK, "not set (a tt-metal source build needs it; "
                         "`ttdash watch` then looks in $TT_METAL_PROFILER_DIR or "
                         "./generated/profiler)"))
    elif not Path(home).is_dir():
        out.append(Check("TT_METAL_HOME", WARN, f"{home}: no such directory"))
    else:
        out.append(Check("TT_METAL_HOME", OK, home))
    wanted = {k: v for k, v in profiler_env("generated/profiler", base={}).items()
              if k != "TT_METAL_PROFILER_DIR"}
    now = ", ".join(f"{k}={env[k]}" for k in sorted(wanted) if k in env) or "none set"
    out.append(Check("profiler variables", OK, f"{now}; `ttdash run` sets "
                     + ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()))
                     + " and TT_METAL_PROFILER_DIR for its run"))
    return out


# ---------------------------------------------------------------- a tt-smi snapshot

def _arch_of_board(board_type: str) -> str:
    b = board_type.lower()
    return "blackhole" if b.startswith("p") or "blackhole" in b else (
        "grayskull" if b.startswith("e") else "wormhole")


def _num(v: object) -> float | None:
    return number(str(v)) if v is not None else None


def smi_checks(snapshot: Mapping[str, object]) -> list[Check]:
    """Checks from a `tt-smi -s` snapshot a user saved (tt-smi reads the sensors through the
    device, which doctor does not do itself): each board's link and sensors."""
    out = []
    boards = snapshot.get("device_info")
    for i, dev in enumerate(boards if isinstance(boards, list) else []):
        if not isinstance(dev, dict):
            continue
        board = dev.get("board_info")
        tel = dev.get("telemetry")
        board = board if isinstance(board, dict) else {}
        tel = tel if isinstance(tel, dict) else {}
        kind = str(board.get("board_type") or "?")
        arch = _arch_of_board(kind)
        label = f"board {i} ({board.get('bus_id', '?')}, {kind}; tt-smi snapshot)"
        gen, width = _num(board.get("pcie_speed")), _num(board.get("pcie_width"))
        want = GEN.get(EXPECTED_GTS[arch])
        if gen is not None and width is not None:
            bad = (width < 16) or (want is not None and gen < want)
            out.append(Check(f"PCIe link, {label}", WARN if bad else OK,
                             f"Gen{gen:g} x{width:g} (tt-smi)" + (
                                 f": under Gen{want} x16; see the PCIe link check's advice"
                                 if bad else "")))
        card = kind.split()[0] if kind.split() else ""
        sample = Sample(_num(tel.get("asic_temperature")), _num(tel.get("power")),
                        _num(tel.get("aiclk")), TEMP_LIMIT_C.get(arch),
                        BOARD_POWER_W.get(card))
        out.append(_sensor_check(f"sensors, {label}", arch, sample, bool(tel)))
    if not out:
        out.append(Check("tt-smi snapshot", WARN, "no device_info entry: not a tt-smi snapshot"))
    return out
