"""Find the report(s) in a profiler directory."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .errors import TraceError

REPORT_GLOB = "ops_perf_results*.csv"
TS_RE = re.compile(r"(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})")


@dataclass(frozen=True)
class ReportFile:
    path: Path
    name: str  # the run's folder name relative to reports/ (e.g. "2025_09_18_11_39_20")
    timestamp: float  # from the name when it has one, else the file's mtime
    size: int


def _timestamp(path: Path, mtime: float) -> float:
    m = TS_RE.search(path.name) or TS_RE.search(str(path.parent))
    if m:
        try:
            return datetime(*(int(g) for g in m.groups())).timestamp()
        except ValueError:
            pass
    return mtime


def find_reports(root: Path) -> list[ReportFile]:
    """Every regular ops_perf_results*.csv under root (reports/ layouts), newest first.

    Never follows directory symlinks (no loops) and never opens anything (FIFOs are skipped).
    """
    out: list[ReportFile] = []
    stack = [root]
    seen: set[tuple[int, int]] = set()
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name != ".logs":
                        stack.append(Path(e.path))
                    continue
                if not Path(e.name).match(REPORT_GLOB):
                    continue
                st = e.stat()
                if not stat.S_ISREG(st.st_mode):
                    continue
            except OSError:
                continue
            p = Path(e.path)
            try:
                rel = p.parent.relative_to(root / "reports")
                name = str(rel) if str(rel) != "." else p.stem
            except ValueError:
                name = p.parent.name or p.stem
            out.append(ReportFile(p, name, _timestamp(p, st.st_mtime), st.st_size))
    out.sort(key=lambda r: (r.timestamp, str(r.path)), reverse=True)
    return out


def resolve_trace_path(arg: str | Path) -> Path:
    """A CSV path as given, or the newest report inside a profiler/report directory."""
    p = Path(arg)
    try:
        is_dir = p.is_dir()
    except OSError as exc:
        raise TraceError(p, exc.strerror or str(exc)) from None
    if not is_dir:
        return p
    reports = find_reports(p)
    if not reports:
        raise TraceError(p, "no ops_perf_results*.csv report in this directory (looked in "
                         "reports/ and below)")
    return reports[0].path
