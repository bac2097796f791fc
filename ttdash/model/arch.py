"""Architecture specs: one data table (ttdash/data/arches.toml), extendable by the user."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..paths import config_dir
from .errors import TraceError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIDELITIES = ("HiFi4", "HiFi3", "HiFi2", "LoFi")
# Clock inferred from FW cycles / FW duration -> family (FORMATS.md: right on every real fixture).
CLOCK_TO_ARCH = ((1000.0, "wormhole_b0"), (1350.0, "blackhole_p150"), (1202.0, "grayskull_e150"))


@dataclass(frozen=True)
class ArchSpec:
    name: str
    family: str
    clock_mhz: float
    grid: tuple[int, int]
    worker_cores: int
    dram_gbps: float
    dram_sharded_matmul_cores: int
    tflops_per_core: dict[str, float]
    perf_report_name: str = ""
    aliases: tuple[str, ...] = field(default=())


def _number(value: object, where: str) -> float:
    try:
        if isinstance(value, str):
            return float(Fraction(value.replace(" ", "")))
        return float(value)  # type: ignore[arg-type]
    except (ValueError, TypeError, ZeroDivisionError):
        raise TraceError(where, f"not a number: {value!r}") from None


def _parse_table(data: dict[str, Any], source: str, base: dict[str, dict[str, Any]]
                 ) -> dict[str, dict[str, Any]]:
    merged = {k: dict(v) for k, v in base.items()}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise TraceError(source, f"[{name}] must be a table")
        merged.setdefault(name, {}).update(entry)
    return merged


def _build(name: str, e: dict[str, Any], source: str) -> ArchSpec:
    try:
        tflops = {f: _number(e["tflops_per_core"][f], f"{source}: [{name}].tflops_per_core.{f}")
                  for f in FIDELITIES}
        grid = tuple(int(x) for x in e.get("grid", (0, 0)))
        return ArchSpec(
            name=name, family=str(e.get("family", name)),
            clock_mhz=_number(e["clock_mhz"], f"{source}: [{name}].clock_mhz"),
            grid=(grid[0], grid[1]),
            worker_cores=int(e["worker_cores"]),
            dram_gbps=_number(e["dram_gbps"], f"{source}: [{name}].dram_gbps"),
            dram_sharded_matmul_cores=int(e.get("dram_sharded_matmul_cores", 8)),
            tflops_per_core=tflops,
            perf_report_name=str(e.get("perf_report_name", "")),
            aliases=tuple(str(a).lower() for a in e.get("aliases", ())),
        )
    except KeyError as exc:
        raise TraceError(source, f"[{name}] lacks {exc.args[0]}") from None
    except (TypeError, ValueError, IndexError) as exc:  # e.g. grid = 5, worker_cores = "x"
        raise TraceError(source, f"[{name}]: a value has the wrong type ({exc})") from None


def user_arch_file() -> Path | None:
    env = os.environ.get("TTDASH_ARCHES")
    if env:
        return Path(env)
    p = config_dir() / "arches.toml"
    return p if p.is_file() else None


@lru_cache(maxsize=8)
def _registry(user_file: str | None) -> dict[str, ArchSpec]:
    text = resources.files("ttdash").joinpath("data/arches.toml").read_text()
    table = _parse_table(tomllib.loads(text), "arches.toml", {})
    if user_file:
        try:
            with open(user_file, "rb") as fh:
                table = _parse_table(tomllib.load(fh), user_file, table)
        except OSError as exc:
            raise TraceError(user_file, exc.strerror or str(exc)) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise TraceError(user_file, f"invalid TOML: {exc}") from None
    return {name: _build(name, e, user_file or "arches.toml") for name, e in table.items()}


def registry() -> dict[str, ArchSpec]:
    uf = user_arch_file()
    return _registry(str(uf) if uf else None)


def get_arch(name: str) -> ArchSpec:
    """Look an arch up by name or alias (case-insensitive)."""
    key = name.strip().lower()
    reg = registry()
    if key in reg:
        return reg[key]
    for spec in reg.values():
        if key in spec.aliases:
            return spec
    known = ", ".join(sorted(reg))
    raise TraceError(None, f"unknown arch {name!r} (known: {known})")


def arch_from_clock(clock_mhz: float | None) -> ArchSpec | None:
    if clock_mhz is None:
        return None
    best = min(CLOCK_TO_ARCH, key=lambda c: abs(c[0] - clock_mhz))
    if abs(best[0] - clock_mhz) <= 0.02 * best[0]:
        return get_arch(best[1])
    return None
