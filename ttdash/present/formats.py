"""The one registry of output formats, keyed by subject: (subject, format) -> writer.

A format (`OutputFormat`: its name, what it is, its file suffixes, whether it streams) is written
for a subject (`report`, `summary`, `diff`, `runs`, `trend`, `check`, `sql`, `doctor`, `watch`)
by one registered writer (`Writer`). The CLI's `--format` choices and help, the TUI's export by
file suffix and every command's dispatch are read from here: a new format for a subject is one
`Writer` entry (and its function); asking for a pair nobody registered raises `Unregistered`
(a usage error: one line, exit 2), never a silent fallback to another format.

Writers are named ("module:function"), imported when used: the CLI reads the registry without
loading pandas."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The subjects and the command whose output each is.
SUBJECTS: dict[str, str] = {
    "report": "report", "summary": "report --summary", "diff": "diff",
    "runs": "history list", "trend": "history trend", "check": "history check",
    "sql": "history sql", "doctor": "doctor", "watch": "watch --once",
}


@dataclass(frozen=True)
class OutputFormat:
    name: str
    what: str  # one line for --help and docs/formats.md
    suffixes: tuple[str, ...] = ()  # file suffixes an export by name picks it for
    streams: bool = True  # written row by row (bounded memory on 1M ops)
    terminal: bool = False  # may be coloured and fitted to a terminal's width


@dataclass(frozen=True)
class Writer:
    """`format` of `subject`, written by `writer` ("module:function"; "" when the command
    itself shows it, as `diff --format tui`). `warnings`: the output states the data's
    warnings in its own text (else the command writes them to stderr); `file_first`: the
    output starts with the "File:" line, which the command may write before the analysis."""
    subject: str
    format: str
    writer: str = ""
    warnings: bool = True
    file_first: bool = False

    def write(self) -> Callable[..., Any]:
        module, _, func = self.writer.partition(":")
        return getattr(importlib.import_module(module), func)


class Unregistered(ValueError):
    """A (subject, format) pair no writer is registered for."""


FORMATS: tuple[OutputFormat, ...] = (
    OutputFormat("table", "aligned text; coloured on a terminal, plain when piped or NO_COLOR",
                 (".txt",), terminal=True),
    OutputFormat("csv", "one header line, one row per op; formula cells neutralised", (".csv",)),
    OutputFormat("json", "one JSON object; floats 6 decimals, shares 6 significant digits",
                 (".json",)),
    OutputFormat("markdown", "GitHub tables, cells escaped", (".md", ".markdown")),
    OutputFormat("perfetto", "Chrome trace-event JSON for ui.perfetto.dev / chrome://tracing, "
                 "a track per device, an event per op", (".perfetto.json",), streams=False),
    OutputFormat("tui", "the interactive view", streams=False),
)
BY_NAME: dict[str, OutputFormat] = {f.name: f for f in FORMATS}

_S, _D, _H = "ttdash.report.single", "ttdash.report.diff", "ttdash.report.history"
WRITERS: tuple[Writer, ...] = (
    # one view: (view, out, shown) and, for a terminal format, color= and width=
    Writer("report", "table", f"{_S}:to_table", file_first=True),
    Writer("report", "csv", f"{_S}:to_csv", warnings=False),
    Writer("report", "json", f"{_S}:to_json"),
    Writer("report", "markdown", f"{_S}:to_markdown"),
    Writer("report", "perfetto", "ttdash.report.perfetto:to_perfetto", warnings=False),
    # the grouped summary: (view, out, shown)
    Writer("summary", "table", f"{_S}:summary_table"),
    Writer("summary", "csv", f"{_S}:summary_csv", warnings=False),
    Writer("summary", "json", f"{_S}:summary_json"),
    Writer("summary", "markdown", f"{_S}:summary_markdown"),
    # a diff: (result, out, top=, metric=, color=, gate=, limits=)
    Writer("diff", "table", f"{_D}:table_writer"),
    Writer("diff", "csv", f"{_D}:csv_writer"),
    Writer("diff", "json", f"{_D}:json_writer"),
    Writer("diff", "markdown", f"{_D}:markdown_writer"),
    Writer("diff", "tui"),  # commands/diff.py opens the screen
    # the history: runs (rows, out, title, extra); trend the same and, by a label, label= and
    # used=; check (check, out); sql (columns, rows, out)
    Writer("runs", "table", f"{_H}:runs_table"),
    Writer("runs", "csv", f"{_H}:runs_csv"),
    Writer("runs", "json", f"{_H}:runs_json"),
    Writer("runs", "markdown", f"{_H}:runs_markdown"),
    Writer("trend", "table", f"{_H}:trend_table"),
    Writer("trend", "csv", f"{_H}:trend_csv"),
    Writer("trend", "json", f"{_H}:trend_json"),
    Writer("trend", "markdown", f"{_H}:trend_markdown"),
    Writer("check", "table", f"{_H}:check_table"),
    Writer("check", "csv", f"{_H}:check_csv"),
    Writer("check", "json", f"{_H}:check_json"),
    Writer("check", "markdown", f"{_H}:check_markdown"),
    Writer("sql", "table", f"{_H}:sql_table"),
    Writer("sql", "csv", f"{_H}:sql_csv"),
    Writer("sql", "json", f"{_H}:sql_json"),
    Writer("sql", "markdown", f"{_H}:sql_markdown"),
    # doctor: (checks, out, width); watch --once: (state, out, root)
    Writer("doctor", "table", "ttdash.commands.doctor:checks_table"),
    Writer("doctor", "json", "ttdash.commands.doctor:checks_json"),
    Writer("doctor", "markdown", "ttdash.commands.doctor:checks_markdown"),
    Writer("watch", "table", "ttdash.commands.watch:state_table"),
    Writer("watch", "json", "ttdash.commands.watch:state_json"),
)
_BY_PAIR: dict[tuple[str, str], Writer] = {(w.subject, w.format): w for w in WRITERS}
#: The history's actions share one `--format` option: what every one of them offers.
GROUPS: dict[str, tuple[str, ...]] = {"history": ("runs", "trend", "check", "sql")}


def writer(subject: str, fmt: str) -> Writer:
    """The writer of `fmt` for `subject`; Unregistered (one line) when there is none."""
    if subject not in SUBJECTS:
        raise Unregistered(f"no such subject: {subject}")
    found = _BY_PAIR.get((subject, fmt))
    if found is None:
        offered = ", ".join(choices(subject)) or "none"
        raise Unregistered(f"`{SUBJECTS[subject]}` has no --format {fmt} (it writes: "
                           f"{offered})")
    return found


def register(entry: Writer, fmt: OutputFormat | None = None) -> None:
    """Add a writer (and its format, when it is a new one) at run time: a plug-in's, a test's.
    The CLI reads the registry when it builds its parser."""
    global FORMATS, WRITERS
    if fmt is not None and fmt.name not in BY_NAME:
        FORMATS = (*FORMATS, fmt)
        BY_NAME[fmt.name] = fmt
    if entry.format not in BY_NAME or entry.subject not in SUBJECTS:
        raise Unregistered(f"no format {entry.format} or no subject {entry.subject}")
    WRITERS = (*WRITERS, entry)
    _BY_PAIR[(entry.subject, entry.format)] = entry


def write(subject: str, fmt: str, *args: Any, **kwargs: Any) -> None:
    """Write `fmt` of `subject`: its registered writer called with `args` and `kwargs` (the
    subject's writers all take the same ones: see WRITERS)."""
    writer(subject, fmt).write()(*args, **kwargs)


def choices(subject: str) -> tuple[str, ...]:
    """The `--format` choices of a subject (or a group of them: GROUPS, those all offer), in
    the registry's order of formats."""
    subjects = GROUPS.get(subject, (subject,))
    return tuple(f.name for f in FORMATS
                 if all((s, f.name) in _BY_PAIR for s in subjects))


def choices_help(subject: str) -> str:
    """The formats of a subject with what each is, for --help."""
    return "; ".join(f"{name}: {BY_NAME[name].what}" for name in choices(subject))


def for_path(path: str | Path, offered: tuple[str, ...] | None = None) -> OutputFormat | None:
    """The format a file name asks for by its suffix (the longest suffix that matches:
    x.perfetto.json is perfetto), among `offered` (default: every format `report` writes)."""
    name = str(path).lower()
    allowed = choices("report") if offered is None else offered
    best: OutputFormat | None = None
    for f in FORMATS:
        if f.name not in allowed:
            continue
        for s in f.suffixes:
            if name.endswith(s) and (best is None or len(s) > max(map(len, best.suffixes))):
                best = f
    return best


def pairs() -> tuple[tuple[str, str], ...]:
    """Every registered (subject, format) pair."""
    return tuple(_BY_PAIR)
