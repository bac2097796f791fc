"""Find profiler runs on disk: the profiler directory, its reports, and whether a report is
whole."""

from __future__ import annotations

import csv
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..errors import TraceError

__all__ = [
    "find_ranks",
    "rank_of",
    "resolve_trace_paths",
    "DISPATCH_TIMING",
    "REALTIME_LOGS",
    "is_realtime_log",
    "RunInfo",
    "find_reports",
    "report_is_complete",
    "resolve_profiler_dir",
    "REPORT_PREFIX",
    "LIVE_KEY",
    "TAIL_KEY_COLUMNS",
    "is_live_header",
    "live_log",
]

REPORT_PREFIX = "ops_perf_results"
_TS_RE = re.compile(r"(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})")
_MAX_DEPTH = 8  # reports/<NAME>/<ts>/file is depth 3; leave room, but never walk forever


@dataclass(frozen=True)
class RunInfo:
    """One ``ops_perf_results*.csv`` report.

    ``name`` is the ``-n NAME`` of the run (None without one); ``timestamp`` comes from the
    ``YYYY_MM_DD_HH_MM_SS`` in the file or folder name (local time), else from the file's mtime
    (``ts_from_name`` tells which).
    """

    path: Path
    name: str | None
    timestamp: datetime
    size: int
    mtime: float
    ts_from_name: bool

    @property
    def label(self) -> str:
        """A short display name: ``NAME ts`` or ``ts``."""
        ts = self.timestamp.strftime("%Y-%m-%d %H:%M:%S")
        return f"{self.name} {ts}" if self.name else ts


def resolve_profiler_dir(arg: str | os.PathLike[str] | None = None) -> Path:
    """The profiler root: ``arg``, else $TT_METAL_PROFILER_DIR, else
    $TT_METAL_HOME/generated/profiler, else ./generated/profiler."""
    if arg:
        return Path(arg).expanduser()
    env = os.environ.get("TT_METAL_PROFILER_DIR")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("TT_METAL_HOME")
    if home:
        return Path(home).expanduser() / "generated" / "profiler"
    return Path("generated") / "profiler"


def _parse_ts(text: str) -> datetime | None:
    m = None
    for m in _TS_RE.finditer(text):  # noqa: B007 - keep the last match: the timestamp ends the name
        pass
    if m is None:
        return None
    try:
        y, mo, d, h, mi, s = (int(g) for g in m.groups())
        return datetime(y, mo, d, h, mi, s)
    except ValueError:
        return None


def _run_name(stem: str) -> str | None:
    """``ops_perf_results_<NAME>_<ts>`` -> NAME; None when there is no NAME."""
    rest = stem[len(REPORT_PREFIX) :].strip("_")
    matches = list(_TS_RE.finditer(rest))
    if matches:
        rest = rest[: matches[-1].start()]
    rest = rest.strip("_")
    return rest or None


def _run_info(path: Path, st: os.stat_result) -> RunInfo:
    ts = _parse_ts(path.stem) or _parse_ts(path.parent.name)
    from_name = ts is not None
    if ts is None:
        ts = datetime.fromtimestamp(st.st_mtime)
    return RunInfo(
        path=path,
        name=_run_name(path.stem),
        timestamp=ts,
        size=st.st_size,
        mtime=st.st_mtime,
        ts_from_name=from_name,
    )


def _is_report_name(name: str) -> bool:
    return name.startswith(REPORT_PREFIX) and name.endswith(".csv")


def find_reports(root: str | os.PathLike[str]) -> list[RunInfo]:
    """Every ``reports/**/ops_perf_results*.csv`` under ``root``, newest first.

    Follows directory symlinks at most once per real directory (no loops); skips FIFOs, sockets,
    devices and broken links without opening anything. Unreadable folders are skipped.
    """
    base = Path(root) / "reports"
    found: list[RunInfo] = []
    seen_dirs: set[tuple[int, int]] = set()
    try:
        st = os.stat(base)
    except OSError:
        return found
    if not stat.S_ISDIR(st.st_mode):
        return found
    seen_dirs.add((st.st_dev, st.st_ino))
    stack: list[tuple[Path, int]] = [(base, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                est = entry.stat()  # follows symlinks; never opens the file
            except OSError:
                continue  # broken link, vanished entry, loop (ELOOP)
            if stat.S_ISDIR(est.st_mode):
                key = (est.st_dev, est.st_ino)
                if depth < _MAX_DEPTH and key not in seen_dirs:
                    seen_dirs.add(key)
                    stack.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(est.st_mode) and _is_report_name(entry.name):
                found.append(_run_info(Path(entry.path), est))
    found.sort(key=lambda r: (r.timestamp, r.mtime, str(r.path)), reverse=True)
    return found


def _first_line(fd: int, limit: int = 1 << 20) -> bytes | None:
    """The file's first line (without its newline), or None if it is not complete yet."""
    buf = b""
    while len(buf) < limit:
        chunk = os.pread(fd, 1 << 16, len(buf))
        if not chunk:
            return None
        cut = chunk.find(b"\n")
        if cut >= 0:
            return buf + chunk[:cut]
        buf += chunk
    return None


def _last_line(fd: int, size: int, limit: int = 16 << 20) -> bytes | None:
    """The last non-blank line (the file must end with a newline), or None."""
    window = 1 << 16
    while True:
        start = max(0, size - window)
        tail = os.pread(fd, size - start, start)
        if not tail.endswith(b"\n"):
            return None
        body = tail.rstrip(b"\r\n")
        cut = body.rfind(b"\n")
        if cut >= 0 or start == 0:
            return body[cut + 1 :]
        if window >= limit:
            return None
        window *= 4


def _field_count(line: bytes) -> int:
    text = line.decode("utf-8", "replace").rstrip("\r")
    try:
        return len(next(csv.reader([text]), []))
    except csv.Error:
        return -1


def report_is_complete(path: str | os.PathLike[str]) -> bool:
    """True when the file ends with a newline and its last line is as wide as its header.

    Reads only the header and the tail of the file; never opens a non-regular file.
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return False
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            return False
        size = fst.st_size
        head = _first_line(fd)
        if head is None:
            return False
        last = _last_line(fd, size)
        if last is None:
            return False
        return _field_count(last) == _field_count(head.lstrip(b"\xef\xbb\xbf"))
    except OSError:
        return False
    finally:
        os.close(fd)


#: a rank's folder under a multi-host run's root (tt-run --profile-with-tracy: ttrun/rank<N>/)
RANK_DIR_RE = re.compile(r"^rank(\d+)$")
TTRUN_DIR = "ttrun"


def find_ranks(root: str | os.PathLike[str], strict: bool = False) -> list[tuple[int, Path]]:
    """The ranks of a multi-host run, (rank, its profiler dir) by rank: `root/rank<N>/` or
    `root/ttrun/rank<N>/` (tt-run gives each rank its own TT_METAL_PROFILER_DIR there); [] for
    a one-host profiler dir. `strict`: a folder that exists but cannot be listed (permissions,
    I/O) raises its OSError instead of counting as no rank."""
    for base in (Path(root), Path(root) / TTRUN_DIR):
        try:
            with os.scandir(base) as it:
                found = [(int(m.group(1)), Path(e.path)) for e in it
                         if (m := RANK_DIR_RE.match(e.name)) and e.is_dir()]
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            if strict:
                raise
            continue
        if found:
            return sorted(found)
    return []


def rank_of(path: Path) -> int | None:
    """The rank a report belongs to: `rank<N>/reports/.../ops_perf_results*.csv` (a rank's
    own profiler dir), or a live log: `rank<N>/.logs/<file>`; None for any other path,
    whatever its folders are called."""
    parts = Path(path).parts[:-1]
    if len(parts) >= 2 and parts[-1] == ".logs":
        m = RANK_DIR_RE.match(parts[-2])
        return int(m.group(1)) if m else None
    if "reports" not in parts:
        return None
    k = len(parts) - 1 - parts[::-1].index("reports")
    m = RANK_DIR_RE.match(parts[k - 1]) if k > 0 else None
    return int(m.group(1)) if m else None


def resolve_trace_paths(arg: str | os.PathLike[str]) -> list[Path]:
    """resolve_trace_path, and for a multi-host run's root the newest report of every rank
    (in rank order: tt-perf-report's merge offsets device ids by file position)."""
    ranks = find_ranks(arg) if Path(arg).is_dir() else []
    if not ranks:
        return [resolve_trace_path(arg)]
    out = []
    for rank, folder in ranks:
        reports = find_reports(folder)
        if not reports:
            raise TraceError(folder, f"rank {rank} has no ops_perf_results*.csv report (yet): "
                             f"open the ranks that have one ({folder.parent}/rank<N>)")
        out.append(reports[0].path)
    return out


def resolve_trace_path(arg: str | os.PathLike[str]) -> Path:
    """A CSV path as given; for a directory, its newest report: a profiler dir's reports/, or
    the ops_perf_results*.csv directly inside a report folder."""
    p = Path(arg)
    try:
        is_dir = p.is_dir()
    except OSError as exc:
        raise TraceError(p, exc.strerror or str(exc)) from None
    if not is_dir:
        return p
    reports = find_reports(p)
    if not reports:
        here = []
        for e in os.scandir(p):
            try:
                if _is_report_name(e.name) and stat.S_ISREG(e.stat().st_mode):
                    here.append(_run_info(Path(e.path), e.stat()))
            except OSError:
                continue
        reports = sorted(here, key=lambda r: (r.timestamp, r.mtime, str(r.path)), reverse=True)
    if not reports:
        live = live_log(p)
        if live is not None:  # a run with no report (yet): the ops its live log has so far
            return live
        raise TraceError(p, "no ops_perf_results*.csv report here (looked in reports/, in "
                         "the directory itself and for a live log in .logs/)")
    return reports[0].path


#: The live log a report-less profiler dir is read from: the device profiler's first.
LIVE_LOG = "cpp_device_perf_report.csv"


def live_log(root: str | os.PathLike[str]) -> Path | None:
    """`root/.logs`'s live source of ops (is_live_header), the device profiler's
    cpp_device_perf_report.csv first; None without one."""
    logs = Path(root) / ".logs"
    try:
        with os.scandir(logs) as it:
            names = sorted((e.name for e in it if e.name.endswith(".csv")
                            and e.is_file()), key=lambda n: (n != LIVE_LOG, n))
    except OSError:
        return None
    for name in names:
        try:
            fd = os.open(logs / name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            head = _first_line(fd)
        except OSError:
            head = None
        finally:
            os.close(fd)
        if head is None:
            continue
        text = head.lstrip(b"\xef\xbb\xbf").decode("utf-8", "replace").rstrip("\r")
        if is_live_header(next(csv.reader([text]), [])):
            return logs / name
    return None


LIVE_KEY = "DEVICE KERNEL DURATION [ns]"
#: With LIVE_KEY, one of these marks a live source of ops (profile_log_device.csv has neither).
TAIL_KEY_COLUMNS = ("GLOBAL CALL COUNT", "DEVICE ID")


def is_live_header(header: list[str]) -> bool:
    """The one rule for which `.logs/*.csv` is a live source of ops: a header with a device
    kernel duration and a call count or device id (cpp_device_perf_report.csv, the realtime
    hook's CSV); other logs (profile_log_device.csv, ...) are not."""
    names = {h.strip() for h in header}
    return LIVE_KEY in names and any(k in names for k in TAIL_KEY_COLUMNS)


#: The realtime profiler's logs: tt-metal's quick mode (TT_METAL_PROFILER_RT_QUICK=1) and
#: ttdash's own ttnn hook. Their device time is the dispatch core's window around a program, a
#: few us above the classic report's kernel time for the same op.
REALTIME_LOGS = ("rt_device_perf_report.csv", "ttdash_realtime_profile.csv")
#: How every front end says what such a device time is.
DISPATCH_TIMING = ("device times are the realtime profiler's dispatch-core window (quick mode), "
                   "a few us per op above the classic report's kernel time")


def is_realtime_log(path: Path, header: list[str]) -> bool:
    """A realtime profiler log, by name, or by its columns (kernel cycles without any FW
    column: the quick mode's subset, copied under another name)."""
    names = {h.strip() for h in header}
    return path.name in REALTIME_LOGS or (
        is_live_header(header) and "DEVICE KERNEL START CYCLE" in names
        and not any(n.startswith("DEVICE FW") for n in names))
