"""Questions asked of the run history: which runs match, a metric's trend over them, and the gate
of `history check` (a run against the median of the last N comparable runs)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Culprits listed by `check` (op codes whose steady-state time grew most).
CULPRITS = 10
#: Baseline runs named in `check`'s verdict (the newest; json has them all)
MAX_NAMED = 10


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


def closest_names(runs: list[dict[str, Any]], kind: str, name: str, n: int = 5) -> list[str]:
    """The op codes ("op_codes") or regions ("regions") of `runs` closest to `name` (difflib;
    also those containing it, ignoring case), best first."""
    import difflib

    names = sorted({g["name"] for r in runs for g in r.get(kind) or () if g.get("ops")})
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.5)
    low = name.lower()
    close += [x for x in names if low and low in x.lower() and x not in close]
    return close[:n]


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


def label_number(run: dict[str, Any], label: str) -> float | None:
    """The run's `label` as a positive number (a batch size: "8", "8.0"); None otherwise."""
    raw = (run.get("labels") or {}).get(label)
    try:
        v = float(str(raw).strip()) if raw is not None else None
    except ValueError:
        return None
    return v if v is not None and v > 0 and v != float("inf") else None


def numeric_labels(runs: list[dict[str, Any]]) -> list[str]:
    """Labels with two or more positive numeric values over `runs` (what `trend --by` can
    plot), "batch" first, then by name."""
    values: dict[str, set[float]] = {}
    for r in runs:
        for k in r.get("labels") or {}:
            v = label_number(r, k)
            if v is not None:
                values.setdefault(k, set()).add(v)
    return sorted((k for k, v in values.items() if len(v) >= 2),
                  key=lambda k: (k != "batch", k))


def _group_sums(run: dict[str, Any], op: str | None, region: str | None
                ) -> tuple[int, float, float]:
    if op is None and region is None:
        return int(run["ops"]), float(run["device_time_us"]), float(run["steady_us"])
    g = group_value(run, "op_codes" if op is not None else "regions",
                    op if op is not None else region or "")
    return (int(g["ops"]), float(g["device_us"]), float(g["steady_us"])) if g else (0, 0.0, 0.0)


def trend_by(runs: list[dict[str, Any]], label: str, *, op: str | None = None,
             region: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`history trend --by LABEL` (a batch size): one row per numeric value of the label,
    smallest first, with the median over its runs of ops, device and steady-state time (of the
    whole run, or one op code or region) and the same per sample (sample count = the label's
    value), each op code's device time per sample (whole runs only), and the change of device
    time per sample against the first row. Also returns the runs used (oldest first); runs
    without the label or with a value that is not a positive number are left out."""
    used = [r for r in runs if label_number(r, label) is not None]
    by: dict[float, list[dict[str, Any]]] = {}
    for r in used:
        by.setdefault(label_number(r, label) or 0.0, []).append(r)
    rows: list[dict[str, Any]] = []
    for value in sorted(by):
        group = by[value]
        sums = [_group_sums(r, op, region) for r in group]
        ops = statistics.median(s[0] for s in sums)
        device = statistics.median(s[1] for s in sums)
        steady = statistics.median(s[2] for s in sums)
        codes: dict[str, float] = {}
        if op is None and region is None:
            names = {g["name"] for r in group for g in r.get("op_codes") or ()}
            for name in sorted(names):
                codes[name] = statistics.median(
                    (g["device_us"] if (g := group_value(r, "op_codes", name)) else 0.0)
                    for r in group) / value
        rows.append({"value": value, "label": label,
                     "samples": int(value) if value.is_integer() else value,
                     "runs": len(group), "ops": int(ops), "device_time_us": device,
                     "steady_us": steady, "device_us_per_sample": device / value,
                     "steady_us_per_sample": steady / value, "op_codes": codes,
                     "run_ids": [r["run_id"] for r in group]})
    if rows and rows[0]["device_us_per_sample"] > 0:
        base = rows[0]["device_us_per_sample"]
        for row in rows:
            row["vs_first_pct"] = (row["device_us_per_sample"] / base - 1.0) * 100.0
    else:
        for row in rows:
            row["vs_first_pct"] = None
    return rows, used


@dataclass
class Check:
    """The verdict of `history check`."""

    run: dict[str, Any]  # the checked run's row
    baseline: list[dict[str, Any]]  # the runs compared against (oldest first)
    fail_above: float
    median_us: float = 0.0
    pct: float = 0.0
    #: the median over the baseline runs of the change over the ops both ran (None when every
    #: op ran on both sides: it is the whole change then)
    common_pct: float | None = None
    #: "the 1,684 ops both ran: ..." against the newest baseline run, when some ran on one side
    common_text: str | None = None
    culprits: list[dict[str, Any]] = field(default_factory=list)
    #: runs of the same arch and window left out as other programs: (run_id, match rate)
    other_programs: list[tuple[str, float]] = field(default_factory=list)

    @property
    def gate_pct(self) -> float:
        """What the gate holds against its limit (as `diff --fail-above`): the larger of the
        whole run's change and the common ops' change."""
        return max(self.pct, self.common_pct) if self.common_pct is not None else self.pct

    @property
    def failed(self) -> bool:
        return self.gate_pct > self.fail_above

    def verdict(self) -> str:
        runs = f"{len(self.baseline)} matching run{'s' * (len(self.baseline) != 1)}"
        if self.failed and self.pct <= self.fail_above and self.common_pct is not None:
            # the ops both ran failed, not the whole run: never "faster" under REGRESSION
            return (f"REGRESSION: the ops both ran are {self.common_pct:+.2f}% on steady state "
                    f"(median over the last {runs}; {self.common_text}), above the limit "
                    f"{self.fail_above:+g}%; the whole run's steady state "
                    f"{self.run['steady_us']:,.1f} us against the median {self.median_us:,.1f} "
                    f"us ({self.pct:+.2f}%) is not like for like")
        word = "slower" if self.pct > 0 else "faster"
        state = "REGRESSION" if self.failed else "ok"
        named = (self.baseline[0].get("baseline") if self.baseline else None)
        which = (f"baseline {named}'s {len(self.baseline)} matching "
                 if named else f"last {len(self.baseline)} matching ")
        text = (f"{state}: steady state {self.run['steady_us']:,.1f} us of run "
                f"{self.run['run_id']} is {abs(self.pct):.2f}% {word} than the median "
                f"{self.median_us:,.1f} us of the {which}run"
                f"{'s' * (len(self.baseline) != 1)} ("
                + ", ".join(r["run_id"] for r in self.baseline[-MAX_NAMED:])
                + (", ..." if len(self.baseline) > MAX_NAMED else "")
                + f"; limit {self.fail_above:+g}%)")
        if self.common_pct is not None:
            text += (f"; the ops both ran: {self.common_pct:+.2f}% (median over those runs; "
                     f"{self.common_text})")
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run["run_id"], "steady_us": self.run["steady_us"],
                "median_us": self.median_us, "pct": self.pct, "common_pct": self.common_pct,
                "gate_pct": self.gate_pct, "fail_above": self.fail_above,
                "regression": self.failed,
                "baseline_runs": [r["run_id"] for r in self.baseline],
                "other_programs": [{"run_id": r, "match_rate": m}
                                   for r, m in self.other_programs],
                "culprits": self.culprits}


def compare_to_run(store: Any, run: dict[str, Any], view: Any, signatures: Any) -> Any:
    """Align `view` (the checked run; `signatures`: its ops' signature texts) with the stored
    ops of `run` as `diff` aligns two traces (signature, then op code; per device when the runs
    were analysed per device; signpost regions are not used) and return the gate's
    ``ttdash.model.compare.gate.Basis``. The stored run's device-time basis is taken to be the
    checked run's (the store does not keep it)."""
    import numpy as np
    import pandas as pd

    from ..model.compare.align import align_sequences
    from ..model.compare.diff import device_groups
    from ..model.compare.gate import (
        Basis,
        SideTotals,
        common_start,
        joint_pauses,
        missing_head,
        missing_tail,
        side_totals,
    )

    a = store.run_ops(run, ["signature", "op_code", "device", "device_time_us",
                            "op_to_op_us"]).to_pandas()
    b = view.op_rows.reset_index(drop=True)
    na, nb = len(a), len(b)
    sig = pd.factorize(pd.Series(np.concatenate([a["signature"].to_numpy(dtype=object),
                                                 np.asarray(signatures, dtype=object)]),
                                 dtype=object))[0].astype(np.int64)
    code = pd.factorize(pd.concat([a["op_code"].astype(object), b["op_code"].astype(object)],
                                  ignore_index=True))[0].astype(np.int64)
    per_device = bool(run.get("per_device")) and (a["device"].nunique() > 1
                                                  or b["device"].nunique() > 1)
    parts_a, parts_b, tail, head, start = [], [], np.zeros(2, dtype=np.int64), \
        np.zeros(2, dtype=np.int64), 0
    for _, ia, ib in device_groups(a, b, per_device):
        al = align_sequences(sig[:na][ia], sig[na:][ib], code[:na][ia], code[na:][ib])
        parts_a.append(ia[al.a])
        parts_b.append(ib[al.b])
        tail += missing_tail(len(ia), len(ib), al.a, al.b)
        head += missing_head(al.a, al.b)
        start += common_start(sig[:na][ia], sig[na:][ib])
    ma = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    mb = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    rem = np.setdiff1d(np.arange(na), ma)
    add = np.setdiff1d(np.arange(nb), mb)

    # one row per matched pair, removed op and added op; -1: the side has no op there
    apos = np.concatenate([ma, rem, np.full(len(add), -1)])
    bpos = np.concatenate([mb, np.full(len(rem), -1), add])

    def take(ops: pd.DataFrame, col: str, pos: np.ndarray) -> np.ndarray:
        return np.append(ops[col].to_numpy(dtype="float64"), np.nan)[pos]  # -1: the NaN

    pairs = pd.DataFrame({
        "status": np.repeat(np.array(["matched", "removed", "added"], dtype=object),
                            [len(ma), len(rem), len(add)]),
        "baseline_us": take(a, "device_time_us", apos),
        "baseline_gap_us": take(a, "op_to_op_us", apos),
        "candidate_us": take(b, "device_time_us", bpos),
        "candidate_gap_us": take(b, "op_to_op_us", bpos),
    })
    ct = side_totals(view)
    bt = SideTotals(
        file=str(run.get("file")), window=str(run.get("window")), arch=str(run.get("arch")),
        ops=int(run["ops"]), device_time_us=float(run["device_time_us"]),
        op_to_op_us=float(run["dispatch_us"]) + float(run["pauses_us"]),
        dispatch_us=float(run["dispatch_us"]), pauses_us=float(run["pauses_us"]),
        pauses=int(run["pauses"]), steady_us=float(run["steady_us"]),
        wall_us=float(run["wall_us"]), gaps_known=int(a["op_to_op_us"].notna().sum()),
        corrupt_rows=int(run["corrupt_rows"]), host_ops=int(run["host_ops"]),
        timing=ct.timing)
    bt, ct = joint_pauses(pairs, bt, ct, float(view.pause_above_us))
    return Basis.of(pairs, bt, ct, (int(tail[0]), int(tail[1])), (int(head[0]), int(head[1])),
                    start)


def check(run: dict[str, Any], history: list[dict[str, Any]], fail_above: float,
          bases: list[Any] | None = None) -> Check:
    """`run` (a record row with "arch") against the median steady state of `history`, with
    the op codes whose steady-state time moved most against their own median. `bases`: the
    gate bases (ttdash.model.compare.gate.Basis) of `run` against each run of `history`, for the
    change over the ops both ran."""
    median = statistics.median(r["steady_us"] for r in history)
    result = Check(run=run, baseline=history, fail_above=fail_above, median_us=median,
                   pct=(run["steady_us"] / median - 1.0) * 100.0 if median > 0 else 0.0)
    # the ops both ran with valid timings, when some ran (or were timed) on one side only
    partial = [b for b in bases or () if b.partial or b.uncompared_ops("steady")]
    if partial:
        common = [p for b in partial if (p := b.common_pct("steady")) is not None]
        result.common_pct = statistics.median(common) if common else None
        result.common_text = "; ".join(t for t in (partial[-1].common_text("steady"),
                                                   partial[-1].uncompared_text("steady")) if t)
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
