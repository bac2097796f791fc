"""Run tt-perf-report 1.4.1 (the reference) and line its rows up with ttdash's, by ID."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ttdash.model import Trace, Window


def perf_report_csv(path: Path, out: Path, arch: str | None, tracing: bool, ignore_signposts: bool,
                    merge: bool = True) -> pd.DataFrame:
    cmd = [sys.executable, "-m", "tt_perf_report.perf_report", str(path), "--csv", str(out),
           "--no-advice", "--no-summary"] + (["--arch", arch] if arch else [])
    if tracing:
        cmd.append("--tracing-mode")
    if ignore_signposts:
        cmd.append("--ignore-signposts")
    if not merge:
        cmd.append("--no-merge-devices")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    if not out.exists():  # nothing to report in that window
        return pd.DataFrame(columns=["ID"])
    return pd.read_csv(out)


def compare(path: Path, tmp: Path, ignore_signposts: bool, merge: bool = True) -> dict:
    """Both tools on one file; returns the joined frame and mismatch lists per metric."""
    trace = Trace.load(path)
    view = trace.view(Window("all" if ignore_signposts else "default"), merge=merge)
    ours = view.ops[~view.ops["is_signpost"]].set_index("id")
    ref = perf_report_csv(path, tmp / "ref.csv", trace.arch.perf_report_name, trace.trace_mode,
                          ignore_signposts, merge)
    ref = ref[~ref["OP Code"].astype(str).str.endswith("(signpost)")].set_index("ID") \
        if len(ref) else ref.set_index("ID")
    joined = ours.join(ref, how="outer")
    out = {"ours": len(ours), "ref": len(ref), "joined": joined, "mismatch": {}}
    pairs = {"device_time_us": "Device Time", "op_to_op_us": "Op-to-Op Gap",
             "dram_pct": "DRAM %", "flops_pct": "FLOPs %", "total_pct": "Total %"}
    for mine, theirs in pairs.items():
        a = joined[mine].astype("float64").to_numpy()
        b = pd.to_numeric(joined[theirs], errors="coerce").to_numpy(dtype="float64")
        both = ~np.isnan(a) & ~np.isnan(b)
        rel = np.zeros_like(a)
        rel[both] = np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-9)
        bad = (np.isnan(a) != np.isnan(b)) | (both & (rel > 0.005) & (np.abs(a - b) > 1e-6))
        out["mismatch"][mine] = list(joined.index[bad])
    bound_ref = joined["Bound"].astype(object).where(joined["Bound"].notna(), "").astype(str)
    bound_ours = joined["bound"].fillna("").astype(str)
    out["mismatch"]["bound"] = list(joined.index[bound_ref != bound_ours])
    return out
