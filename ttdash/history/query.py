"""Questions asked of the run history: which runs match, a metric's trend over them, and the gate
of `history check` (a run against the median of the last N comparable runs)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Culprits listed by `check` (op codes whose steady-state time grew most).
CULPRITS = 10


def parse_labels(pairs: list[str] | tuple[str, ...], what: str = "--label") -> dict[str, str]:
    """KEY=VALUE pairs (ValueError with the bad one named)."""
    out = {}
    for p in pairs:
        key, eq, value = p.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{what} {p!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


#: `--where` keys that name a run's own field when the run has no label of that name.
RUN_FIELDS = ("arch", "window")


def _where_value(run: dict[str, Any], key: str) -> str | None:
    labels = run.get("labels") or {}
    if key in labels:
        return labels[key]
    return str(run.get(key)) if key in RUN_FIELDS and run.get(key) is not None else None


def matching(runs: list[dict[str, Any]], *, arch: str | None = None, window: str | None = None,
             per_device: bool | None = None, pause_above_us: float | None = None,
             where: Mapping[str, str] | None = None, exclude: str | None = None
             ) -> list[dict[str, Any]]:
    """The runs of this arch, window, device merge and pause threshold whose labels (or, for
    arch and window, fields) have every `where` value (oldest first)."""
    out = []
    for r in runs:
        if exclude is not None and r["run_id"] == exclude:
            continue
        if arch is not None and r.get("arch") != arch:
            continue
        if window is not None and r.get("window") != window:
            continue
        if per_device is not None and r.get("per_device") != per_device:
            continue
        if pause_above_us is not None and r.get("pause_above_us") != pause_above_us:
            continue
        if where and any(_where_value(r, k) != v for k, v in where.items()):
            continue
        out.append(r)
    return out


def labels_text(labels: Mapping[str, str] | None) -> str:
    """A run's labels as one line, "k=v k=v" sorted by key (tables and the history screen)."""
    return " ".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))


def group_value(run: dict[str, Any], kind: str, name: str) -> dict[str, Any] | None:
    """The run's sums for one op code ("op_codes") or signpost region ("regions")."""
    for g in run.get(kind) or ():
        if g["name"] == name:
            return g
    return None


def trend(runs: list[dict[str, Any]], *, op: str | None = None, region: str | None = None
          ) -> list[dict[str, Any]]:
    """Per run (oldest first): device and steady-state time of the whole run, or of one op code
    or region (0 ops when the run has none of it), and the change of steady state against the
    previous run of the same arch, window and `model` label (runs of another chip, window or
    labelled model are not its baseline; label runs with model=... to keep models apart)."""
    out = []
    previous: dict[tuple[Any, Any, Any], float] = {}
    for r in runs:
        if op is not None or region is not None:
            g = group_value(r, "op_codes" if op is not None else "regions",
                            op if op is not None else region or "")
            ops, dev, steady = (g["ops"], g["device_us"], g["steady_us"]) if g else (0, 0.0, 0.0)
        else:
            ops, dev, steady = r["ops"], r["device_time_us"], r["steady_us"]
        key = (r.get("arch"), r.get("window"), (r.get("labels") or {}).get("model"))
        prev = previous.get(key)
        change = (steady / prev - 1.0) * 100.0 if prev else None
        out.append({"run_id": r["run_id"], "added_at": r["added_at"], "arch": r.get("arch"),
                    "file": r.get("file"), "ops": ops, "device_time_us": dev, "steady_us": steady,
                    "change_pct": change, "labels": r.get("labels") or {}})
        previous[key] = steady
    return out


@dataclass
class Check:
    """The verdict of `history check`."""

    run: dict[str, Any]  # the checked run's row
    baseline: list[dict[str, Any]]  # the runs compared against (oldest first)
    fail_above: float
    median_us: float = 0.0
    pct: float = 0.0
    culprits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.pct > self.fail_above

    def verdict(self) -> str:
        word = "slower" if self.pct > 0 else "faster"
        state = "REGRESSION" if self.failed else "ok"
        return (f"{state}: steady state {self.run['steady_us']:,.1f} us is {abs(self.pct):.2f}% "
                f"{word} than the median {self.median_us:,.1f} us of the last "
                f"{len(self.baseline)} matching run{'s' * (len(self.baseline) != 1)} "
                f"(limit {self.fail_above:+g}%)")

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run["run_id"], "steady_us": self.run["steady_us"],
                "median_us": self.median_us, "pct": self.pct, "fail_above": self.fail_above,
                "regression": self.failed,
                "baseline_runs": [r["run_id"] for r in self.baseline],
                "culprits": self.culprits}


def check(run: dict[str, Any], history: list[dict[str, Any]], fail_above: float) -> Check:
    """`run` (a record row with "arch") against the median steady state of `history`, with
    the op codes whose steady-state time moved most against their own median."""
    median = statistics.median(r["steady_us"] for r in history)
    result = Check(run=run, baseline=history, fail_above=fail_above, median_us=median,
                   pct=(run["steady_us"] / median - 1.0) * 100.0 if median > 0 else 0.0)
    names = {g["name"] for g in run.get("op_codes") or ()}
    for r in history:
        names |= {g["name"] for g in r.get("op_codes") or ()}
    rows = []
    for name in names:
        now = group_value(run, "op_codes", name)
        before = [(g["steady_us"] if (g := group_value(r, "op_codes", name)) else 0.0)
                  for r in history]
        med = statistics.median(before)
        cur = now["steady_us"] if now else 0.0
        rows.append({"op_code": name, "steady_us": cur, "median_us": med,
                     "delta_us": cur - med, "ops": now["ops"] if now else 0,
                     "pct": (cur / med - 1.0) * 100.0 if med > 0 else None})
    rows.sort(key=lambda c: (-c["delta_us"], c["op_code"]))
    result.culprits = [c for c in rows if c["delta_us"] > 0][:CULPRITS]
    return result
