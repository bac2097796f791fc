"""Per-architecture numbers the simulator uses to make traces plausible.

The hardware numbers - AI clock, worker grid and core count, peak DRAM bandwidth, per-core
matmul peaks per math fidelity, the cores a DRAM-sharded matmul runs on - come from ttdash's
one arch table, ``ttdash/data/arches.toml`` (:mod:`ttdash.model.arch`). The simulator reads the
built-in table, never a user's override file, so a seed gives the same trace on every machine.

Per chip family, this module only adds what the table does not hold: how the profiler spells
the arch (``DEVICE ARCH``), what it prints as ``Max Compute Cores``, the compute-kernel-config
class name, whether the op library has DRAM-sharded matmuls, an Ethernet bandwidth for CCL ops
and the FW cycle counter's typical value at capture start.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.arch import ArchSpec
from ..model.arch import _registry as _arch_table

__all__ = ["SimArch", "ARCHS", "get_arch"]


@dataclass(frozen=True)
class _Family:
    """What the simulator needs about a chip family beyond the arch table."""

    device_arch: str
    """Value of the ``DEVICE ARCH`` column (``wormhole_b0``, ``blackhole``, ``grayskull``)."""
    default_entry: str
    """The arch-table entry the bare family name stands for."""
    eth_gb_s: float
    """Effective Ethernet bandwidth per link in GB/s (CCL ops); not in the arch table."""
    compute_config_name: str
    """Class name used in ``compute_kernel_config`` attribute strings."""
    cycle_base: int
    """Typical FW cycle counter value at capture start (cycles since reset)."""
    dram_sharded_matmuls: bool = True
    """Whether the op library has DRAM-sharded matmuls on this family."""
    max_compute_cores: int | None = None
    """``Max Compute Cores`` of ``profile_log_device.csv`` when it is not the worker count."""
    lofi_flop_per_cycle: float | None = None
    """Per-core LoFi matmul FLOP/cycle to model instead of the table's peaks (HiFi2/3/4 = /2, /3,
    /4). Only Grayskull has one: 2048 FLOP/cycle (2.46 TFLOP/s at 1202 MHz), the calibration
    the committed fixture ``fixtures/generated/gs_e150_report.csv`` was generated with; the
    table's e150 figure is 332/120 = 2.77. Drop it (and rerun ``fixtures/make_fixtures.py``)
    to use the table's peaks."""


_FAMILIES: dict[str, _Family] = {
    "wormhole": _Family(
        device_arch="wormhole_b0",
        default_entry="wormhole_b0",
        eth_gb_s=12.5,
        compute_config_name="ComputeKernelConfig",
        cycle_base=11_017_522_000_000,
    ),
    "blackhole": _Family(
        device_arch="blackhole",
        default_entry="blackhole_p150",
        eth_gb_s=50.0,
        compute_config_name="ComputeKernelConfig",
        cycle_base=8_595_213_000_000,
        max_compute_cores=120,
    ),
    "grayskull": _Family(
        device_arch="grayskull",
        default_entry="grayskull_e150",
        eth_gb_s=0.0,
        compute_config_name="GrayskullComputeKernelConfig",
        cycle_base=4_170_879_000_000,
        dram_sharded_matmuls=False,
        lofi_flop_per_cycle=2048,
    ),
}


@dataclass(frozen=True)
class SimArch:
    """One chip as the simulator sees it: an arch-table entry plus its family's extras."""

    name: str
    """Value of the ``DEVICE ARCH`` column (``wormhole_b0``, ``blackhole``, ``grayskull``)."""
    spec: ArchSpec
    """The arch-table entry (clock, grid, DRAM bandwidth, peaks)."""
    max_compute_cores: int
    """``Max Compute Cores`` on line 1 of ``profile_log_device.csv``."""
    tflops_per_core: dict[str, float]
    """Peak matmul TFLOP/s per Tensix core per math fidelity."""
    dram_sharded_cores: int
    """Cores a DRAM-sharded matmul is credited with (0 = no DRAM-sharded matmuls)."""
    eth_gb_s: float
    """Effective Ethernet bandwidth per link in GB/s (CCL ops)."""
    compute_config_name: str
    """Class name used in ``compute_kernel_config`` attribute strings."""
    cycle_base: int
    """Typical FW cycle counter value at capture start (cycles since reset)."""

    @property
    def clock_mhz(self) -> int | float:
        """AI clock; ``(FW END - FW START) * 1000 / FW DURATION [ns]`` equals this."""
        c = float(self.spec.clock_mhz)
        return int(c) if c.is_integer() else c

    @property
    def clock_ghz(self) -> float:
        """Clock in GHz (cycles per ns)."""
        return self.clock_mhz / 1000.0

    @property
    def grid(self) -> tuple[int, int]:
        """Worker compute grid (x, y) available to ops (the table lists it as [rows, columns])."""
        rows, cols = self.spec.grid
        return cols, rows

    @property
    def worker_cores(self) -> int:
        """Number of worker cores (``AVAILABLE WORKER CORE COUNT``)."""
        return self.spec.worker_cores

    @property
    def dram_gb_s(self) -> float:
        """Peak DRAM bandwidth in GB/s."""
        return self.spec.dram_gbps


def _sim_arch(spec: ArchSpec) -> SimArch:
    fam = _FAMILIES[spec.family]
    peaks = dict(spec.tflops_per_core)
    if fam.lofi_flop_per_cycle is not None:
        lofi = fam.lofi_flop_per_cycle * (spec.clock_mhz / 1000) / 1000
        peaks = {"HiFi4": lofi / 4, "HiFi3": lofi / 3, "HiFi2": lofi / 2, "LoFi": lofi}
    return SimArch(
        name=fam.device_arch,
        spec=spec,
        max_compute_cores=fam.max_compute_cores or spec.worker_cores,
        tflops_per_core=peaks,
        dram_sharded_cores=spec.dram_sharded_matmul_cores if fam.dram_sharded_matmuls else 0,
        eth_gb_s=fam.eth_gb_s,
        compute_config_name=fam.compute_config_name,
        cycle_base=fam.cycle_base,
    )


def _table() -> dict[str, ArchSpec]:
    """The built-in arch table (no user overrides: traces must not depend on the machine)."""
    return _arch_table(None)


#: The simulated chip of each family, by ``DEVICE ARCH`` name.
ARCHS: dict[str, SimArch] = {
    fam.device_arch: _sim_arch(_table()[fam.default_entry]) for fam in _FAMILIES.values()
}


def get_arch(name: str) -> SimArch:
    """Return the :class:`SimArch` for ``name``: a ``DEVICE ARCH`` name or any name or alias
    of the arch table (``n300``, ``p100``, ``e150``, ...) whose family the simulator knows.

    Raises:
        ValueError: for an unknown architecture name.
    """
    key = name.strip().lower()
    if key in ARCHS:
        return ARCHS[key]
    table = _table()
    spec = table.get(key) or next((s for s in table.values() if key in s.aliases), None)
    if spec is None or spec.family not in _FAMILIES:
        raise ValueError(f"unknown arch {name!r}; expected one of {sorted(ARCHS)} "
                         f"or an entry of ttdash/data/arches.toml")
    return _sim_arch(spec)
