"""A loaded trace: the raw table in report order, its arch and clock, signpost regions, views."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .analysis.devices import annotate_overlap, merge_devices
from .analysis.iterations import steady_note, steady_rows
from .analysis.metrics import (
    HOST_MARKER,
    MAX_DEVICE_ID,
    analyze,
    invalid_duration,
    num,
    split_gaps,
    text,
    text_category,
    total_share_pct,
    whole,
)
from .analysis.trust import DataWarning, corrupt_warning, read_columns, trace_warnings
from .arch import ArchSpec, arch_from_clock, get_arch
from .columns import PAUSE_ABOVE_US, without_signposts
from .errors import TraceError
from .live.rankarch import READ as RANK_ARCH_READ
from .live.rankarch import mixed_arch_warning
from .progress import step
from .read.counters import present_counters, with_counters
from .read.discover import is_realtime_log
from .read.loader import RawTable, WideRows, add_column, merge_tables, read_ops_csv
from .read.readback import ReadLater
from .read.text import clean_series
from .window import REPLAY_COLUMN as REPLAY_COLUMN  # (and below: still importable from here)
from .window import Window as Window

PROFILE_LOG = "profile_log_device.csv"
DEFAULT_WINDOW = Window()  # (frozen: one shared default)
DISPLAYED_TEXT = {"OP CODE", "OP TYPE", "DEVICE ARCH", "MATH FIDELITY", "SUB DEVICE ID"}
_LOG_ARCH_RE = re.compile(r"ARCH:\s*([A-Za-z0-9_]+)(?:.*?CHIP_FREQ\[MHz\]:\s*([0-9.]+))?")


@dataclass(frozen=True)
class Summary:
    """The facts every front end's header shows about a view, computed once here."""

    file: str
    arch: str | None  # None: not detected (Wormhole peaks assumed)
    arch_source: str
    clock_mhz: float | None
    devices: list[int]
    per_device: bool
    window: str
    window_note: str
    ops: int
    device_time_us: float
    op_to_op_us: float
    dispatch_us: float  # gaps up to pause_above_us
    pauses_us: float  # longer gaps: host pauses
    pauses: int
    pause_above_us: float
    corrupt_rows: int
    host_ops: int
    bound_shares: dict[str, float]
    signposts: list[str]
    warnings: list[DataWarning]
    timing: str  # Trace.timing


@dataclass
class View:
    trace: Trace
    window: Window
    description: str
    ops: pd.DataFrame  # derived metrics, report order; signpost rows only in the "all" window
    merged: bool
    window_rows: int = -1  # op rows (all devices, before the merge) in the window; -1 unknown
    pause_above_us: float = PAUSE_ABOVE_US  # op-to-op gaps above this are host pauses
    #: device time by bound class, when the producer keeps it as rows arrive (the live model:
    #: its header must not group the whole table twice a second); else computed from the ops
    bound_time_us: dict[str, float] | None = None
    #: (ops, pause_above_us, op_sums of those ops) when the producer keeps them as rows arrive
    #: (the live model); used while `ops` is that frame and the threshold that one
    sums: tuple[pd.DataFrame, float, dict[str, float]] | None = None
    #: the trace's data-trust warnings, when the producer knows them (the live model: its
    #: table is not scanned again twice a second); else the trace's own
    data_warnings: list[DataWarning] | None = None

    @property
    def op_rows(self) -> pd.DataFrame:
        """Ops without signpost rows (computed once per view; `ops` itself, not a copy, when
        there is no signpost row: a live view is refreshed twice a second and must not copy
        its whole table for a header line)."""
        cached = self.__dict__.get("_op_rows")
        if cached is None or cached[0] is not self.ops:
            cached = (self.ops, without_signposts(self.ops))
            self.__dict__["_op_rows"] = cached
        return cached[1]

    @property
    def counter_names(self) -> list[str]:
        """The trace's per-RISC time and counter columns with a value (model.counters)."""
        return present_counters(self.trace, self.trace.__dict__)

    def with_counters(self, ops: pd.DataFrame) -> pd.DataFrame:
        """Some of these ops with the counters and slowest RISC of the rows they show."""
        return with_counters(ops, self.trace, self.trace.__dict__)

    def totals(self) -> dict[str, Any]:
        """Sums over the window's ops (microseconds). Gaps are split at ``pause_above_us``:
        ``dispatch_us`` (steady state) and ``pauses_us`` (host pauses, ``pauses`` of them);
        ``steady_us`` = device + dispatch, ``wall_us`` = device + every gap. ``gaps_known``:
        ops with an op-to-op gap (0 when the file has none). Computed once per view (a live
        header asks for them more than once per refresh)."""
        key = (self.ops, self.pause_above_us)
        cached = self.__dict__.get("_totals")
        if cached is None or cached[0][0] is not key[0] or cached[0][1] != key[1]:
            cached = (key, self._totals())
            self.__dict__["_totals"] = cached
        return dict(cached[1])

    def _totals(self) -> dict[str, Any]:
        given = self.sums
        if given is not None and given[0] is self.ops and given[1] == self.pause_above_us:
            return totals_of(given[2])
        return totals_of(op_sums(self.ops, self.pause_above_us))

    def summary(self) -> Summary:
        t, tot = self.trace, self.totals()
        return Summary(
            file=str(t.path), arch=t.arch.name if t.arch_detected else None,
            arch_source=t.arch_source, clock_mhz=t.clock_mhz, devices=list(t.devices),
            per_device=not self.merged and len(t.devices) > 1, window=self.description,
            window_note=self.window_note(), ops=tot["ops"],
            device_time_us=tot["device_time_us"], op_to_op_us=tot["op_to_op_us"],
            dispatch_us=tot["dispatch_us"], pauses_us=tot["pauses_us"], pauses=tot["pauses"],
            pause_above_us=self.pause_above_us, corrupt_rows=tot["corrupt_rows"],
            host_ops=tot["host_ops"],
            bound_shares=self.bound_shares(), signposts=t.signposts["label"].tolist(),
            warnings=self.warnings(), timing=t.timing)

    def warnings(self) -> list[DataWarning]:
        """What makes this view's numbers doubtful: the file's warnings, then the view's
        corrupt timings."""
        given = self.data_warnings
        return ((self.trace.warnings() if given is None else list(given))
                + corrupt_warning(self.totals()["corrupt_rows"]))

    def subset(self, keep: np.ndarray, *, reset_first_gap: bool = False,
               what: str = "") -> View:
        """tt-perf-report's --id-range and --no-host-ops: only the `keep` rows; shares of the
        total recomputed over them; `reset_first_gap`: the first kept row has no op-to-op gap
        (the op before it is not in the table)."""
        ops = self.ops[keep].reset_index(drop=True)
        if reset_first_gap and len(ops):
            ops.loc[0, "op_to_op_us"] = np.nan
        ops["total_pct"] = total_share_pct(ops["device_time_us"].to_numpy(dtype="float64"),
                                           ops["op_to_op_us"].to_numpy(dtype="float64"))
        desc = f"{self.description}, {what}" if what else self.description
        return replace(self, ops=ops, description=desc, bound_time_us=None)

    def window_note(self) -> str:
        """When the window leaves ops of the file out: how many, and how to see them ("" when it
        holds every op). One wording for every front end."""
        if self.window.mode == "all" or self.window_rows < 0:
            return ""
        if self.window.mode == "steady":
            return steady_note(self.trace, self.window_rows)
        total, shown = self.trace.op_count, self.window_rows
        if shown == 0:
            why = (f"the window ({self.description}) is empty" if self.window.mode != "default"
                   else f"tt-perf-report's window ({self.description}, the first signpost "
                   "named like the last one) holds no op")
            return (f"{why}; the file has {total:,} ops: drop the window option "
                    "(--perf-report-window, --signpost, --start/--end-signpost) for all of them")
        if shown < total:
            return (f"{shown:,} of the file's {total:,} op rows are in this window; without "
                    "window options every op is shown")
        return ""

    def bound_shares(self) -> dict[str, float]:
        """Share of device time by bound class ("" = not modelled)."""
        by = self.bound_time_us if self.bound_time_us is not None else \
            bound_time(self.op_rows)
        total = sum(by.values())
        if total <= 0:
            return {}
        out = {("unmodelled" if k == "" else k): v / total * 100 for k, v in by.items()}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


#: The op columns op_sums and bound_time read (a live block passes only these).
SUMS_COLUMNS = ("is_signpost", "device_time_us", "op_to_op_us", "busy_us", "corrupt", "is_host",
                "dram_bytes", "dram_pct", "bound")


def op_sums(ops: pd.DataFrame, pause_above_us: float) -> dict[str, float]:
    """What `View.totals` derives from: sums over the op rows (signpost rows only counted),
    each the sum of the same over any split of the rows into blocks (a live table adds a new
    block's sums to the previous ones' instead of summing the whole table again)."""
    is_signpost = ops["is_signpost"].to_numpy(dtype=bool)
    rows = ops[~is_signpost] if is_signpost.any() else ops
    t = rows["device_time_us"].to_numpy(dtype="float64")
    gap = rows["op_to_op_us"].to_numpy(dtype="float64")
    dispatch_gaps, pause_gaps, pause = split_gaps(gap, pause_above_us)
    device = float(np.nansum(t))
    if "busy_us" in rows:  # less what ran concurrently on the same device (sub-devices); an
        b = rows["busy_us"].to_numpy(dtype="float64")  # op without cycles counts as all busy
        busy = float(np.nansum(np.where(np.isnan(b) | np.isnan(t), t, np.minimum(b, t))))
    else:
        busy = device
    return {
        "ops": float(len(rows)), "device_time_us": device, "op_to_op_us": float(np.nansum(gap)),
        "dispatch_us": float(np.nansum(dispatch_gaps)), "pauses_us": float(np.nansum(pause_gaps)),
        "pauses": float(pause.sum()), "gaps_known": float((~np.isnan(gap)).sum()),
        "corrupt_rows": float(rows["corrupt"].sum()), "host_ops": float(rows["is_host"].sum()),
        "busy_us": busy, "signposts": float(is_signpost.sum()),
        "dram_bytes": float(np.nansum(rows["dram_bytes"].to_numpy(dtype="float64")))
        if "dram_bytes" in rows else 0.0,
        "dram_pct_time": float(np.nansum(rows["dram_pct"].to_numpy(dtype="float64") * t)),
    }


def add_sums(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: a[k] + b[k] for k in a}


def totals_of(sums: dict[str, float]) -> dict[str, Any]:
    """`View.totals` from `op_sums`: counts as ints, the derived times and tt-perf-report's
    "Overall DRAM roofline (modeled ops)": DRAM bytes of the modelled ops over the device time
    of every op (GB/s), and their DRAM % weighted by device time over the same total (None when
    nothing is modelled)."""
    device, dispatch, pauses = sums["device_time_us"], sums["dispatch_us"], sums["pauses_us"]
    ops, host = int(sums["ops"]), int(sums["host_ops"])
    modelled = device > 0 and sums["dram_bytes"] > 0
    return {
        "ops": ops, "device_time_us": device, "op_to_op_us": sums["op_to_op_us"],
        "dispatch_us": dispatch, "pauses_us": pauses, "pauses": int(sums["pauses"]),
        "steady_us": device + dispatch, "wall_us": device + dispatch + pauses,
        "gaps_known": int(sums["gaps_known"]), "corrupt_rows": int(sums["corrupt_rows"]),
        "host_ops": host, "busy_us": sums["busy_us"],
        "overlap_us": max(device - sums["busy_us"], 0.0),
        "device_ops": ops - host, "signposts": int(sums["signposts"]),
        "dram_roofline_gbps": sums["dram_bytes"] / (device * 1e-6) / 1e9 if modelled else None,
        "dram_roofline_pct": sums["dram_pct_time"] / device if modelled else None,
    }


def bound_time(ops: pd.DataFrame) -> dict[str, float]:
    """Device time (us) by bound class ("" = not modelled) of these ops."""
    t = np.nan_to_num(ops["device_time_us"].to_numpy(dtype="float64"))
    codes, names = pd.factorize(ops["bound"], use_na_sentinel=True)
    ok = codes >= 0
    sums = np.bincount(codes[ok], weights=t[ok], minlength=len(names))
    return {str(n): float(v) for n, v in zip(names, sums)}


@dataclass
class Trace(ReadLater):
    path: Path
    header: list[str]
    arch: ArchSpec
    arch_source: str
    clock_mhz: float | None
    trace_mode: bool
    devices: list[int]
    ordered: pd.DataFrame = field(repr=False)  # rows in report order; "ID" = tt-perf-report's
    #                                              ID (CSV line), "_region" = signpost region
    signposts: pd.DataFrame = field(repr=False)
    truncated_tail: bool = False
    wide: WideRows | None = field(default=None, repr=False)  # columns not in `ordered`
    #: what the device time measures: "kernel" (the classic report) or "dispatch" (the
    #: realtime profiler's dispatch-core window, a few us more per op)
    timing: str = "kernel"

    # ------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path, arch: str | None = None, columns: str = "analysis",
             tolerate_partial: bool = False) -> Trace:
        table = read_ops_csv(path, columns=columns, tolerate_partial=tolerate_partial)
        return cls.from_table(table, arch=arch)

    @classmethod
    def load_many(cls, paths: list[Path], arch: str | None = None,
                  columns: str = "analysis") -> Trace:
        """Several reports of one run, merged as tt-perf-report merges its CSV arguments."""
        return cls.from_table(merge_tables([read_ops_csv(p, columns=columns) for p in paths]),
                              arch=arch)

    @classmethod
    def from_table(cls, table: RawTable, arch: str | None = None) -> Trace:
        df = table.df
        _clean_displayed_text(df)
        clock = infer_clock(df)
        spec, source = detect_arch(df, table.path, clock, arch)
        trace_mode = "METAL TRACE ID" in df.columns and bool(df["METAL TRACE ID"].notna().any())
        if ("HOST START TS" in df.columns and not trace_mode
                and not df["HOST START TS"].is_monotonic_increasing):  # sorted already: no copy
            df = df.sort_values("HOST START TS", kind="stable", na_position="last")
        # a new frame of the same columns (pandas 2's reset_index copied every one of them:
        # a million ops' frame twice, the peak of a lowest-deps `open`)
        ordered = df.copy(deep=False) if df.index.equals(pd.RangeIndex(len(df))) \
            else df.reset_index(drop=True)
        del df
        signposts, region = _signposts(ordered)
        add_column(ordered, "_region", region)
        dev = whole(num(ordered, "DEVICE ID"), 0, MAX_DEVICE_ID)
        devices = sorted(int(d) for d in np.unique(dev[~np.isnan(dev)]))
        trace = cls(path=table.path, header=table.header, arch=spec, arch_source=source,
                    clock_mhz=clock, trace_mode=trace_mode, devices=devices, ordered=ordered,
                    signposts=signposts, truncated_tail=table.truncated_tail,
                    wide=table.wide,
                    timing="dispatch" if is_realtime_log(table.path, table.header) else "kernel")
        trace._fill_region_stats()
        return trace

    def warnings(self) -> list[DataWarning]:
        """The file's data-trust warnings (model.trust), found once."""
        found = self.__dict__.get("_warnings")
        if found is None:  # (stored: the columns read alone; in memory: progcache's memo's key)
            table = self.ordered if self._table_later() is None else self.ordered_columns(
                [*read_columns(self.ordered_labels), *RANK_ARCH_READ, *CLOCK_READ])
            found = trace_warnings(table, self.arch, self.arch_source, self.clock_mhz)
            found += [w for w in [mixed_arch_warning(table, infer_clock)] if w]
            self.__dict__["_warnings"] = found
        return list(found)

    @property
    def arch_detected(self) -> bool:
        """False when nothing told the arch (no rows yet, or no arch column, log or clock): the
        Wormhole peaks are then an assumption, not a fact to show."""
        return not self.arch_source.startswith(("default", "no rows"))

    @property
    def replay_sessions(self) -> list[int]:
        """The metal-trace replay sessions (METAL TRACE REPLAY SESSION ID) of the file, found
        once (kept with the view in the analysis cache: not read from the table again)."""
        if "_replay_sessions" not in self.__dict__:
            s = whole(num(self.ordered_columns([REPLAY_COLUMN]), REPLAY_COLUMN), 0,
                      float(1 << 31))
            self.__dict__["_replay_sessions"] = sorted(int(x) for x in np.unique(s[~np.isnan(s)]))
        return list(self.__dict__["_replay_sessions"])

    @property
    def ranks(self) -> list[int]:
        """The tt-run ranks (hosts) the rows came from; [] for a one-host trace (found once)."""
        if "_ranks" not in self.__dict__:
            r = self.ordered_columns(["_rank"])["_rank"].to_numpy(dtype="float64") \
                if "_rank" in self.ordered_labels else np.array([])
            self.__dict__["_ranks"] = sorted(int(x) for x in np.unique(r[~np.isnan(r)]))
        return list(self.__dict__["_ranks"])

    @property
    def op_count(self) -> int:
        """Rows of the file that are ops (not signposts), all devices."""
        kind = text(self.ordered_columns(["OP TYPE"]), "OP TYPE")
        return int(len(kind) - (kind == "signpost").fillna(False).to_numpy(dtype=bool).sum())

    @property
    def raw(self) -> pd.DataFrame:
        """The rows in file order."""
        return self.ordered.sort_values("ID", kind="stable")

    def row(self, row_id: int) -> pd.Series:
        """One CSV row by tt-perf-report's ID (line number), every column of it (those of a
        lazy read fetched from the cached copy)."""
        hit = self.ordered.index[self.ordered["ID"].to_numpy() == row_id]
        if not len(hit):
            raise KeyError(row_id)
        row = self.ordered.loc[hit[0]]
        full = self.wide.frame(row_id - 2) if self.wide is not None else None
        if full is None:
            return row
        _clean_displayed_text(full)
        # the model's own (_region); not the numeric logical sizes of the shape cells the full
        # row holds as text ("32[19]")
        rest = row[[c for c in row.index.difference(full.columns, sort=False)
                    if not c.endswith("_LOGICAL")]]
        return pd.concat([full.iloc[0], rest]).rename(row.name)

    # ------------------------------------------------------------ views
    def view(self, window: Window = DEFAULT_WINDOW, merge: bool = True,
             selected: tuple[pd.DataFrame, str] | None = None) -> View:
        """The ops of `window` analysed; `selected`: its window_rows, when already found."""
        rows, desc = self.window_rows(window) if selected is None else selected
        is_sp = (text(rows, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
        window_rows = int(len(rows) - is_sp.sum())
        step("analysing", 0, len(rows))
        rows = annotate_overlap(rows)  # per device, so before the merge
        if merge:
            rows = merge_devices(rows)
        ops = analyze(rows, self.arch)
        ops["region"] = rows["_region"].to_numpy()
        if "_DEV_N" in rows.columns:  # a merged op's kernel time over devices (the details)
            ops["dev_n"] = rows["_DEV_N"].to_numpy()
            for k in ("min", "median", "max"):
                ops[f"dev_{k}_us"] = rows[f"_DEV_{k.upper()}_NS"].to_numpy() / 1000.0
            ops["dev_mean"] = rows["_DEV_MEAN"].to_numpy() == 1.0
        if "_rank" in rows.columns:  # a multi-host run (tt-run ranks)
            ops["rank"] = rows["_rank"].to_numpy(dtype="float64")
        labels = self.signposts.set_index("index")["label"] if len(self.signposts) else None
        if labels is None:  # (a categorical: no str pointer a row)
            ops["signpost"] = text_category(np.full(len(ops), -1, dtype=np.int8), [])
        else:
            codes, names = pd.factorize(ops["region"].map(labels).where(ops["region"] > 0, None))
            ops["signpost"] = text_category(codes, [str(u) for u in names])
        return View(trace=self, window=window, description=desc, ops=ops, merged=merge,
                    window_rows=window_rows)

    def window_rows(self, w: Window) -> tuple[pd.DataFrame, str]:
        o = self.ordered
        is_sp = (text(o, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
        if w.mode == "all" or (w.mode == "default" and not is_sp.any()):
            return o, "whole file"
        if w.mode == "default":
            last = o["OP CODE"].to_numpy(dtype=object)[np.flatnonzero(is_sp)[-1]]
            hit = (o["OP CODE"] == last).fillna(False).to_numpy(dtype=bool)
            start = int(np.argmax(hit))
            keep = np.zeros(len(o), dtype=bool)
            keep[start + 1:] = True
            return o[keep & ~is_sp], f"after the first signpost named {self._display(last)!r}"
        if w.mode == "region":
            sp = self.signposts
            if not len(sp) or w.region is None or not 1 <= w.region <= len(sp):
                raise TraceError(self.path, f"no signpost number {w.region} "
                                 f"(the trace has {len(sp)})")
            keep = (o["_region"] == w.region).to_numpy() & ~is_sp
            return o[keep], f"signpost {sp.iloc[w.region - 1]['label']}"
        if w.mode == "replay":
            sessions = self.replay_sessions
            if w.region not in sessions:
                raise TraceError(self.path, f"no metal-trace replay session {w.region} "
                                 f"(sessions: {', '.join(map(str, sessions)) or 'none'})")
            keep = (num(o, REPLAY_COLUMN) == w.region) & ~is_sp
            return o[keep], f"replay session {w.region} of {len(sessions)}"
        if w.mode == "steady":
            return steady_rows(self, is_sp)
        if w.mode == "range":
            ids = o["ID"].to_numpy()
            keep = np.ones(len(o), dtype=bool)
            parts = []
            names = o["OP CODE"].to_numpy(dtype=object)
            sp_ids = ids[is_sp]
            if w.start:
                hits = sp_ids[self._name_match(names[is_sp], w.start)]
                if not len(hits):
                    raise TraceError(self.path, f"start signpost {w.start!r} not found")
                keep &= ids > np.sort(hits)[0]
                parts.append(f"after {w.start!r}")
            if w.end:
                hits = np.sort(sp_ids[self._name_match(names[is_sp], w.end)])
                k = 1 if w.start == w.end else 0
                if len(hits) <= k:
                    raise TraceError(self.path, f"end signpost {w.end!r} not found"
                                     + (" a second time" if k else ""))
                keep &= ids < hits[k]
                parts.append(f"until {w.end!r}")
            return o[keep & ~is_sp], " ".join(parts) or "whole file"
        raise ValueError(f"unknown window mode {w.mode!r}")

    @staticmethod
    def _display(name: object) -> str:
        s = "" if name is None or (isinstance(name, float) and np.isnan(name)) else str(name)
        return s.rsplit(": ", 1)[-1]

    def _name_match(self, names: np.ndarray, wanted: str) -> np.ndarray:
        return np.array([n == wanted or self._display(n) == wanted for n in names], dtype=bool)

    def find_signpost(self, selector: str) -> int:
        """`NAME`, `NAME#K` (K-th occurrence, 1-based) or a 1-based index -> signpost index."""
        sp = self.signposts
        name, _, occ = selector.rpartition("#") if "#" in selector else (selector, "", "")
        if not occ:
            name = selector
        hits = sp[(sp["name"] == name) | (sp["raw_name"] == name)]
        if len(hits):
            k = int(occ) if occ.isascii() and occ.isdigit() else 1
            if not 1 <= k <= len(hits):
                raise TraceError(self.path, f"signpost {name!r} occurs {len(hits)} time(s), "
                                 f"not {k}")
            return int(hits.iloc[k - 1]["index"])
        if selector.isascii() and selector.isdigit() and 1 <= int(selector) <= len(sp):
            return int(selector)
        names = ", ".join(dict.fromkeys(sp["name"].tolist())) or "none"
        raise TraceError(self.path, f"no signpost {selector!r} (signposts: {names[:200]})")

    def _fill_region_stats(self) -> None:
        if not len(self.signposts):
            return
        if len(self.devices) > 1:
            full = self.view(Window("all"), merge=True).op_rows
        else:  # one device: a row's device time needs no neighbours, so skip the full analysis
            o = self.ordered
            op_type = text(o, "OP TYPE")
            is_op = ~(op_type == "signpost").fillna(False).to_numpy(dtype=bool)
            dur = num(o, "DEVICE KERNEL DURATION [ns]")
            bad = invalid_duration(dur, num(o, "OP TO OP LATENCY [ns]"))
            host = text(o, "OP CODE").str.contains(HOST_MARKER, regex=False).fillna(False) \
                .to_numpy(dtype=bool)
            full = pd.DataFrame({"region": o["_region"].to_numpy()[is_op],
                                 "device_time_us": np.where(bad | host, np.nan, dur / 1000)[is_op]})
        g = full.groupby("region", observed=True)
        ops = g.size()
        dt = g["device_time_us"].sum(min_count=0)
        idx = self.signposts["index"]
        self.signposts["ops"] = idx.map(ops).fillna(0).astype(int).to_numpy()
        self.signposts["device_time_us"] = idx.map(dt).fillna(0.0).to_numpy()


def _clean_displayed_text(df: pd.DataFrame) -> None:
    """Every text the views or outputs show, control and bidi characters removed (in place)."""
    for c in df.columns:
        if c in DISPLAYED_TEXT or c.endswith(("_DATATYPE", "_MEMORY", "_LAYOUT")):
            s = df[c]
            df[c] = clean_series(s if isinstance(s.dtype, pd.CategoricalDtype)
                                 else s.astype("string"))


def _signposts(ordered: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    is_sp = (text(ordered, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    pos = np.flatnonzero(is_sp)
    raw = ordered["OP CODE"].to_numpy(dtype=object)[pos] if len(pos) else np.array([], object)
    names = [Trace._display(r) for r in raw]
    occ: dict[str, int] = {}
    counts = pd.Series(names).value_counts().to_dict() if names else {}
    occurrence, labels = [], []
    for nm in names:
        occ[nm] = occ.get(nm, 0) + 1
        occurrence.append(occ[nm])
        labels.append(f"{nm} #{occ[nm]}" if counts[nm] > 1 else nm)
    sp = pd.DataFrame({
        "index": np.arange(1, len(pos) + 1), "name": names,
        "raw_name": [str(r) for r in raw], "occurrence": occurrence, "label": labels,
        "id": ordered["ID"].to_numpy()[pos] if len(pos) else np.array([], np.int64),
        "position": pos, "ops": 0, "device_time_us": 0.0,
    })
    region = np.cumsum(is_sp)  # 0 before the first signpost; k within signpost k's region
    return sp, region


#: infer_clock's columns: (start cycle, end cycle, duration), firmware's first
_CLOCK = (("DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]"),
          ("DEVICE KERNEL START CYCLE", "DEVICE KERNEL END CYCLE", "DEVICE KERNEL DURATION [ns]"))
CLOCK_READ = tuple(c for group in _CLOCK for c in group)


def infer_clock(df: pd.DataFrame) -> float | None:
    """Clock in MHz from (FW END - FW START cycles) * 1000 / FW DURATION [ns] (median); a file
    without FW cycles (the realtime profiler's quick mode) from its kernel cycles and duration."""
    for first, last, span in _CLOCK:
        start, end, dur = num(df, first), num(df, last), num(df, span)
        with np.errstate(all="ignore"):  # absurd cells give inf/NaN, filtered just below
            mhz = (end - start) * 1000.0 / dur
        ok = np.isfinite(mhz) & (dur > 1000) & (mhz > 100) & (mhz < 5000)
        if ok.any():
            return float(round(np.median(mhz[ok]), 1))
    return None


def _arch_from_log(report: Path) -> tuple[str, float | None] | None:
    for d in (report.parent, report.parent.parent / ".logs", report.parent.parent.parent / ".logs"):
        p = d / PROFILE_LOG
        try:
            if p.is_file():
                with open(p, encoding="utf-8", errors="replace") as fh:
                    m = _LOG_ARCH_RE.search(fh.readline(4096))
                if m:
                    return m.group(1), float(m.group(2)) if m.group(2) else None
        except OSError:
            continue
    return None


def detect_arch(df: pd.DataFrame, path: Path, clock: float | None,
                override: str | None) -> tuple[ArchSpec, str]:
    if override:
        return get_arch(override), "--arch"
    if "DEVICE ARCH" in df.columns:
        vals = df["DEVICE ARCH"].dropna()
        vals = vals[vals.str.strip() != ""]
        if len(vals):
            try:
                return get_arch(str(vals.iloc[0])), "DEVICE ARCH column"
            except TraceError:
                pass
    logged = _arch_from_log(path)
    if logged:
        try:
            return get_arch(logged[0]), PROFILE_LOG
        except TraceError:
            pass
    spec = arch_from_clock(clock)
    if spec is not None:
        return spec, f"inferred from the {clock:g} MHz clock"
    return get_arch("wormhole_b0"), "default (no arch information in the file)"
