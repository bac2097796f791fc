"""Live layer: tail the profiler's growing CSVs and watch its directory (no UI imports)."""

from ..model.read.discover import RunInfo, find_reports, report_is_complete, resolve_profiler_dir
from .tailer import CsvTailer, TailResult
from .watcher import (
    LIVE_LOG_NAME,
    ROOT_DELETED,
    ProfilerWatcher,
    ReportRemoved,
    ReportSeen,
    RowsAppended,
    SourceReset,
    Status,
    WatchEvent,
)

__all__ = [
    "LIVE_LOG_NAME",
    "ROOT_DELETED",
    "CsvTailer",
    "ProfilerWatcher",
    "ReportRemoved",
    "ReportSeen",
    "RowsAppended",
    "RunInfo",
    "SourceReset",
    "Status",
    "TailResult",
    "WatchEvent",
    "find_reports",
    "report_is_complete",
    "resolve_profiler_dir",
]
