"""The live op table: rows of `.logs/cpp_device_perf_report.csv` as they are appended.

Rows are analysed incrementally (only the new rows, plus the previous one for the op-to-op gap)
with the same derived columns as a report, so the same widgets show both. The profiler restarts
OP TO OP LATENCY at 0 at every dump boundary: a 0 is a boundary, not a gap, and is left out.
Rows within a dump are in program order per device; they are kept in arrival order.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from ...memory import no_huge_page_advice
from ..analysis.metrics import analyze, analyze_columns, share_parts, share_pct
from ..arch import ArchSpec, get_arch
from ..columns import PAUSE_ABOVE_US
from ..read.cells import by_unique, dim_value, numeric_columns
from ..read.counters import is_counter
from ..read.discover import LIVE_KEY, TAIL_KEY_COLUMNS, is_live_header, is_realtime_log  # noqa: F401  (re-exported)
from ..read.loader import (
    ANALYSIS_EXTRA,
    LOG_RENAME,
    NUMERIC,
    dedupe_header,
    log_as_report,
    wanted_columns,
)
from ..read.rows import TextRows
from ..read.text import clean_series
from ..trace import (
    SUMS_COLUMNS,
    Trace,
    View,
    Window,
    add_sums,
    bound_time,
    detect_arch,
    infer_clock,
    op_sums,
)

# The columns kept, renamed and numeric are the loader's.
RATE_WINDOW_S = 5.0
#: Parsed as numbers: the loader's numeric columns, and the analysis's extra ones it reads only
#: as numbers (`num`; a one-shot parse infers them so). As text each cell was a Python str
#: (the kernel cycles: two distinct ones a row, ~70 MB and a GC pass's time at 600,000 rows).
NUMERIC_SET = frozenset(NUMERIC) | (frozenset(ANALYSIS_EXTRA)
                                    - {"PROGRAM HASH", "PROGRAM CACHE HIT"})
#: Rows kept as strings before they are converted without waiting for a refresh (a refresh at
#: Galaxy rates brings ~5,000; `watch --once` of a big log must not hold it all as strings)
CONVERT_ROWS = 1 << 16
#: Why a run left no live rows (`run --no-tui`'s summary and the run screen say the same).
NO_ROWS = "device profiler off, or no device opened?"


class ColumnStore:
    """A table that grows by appending rows, kept as one numpy buffer per column whose capacity
    doubles when full: appending k rows costs O(k) amortised, and `frame()` is a DataFrame over the
    buffers without a copy (read-only: a consumer writing into it would write into the store).

    Concatenating the whole table on every refresh cost time that grew with the table (120 ms at
    300k rows); this keeps a live refresh flat. Chunks must agree on columns (a chunk with other
    columns rebuilds the store through `pd.concat`, a rare path); differing dtypes are promoted as
    `pd.concat` would (int and float to float, anything else to object).
    """

    def __init__(self) -> None:
        self._cols: dict[str, np.ndarray] = {}
        self.n = 0
        #: a DataFrame over the whole buffers (capacity rows), built once per growth: a
        #: refresh slices its first `n` rows (building a frame of ~100 columns is a fixed
        #: cost a refresh would pay again every time)
        self._whole: pd.DataFrame | None = None

    def __len__(self) -> int:
        return self.n

    def clear(self) -> None:
        self._cols = {}
        self.n = 0
        self._whole = None

    def append(self, df: pd.DataFrame | Mapping[str, np.ndarray]) -> None:
        """Append rows: a frame, or columns as arrays of one length (no frame built)."""
        k = len(df) if isinstance(df, pd.DataFrame) else len(next(iter(df.values()), ()))
        if not k:
            return
        if self._cols and list(df.keys()) != list(self._cols):
            whole = pd.concat([self.frame().copy(), pd.DataFrame(df)], ignore_index=True)
            self.clear()
            self.append(whole)
            return
        need = self.n + k
        cap = len(next(iter(self._cols.values()))) if self._cols else 0
        if need > cap:
            self._grow(max(need, 2 * cap, 1024), df)
        for c, buf in list(self._cols.items()):
            values = _as_numpy(df[c])
            if values.dtype != buf.dtype and not np.can_cast(values.dtype, buf.dtype, "safe"):
                buf = self._cols[c] = buf.astype(_common(buf.dtype, values.dtype))
                self._whole = None
            buf[self.n:need] = values
        self.n = need

    def _grow(self, capacity: int, like: pd.DataFrame | Mapping[str, np.ndarray]) -> None:
        self._whole = None
        if not self._cols:
            self._cols = {c: np.empty(capacity, dtype=_as_numpy(like[c][:0]).dtype)
                          for c in like.keys()}
            return
        for c, buf in self._cols.items():
            new = np.empty(capacity, dtype=buf.dtype)
            new[:self.n] = buf[:self.n]
            self._cols[c] = new

    def column(self, name: str) -> np.ndarray:
        """All rows of one column (a read-only view)."""
        view = self._cols[name][:self.n]
        view.flags.writeable = False
        return view

    def frame(self, **extra: np.ndarray) -> pd.DataFrame:
        """All rows, plus `extra` columns (arrays of the same length, in place of the store's
        own of that name), without copying."""
        if self._whole is None:
            self._whole = _frame_of(self._cols)
        out = self._whole.iloc[:self.n]
        if extra:
            out = out.copy(deep=False)  # a frame of its own: setting a column changes only it
            index = out.index
            for c, a in extra.items():
                out[c] = pd.Series(a, index=index, dtype=a.dtype, copy=False)
        return out


def _frame_of(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """A frame over the buffers through read-only views (a consumer writing into a view's
    frame would write into the store)."""
    n = len(next(iter(columns.values()))) if columns else 0
    index = pd.RangeIndex(n)
    views = {c: a.view() for c, a in columns.items()}
    for v in views.values():
        v.flags.writeable = False
    # dtype given: pandas 3 would otherwise infer (and build) a string array from objects
    return pd.DataFrame({c: pd.Series(v, index=index, dtype=v.dtype, copy=False)
                         for c, v in views.items()}, copy=False)


def _as_numpy(s: pd.Series | np.ndarray) -> np.ndarray:
    """A column's values as numpy: numpy dtypes as they are, extension ones (string, Int64) as
    objects (converting them back on every frame would cost a pass over the table)."""
    if isinstance(s, np.ndarray):
        return s
    return s.to_numpy() if isinstance(s.dtype, np.dtype) else s.to_numpy(dtype=object)


def _common(a: np.dtype, b: np.dtype) -> np.dtype:
    numeric = all(d.kind in "iuf" for d in (a, b))
    return np.result_type(a, b) if numeric else np.dtype(object)


class LiveModel:
    """Accumulates live rows from one or more `.logs` CSVs; `view()` is a View of them."""

    def __init__(self, root: Path, arch: str | None = None,
                 ranks: dict[Path, int] | None = None) -> None:
        self.root = root
        #: a multi-host run: each rank's profiler dir -> its rank (rows get a `_rank`)
        self.ranks = {Path(d).absolute(): r for d, r in (ranks or {}).items()}
        self.arch_override = arch
        self.arch: ArchSpec | None = get_arch(arch) if arch else None
        self.arch_source = "--arch" if arch else ""
        self.clock: float | None = None
        no_huge_page_advice()  # (the stores' buffers grow while shown: see there)
        self._raw = ColumnStore()
        self._pending: list[tuple[Path, list[str], Sequence[list[str]], list[int]]] = []
        self._pending_rows = 0
        self._header_columns: dict[tuple[str, ...], tuple[list[tuple[int, str]], list[int]]] = {}
        self._converted: list[pd.DataFrame] = []  # pending rows as raw frames, not yet analysed
        self._ops = ColumnStore()
        self._cache: tuple[pd.DataFrame, pd.DataFrame] | None = None
        self._last_raw: pd.DataFrame | None = None  # previous row, for the gap of the next one
        self._arrivals: deque[tuple[float, int]] = deque()
        self.total_rows = 0
        self._devices: set[int] = set()  # device ids as the rows give them (per host)
        self._rank_devices: set[tuple[int, int]] = set()  # (rank, device) of a multi-host run
        self._bound_time: dict[str, float] = {}
        self._sums: dict[str, float] | None = None
        self._share_total = 0.0
        self.sources: set[Path] = set()
        self.header: list[str] = []
        #: a live table has no signposts: one empty frame for every view (not made per refresh)
        self._no_signposts = _empty_signposts()

    # ------------------------------------------------------------ input
    def add_rows(self, source: Path, header: list[str], rows: Sequence[list[str]],
                 lines: list[int]) -> int:
        """Add complete CSV rows (strings: lists, or a tailer's `TextRows`) of `source`;
        returns how many were added. The rows
        are only kept here: they are converted and analysed together at the next `frames()`
        (a refresh), not once per watcher event (a pandas step per event cost more than the
        rows' own work at Galaxy rates)."""
        header = [h.strip() for h in header]
        if not rows or "DEVICE KERNEL DURATION [ns]" not in header:
            return 0
        width = len(header)
        if isinstance(rows, TextRows) and rows.width != width:
            rows = list(rows)  # (not a tailer's: its rows have its header's width)
        if not isinstance(rows, TextRows) and any(len(r) != width for r in rows):
            kept = [(r, ln) for r, ln in zip(rows, lines) if len(r) == width]
            if not kept:
                return 0
            rows, lines = [r for r, _ in kept], [ln for _, ln in kept]
        self.sources.add(source)
        self.header = header
        self._pending.append((source, header, rows, lines))
        self._pending_rows += len(rows)
        if self._pending_rows >= CONVERT_ROWS:  # a big read (watch --once): bounded strings
            self._convert_pending()
        self._cache = None
        self.total_rows += len(rows)
        self._arrivals.append((time.monotonic(), len(rows)))
        return len(rows)

    def _convert(self, source: Path, header: list[str], rows: Sequence[list[str]],
                 lines: list[int]) -> pd.DataFrame:
        """String rows of one source and header -> the loader's raw columns."""
        kept, numeric = self._columns_of(header)
        if isinstance(rows, TextRows):  # Arrow text: no Python str for a cell not kept as text
            fields = rows.columns()
            parsed = dict(zip(numeric, numeric_columns([fields[i] for i in numeric])))
            text = {i: fields[i].to_numpy(zero_copy_only=False) for i, _ in kept
                    if i not in parsed}
        else:
            cells = np.array(rows, dtype=object)
            parsed = dict(zip(numeric, numeric_columns(cells[:, numeric])))
            text = {i: cells[:, i] for i, _ in kept if i not in parsed}
        raw = pd.DataFrame({"ID": np.asarray(lines, dtype=np.int64),
                            **{n: parsed[i] if i in parsed else
                               pd.Series(text[i], dtype=object) for i, n in kept}},
                           copy=False)
        log_as_report(raw)
        for c in ("OP CODE", "DEVICE ARCH"):
            if c in raw.columns:
                raw[c] = clean_series(raw[c].astype(object))
        raw["_region"] = 0
        if self.ranks:  # <rank dir>/.logs/<file>.csv
            raw["_rank"] = float(self.ranks.get(Path(source).absolute().parent.parent, np.nan))
        for c in [c for c in raw.columns if c.endswith(("_W", "_Z", "_Y", "_X"))]:
            raw[c] = by_unique(raw[c], dim_value)
        self._settle_arch(raw, source)
        return raw

    def _columns_of(self, header: list[str]) -> tuple[list[tuple[int, str]], list[int]]:
        """The columns of `header` kept (position, the loader's name) and the positions of the
        numeric ones, worked out once per header."""
        key = tuple(header)
        if key not in self._header_columns:
            names = [LOG_RENAME.get(h, h) for h in dedupe_header(header)]
            # not the counters: a live table stays the analysis's columns (thousands of
            # counter columns would be kept as text a row at a time); the report has them
            wanted = {n for n in wanted_columns(names) if not is_counter(n)}
            kept = [(i, n) for i, n in enumerate(names) if n in wanted]
            self._header_columns[key] = (kept, [i for i, n in kept if n in NUMERIC_SET])
        return self._header_columns[key]

    def _convert_pending(self) -> None:
        k = 0
        while k < len(self._pending):  # consecutive rows of one source, header and kind: one frame
            source, header, first = self._pending[k][:3]
            arrow = isinstance(first, TextRows)
            blocks: list[TextRows] = []
            strings: list[list[str]] = []
            lines: list[int] = []
            while k < len(self._pending) and self._pending[k][0] == source \
                    and self._pending[k][1] == header \
                    and isinstance(self._pending[k][2], TextRows) == arrow:
                part = self._pending[k][2]
                if isinstance(part, TextRows):
                    blocks.append(part)
                else:
                    strings += part
                lines += self._pending[k][3]
                k += 1
            rows = TextRows.concat(blocks) if arrow else strings
            self._converted.append(self._convert(source, header, rows, lines))
        self._pending.clear()
        self._pending_rows = 0

    def _analyse_pending(self) -> None:
        self._convert_pending()
        if not self._converted:
            return
        parts, self._converted = self._converted, []
        raw = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        context = raw if self._last_raw is None else pd.concat([self._last_raw, raw],
                                                                ignore_index=True)
        assert self.arch is not None  # settled by _convert
        m, skip = len(raw), len(context) - len(raw)
        # the new rows' columns as arrays: no frame of them is built (the store takes arrays)
        ops = {c: v[skip:] for c, v in analyze_columns(context, self.arch).items()}
        ops["region"] = np.zeros(m, dtype=np.int64)
        ops["signpost"] = np.full(m, None, dtype=object)
        if "_rank" in raw.columns:  # a multi-host run: the rank of every row
            ops["rank"] = raw["_rank"].to_numpy(dtype="float64")
        sums = pd.DataFrame({c: ops[c] for c in SUMS_COLUMNS if c in ops}, copy=False)
        block = op_sums(sums, PAUSE_ABOVE_US)  # the header's totals, without a pass over the table
        self._sums = block if self._sums is None else add_sums(self._sums, block)
        for bound, us in bound_time(sums).items():
            self._bound_time[bound] = self._bound_time.get(bound, 0.0) + us
        del sums
        # "Total %": kept as each op's share numerator, over the running total in frames()
        numerator, total = share_parts(ops["device_time_us"], ops["op_to_op_us"])
        self._share_total += total
        ops["total_pct"] = numerator
        self._raw.append(raw)
        self._ops.append(ops)
        self._last_raw = raw.iloc[-1:]
        dev = np.asarray(ops["device"], dtype="float64")  # new rows only: no pass over the table
        self._devices.update(int(d) for d in np.unique(dev[~np.isnan(dev)]))
        if "rank" in ops:
            rank = ops["rank"]
            known = ~np.isnan(dev) & ~np.isnan(rank)
            self._rank_devices.update(zip(rank[known].astype(int).tolist(),
                                          dev[known].astype(int).tolist()))

    def reset(self, source: Path, keep_arch: bool = False) -> None:
        """The source was truncated or replaced (a device re-open, or a new run): start over,
        the arch and clock detected again from the new rows (a Blackhole run after a Wormhole
        one is not shown at Wormhole's clock) unless `keep_arch` or --arch gave it."""
        if not keep_arch:
            self.arch = get_arch(self.arch_override) if self.arch_override else None
            self.arch_source = "--arch" if self.arch_override else ""
            self.clock = None
        self._pending.clear()
        self._pending_rows = 0
        self._converted.clear()
        self._raw.clear()
        self._ops.clear()
        self._cache = None
        self._last_raw = None
        self._arrivals.clear()
        self.total_rows = 0
        self._devices.clear()
        self._rank_devices.clear()
        self._bound_time.clear()
        self._sums = None
        self._share_total = 0.0

    def _settle_arch(self, raw: pd.DataFrame, source: Path) -> None:
        """The report's arch chain (DEVICE ARCH column, profile_log_device.csv beside the
        source, the clock), settled by the first rows."""
        if self.clock is None:
            self.clock = infer_clock(raw)
        if self.arch is None:
            self.arch, self.arch_source = detect_arch(raw, source, self.clock, None)

    # ------------------------------------------------------------ output
    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(raw rows, derived ops) so far, concatenated once per change."""
        if self._cache is None:
            self._analyse_pending()
            if len(self._ops):
                extra = {"total_pct": share_pct(self._ops.column("total_pct"),
                                                self._share_total)}
                if self._rank_devices:  # rank k's devices numbered after rank k-1's
                    dev = self._ops.column("device").astype("float64")
                    rank = self._ops.column("rank")
                    extra["device"] = np.where(np.isnan(rank), dev, dev + rank * self._per_host)
                self._cache = (self._raw.frame(), self._ops.frame(**extra))
            else:
                self._cache = (pd.DataFrame({"ID": pd.Series(dtype=np.int64)}),
                               _empty_ops())
        return self._cache

    @property
    def _per_host(self) -> int:
        """Devices per host of a multi-host run, as tt-perf-report's merge counts them (the
        highest device id + 1) among the rows so far."""
        return max((d for _, d in self._rank_devices), default=0) + 1

    def devices(self) -> list[int]:
        """The device ids so far; a multi-host run's numbered through the ranks, as the merged
        report numbers them (tt-perf-report: rank k's ids offset by k x devices per host)."""
        if not self._rank_devices:
            return sorted(self._devices)
        return sorted({r * self._per_host + d for r, d in self._rank_devices})

    def rate(self) -> float:
        """Rows per second over the last few seconds."""
        now = time.monotonic()
        while self._arrivals and now - self._arrivals[0][0] > RATE_WINDOW_S:
            self._arrivals.popleft()
        if not self._arrivals:
            return 0.0
        span = max(now - self._arrivals[0][0], 1.0)
        return sum(n for _, n in self._arrivals) / span

    def view(self) -> View:
        raw, ops = self.frames()
        source = next(iter(self.sources), self.root / ".logs" / "cpp_device_perf_report.csv")
        trace = Trace(path=source, header=self.header, arch=self.arch or get_arch("wormhole_b0"),
                      arch_source=self.arch_source or "no rows yet", clock_mhz=self.clock,
                      trace_mode=False, devices=self.devices(),
                      ordered=raw, signposts=self._no_signposts,
                      timing="dispatch" if is_realtime_log(source, self.header) else "kernel")
        return View(trace=trace, window=Window("all"), description="live .logs",
                    ops=ops, merged=False, bound_time_us=dict(self._bound_time),
                    data_warnings=[],  # device rows always carry their times
                    sums=(ops, PAUSE_ABOVE_US, dict(self._sums)) if self._sums else None)


def _empty_signposts() -> pd.DataFrame:
    return pd.DataFrame({"index": pd.Series(dtype=np.int64), "name": pd.Series(dtype=object),
                         "raw_name": pd.Series(dtype=object),
                         "occurrence": pd.Series(dtype=np.int64),
                         "label": pd.Series(dtype=object), "id": pd.Series(dtype=np.int64),
                         "position": pd.Series(dtype=np.int64), "ops": pd.Series(dtype=np.int64),
                         "device_time_us": pd.Series(dtype="float64")})


def _empty_ops() -> pd.DataFrame:
    raw = pd.DataFrame({"ID": pd.Series(dtype=np.int64), "OP CODE": pd.Series(dtype="string"),
                        "DEVICE KERNEL DURATION [ns]": pd.Series(dtype="float64")})
    ops = analyze(raw, get_arch("wormhole_b0"))
    ops["region"] = pd.Series(dtype=np.int64)
    ops["signpost"] = pd.Series(dtype=object)
    return ops


class Snapshot(Protocol):
    """What LiveSources needs of runner.LogsSnapshot (the `.logs` files as they were before a
    run)."""

    def lines_before(self, path: Path) -> int | None: ...

    def forget(self, path: Path) -> None: ...


class LiveSources:
    """Which live rows belong to this run's table.

    * Rows already in a ``.logs`` file when the run started are left out (``stale``).
    * One source feeds the table, the first that brings rows: the realtime hook's CSV and the
      device profiler's ``cpp_device_perf_report.csv`` describe the same programs, and showing both
      would count every op twice. Rows of the others are counted in ``ignored``.
    """

    def __init__(self, snapshot: Snapshot | None = None,
                 group: Callable[[Path], object] | None = None) -> None:
        self.snapshot = snapshot
        #: which sources describe the same programs (default: all of them); a multi-host run
        #: has one group per rank, each with its own chosen source
        self.group = group or (lambda _: None)
        self.chosen_by_group: dict[object, Path] = {}
        self.ignored: dict[Path, int] = {}
        self.stale = 0

    @property
    def chosen(self) -> Path | None:
        """The source shown (the first group's, for a multi-host run)."""
        return next(iter(self.chosen_by_group.values()), None)

    def filter(self, source: Path, header: list[str], rows: Sequence[list[str]],
               lines: list[int]) -> tuple[Sequence[list[str]], list[int]]:
        if not is_live_header(header):
            return [], []
        before = self.snapshot.lines_before(source) if self.snapshot is not None else None
        if before:
            keep = [i for i, ln in enumerate(lines) if ln > before]
            if len(keep) < len(rows):
                self.stale += len(rows) - len(keep)
                rows = rows.take(keep) if isinstance(rows, TextRows) else [rows[i] for i in keep]
                lines = [lines[i] for i in keep]
        if not rows:
            return [], []
        chosen = self.chosen_by_group.setdefault(self.group(source), source)
        if source != chosen:
            self.ignored[source] = self.ignored.get(source, 0) + len(rows)
            return [], []
        return rows, lines

    def reset(self, source: Path) -> bool:
        """``source`` was truncated or replaced; True when the table must start over."""
        if self.snapshot is not None:
            self.snapshot.forget(source)
        chosen = self.chosen_by_group.get(self.group(source))
        if chosen is None or source == chosen:
            return True
        self.ignored.pop(source, None)
        return False

    def note(self) -> str:
        """A short remark on left-out rows ("" when none)."""
        bits = []
        if self.chosen is not None and self.ignored:
            others = ", ".join(f"{p.name} ({n:,} rows)" for p, n in self.ignored.items())
            shown = ", ".join(sorted({p.name for p in self.chosen_by_group.values()}))
            bits.append(f"showing {shown}; not counted twice: {others}")
        if self.stale:
            bits.append(f"{self.stale:,} rows from before this run left out")
        return " · ".join(bits)
