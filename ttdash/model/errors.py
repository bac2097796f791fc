"""The one error type the model raises for anything a user can cause."""

from __future__ import annotations

from pathlib import Path

from .read.text import clean_text


class TraceError(Exception):
    """Bad input: printed as one line ``file:line:col: message`` by the CLI (exit 2)."""

    def __init__(self, path: str | Path | None, message: str, line: int | None = None,
                 column: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.message = message
        self.line = line
        self.column = column
        super().__init__(self.oneline())

    def oneline(self) -> str:
        where = [p for p in (self.path, self.line, self.column) if p is not None]
        prefix = ":".join(str(p) for p in where)
        text = f"{prefix}: {self.message}" if prefix else self.message
        # One line of inert text, whatever the message or the path carried (escapes, bidi).
        return " ".join(str(clean_text(text)).split())
