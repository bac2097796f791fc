"""Untrusted text (op names, attributes, paths) as Rich renderables: never parsed as markup."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..format import is_missing
from ..model.read.text import clean_text


def plain(value: object) -> Text:
    """Untrusted text as a Text: never parsed as markup; control characters removed."""
    return Text("" if is_missing(value) else str(clean_text(str(value))))


def bullet_list(items: list[str], bullet: str = "•") -> Table:
    """One bullet per item; an item's wrapped lines stay indented under its own bullet."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for item in items:
        grid.add_row(bullet, plain(item))
    return grid
