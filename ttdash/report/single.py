"""Non-interactive outputs of one trace: json, csv, markdown, table."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO, TypeVar

import numpy as np
import pandas as pd

from ..format import fmt_mhz, fmt_texts, fmt_us
from ..health.telemetry import summary_line
from ..model import View
from ..model.advice import advice_frames
from ..model.columns import (
    BY_KEY,
    JSON_FIELDS,
    TABLE_FIELDS,
    TEXT_FIELDS,
    Severity,
    export_frame,
    op_fields,
)
from ..model.columns import CSV_FIELDS as COLUMN_CSV_FIELDS
from ..model.discover import DISPATCH_TIMING
from ..model.progress import step
from ..model.runs import replay_sessions
from ..model.text import clean_text
from ..schemas import SCHEMA_VERSION
from .advice import (  # noqa: F401  (advice_sections, advice_entries: the TUI's and tests' names)
    advice_entries,
    advice_sections,
    advice_text,
    guide_frames_of,
    guides_cached,
    release_guides,
    summary_of,
    summary_sections,
)
from .choices import DEFAULT_RANK, RANK_FIELDS, RANK_WORDS
from .header import (
    Fact,
    facts_line,
    iterations_dict,
    iterations_line,
    replay_line,
    timing_facts,
)
from .layout import fit_columns, op_labels, wrap
from .safe import json_clean, md_cell, records_json, write_csv
from .where import as_dict as where_dict
from .where import where_lines
from .why import as_dict as why_dict
from .why import headline, heaviest_lines, why_lines
from .why import sections as why_sections

T = TypeVar("T")

JSON_OP_FIELDS = JSON_FIELDS
CSV_FIELDS = COLUMN_CSV_FIELDS
CHUNK = 20_000  # rows per streamed block: bounded memory for 100k+ ops
KEEP_ROWS = 1 << 17  # the plain table formats its cells once up to this many rows
TEXT_KINDS = frozenset({"text", "op", "bound"})  # columns.FORMATTERS' text cells (_text)




@dataclass(frozen=True)
class Shown:
    """What of a view `ttdash report` prints (its options; the defaults print everything)."""
    top: int | None = None  # only the `top` ops by `rank_by`, largest first
    rank_by: str = DEFAULT_RANK
    summary: str | None = None  # the grouped summary by "op", "memory" or "category" instead
    #                              of the op table
    min_pct: float | None = None  # hide ops under this share of the total
    advice: str = "summary"  # report.advice.ADVICE_MODES: grouped, every entry, none
    raw_op_codes: bool = False  # table/markdown: op codes without the size/config
    all_signposts: bool = False  # the summary lists every signpost (default: 6)
    telemetry: dict | None = None  # device telemetry recorded during the run (health.telemetry)
    file_line: bool = True  # the table's "File:" line (False: the caller wrote it, file_line)


ALL = Shown()


def select(view: View, shown: Shown = ALL, rows=None) -> pd.DataFrame:
    """The ops to print: all in report order, or as `shown` says (the `top` ones, ops above a
    share), or the given positions (`rows`: what a TUI view shows)."""
    if rows is not None:
        ops = view.ops.iloc[rows]
        return ops[~ops["is_signpost"].to_numpy(dtype=bool)]
    ops = view.op_rows
    if shown.min_pct:
        ops = ops[(ops["total_pct"].to_numpy(dtype="float64") >= shown.min_pct)]
    if shown.top:
        ops = ops.sort_values(RANK_FIELDS[shown.rank_by], ascending=False, na_position="last",
                              kind="stable").head(shown.top)
    return ops


def shown_line(view: View, shown: Shown) -> str | None:
    """What of the ops the table holds, when not every one: the top N and what ranks them, the
    share floor."""
    parts = []
    if shown.top:
        parts.append(f"the top {shown.top:,} of {len(view.op_rows):,} ops by "
                     f"{RANK_WORDS[shown.rank_by]}, largest first (--rank-by)")
    if shown.min_pct:
        parts.append(f"ops at or above {shown.min_pct:g}% of wall time")
    return "Shown: " + "; ".join(parts) if parts else None


def summary_dict(view: View) -> dict:
    t = view.trace
    return {
        "file": str(t.path),
        "arch": t.arch.name if t.arch_detected else None,  # never one nothing said
        "peaks_arch": t.arch.name,  # whose peaks the DRAM and FLOP shares use
        "arch_source": t.arch_source,
        "arch_detected": t.arch_detected,
        "clock_mhz": t.clock_mhz,
        "device_time_basis": t.timing,
        "devices": len(t.devices) or None,
        "ranks": t.ranks or None,  # a multi-host run's tt-run ranks
        "window": view.description,
        "window_note": view.window_note() or None,
        "merged_devices": view.merged,
        "signposts": [
            {"index": int(r.index), "name": r.name, "occurrence": int(r.occurrence),
             "label": r.label, "id": int(r.id), "ops": int(r.ops),
             "device_time_us": round(float(r.device_time_us), 6)}
            for r in t.signposts.itertuples(index=False)
        ],
        "totals": view.totals(),
        "bound_share_pct": {k: round(v, 3) for k, v in view.bound_shares().items()},
        "warnings": [w.as_dict() for w in view.warnings()],
        # metal-trace replay sessions compared with each other (iterations of one run)
        "replay_sessions": replay_sessions(view) or None,
        # repeated iterations and the warm-up verdict (model.iterations)
        "iterations": iterations_dict(view),
    }


def to_json(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    doc = {"schema_version": SCHEMA_VERSION, **summary_dict(view)}  # schemas/report.schema.json
    if shown.telemetry:
        doc["telemetry"] = shown.telemetry
    if shown.top:
        doc["ranked_by"] = {"top": shown.top, "by": RANK_FIELDS[shown.rank_by]}
    doc["where_the_time_goes"] = where_dict(view)
    made = not guides_cached(view)  # the guide entries made here are dropped once written
    doc.update(why_dict(view))  # performance_model, core_balance, ccl_bandwidth, program_cache
    if shown.advice != "none":  # streamed: a million-op trace has hundreds of thousands
        doc["advice_summary"] = summary_of(view).as_dict()
    head = json.dumps(json_clean(doc), separators=(",", ":"), allow_nan=False)
    out.write(head[:-1])
    if shown.advice != "none":  # CHUNK entries at a time: no Python object per entry, and
        # the text of a chunk, not of a frame (131,072 matmuls' bullets), held at once
        out.write(',"advice":[')
        _records(out, (frame.iloc[start:start + CHUNK]
                       for frame in advice_frames(view.ops, view.pause_above_us)
                       for start in range(0, len(frame), CHUNK)))
        out.write('],"guide_advice":[')  # the tuning guides' entries, a kind at a time
        _records(out, guide_frames_of(view, chunk=CHUNK))
        out.write("]")
        if made:  # (a caller that kept them, the TUI, keeps them)
            release_guides(view)
    ops = select(view, shown, rows)
    fields = op_fields(JSON_OP_FIELDS, ops, view.counter_names)
    out.write(',"ops":[')
    for start in range(0, len(ops), CHUNK):
        step("writing json", start, len(ops))
        chunk = export_frame(view.with_counters(ops.iloc[start:start + CHUNK]), fields)
        out.write("," if start else "")  # 6 decimals; total_pct 6 significant digits
        out.write(records_json(chunk, bare=True))
    out.write("]}\n")


def _records(out: TextIO, frames: Iterable[pd.DataFrame]) -> None:
    """Each frame's rows as JSON records, one list's items (comma-separated, no brackets)."""
    sep = ""
    for frame in frames:
        out.write(sep)
        out.write(records_json(frame, bare=True))
        sep = ","


def to_csv(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    ops = select(view, shown, rows)
    fields = op_fields(CSV_FIELDS, ops, view.counter_names)
    write_csv(ops, TEXT_FIELDS, out,
              prepare=lambda part: export_frame(view.with_counters(part), fields))


def _table_cells(ops: pd.DataFrame, fields: tuple[str, ...],
                 raw: bool = False) -> dict[str, list[str]]:
    cells: dict[str, list[str]] = {}
    for f in fields:
        if f == "op_code":
            cells[f] = op_labels(ops, raw=raw)
            continue
        spec, values = BY_KEY[f], ops[f].to_numpy()
        fast = fmt_texts(values) if spec.kind in TEXT_KINDS else None
        cells[f] = fast if fast is not None else spec.fmt_array(values)
    if "device_time_us" in cells and "corrupt" in ops:
        dt = cells["device_time_us"]
        for i in np.flatnonzero(ops["corrupt"].to_numpy(dtype=bool)):
            if not dt[i]:
                dt[i] = "corrupt"
    return cells


def summary_lines(view: View, all_signposts: bool = False) -> list[str]:
    """The header: file, arch, window, then the time facts (report.header, as the TUI's
    header states them) and what else the data says."""
    return list(iter_summary_lines(view, all_signposts))


def file_line(trace, width: int | None = None) -> str:  # (model.Trace)
    """The table's first line, "File: PATH" (wrapped at `width`), as soon as the trace is read:
    `report` writes it before the analysis."""
    return "\n".join(wrap(str(clean_text(f"File: {trace.path}")), width))


def iter_summary_lines(view: View, all_signposts: bool = False,
                       file: bool = True) -> Iterator[str]:
    """summary_lines, the first as soon as it is made (the table flushes it while the rest of
    the header is worked out: the iterations, the performance model). `file`: with the "File:"
    line (file_line)."""
    sm = view.summary()
    if file:
        yield file_line(view.trace)
    facts = timing_facts(view)

    def bound(f: Fact) -> bool:
        return f.key.startswith("bound:")

    dev = f"{len(sm.devices)} ({', '.join(str(d) for d in sm.devices)})" if sm.devices else "none"
    clock = fmt_mhz(sm.clock_mhz) if sm.clock_mhz else "unknown clock"
    arch = sm.arch or f"not detected, Wormhole peaks assumed: {view.trace.arch.name}"
    lines = [
        f"Arch: {arch} ({sm.arch_source}), {clock}; devices: {dev}"
        + (" (per device)" if sm.per_device else "")
        + (f"; ranks: {len(view.trace.ranks)} ({', '.join(map(str, view.trace.ranks))}), "
           "device ids offset per rank" if view.trace.ranks else ""),
        f"Window: {sm.window}; {sm.ops:,} ops",
        f"Time: {facts_line([f for f in facts if f.key != 'window' and not bound(f)])} "
        f"(pauses: {sm.pauses:,} op-to-op gaps above {fmt_us(sm.pause_above_us)}; dispatch: "
        "the shorter ones)",
    ]
    if sm.timing == "dispatch":
        lines.append(f"Timing: {DISPATCH_TIMING}")
    if sm.window_note:
        lines.append(f"Note: {sm.window_note}")
    if sm.bound_shares:
        lines.append("Device time by bound: " + ", ".join(f.text for f in facts if bound(f)))
    lines.extend(f"Warning: {w.message}" for w in sm.warnings)
    if sm.host_ops:
        lines.append(f"Host fallback ops: {sm.host_ops}")
    sessions = replay_sessions(view)
    if sessions:
        lines.append(replay_line(sessions))
    it = iterations_line(view)
    if it:
        lines.append(it)
    if sm.signposts:
        show = sm.signposts if all_signposts else sm.signposts[:6]
        more = len(sm.signposts) - len(show)
        lines.append(f"Signposts ({len(sm.signposts)}): {', '.join(show)}"
                     + (f", +{more} more (--print-signposts lists them)" if more > 0 else ""))
    yield from (str(clean_text(line)) for line in lines)


def head_lines(view: View, shown: Shown) -> list[str]:
    """The header of the table and markdown: the summary and what of the ops is shown."""
    return list(iter_head_lines(view, shown))


def iter_head_lines(view: View, shown: Shown) -> Iterator[str]:
    """head_lines, each as it is made."""
    yield from iter_summary_lines(view, shown.all_signposts, file=shown.file_line)
    m = headline(view)  # then "where": the heaviest ops, before the table in file order
    yield from filter(None, [shown_line(view, shown), m and f"Model: {m}", *heaviest_lines(view)])


def summed_note(view: View) -> str:
    """Per-device rows: the time totals add every device's ops (8 devices' pauses are not a
    run's wall time), and say so."""
    n = len(view.trace.devices)
    return f" (times summed over {n} devices)" if not view.merged and n > 1 else ""


LEFT = frozenset(c for c in TABLE_FIELDS if BY_KEY[c].kind in ("op", "text", "bound"))


def totals_line(view: View) -> str:
    """tt-perf-report's footer, in words: ops by kind, time, the overall DRAM roofline."""
    tot = view.totals()
    parts = [f"{tot['ops']:,} ops ({tot['device_ops']:,} device, {tot['host_ops']:,} host; "
             f"{tot['signposts']:,} signposts)", f"device time {fmt_us(tot['device_time_us'])}",
             f"dispatch gaps {fmt_us(tot['dispatch_us'])}",
             f"host pauses {fmt_us(tot['pauses_us'])}"]
    if tot["overlap_us"] > 0:
        parts.append(f"busy {fmt_us(tot['busy_us'])} (overlap {fmt_us(tot['overlap_us'])}: ops "
                     "on disjoint sub-devices ran concurrently)")
    if summed_note(view):
        parts[-1] += summed_note(view)
    if tot["dram_roofline_pct"] is not None:
        parts.append(f"overall DRAM roofline (modelled ops) {tot['dram_roofline_pct']:.1f}% "
                     f"({tot['dram_roofline_gbps']:,.0f} GB/s)")
    if tot["corrupt_rows"]:
        parts.append(f"{tot['corrupt_rows']:,} corrupt rows left out")
    return "Total: " + ", ".join(parts)


def shown_fields(view: View, ops: pd.DataFrame) -> list[str]:
    """The human tables' columns (TABLE_FIELDS and what these ops add) less those empty in every
    row (a trace with no conv has no Config, one without sub-devices no Overlap) and the device
    of a one-device trace; the op code and device time always."""
    return [f for f in op_fields(TABLE_FIELDS, ops)
            if f in ("op_code", "device_time_us") or ops[f].notna().any()
            and (f != "device" or len(view.trace.devices) > 1)
            and not (ops[f].dtype == object and (ops[f].fillna("") == "").all())]


def to_markdown(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    out.write("## ttdash report\n\n")
    for line in head_lines(view, shown):
        key, _, rest = line.partition(": ")
        out.write(f"- **{md_cell(key)}**: {md_cell(rest)}\n")
    ops = select(view, shown, rows)
    fields = tuple(shown_fields(view, ops))
    out.write("\n| " + " | ".join(BY_KEY[f].title for f in fields) + " |\n")
    out.write("|" + "|".join("---" if f in LEFT else "---:" for f in fields) + "|\n")
    # numbers we formatted need no escaping; text cells are escaped once per distinct value
    numeric = {f for f in fields if f not in LEFT and ops[f].dtype.kind in "fiu"}
    memo: dict[str, str] = {}
    for start in range(0, len(ops), CHUNK):
        step("writing markdown", start, len(ops))
        cells = _table_cells(ops.iloc[start:start + CHUNK], fields, raw=shown.raw_op_codes)
        for f in fields:
            if f not in numeric:
                cells[f] = [memo[c] if c in memo else memo.setdefault(c, md_cell(c))
                            for c in cells[f]]
        out.writelines("| " + " | ".join(row) + " |\n"
                       for row in zip(*(cells[f] for f in fields)))
    out.write("\n" + md_cell(totals_line(view)) + "\n")
    if shown.telemetry:
        out.write("\n" + md_cell(summary_line(shown.telemetry)) + "\n")
    if rows is not None:  # a TUI export is the table on screen; the rest covers the whole view
        return
    grouped = _grouped_advice(view, shown, summary_sections)
    where = where_lines(view)
    if where:
        out.write(f"\n### {md_cell(where[1].partition(':')[0])}\n\n"
                  f"{md_cell(where[1].partition(': ')[2])}\n\n")
        out.writelines(f"- {md_cell(line.strip())}\n" for line in where[2:])
    for title, why in why_sections(view):
        out.write(f"\n### {md_cell(title)}\n\n{md_cell(why[0])}\n\n")
        out.writelines(f"- {md_cell(line.strip())}\n" for line in why[1:])
    if shown.advice == "full":
        sections = advice_sections(view)
    else:
        sections = grouped or []
    for k, (title, entries) in enumerate(sections):
        if not k:
            out.write("\n### Advice\n")
        out.write(f"\n**{md_cell(title)}**\n\n")
        for _, head, bullets in entries:
            out.write(f"- {md_cell(head.strip())}\n")
            for b in bullets:
                out.write(f"  - {md_cell(b)}\n")


SGR = {Severity.GOOD: "\x1b[32m", Severity.WARN: "\x1b[33m", Severity.BAD: "\x1b[31m"}
BOLD, RESET = "\x1b[1m", "\x1b[0m"
def to_table(view: View, out: TextIO, shown: Shown = ALL, color: bool = False,
             width: int | None = None) -> None:
    """A plain-text table streamed row by row (no layout pass over the whole table): columns
    sized from their formatted cells, never wrapped; on a terminal (`width`), columns that do not
    fit are dropped, least useful first. Corrupt rows are marked as in the TUI; a totals line ends
    it. `color`: every colour rule of the registry (model.columns.SEVERITY), in ANSI."""
    for k, line in enumerate(iter_head_lines(view, shown)):
        out.write("\n".join(wrap(line, width)) + "\n")
        if not k:  # the first line at once (a pipe's reader sees it while the rest is made)
            out.flush()
    out.flush()  # the header now (a pipe's reader sees it while the columns are measured)
    ops = select(view, shown)
    fields = shown_fields(view, ops)
    n = len(ops)

    def chunk_cells(start: int) -> dict[str, list[str]]:
        return _table_cells(ops.iloc[start:start + CHUNK], tuple(fields), raw=shown.raw_op_codes)

    # Column widths from every cell, a chunk at a time; the cells are kept for the rows pass
    # up to KEEP_ROWS rows (formatted once; ~100 MB of text), else formatted again in the rows
    # pass (a million rows of text would not fit in bounded memory).
    titles = {f: BY_KEY[f].title for f in fields}
    cell_w = {f: 0 for f in fields}
    kept: dict[int, dict[str, list[str]]] = {}
    for start in range(0, n, CHUNK):
        step("measuring columns", start, n)
        cells = chunk_cells(start)
        for f in fields:
            cell_w[f] = max(cell_w[f], max(map(len, cells[f]), default=0))
        if n <= KEEP_ROWS:
            kept[start] = cells
    widths = {f: max(cell_w[f], len(titles[f])) for f in fields}
    if width:
        widths.update({f"_cells:{f}": w for f, w in cell_w.items()})
        fit_columns(fields, widths, width, titles)
    severity = {f: BY_KEY[f].severity for f in fields if BY_KEY[f].coloured}
    raw = {f: ops[f].to_numpy() for f in severity}
    host = ops["is_host"].to_numpy(dtype=bool) if "is_host" in ops else None

    def cell(f: str, text: str) -> str:
        w = widths[f]
        if len(text) > w:
            text = text[:w - 1] + "…"
        return text.ljust(w) if f in LEFT else text.rjust(w)

    head = "  ".join(cell(f, titles[f]) for f in fields).rstrip()
    # a plain row: each cell padded to its column (str.ljust / rjust's padding), two spaces apart
    row_format = "  ".join(f"%{'-' if f in LEFT else ''}{widths[f]}s" for f in fields)
    out.write("\n" + (BOLD + head + RESET if color else head) + "\n")
    for start in range(0, n, CHUNK):
        step("writing table", start, n)
        cells = kept.pop(start, None) or chunk_cells(start)
        if not color:  # cells cut a column at a time (only a narrowed one), a row one format
            cols = [[c if len(c) <= widths[f] else c[:widths[f] - 1] + "…" for c in cells[f]]
                    if cell_w[f] > widths[f] else cells[f] for f in fields]
            out.write("\n".join(map(str.rstrip, map(row_format.__mod__, zip(*cols)))) + "\n")
            continue
        lines = []
        for i in range(start, min(n, start + CHUNK)):
            parts = []
            for f in fields:
                text = cell(f, cells[f][i - start])
                if color:
                    sev = severity[f](raw[f][i]) if f in severity else None
                    if f == "op_code" and host is not None and host[i]:
                        sev = Severity.BAD
                    if f in ("op_code", "device_time_us") and cells[f][i - start].startswith(
                            ("! ", "corrupt")):
                        sev = Severity.WARN
                    if sev is not None:
                        text = SGR[sev] + text + RESET
                parts.append(text)
            lines.append("  ".join(parts).rstrip())
        out.write("\n".join(lines) + "\n")
    out.write("\n" + "\n".join(wrap(totals_line(view), width)) + "\n")
    if shown.telemetry:
        out.write("\n".join(wrap(summary_line(shown.telemetry), width)) + "\n")
    grouped = _grouped_advice(view, shown, lambda v: list(advice_text(v, "summary")))
    for line in where_lines(view) + why_lines(view):
        out.write("\n".join(wrap(str(clean_text(line)), width)) + "\n")
    for line in grouped if grouped is not None else advice_text(view, shown.advice):
        out.write("\n".join(wrap(str(clean_text(line)), width)) + "\n")


def _grouped_advice(view: View, shown: Shown, make: Callable[[View], list[T]]) -> list[T] | None:
    """The grouped advice (`--advice summary`) made before the where/why lines, printed after
    them: the guide rules' entries (1.5 million on a million ops) are then made and dropped
    (release_guides) before the where and why analyses add what they keep to the peak; None
    for the other advice modes."""
    if shown.advice != "summary":
        return None
    made = make(view)
    release_guides(view)
    return made


def render(view: View, fmt: str, out: TextIO, shown: Shown = ALL, color: bool = False,
           width: int | None = None) -> None:
    """`view` in the format named `fmt` (report.formats: its registered writer)."""
    from .formats import BY_NAME

    if shown.summary:
        render_summary(view, fmt, out, shown)
        return
    spec = BY_NAME[fmt]
    if spec.terminal:
        spec.write()(view, out, shown, color=color, width=width)
    else:
        spec.write()(view, out, shown)


def render_to_string(view: View, fmt: str, shown: Shown = ALL) -> str:
    buf = io.StringIO()
    render(view, fmt, buf, shown)
    return buf.getvalue()


GROUP_FIELDS = ("count", "total_us", "mean_us", "max_us", "share_pct")


def groups_csv(groups: pd.DataFrame, by: str, out: TextIO) -> None:
    """The grouped view's table (model.query.group_ops) as CSV."""
    frame = groups[[by, *GROUP_FIELDS]].copy()
    frame["count"] = frame["count"].astype("Int64")
    write_csv(frame, (by,), out)


def groups_markdown(groups: pd.DataFrame, by: str, out: TextIO) -> None:
    title = BY_KEY[by].title if by in BY_KEY else by
    out.write(f"| {md_cell(title)} | Ops | Device time | Mean | Max | Share |\n")
    out.write("|---|---:|---:|---:|---:|---:|\n")
    share = BY_KEY["total_pct"]
    for r in groups.itertuples(index=False):
        out.write(f"| {md_cell(getattr(r, by))} | {int(r.count)} | {fmt_us(r.total_us)} | "
                  f"{fmt_us(r.mean_us)} | {fmt_us(r.max_us)} | {share.fmt(r.share_pct)} |\n")


# ------------------------------------------------------------------ the grouped summary
SUMMARY_COLUMNS = {  # field -> (title, left-aligned)
    "name": ("Group", True), "device": ("Device", False), "op_count": ("Ops", False),
    "device_time_us": ("Device time", False), "total_pct": ("Total % (device)", False),
    "category": ("Category", True), "flops_pct_min": ("FLOPs% min", False),
    "flops_pct_max": ("max", False), "flops_pct_mean": ("mean", False),
    "flops_pct_std": ("std", False), "flops_pct_weighted_mean": ("weighted", False),
}


def _summary_cells(groups: pd.DataFrame) -> dict[str, list[str]]:
    cells: dict[str, list[str]] = {}
    for f in groups.columns:
        v = groups[f].tolist()
        if f == "device_time_us":
            cells[f] = [fmt_us(x) for x in v]
        elif f in ("name", "category"):
            cells[f] = ["" if x is None or x != x else str(clean_text(str(x))) for x in v]
        elif f in ("device", "op_count"):
            cells[f] = [f"{int(x):,}" for x in v]
        else:
            cells[f] = ["" if x is None or x != x else f"{x:,.2f}%" for x in v]
    return cells


def render_summary(view: View, fmt: str, out: TextIO, shown: Shown) -> None:
    """tt-perf-report's summary report (its --summary-file CSV: groups by op, input 0 memory
    or category, with FLOPs % statistics), in the four formats."""
    from ..model.query import summary_groups

    by = shown.summary or "memory"
    groups = summary_groups(view.ops, by, per_device=not view.merged)
    if by == "category":  # no FLOPs statistics across op types
        groups = groups.drop(columns=[c for c in groups.columns if c.startswith("flops_pct")]
                             + ["category"])
    if fmt == "json":  # schemas/report-summary.schema.json
        doc = {"schema_version": SCHEMA_VERSION, **summary_dict(view)}
        doc["group_by"] = by
        frame = groups.astype(object).where(groups.notna(), None)
        doc["groups"] = frame.to_dict("records")
        out.write(json.dumps(json_clean(doc), separators=(",", ":"), allow_nan=False) + "\n")
        return
    if fmt == "csv":
        write_csv(groups, ("name", "category"), out)
        return
    cells = _summary_cells(groups)
    fields = list(groups.columns)
    lines = summary_lines(view, shown.all_signposts)
    title = f"Summary by {by}: {len(groups):,} groups"
    if fmt == "markdown":
        out.write("## ttdash report: summary\n\n")
        for line in lines:
            key, _, rest = line.partition(": ")
            out.write(f"- **{md_cell(key)}**: {md_cell(rest)}\n")
        out.write(f"\n{md_cell(title)}\n\n| " + " | ".join(
            SUMMARY_COLUMNS[f][0] for f in fields) + " |\n")
        out.write("|" + "|".join("---" if SUMMARY_COLUMNS[f][1] else "---:" for f in fields)
                  + "|\n")
        for i in range(len(groups)):
            out.write("| " + " | ".join(md_cell(cells[f][i]) for f in fields) + " |\n")
        out.write("\n" + md_cell(totals_line(view)) + "\n")
        return
    widths = {f: max([len(SUMMARY_COLUMNS[f][0])] + [len(c) for c in cells[f]]) for f in fields}

    def row(texts: dict[str, str]) -> str:
        return "  ".join(texts[f].ljust(widths[f]) if SUMMARY_COLUMNS[f][1]
                         else texts[f].rjust(widths[f]) for f in fields).rstrip()

    for line in lines:
        out.write(line + "\n")
    out.write(f"\n{title}\n" + row({f: SUMMARY_COLUMNS[f][0] for f in fields}) + "\n")
    for i in range(len(groups)):
        out.write(row({f: cells[f][i] for f in fields}) + "\n")
    out.write("\n" + totals_line(view) + "\n")
