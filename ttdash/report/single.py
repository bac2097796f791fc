"""Non-interactive outputs of one trace: json, csv, markdown, table."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO, TypeVar

import numpy as np
import pandas as pd

from ..format import Coded, fmt_us
from ..health.telemetry import summary_line
from ..model import View
from ..model.analysis.advice import advice_frames
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
from ..model.progress import step
from ..model.read.text import clean_text
from ..present.labels import op_label_codes
from ..present.sections import blocks as section_blocks
from ..present.sections import facts as section_facts
from ..present.sections import json_keys as section_keys
from ..present.table import OPS, SUMMARY_GROUPS, TableSpec, cells, op_groups, worded
from ..schemas import SCHEMA_VERSION
from .advice import (  # noqa: F401  (advice_sections, advice_entries: the TUI's and tests' names)
    advice_entries,
    advice_sections,
    advice_text,
    entries_streamed,
    guide_entries,
    guide_frames_of,
    guides_cached,
    release_guides,
    summary_of,
    summary_sections,
)
from .choices import DEFAULT_RANK, RANK_FIELDS
from .export import put_behind
from .header import (  # noqa: F401  (file_line, summary_dict, shown_line: callers' names)
    file_line,
    shown_line,
    summary_dict,
    summary_facts,
    write_md_facts,
)
from .layout import fit_columns, wrap
from .safe import joined_rows, json_clean, md_cell, padded, put, records_later, write_csv

T = TypeVar("T")

JSON_OP_FIELDS = JSON_FIELDS
CSV_FIELDS = COLUMN_CSV_FIELDS
CHUNK = 20_000  # rows per streamed block: bounded memory for 100k+ ops
#: JSON's ops are written this many CHUNKs at a time: each block's fixed cost (~70 columns'
#: pandas and pyarrow calls) paid half as often, ~0.5 s of CPU of a million ops, for ~7 MB at
#: a second run's peak (the advice's and guides' blocks, written near a cold run's peak, stay
#: CHUNK)
OPS_BLOCKS = 2
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


def to_json(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    made = not guides_cached(view)  # the guide entries made here are dropped once written
    # every section's keys (present.sections; schemas/report.schema.json), the advice's last:
    # the guide rules' entries it sums are made once for it and the entries below, once the
    # other sections' working memory is gone (held through them, they added ~90 MiB to a
    # million ops' peak); a large view's that no cache keeps, a rule at a time for each
    # (entries_streamed). The entries are written after the keys: a million ops have 1.5M.
    hold = shown.advice != "none" and not entries_streamed(view)
    doc = {"schema_version": SCHEMA_VERSION, **section_keys(
        view, shown, last="advice", before_last=(lambda: guide_entries(view)) if hold else None)}
    head = json.dumps(json_clean(doc), separators=(",", ":"), allow_nan=False)
    out.write(head[:-1])
    # each block's records joined and written by a thread; the ops' while the next block is
    # made (the advice's are written before the next is made: they are written while the
    # guide entries are held, near the peak of a million ops' analysis)
    with put_behind(out) as send:
        if shown.advice != "none":  # CHUNK entries at a time: no Python object per entry,
            # and the text of a chunk, not of a frame (131,072 matmuls' bullets), held at once
            _records(send, ',"advice":[', (frame.iloc[start:start + CHUNK]
                                           for frame in advice_frames(view.ops,
                                                                      view.pause_above_us)
                                           for start in range(0, len(frame), CHUNK)), True)
            # the tuning guides' entries, a kind at a time
            _records(send, '],"guide_advice":[', guide_frames_of(view, chunk=CHUNK), True)
            if made:  # (a caller that kept them, the TUI, keeps them)
                release_guides(view)
        ops = select(view, shown, rows)
        fields = op_fields(JSON_OP_FIELDS, ops, view.counter_names)
        _records(send, ("]" if shown.advice != "none" else "") + ',"ops":[',
                 _op_frames(view, ops, fields))
        send("]}\n")


def _op_frames(view: View, ops: pd.DataFrame, fields: tuple[str, ...]
               ) -> Iterator[pd.DataFrame]:
    """The ops' JSON fields, OPS_BLOCKS * CHUNK rows at a time (6 decimals; total_pct 6
    significant digits)."""
    size = OPS_BLOCKS * CHUNK
    for start in range(0, len(ops), size):
        step("writing json", start, len(ops))
        yield export_frame(view.with_counters(ops.iloc[start:start + size]), fields)


def _records(send: Callable[..., None], lead: str, frames: Iterable[pd.DataFrame],
             wait: bool = False) -> None:
    """`lead`, then each frame's rows as JSON records, one list's items (comma-separated, no
    brackets), sent to put_behind's `send` (the lead with the first frame's: it waits for
    nothing written before); `wait`: each frame's written before the next is made."""
    sent = False
    for frame in frames:
        records = records_later(frame)
        del frame  # (not held while the next frame is made)
        send("," if sent else lead, records, wait=wait)
        sent = True
    if not sent:
        send(lead)


def to_csv(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    ops = select(view, shown, rows)
    fields = op_fields(CSV_FIELDS, ops, view.counter_names)
    write_csv(ops, TEXT_FIELDS, out,
              prepare=lambda part: export_frame(view.with_counters(part), fields))


def _table_cells(ops: pd.DataFrame, fields: tuple[str, ...], raw: bool = False
                 ) -> dict[str, list[str]]:
    """The op table's texts: present.table.cells of the op spec (op codes with their size
    unless `raw`; a corrupt row's missing device time says so)."""
    return cells(ops, _table_spec(fields, raw), severity=False)[0]


def _table_spec(fields: tuple[str, ...], raw: bool = False) -> TableSpec:
    """The op spec's columns `fields` (op codes with their size unless `raw`)."""
    spec = OPS.select(fields)
    return spec.replace("op_code", texts=lambda f: op_label_codes(f, raw=True)) if raw else spec


def summary_lines(view: View, all_signposts: bool = False) -> list[str]:
    """The header: file, arch, window, then the time facts (report.header, as the TUI's
    header states them) and what else the data says."""
    return list(iter_summary_lines(view, all_signposts))


def iter_summary_lines(view: View, all_signposts: bool = False,
                       file: bool = True) -> Iterator[str]:
    """summary_lines, the first as soon as it is made (the table flushes it while the rest of
    the header is worked out: the iterations, the performance model). `file`: with the "File:"
    line (file_line)."""
    shown = Shown(all_signposts=all_signposts, file_line=file)
    return (f.line for f in summary_facts(view, shown))


def head_lines(view: View, shown: Shown) -> list[str]:
    """The header of the table and markdown: the summary and what of the ops is shown."""
    return list(iter_head_lines(view, shown))


def iter_head_lines(view: View, shown: Shown) -> Iterator[str]:
    """head_lines, each as it is made: every section's facts (present.sections)."""
    return (f.line for f in section_facts(view, shown))


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
            and not (ops[f].dtype in (object, "category")  # text (categorical: the model's)
                     and (ops[f].astype(object).fillna("") == "").all())]


def to_markdown(view: View, out: TextIO, shown: Shown = ALL, rows=None) -> None:
    out.write("## ttdash report\n\n")
    write_md_facts(out, section_facts(view, shown))
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
    for block in section_blocks(view):
        out.write(f"\n### {md_cell(block.title)}\n\n{md_cell(block.lead)}\n\n")
        out.writelines(f"- {md_cell(line.strip())}\n" for line in block.items)
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

    spec = _table_spec(tuple(fields), shown.raw_op_codes)

    def chunk_cells(start: int, spec: TableSpec = spec
                    ) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
        return cells(ops.iloc[start:start + CHUNK], spec, severity=color)

    # Each column worded once for the whole table (present.worded: each distinct value's text
    # and each row's position among them), the rows taken from them a chunk at a time (a
    # million rows of text would not fit in bounded memory); a column of too many distinct
    # values (or without codes) measured by worded, its cells made a chunk at a time.
    step("measuring columns", 0, n)
    words = worded(ops, spec, chunk=CHUNK)
    titles = {f: BY_KEY[f].title for f in fields}
    cell_w = {f: w for f, (w, _) in words.items()}
    widths = {f: max(cell_w[f], len(titles[f])) for f in fields}
    if width:
        widths.update({f"_cells:{f}": w for f, w in cell_w.items()})
        fit_columns(fields, widths, width, titles)

    def cell(f: str, text: str) -> str:
        w = widths[f]
        if len(text) > w:
            text = text[:w - 1] + "…"
        return text.ljust(w) if f in LEFT else text.rjust(w)

    head = "  ".join(cell(f, titles[f]) for f in fields).rstrip()
    out.write("\n" + (BOLD + head + RESET if color else head) + "\n")

    def cut(f: str, texts: list[str] | Coded) -> list[str] | Coded:
        return _cut(texts, widths[f]) if cell_w[f] > widths[f] else texts

    # a plain table's columns padded once (their distinct texts), rows joined in Arrow
    ready = {f: padded(cut(f, t), widths[f], f in LEFT) for f, (_, t) in words.items()
             if t is not None and f in fields and not color}
    rest = spec.select([f for f in fields if f not in ready])
    for start in range(0, n, CHUNK):
        step("writing table", start, n)
        if not color:
            stop = start + CHUNK
            more = chunk_cells(start, rest)[0] if rest.columns else {}
            put(out, joined_rows([Coded(ready[f].texts, ready[f].at[start:stop]) if f in ready
                                  else padded(cut(f, more[f]), widths[f], f in LEFT)
                                  for f in fields]))
            continue
        texts, sevs = chunk_cells(start)
        lines = []
        for i in range(start, min(n, start + CHUNK)):
            parts = []
            for f in fields:
                text = cell(f, texts[f][i - start])
                sev = sevs[f][i - start] if f in sevs else None  # every colour rule
                if sev is not None:
                    text = SGR[sev] + text + RESET
                parts.append(text)
            lines.append("  ".join(parts).rstrip())
        out.write("\n".join(lines) + "\n")
    del words, ready  # (~40 MB of a million rows' codes and texts: the advice is made next)
    out.write("\n" + "\n".join(wrap(totals_line(view), width)) + "\n")
    if shown.telemetry:
        out.write("\n".join(wrap(summary_line(shown.telemetry), width)) + "\n")
    grouped = _grouped_advice(view, shown, lambda v: list(advice_text(v, "summary")))
    for block in section_blocks(view):
        for line in block.lines():
            out.write("\n".join(wrap(str(clean_text(line)), width)) + "\n")
    for line in grouped if grouped is not None else advice_text(view, shown.advice):
        out.write("\n".join(wrap(str(clean_text(line)), width)) + "\n")


def _cut(texts: list[str] | Coded, w: int) -> list[str] | Coded:
    """A column's texts cut to `w` characters, "…" ending a cut one."""
    if isinstance(texts, Coded):
        import pyarrow as pa

        return Coded(pa.array(_cut(texts.texts.to_pylist(), w), type=pa.string()), texts.at)
    return [c if len(c) <= w else c[:w - 1] + "…" for c in texts]


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
    """`view` in the format named `fmt`: the writer present.formats registers for (report, fmt),
    or for (summary, fmt) with `shown.summary`; Unregistered when there is none."""
    from ..present.formats import BY_NAME, writer

    write = writer("summary" if shown.summary else "report", fmt).write()
    if BY_NAME[fmt].terminal:
        write(view, out, shown, color=color, width=width)
    else:
        write(view, out, shown)


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
    spec = op_groups(by, BY_KEY[by].title if by in BY_KEY else by)
    texts, _ = cells(groups, spec, severity=False)
    cols = [spec.by_key[k] for k in texts]
    out.write("| " + " | ".join(md_cell(c.title) if c.key == by else c.title for c in cols)
              + " |\n")
    out.write("|" + "|".join("---" if c.left else "---:" for c in cols) + "|\n")
    for row in zip(*texts.values()):
        out.write("| " + " | ".join(md_cell(t) if c.key == by else t
                                    for c, t in zip(cols, row)) + " |\n")


# ------------------------------------------------------------------ the grouped summary
def _summary_cells(groups: pd.DataFrame) -> dict[str, list[str]]:
    return cells(groups, SUMMARY_GROUPS, severity=False)[0]


def summary_groups_of(view: View, shown: Shown) -> tuple[str, pd.DataFrame]:
    """tt-perf-report's summary report (its --summary-file CSV: groups by op, input 0 memory
    or category, with FLOPs % statistics): (what it groups by, the groups)."""
    from ..model.query import summary_groups

    by = shown.summary or "memory"
    groups = summary_groups(view.ops, by, per_device=not view.merged)
    if by == "category":  # no FLOPs statistics across op types
        groups = groups.drop(columns=[c for c in groups.columns if c.startswith("flops_pct")]
                             + ["category"])
    return by, groups


def render_summary(view: View, fmt: str, out: TextIO, shown: Shown) -> None:
    """The grouped summary in `fmt` (present.formats' writer of (summary, fmt))."""
    render(view, fmt, out, shown if shown.summary else Shown(summary="memory"))


def summary_json(view: View, out: TextIO, shown: Shown) -> None:
    """schemas/report-summary.schema.json"""
    by, groups = summary_groups_of(view, shown)
    doc = {"schema_version": SCHEMA_VERSION, **summary_dict(view)}
    doc["group_by"] = by
    frame = groups.astype(object).where(groups.notna(), None)
    if "device" in frame:  # --per-device: a device id (grouped as a float), never null
        frame["device"] = [int(d) for d in groups["device"]]
    doc["groups"] = frame.to_dict("records")
    out.write(json.dumps(json_clean(doc), separators=(",", ":"), allow_nan=False) + "\n")


def summary_csv(view: View, out: TextIO, shown: Shown) -> None:
    write_csv(summary_groups_of(view, shown)[1], ("name", "category"), out)


def summary_markdown(view: View, out: TextIO, shown: Shown) -> None:
    by, groups = summary_groups_of(view, shown)
    cells, fields = _summary_cells(groups), list(groups.columns)
    out.write("## ttdash report: summary\n\n")
    write_md_facts(out, summary_facts(view, Shown(all_signposts=shown.all_signposts)))
    out.write(f"\n{md_cell(summary_title(by, groups))}\n\n| " + " | ".join(
        SUMMARY_GROUPS.by_key[f].title for f in fields) + " |\n")
    out.write("|" + "|".join("---" if SUMMARY_GROUPS.by_key[f].left else "---:" for f in fields)
              + "|\n")
    for i in range(len(groups)):
        out.write("| " + " | ".join(md_cell(cells[f][i]) for f in fields) + " |\n")
    out.write("\n" + md_cell(totals_line(view)) + "\n")


def summary_title(by: str, groups: pd.DataFrame) -> str:
    return f"Summary by {by}: {len(groups):,} groups"


def summary_table(view: View, out: TextIO, shown: Shown, color: bool = False,
                  width: int | None = None) -> None:
    """The summary as aligned text (never coloured: no colour rule applies to its groups)."""
    by, groups = summary_groups_of(view, shown)
    cells, fields = _summary_cells(groups), list(groups.columns)
    head = {f: SUMMARY_GROUPS.by_key[f].title for f in fields}
    widths = {f: max([len(head[f])] + [len(c) for c in cells[f]]) for f in fields}

    def row(texts: dict[str, str]) -> str:
        return "  ".join(texts[f].ljust(widths[f]) if SUMMARY_GROUPS.by_key[f].left
                         else texts[f].rjust(widths[f]) for f in fields).rstrip()

    for line in summary_lines(view, shown.all_signposts):
        out.write(line + "\n")
    out.write(f"\n{summary_title(by, groups)}\n"
              + row(head) + "\n")
    for i in range(len(groups)):
        out.write(row({f: cells[f][i] for f in fields}) + "\n")
    out.write("\n" + totals_line(view) + "\n")
