"""The one registry of output formats: name -> writer, file suffixes, whether it streams, what it
is, and which commands offer it. The CLI's `--format` choices and help, the TUI's export by file
suffix and `report`'s dispatch are read from here; a new format is one entry (and its writer).

Writers are named ("module:function"), imported when used: the CLI reads the registry without
loading pandas."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class OutputFormat:
    name: str
    what: str  # one line for --help and docs/formats.md
    commands: tuple[str, ...]  # the commands whose --format offers it
    suffixes: tuple[str, ...] = ()  # file suffixes an export by name picks it for
    streams: bool = True  # written row by row (bounded memory on 1M ops)
    writer: str = ""  # `report`'s writer of one view: "module:function(view, out, shown)"
    terminal: bool = False  # the writer also takes color= and width= (a terminal's)

    def write(self) -> Callable[..., Any]:
        module, _, func = self.writer.partition(":")
        return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


FORMATS: tuple[OutputFormat, ...] = (
    OutputFormat("table", "aligned text; coloured on a terminal, plain when piped or NO_COLOR",
                 ("report", "diff", "doctor", "history", "watch"), (".txt",),
                 writer="ttdash.report.single:to_table", terminal=True),
    OutputFormat("csv", "one header line, one row per op; formula cells neutralised",
                 ("report", "diff", "history"), (".csv",),
                 writer="ttdash.report.single:to_csv"),
    OutputFormat("json", "one JSON object; floats 6 decimals, shares 6 significant digits",
                 ("report", "diff", "doctor", "history", "watch"), (".json",),
                 writer="ttdash.report.single:to_json"),
    OutputFormat("markdown", "GitHub tables, cells escaped",
                 ("report", "diff", "doctor", "history"), (".md", ".markdown"),
                 writer="ttdash.report.single:to_markdown"),
    OutputFormat("perfetto", "Chrome trace-event JSON for ui.perfetto.dev / chrome://tracing, "
                 "a track per device, an event per op", ("report",), (".perfetto.json",),
                 streams=False, writer="ttdash.report.perfetto:to_perfetto"),
    OutputFormat("tui", "the interactive view", ("diff",), streams=False),
)
BY_NAME: dict[str, OutputFormat] = {f.name: f for f in FORMATS}


def choices(command: str) -> tuple[str, ...]:
    """The `--format` choices of a command, in the registry's order."""
    return tuple(f.name for f in FORMATS if command in f.commands)


def choices_help(command: str) -> str:
    """The formats of a command with what each is, for --help."""
    return "; ".join(f"{f.name}: {f.what}" for f in FORMATS if command in f.commands)


def for_path(path: str | Path, offered: tuple[str, ...] | None = None) -> OutputFormat | None:
    """The format a file name asks for by its suffix (the longest suffix that matches:
    x.perfetto.json is perfetto), among `offered` (default: every format with a writer)."""
    name = str(path).lower()
    best: OutputFormat | None = None
    for f in FORMATS:
        if (offered is None and not f.writer) or (offered is not None and f.name not in offered):
            continue
        for s in f.suffixes:
            if name.endswith(s) and (best is None or len(s) > max(map(len, best.suffixes))):
                best = f
    return best
