"""`report`'s view of the format registry (ttdash.present.formats): each format with the writer
of one view, for the TUI's export by file suffix (tui/export.py). The registry itself, keyed by
(subject, format), is ttdash.present.formats; everything else here is re-exported from it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..present import formats as _registry
from ..present.formats import (  # noqa: F401  (the names callers import from here)
    SUBJECTS,
    Unregistered,
    Writer,
    choices,
    choices_help,
    pairs,
    write,
    writer,
)


@dataclass(frozen=True)
class OutputFormat(_registry.OutputFormat):
    """A format with `report`'s writer of one view ("" when `report` does not write it)."""
    writer: str = ""

    def write(self) -> Callable[..., Any]:
        module, _, func = self.writer.partition(":")
        return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def _report_writer(name: str) -> str:
    return writer("report", name).writer if name in choices("report") else ""


FORMATS: tuple[OutputFormat, ...] = tuple(
    OutputFormat(**asdict(f), writer=_report_writer(f.name)) for f in _registry.FORMATS)
BY_NAME: dict[str, OutputFormat] = {f.name: f for f in FORMATS}


def for_path(path: str | Path, offered: tuple[str, ...] | None = None) -> OutputFormat | None:
    """present.formats.for_path, as `report`'s format (with its writer)."""
    found = _registry.for_path(path, offered)
    return None if found is None else BY_NAME[found.name]
