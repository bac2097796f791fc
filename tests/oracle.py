"""Run tt-perf-report 1.4.1 (the reference) and line its rows up with ttdash's, by ID."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ttdash.model import Trace, Window

_ROOFLINE = re.compile(r"Overall DRAM roofline \(modeled ops\): ([\d.]+)% \(([\d.]+) GB/s\)")


def perf_report_csv(path: Path | list[Path], out: Path, arch: str | None, tracing: bool,
                    ignore_signposts: bool, merge: bool = True,
                    flags: tuple[str, ...] = ()) -> pd.DataFrame:
    paths = [str(p) for p in (path if isinstance(path, list) else [path])]
    cmd = [sys.executable, "-m", "tt_perf_report.perf_report", *paths, "--csv", str(out),
           "--no-advice", "--no-summary", *flags] + (["--arch", arch] if arch else [])
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
    df = pd.read_csv(out)
    m = _ROOFLINE.search(res.stdout)
    df.attrs["roofline"] = (float(m.group(1)), float(m.group(2))) if m else None
    return df


def compare(path: Path | list[Path], tmp: Path, ignore_signposts: bool, merge: bool = True,
            flags: tuple[str, ...] = ()) -> dict:
    """Both tools on one file (or several reports of one run); returns the joined frame and
    mismatch lists per metric. `flags`: report options both tools have (--id-range,
    --no-host-ops), given to tt-perf-report and, parsed by ttdash's CLI, applied to ttdash's
    view as `ttdash report` applies them."""
    from ttdash.cli import parse
    from ttdash.commands.report import restrict

    trace = Trace.load_many(path) if isinstance(path, list) else Trace.load(path)
    view = trace.view(Window("all" if ignore_signposts else "default"), merge=merge)
    if flags:
        view = restrict(view, parse(["report", "x.csv", *flags])[1])
    ours = view.ops[~view.ops["is_signpost"]].set_index("id")
    ref = perf_report_csv(path, tmp / "ref.csv", trace.arch.perf_report_name, trace.trace_mode,
                          ignore_signposts, merge, flags)
    roofline = ref.attrs.get("roofline")
    ref = ref[~ref["OP Code"].astype(str).str.endswith("(signpost)")].set_index("ID") \
        if len(ref) else ref.set_index("ID")
    joined = ours.join(ref, how="outer")
    out = {"ours": len(ours), "ref": len(ref), "joined": joined, "mismatch": {},
           "roofline": roofline, "view": view}
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
    # tt-perf-report's op text: the op code with size and config appended; its "Math Fidelity"
    size = joined["size"].fillna("").astype(str)
    config = joined["config"].fillna("").astype(str)
    text = joined["op_code"].astype(str) + (" " + size).where(size != "", "") \
        + (" " + config).where(config != "", "")
    out["mismatch"]["op_text"] = list(joined.index[text != joined["OP Code"].astype(str)])
    fid_ref = joined["Math Fidelity"].astype(object).where(joined["Math Fidelity"].notna(), "")
    out["mismatch"]["fidelity_desc"] = list(
        joined.index[joined["fidelity_desc"].fillna("").astype(str) != fid_ref.astype(str)])
    bound_ref = joined["Bound"].astype(object).where(joined["Bound"].notna(), "").astype(str)
    bound_ours = joined["bound"].fillna("").astype(str)
    out["mismatch"]["bound"] = list(joined.index[bound_ref != bound_ours])
    return out


# ---------------------------------------------------------------- the printed report (advice, footer)
_FOOTER = re.compile(r"(\d+) device ops, (\d+) host ops, (\d+) signposts")
_SAVING = re.compile(r"could save (\d+) μs \(([\d.]+|nan)% of overall time\)")
_ROW = re.compile(r"^\s*(\d+)\s")
_SECTIONS = {"Fallback": "host", "High Op-to-Op Gap": "gap", "Matmul Optimization": "matmul"}


def perf_report_printed(path: Path, arch: str | None, tracing: bool) -> dict:
    """tt-perf-report's terminal report of the whole file (--ignore-signposts), parsed: the
    footer counts, the tracing saving, and per advice section the IDs it lists (for matmuls, the
    number of bullets under each; 0 for "Optimized")."""
    cmd = [sys.executable, "-m", "tt_perf_report.perf_report", str(path), "--ignore-signposts",
           "--no-summary", "--no-color"] + (["--arch", arch] if arch else [])
    if tracing:
        cmd.append("--tracing-mode")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    out: dict = {"host": [], "gap": [], "matmul": {}, "saving": None, "footer": None}
    section, current = None, None
    for line in res.stdout.splitlines():
        if m := _FOOTER.search(line):
            out["footer"] = tuple(int(g) for g in m.groups())
        if m := _SAVING.search(line):
            out["saving"] = (float(m.group(1)), float(m.group(2)))
        if line.strip() in _SECTIONS:
            section = _SECTIONS[line.strip()]
            continue
        if section is None:
            continue
        if m := _ROW.match(line):
            current = int(m.group(1))
            if section == "matmul":
                out["matmul"][current] = 0
            else:
                out[section].append(current)
        elif section == "matmul" and line.startswith("- ") and current is not None:
            out["matmul"][current] += 1
        elif line.startswith(("These ops", "Alternatively")):
            section = None
    return out


_SUMMARY = """
import sys
import tt_perf_report.perf_report as m
m.plot_stacked_report = lambda *a, **k: None  # its PNG: not compared, and slow
sys.argv = sys.argv[1:]
m.main()
"""


def perf_report_summary(path: Path, out: Path, arch: str | None, tracing: bool,
                        group_by: str) -> pd.DataFrame:
    """tt-perf-report's --summary-file CSV of the whole file for `group_by`."""
    cmd = [sys.executable, "-c", _SUMMARY, "tt-perf-report", str(path), "--ignore-signposts",
           "--no-advice", "--no-color", "--group-by", group_by, "--summary-file", str(out)] \
        + (["--arch", arch] if arch else []) + (["--tracing-mode"] if tracing else [])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    return pd.read_csv(f"{out}.csv", keep_default_na=False, na_values=[""])
