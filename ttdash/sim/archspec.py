"""Hardware numbers the simulator uses to make durations plausible per architecture.

These are modelling constants, not measurements: clocks match what the profiler
reports (so clock inference from FW cycles works), peaks follow the figures
tt-perf-report 1.4.1 uses for its DRAM/FLOP percentages (Grayskull, which
tt-perf-report does not support, uses e150 datasheet-level numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SimArch", "ARCHS", "get_arch", "FIDELITIES"]

#: Math fidelities in the order of increasing precision (and cost).
FIDELITIES: tuple[str, ...] = ("LoFi", "HiFi2", "HiFi3", "HiFi4")


@dataclass(frozen=True)
class SimArch:
    """One chip family as the simulator sees it."""

    name: str
    """Value of the ``DEVICE ARCH`` column (``wormhole_b0``, ``blackhole``, ``grayskull``)."""
    clock_mhz: int
    """AI clock; ``(FW END - FW START) * 1000 / FW DURATION [ns]`` equals this."""
    grid: tuple[int, int]
    """Worker compute grid (x, y) available to ops."""
    max_compute_cores: int
    """``Max Compute Cores`` on line 1 of ``profile_log_device.csv``."""
    dram_gb_s: float
    """Peak DRAM bandwidth in GB/s."""
    tflops_per_core: dict[str, float]
    """Peak matmul TFLOP/s per Tensix core per math fidelity."""
    dram_sharded_cores: int
    """Cores tt-perf-report credits a DRAM-sharded matmul with (0 = not supported)."""
    eth_gb_s: float
    """Effective Ethernet bandwidth per link in GB/s (CCL ops)."""
    compute_config_name: str
    """Class name used in ``compute_kernel_config`` attribute strings."""
    cycle_base: int
    """Typical FW cycle counter value at capture start (cycles since reset)."""

    @property
    def worker_cores(self) -> int:
        """Number of worker cores (``AVAILABLE WORKER CORE COUNT``)."""
        return self.grid[0] * self.grid[1]

    @property
    def clock_ghz(self) -> float:
        """Clock in GHz (cycles per ns)."""
        return self.clock_mhz / 1000.0


_WH_HIFI4 = 74 / 72
_BH_PEAK = 4096 * 1.35 / 1000
_GS_PEAK = 2048 * 1.202 / 1000

ARCHS: dict[str, SimArch] = {
    "wormhole_b0": SimArch(
        name="wormhole_b0",
        clock_mhz=1000,
        grid=(8, 8),
        max_compute_cores=64,
        dram_gb_s=288.0,
        tflops_per_core={
            "HiFi4": _WH_HIFI4,
            "HiFi3": _WH_HIFI4 * 4 / 3,
            "HiFi2": 148 / 72,
            "LoFi": 262 / 72,
        },
        dram_sharded_cores=12,
        eth_gb_s=12.5,
        compute_config_name="ComputeKernelConfig",
        cycle_base=11_017_522_000_000,
    ),
    "blackhole": SimArch(
        name="blackhole",
        clock_mhz=1350,
        grid=(11, 10),
        max_compute_cores=120,
        dram_gb_s=512.0,
        tflops_per_core={
            "HiFi4": _BH_PEAK / 4,
            "HiFi3": _BH_PEAK / 3,
            "HiFi2": _BH_PEAK / 2,
            "LoFi": _BH_PEAK,
        },
        dram_sharded_cores=8,
        eth_gb_s=50.0,
        compute_config_name="ComputeKernelConfig",
        cycle_base=8_595_213_000_000,
    ),
    "grayskull": SimArch(
        name="grayskull",
        clock_mhz=1202,
        grid=(12, 10),
        max_compute_cores=120,
        dram_gb_s=118.4,
        tflops_per_core={
            "HiFi4": _GS_PEAK / 4,
            "HiFi3": _GS_PEAK / 3,
            "HiFi2": _GS_PEAK / 2,
            "LoFi": _GS_PEAK,
        },
        dram_sharded_cores=0,
        eth_gb_s=0.0,
        compute_config_name="GrayskullComputeKernelConfig",
        cycle_base=4_170_879_000_000,
    ),
}

_ALIASES = {
    "wormhole": "wormhole_b0",
    "wh": "wormhole_b0",
    "n150": "wormhole_b0",
    "n300": "wormhole_b0",
    "bh": "blackhole",
    "p150": "blackhole",
    "p100": "blackhole",
    "gs": "grayskull",
    "e150": "grayskull",
}


def get_arch(name: str) -> SimArch:
    """Return the :class:`SimArch` for ``name`` (a few aliases accepted).

    Raises:
        ValueError: for an unknown architecture name.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    try:
        return ARCHS[key]
    except KeyError:
        raise ValueError(f"unknown arch {name!r}; expected one of {sorted(ARCHS)}") from None
