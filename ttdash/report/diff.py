"""The text outputs of a diff (table, json, markdown, csv). The command is commands/diff.py."""

from __future__ import annotations

import json
import math
from typing import TextIO

import numpy as np
import pandas as pd

from ..format import Coded, fmt_us, is_missing, signed_pct
from ..model.columns import DEFAULT_METRIC, export_frame
from ..model.compare.diff import STATUS_ADDED, STATUS_MATCHED, STATUS_REMOVED, DiffResult
from ..model.compare.gate import MAX_UNCOMPARED_SHARE, Outcome
from ..model.compare.pairs import MATCH_SIGNATURE
from ..model.read.attributes import ATTRIBUTES_MAX_CHARS
from ..present import table as tables
from ..present.formats import write
from ..present.table import TableSpec, cells, diff_groups, diff_side
from ..present.values import signed_us
from ..schemas import SCHEMA_VERSION
from .safe import columns_json, json_clean, json_objects, md_cell, md_table, records_json, write_csv

JSON_OP_FIELDS = ("baseline_id", "candidate_id", "op_code", "status", "baseline_us",
                  "candidate_us", "delta_us", "delta_pct", "baseline_gap_us", "candidate_gap_us",
                  "gap_delta_us", "size", "region", "match", "moved", "within_noise", "noise_pct",
                  "cause")
CSV_FIELDS = ("baseline_id", "candidate_id", "op_code", "size", "status", "match", "moved",
              "baseline_us", "candidate_us", "delta_us", "delta_pct", "baseline_gap_us",
              "candidate_gap_us", "gap_delta_us", "baseline_bound", "candidate_bound", "region",
              "within_noise", "noise_pct", "cause")
CSV_TEXT = ("op_code", "size", "status", "match", "baseline_bound", "candidate_bound", "region",
            "cause")
GROUP_FIELDS = ("baseline_count", "candidate_count", "baseline_us", "candidate_us", "delta_us",
                "delta_pct", "share_pct", "baseline_gap_us", "candidate_gap_us", "cause")
CHUNK = 20_000


# ==================================================================== number formatting

def fmt_speedup(v: object) -> str:
    return "" if is_missing(v) else f"{float(v):.3f}x"  # type: ignore[arg-type]


def _clean(v: object) -> object:
    """JSON-safe scalar: NaN/inf -> None, numpy scalars -> Python, floats rounded to 6 places."""
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item"):
        v = v.item()  # type: ignore[union-attr]
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    return v


# ==================================================================== summary

def summary_lines(result: DiffResult, metric: str, gate: Outcome | None = None
                  ) -> list[tuple[str, str]]:
    """(key, text) lines shared by the table and markdown outputs; the verdict first, then the
    gate's outcome when one is given (the report carries it: it is not repeated on stderr)."""
    lines = [("Verdict", result.verdict(metric))]
    if gate is not None:
        lines.append(("Gate", gate.short))
    problems = result.problems(metric)
    if problems:
        lines.append(("Not comparable", "; ".join(problems)))
    for key, tot in (("Baseline", result.baseline_totals),
                     ("Candidate", result.candidate_totals)):
        lines.append((key, f"{tot.file} ({tot.arch}; {tot.window}; {tot.ops} ops)"))
    b, c_ = result.baseline_totals, result.candidate_totals
    lines.append(("Host pauses", f"op-to-op gaps above {result.baseline.pause_above_us:g} us: "
                  f"{b.pauses} in the baseline ({fmt_us(b.pauses_us)}), {c_.pauses} in the "
                  f"candidate ({fmt_us(c_.pauses_us)}); steady state leaves them out"))
    c = result.counts
    basis = result.basis
    timed = basis.comparable.get(metric, basis.matched) if basis is not None else c["matched"]
    match = result.pairs["match"] if "match" in result.pairs.columns else None
    exact = int((match == MATCH_SIGNATURE).sum()) if match is not None else \
        c["matched"] - c.get("by_attributes", 0) - c["op_code_only"]
    lines.append(("Ops", f"{c['matched']} matched: {exact} exactly, {c.get('by_attributes', 0)} "
                  f"by attributes, {c['op_code_only']} by op code only ({c['moved']} moved)"
                  + (f", {timed} of them compared ({c['matched'] - timed} timed on one side "
                     "only)" if timed < c["matched"] else "")
                  + f"; {c['added']} added, {c['removed']} removed; match rate "
                  f"{result.match_rate:.1%}" + ("; aligned per device" if result.per_device
                                                else "")))
    uncompared = basis.uncompared_text(metric) if basis is not None else None
    if uncompared:
        lines.append(("Uncompared", uncompared + "; the totals and the verdict leave those "
                      "pairs out on both sides"))
    if c.get("changed"):
        lines.append(("Changed", f"{c['changed']} matched ops differ from their pair (the "
                      "Cause column names what; compared: "
                      + ", ".join(_compared_names(result)) + ")"))
    unread = {k: n for k, n in result.compared.attributes_unread.items() if n}
    if unread:
        lines.append(("Attributes", ", ".join(f"{n} op{'s' if n > 1 else ''} in the {side}"
                                              for side, n in unread.items())
                      + f": ATTRIBUTES cell over {ATTRIBUTES_MAX_CHARS >> 20} MiB, too large "
                      "to read; those ops get no attribute cause (the others do)"))
    around = result.context_changes()
    if around:
        lines.append(("Around the run", "; ".join(d.text() for d in around)))
    its = result.noise.get("iterations", {})
    if c.get("noise_known"):
        desc = "; ".join(f"{side} " + ", ".join(f"{name} x{n}" for name, n in d.items())
                         for side, d in its.items() if d)
        lines.append(("Noise", f"{c['within_noise']} of {c['noise_known']} matched ops with a "
                      f"noise estimate changed within the noise ({desc}); they are left out "
                      "of the top lists"))
    tel = result.telemetry
    if any(tel.values()):
        def state(s: dict | None) -> str:
            if not s:
                return "no telemetry recorded"
            return (f"THROTTLED in {s['throttled']} of {s['readings']} readings"
                    if s["throttled"] else f"not throttled ({s['readings']} readings)")
        text = f"baseline {state(tel.get('baseline'))}, candidate {state(tel.get('candidate'))}"
        throttled = [side for side in ("baseline", "candidate")
                     if (tel.get(side) or {}).get("throttled")]
        if throttled:
            text += f": the {' and '.join(throttled)} ran on a throttled device, so part of " \
                "the difference may be the card (temperature, power), not the code"
        lines.append(("Telemetry", text))
    for side, tot in (("baseline", result.baseline_totals), ("candidate", result.candidate_totals)):
        if tot.corrupt_rows:
            lines.append(("Corrupt timing", f"{tot.corrupt_rows} rows in the {side}, left out "
                          "of totals"))
    return lines


def _compared_names(result: DiffResult) -> list[str]:
    """What was compared, in words ("fidelity, cores, tensors, ATTRIBUTES")."""
    keys = result.compared.compared
    names = [k for k in ("fidelity", "cores") if k in keys]
    if any(k.startswith(("in", "out")) for k in keys):
        names.append("tensors (memory, dtype, layout, shape)")
    if "attributes" in keys:
        names.append("ATTRIBUTES")
    if "program_cache" in keys:
        names.append("program cache hit")
    return names or ["nothing"]


def totals_rows(result: DiffResult, metric: str = DEFAULT_METRIC
                ) -> list[tuple[str, str, str, str, str, str]]:
    """(what, baseline, candidate, delta, delta %, speed-up) for steady state, device, dispatch,
    host pauses, wall and ops; the gated metric is marked with a `*`."""
    b, c = result.baseline_totals, result.candidate_totals
    rows = []
    for name, key in (("Steady state (device + dispatch)", "steady"), ("Device time", "device"),
                      ("Dispatch gaps", "dispatch"), ("Host pauses", "pauses"),
                      ("Wall (device + all gaps)", "wall")):
        # less the matched pairs timed on one side only (Uncompared), as the delta %
        bv, cv = (result.basis.whole(key) if result.basis is not None
                  else (b.metric(key), c.metric(key)))
        if key == metric:
            name += " *"
        rows.append((name, fmt_us(bv), fmt_us(cv), signed_us(cv - bv),
                     signed_pct(result.delta_pct.get(key)),
                     fmt_speedup(result.speedup.get(key))))
    rows.append(("Ops", str(b.ops), str(c.ops), f"{c.ops - b.ops:+d}", "", ""))
    return rows


# ==================================================================== json

def _side_json(result: DiffResult, side: str) -> dict:
    tot = result.baseline_totals if side == "baseline" else result.candidate_totals
    view = result.baseline if side == "baseline" else result.candidate
    d = {k: _clean(v) for k, v in tot.as_dict().items()}
    d["devices"] = len(view.trace.devices) or None
    return d


def _records(df: pd.DataFrame, fields: tuple[str, ...], changed: list | None = None) -> str:
    """JSON records of `fields`; with `changed` (one object per change set), a ``changed``
    object per row ({key: {baseline, candidate}}; null when nothing changed)."""
    if not len(df):
        return "[]"
    frame = export_frame(df, tuple(f for f in fields if f in df.columns))
    if changed is not None:
        codes = (df["change"].to_numpy(dtype="int64") if "change" in df.columns
                 else np.full(len(df), -1, dtype="int64"))
        import pyarrow as pa

        texts = Coded(json_objects(changed, 6), pa.array(codes, mask=codes < 0))
        fast = columns_json(frame, 6, raw={"changed": texts})  # (each change set written once)
        if fast is not None:
            return "[" + fast.to_pybytes().decode("utf-8") + "]"  # (as records_json does)
        lookup = np.array(changed + [None], dtype=object)
        frame["changed"] = lookup[codes]
    return records_json(frame, double_precision=6)


def _changed_objects(result: DiffResult) -> list:
    return [{c.key: {k: _clean(v) for k, v in c.as_dict().items()} for c in s}
            for s in result.compared.sets]


def _context_json(result: DiffResult, metric: str) -> dict | None:
    ctx = result.context
    if not ctx:
        return None
    from ..model.compare.context import clock_note

    b, c = ctx.get("baseline"), ctx.get("candidate")
    return {"baseline": b.as_dict() if b else None, "candidate": c.as_dict() if c else None,
            "changed": {d.key: d.as_dict() for d in result.context_changes()},
            "clock_note": clock_note(b, c, result.delta_pct.get("device")) if b and c
            else None}


def to_json(result: DiffResult, out: TextIO, metric: str = DEFAULT_METRIC, top: int = 10,
            gate: Outcome | None = None, limits: dict | None = None) -> None:
    head = {  # schemas/diff.schema.json
        "schema_version": SCHEMA_VERSION,
        "baseline": _side_json(result, "baseline"),
        "candidate": _side_json(result, "candidate"),
        "metric": metric,
        "delta_pct": _clean(result.slower_pct(metric)),  # the mean's change with several runs
        "speedup": _clean(result.speedup.get(metric)),
        "delta_pct_by_metric": {k: _clean(v) for k, v in result.delta_pct.items()},
        "speedup_by_metric": {k: _clean(v) for k, v in result.speedup.items()},
        "verdict": result.verdict(metric),
        "problems": result.problems(metric),
        "gate_pct": _clean(result.gate_pct(metric)),  # what --fail-above holds to its limit
        "common": {"ops": result.basis.comparable.get(metric, result.basis.matched),
                   "baseline_us": _clean(result.basis.common[metric][0]),
                   "candidate_us": _clean(result.basis.common[metric][1]),
                   "delta_pct": _clean(result.basis.common_pct(metric))},
        "only": {side: {"ops": n, "device_us": _clean(us)}
                 for side, (n, us) in result.basis.only.items()},
        "missing_tail": result.basis.tail,
        "uncompared": {"ops": result.basis.uncompared_ops(metric),
                       "comparable_ops": result.basis.comparable.get(metric,
                                                                     result.basis.matched),
                       "baseline_us": _clean(result.basis.out[metric][0]),
                       "candidate_us": _clean(result.basis.out[metric][1]),
                       "share_pct": _clean(result.basis.uncompared_share(metric) * 100),
                       "limit_pct": MAX_UNCOMPARED_SHARE * 100},
        "runs": {side: [{k: _clean(v) for k, v in t.items()} for t in runs]
                 for side, runs in result.runs.items()},
        "spread": spread.as_dict() if (spread := result.spread(metric)) else None,
        "iteration_spread": ({"unit": it[0], **it[1].as_dict()}
                             if (it := result.iteration_spread(metric)) else None),
        "pause_above_us": result.baseline.pause_above_us,
        "counts": result.counts,
        "match_rate": _clean(result.match_rate),
        "per_device": result.per_device,
        "noise": result.noise,
        "telemetry": result.telemetry or None,
        "context": _context_json(result, metric),
        "compared": result.compared.compared,
        "attributes_too_large": result.compared.attributes_unread,
        "median_pct": _clean(result.median_pct(metric)),
        "gate": ({**(limits or {}), **gate.as_dict()} if gate is not None else None),
    }
    fields = JSON_OP_FIELDS + (("device",) if result.per_device else ())
    text = json.dumps(json_clean(head), separators=(",", ":"), allow_nan=False,
                      ensure_ascii=False)
    out.write(text[:-1] + ',"ops":[')
    pairs = result.pairs
    changed = _changed_objects(result)
    for start in range(0, len(pairs), CHUNK):  # bounded memory for 100k+ ops
        chunk = _records(pairs.iloc[start:start + CHUNK], fields, changed)
        out.write(("," if start else "") + chunk[1:-1])
    out.write('],"by_op_code":' + _records(result.by_op_code, ("op_code",) + GROUP_FIELDS))
    out.write(',"by_region":' + _records(result.by_region, ("region",) + GROUP_FIELDS[:-1]))
    top_fields = ("baseline_id", "candidate_id", "op_code", "baseline_us", "candidate_us",
                  "delta_us", "delta_pct", "region", "match", "cause")
    out.write(',"top_regressions":' + _records(result.regressions(top), top_fields, changed))
    out.write(',"top_improvements":' + _records(result.improvements(top), top_fields, changed))
    out.write("}\n")


# ==================================================================== csv

def to_csv(result: DiffResult, out: TextIO) -> None:
    fields = CSV_FIELDS + (("device",) if result.per_device else ())
    write_csv(result.pairs, CSV_TEXT, out, chunk=CHUNK,
              prepare=lambda part: export_frame(part, fields))


# ==================================================================== shared top lists

def _rows(df: pd.DataFrame, spec: TableSpec) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of a list (present.table.cells of its spec)."""
    texts, _ = cells(df, spec, severity=False)
    return [spec.by_key[k].title for k in texts], [list(r) for r in zip(*texts.values())]


def _op_rows(df: pd.DataFrame, kind: str) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of a top list ("change", "added" or "removed")."""
    if kind == "change":
        return _rows(df, tables.DIFF_PAIRS)  # read when used: the spec is the one place
    return _rows(df, diff_side("candidate" if kind == "added" else "baseline"))


def _group_rows(df: pd.DataFrame, key: str, top: int) -> tuple[list[str], list[list[str]]]:
    g = df.reindex(df["delta_us"].abs().sort_values(ascending=False, kind="stable").index)
    return _rows(g.head(top), diff_groups(key))


def _sections(result: DiffResult, top: int) -> list[tuple[str, str, tuple[list[str],
                                                                           list[list[str]]]]]:
    """(title, kind, (header, rows)) of every list after the totals."""
    c = result.counts
    out = [
        (f"Top {top} regressions (matched ops, slower)", "change",
         _op_rows(result.regressions(top), "change")),
        (f"Top {top} improvements (matched ops, faster)", "change",
         _op_rows(result.improvements(top), "change")),
    ]
    if c["added"]:
        out.append((f"Added ops ({c['added']}; top {top} by device time)", "added",
                    _op_rows(result.added(top), "added")))
    if c["removed"]:
        out.append((f"Removed ops ({c['removed']}; top {top} by device time)", "removed",
                    _op_rows(result.removed(top), "removed")))
    n_codes = len(result.by_op_code)
    out.append((f"By op code ({min(top, n_codes)} of {n_codes}, largest change first)", "group",
                _group_rows(result.by_op_code, "op_code", top)))
    if len(result.by_region):
        n_reg = len(result.by_region)
        out.append((f"By signpost region ({min(top, n_reg)} of {n_reg}, largest change first)",
                    "group", _group_rows(result.by_region, "region", top)))
    return out


# ==================================================================== markdown

TEXT_HEADS = ("Op", "Matched on", "Cause", "Region")


def _left(kind: str, head: list[str]) -> set[int]:
    """The text (left-aligned, untrusted) columns of a list."""
    out = {i for i, h in enumerate(head) if h in TEXT_HEADS}
    return out | ({0} if kind == "group" else set())


def to_markdown(result: DiffResult, out: TextIO, top: int = 10,
                metric: str = DEFAULT_METRIC, gate: Outcome | None = None) -> None:
    out.write("## ttdash diff\n\n")
    for key, text in summary_lines(result, metric, gate):
        out.write(f"- **{md_cell(key)}**: {md_cell(text)}\n")
    out.write("\n")
    out.write(md_table(["", "Baseline", "Candidate", "Delta", "Delta %", "Speed-up"],
                        [list(r) for r in totals_rows(result, metric)], left=(0,)))
    for title, kind, (head, rows) in _sections(result, top):
        out.write(f"\n### {md_cell(title)}\n\n")
        if not rows:
            out.write("None.\n")
            continue
        out.write(md_table(head, rows, left=tuple(sorted(_left(kind, head)))))


# ==================================================================== rich table

def to_table(result: DiffResult, out: TextIO, top: int = 10, metric: str = DEFAULT_METRIC,
             color: bool = False, width: int | None = None, gate: Outcome | None = None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            # Rich exits 1 on a closed pipe; for `diff` 1 means "regression". Let the CLI's
            # handler see the broken pipe (exit 0, quietly), as for every other output.
            raise BrokenPipeError

    console = PipeConsole(file=out, force_terminal=color, no_color=not color, width=width or 200,
                      highlight=False, emoji=False, markup=False, soft_wrap=False)

    def delta_style(s: str) -> str:
        return "red" if s.startswith("+") else ("green" if s.startswith("-") else "")

    for key, text in summary_lines(result, metric, gate):
        style = ""
        if key == "Gate":
            style = "" if text.startswith("pass") else "bold red"
        if key == "Verdict":
            style = "bold red" if "slower" in text else ("bold green" if "faster" in text
                                                         else "")
        console.print(Text(f"{key}: {text}", style=style))

    def table(title: str, head: list[str], rows: list[list[str]], left: set[int],
              signed: set[int]) -> None:
        t = Table(title=Text(title, style="bold"), title_justify="left", show_edge=False,
                  pad_edge=False, header_style="bold", box=None)
        for i, h in enumerate(head):
            t.add_column(Text(h), justify="left" if i in left else "right", no_wrap=True,
                         overflow="ellipsis", max_width=60 if i in left else None)
        for r in rows:  # (a long left cell cut here, as Rich's own cut differs by release)
            t.add_row(*[Text(x if i not in left or len(x) <= 60 else x[:59] + "…",
                             style=delta_style(x) if i in signed else "")  # never markup
                        for i, x in enumerate(r)])
        console.print()
        console.print(t)

    table("Totals", ["", "Baseline", "Candidate", "Delta", "Delta %", "Speed-up"],
          [list(r) for r in totals_rows(result, metric)], left={0}, signed={3, 4})
    for title, kind, (head, rows) in _sections(result, top):
        if not rows:
            console.print()
            console.print(Text(f"{title}: none", style="bold"))
            continue
        left = _left(kind, head)
        signed = {4, 5} if kind == "group" else ({6, 7} if kind == "change" else set())
        table(title, head, rows, left, signed)


# ==================================================================== entry points

def render_diff(result: DiffResult, fmt: str, out: TextIO, top: int = 10,
                metric: str = DEFAULT_METRIC, color: bool = False, gate: Outcome | None = None,
                limits: dict | None = None) -> None:
    """The diff in `fmt` (present.formats' writer of (diff, fmt); Unregistered when there is
    none). `gate`: the gate's outcome, carried by the report (json: a ``gate`` object with the
    `limits`; table and markdown: a Gate line after the verdict)."""
    write("diff", fmt, result, out, top=top, metric=metric, color=color, gate=gate,
          limits=limits)


# The registered writers (present.formats): each takes the same arguments, uses its own.
def json_writer(result: DiffResult, out: TextIO, top: int = 10, metric: str = DEFAULT_METRIC,
                color: bool = False, gate: Outcome | None = None,
                limits: dict | None = None) -> None:
    to_json(result, out, metric=metric, top=top, gate=gate, limits=limits)


def csv_writer(result: DiffResult, out: TextIO, top: int = 10, metric: str = DEFAULT_METRIC,
               color: bool = False, gate: Outcome | None = None,
               limits: dict | None = None) -> None:
    to_csv(result, out)


def markdown_writer(result: DiffResult, out: TextIO, top: int = 10,
                    metric: str = DEFAULT_METRIC, color: bool = False,
                    gate: Outcome | None = None, limits: dict | None = None) -> None:
    to_markdown(result, out, top=top, metric=metric, gate=gate)


def table_writer(result: DiffResult, out: TextIO, top: int = 10, metric: str = DEFAULT_METRIC,
                 color: bool = False, gate: Outcome | None = None,
                 limits: dict | None = None) -> None:
    to_table(result, out, top=top, metric=metric, color=color, gate=gate)


__all__ = ["render_diff", "to_json", "to_csv", "to_markdown", "to_table",
           "STATUS_ADDED", "STATUS_MATCHED", "STATUS_REMOVED"]
