"""One run as the history store keeps it: a row of `runs/` (the run's totals, labels, per op code
and per signpost region sums, telemetry) and its rows of `ops/` (history.schema.op_batches). The
schemas and their version are history/schema.py's. (pandas and numpy are imported where a record
is built: reading the store needs only pyarrow.)
"""

from __future__ import annotations

import dataclasses
import getpass
import hashlib
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from .schema import TELEMETRY

#: (StructType.names is pyarrow 17+; the lowest pyarrow allowed is 16)
TELEMETRY_FIELDS = tuple(TELEMETRY.field(i).name for i in range(TELEMETRY.num_fields))
#: Labels found in the environment of a CI job (commit, branch) and of the host.
ENV_LABELS = {"commit": ("GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT"),
              "branch": ("GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BUILDKITE_BRANCH",
                         "GIT_BRANCH"),
              "repo": ("GITHUB_REPOSITORY", "CI_PROJECT_PATH", "BUILDKITE_REPO"),
              "pipeline": ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "BUILDKITE_BUILD_NUMBER")}


def file_sha256(path: Path) -> tuple[str, int]:
    """(hex sha256, size) of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def default_labels(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """machine (host name), user, and commit/branch/repo/pipeline when a CI system names
    them."""
    env = os.environ if env is None else env
    out = {"machine": socket.gethostname()}
    try:
        out["user"] = getpass.getuser()
    except (KeyError, OSError):
        pass
    for label, names in ENV_LABELS.items():
        for n in names:
            if env.get(n):
                out[label] = env[n]
                break
    return out


@dataclass
class RunRecord:
    """What `history add` writes for one run: `row` (schema.RUNS, plus "arch") and the ops
    (schema.op_batches(view))."""

    run_id: str
    arch: str
    row: dict[str, Any]
    view: Any  # model.View


def _groups(names, device, steady) -> list[dict[str, Any]]:
    """Ops, device and steady time per name (missing: ""), by name. Grouped on integer codes
    (a million names as text made pandas convert each); the sums exact (math.fsum: the same
    bits whatever pandas' version or the rows' order)."""
    import math

    import numpy as np
    import pandas as pd

    at, uniques = pd.factorize(names, use_na_sentinel=True)
    label = [str(u) for u in np.asarray(uniques, dtype=object).tolist()] + [""]
    if (at < 0).any() and "" in label[:-1]:  # a missing name and "" are one group
        at = np.where(at < 0, label.index(""), at)
    at = np.where(at < 0, len(label) - 1, at)
    order = np.argsort(at, kind="stable")
    bounds = np.searchsorted(at[order], np.arange(len(label) + 1))
    device, steady = np.asarray(device)[order], np.asarray(steady)[order]
    rows = [{"name": label[k], "ops": int(b - a), "device_us": math.fsum(device[a:b]),
             "steady_us": math.fsum(steady[a:b])}
            for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) if b > a]
    return sorted(rows, key=lambda r: r["name"])


def run_sums(view) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A view's totals (View.totals, kept with the view by it) and its sums per op code and
    per signpost region (_groups), worked out once and kept with the view (and so in the
    analysis cache: a second `history add` of the same file does not sum a million ops
    again)."""
    import numpy as np
    import pandas as pd

    from ..model.analysis.metrics import split_gaps
    from ..model.compare.signature import region_labels

    key = (view.ops, float(view.pause_above_us))
    cached = view.__dict__.get("_run_sums")
    if cached is not None and cached[0][0] is key[0] and cached[0][1] == key[1]:
        return (view.totals(), *cached[1])
    ops = view.op_rows
    device = np.nan_to_num(ops["device_time_us"].to_numpy(dtype="float64"))
    dispatch, _, _ = split_gaps(ops["op_to_op_us"].to_numpy(dtype="float64"),
                                view.pause_above_us)
    steady = device + np.nan_to_num(dispatch)
    regions = region_labels(view, ops)
    regions = np.where(pd.isna(regions), "(whole run)", regions)
    made = (_groups(ops["op_code"], device, steady), _groups(regions, device, steady))
    view.__dict__["_run_sums"] = (key, made)
    return (view.totals(), *made)


def build(view, *, labels: Mapping[str, str] | None = None, telemetry: dict | None = None,
          now: datetime | None = None, sha: tuple[str, int] | None = None) -> RunRecord:
    """The record of one analysed view (`labels` over `default_labels()`)."""
    from ..model.read.text import clean_text

    trace = view.trace
    path = Path(trace.path).resolve()
    digest, size = sha or file_sha256(path)
    # What was analysed, besides the bytes: a run is one file under one set of these
    spec = json.dumps({**dataclasses.asdict(view.window), "merged": bool(view.merged)},
                      sort_keys=True)
    key = "\0".join([digest, spec, repr(float(view.pause_above_us)), trace.arch.name])
    run_id = hashlib.sha256(key.encode()).hexdigest()[:16]
    tot, op_codes, regions = run_sums(view)
    tel = None
    if telemetry:
        tel = {k: telemetry.get(k) for k in TELEMETRY_FIELDS}
    all_labels = {str(clean_text(k)): str(clean_text(v))  # shown on terminals later
                  for k, v in {**default_labels(), **(labels or {})}.items()}
    when = now or datetime.now(timezone.utc)
    row = {
        "run_id": run_id, "added_at": when,
        "run_at": datetime.fromtimestamp(path.stat().st_mtime, timezone.utc),
        "file": str(path), "sha256": digest, "size_bytes": size,
        "arch_detected": bool(trace.arch_detected), "clock_mhz": trace.clock_mhz,
        "devices": [int(d) for d in trace.devices], "window": view.description,
        "window_spec": spec,
        "per_device": not view.merged, "pause_above_us": float(view.pause_above_us),
        "ops": tot["ops"], "device_ops": tot["device_ops"], "host_ops": tot["host_ops"],
        "signposts": tot["signposts"], "corrupt_rows": tot["corrupt_rows"],
        "device_time_us": tot["device_time_us"], "dispatch_us": tot["dispatch_us"],
        "pauses_us": tot["pauses_us"], "pauses": tot["pauses"], "steady_us": tot["steady_us"],
        "wall_us": tot["wall_us"], "labels": sorted(all_labels.items()),
        "op_codes": op_codes, "regions": regions,
        "telemetry": tel, "ttdash_version": __version__,
    }
    return RunRecord(run_id=run_id, arch=trace.arch.name, row=row, view=view)


def stored_view(run: Mapping[str, Any], path: Path):
    """The view a stored run was analysed as (its window, device merge, pause threshold and
    arch), rebuilt from the file at `path`."""
    from ..model import Trace, Window

    spec = json.loads(run.get("window_spec") or "{}")
    merged = bool(spec.pop("merged", True))
    trace = Trace.load(path, arch=run.get("arch") or None, columns="all")
    view = trace.view(Window(**spec) if spec else Window("all"), merge=merged)
    if run.get("pause_above_us"):
        view.pause_above_us = float(run["pause_above_us"])
    return view
