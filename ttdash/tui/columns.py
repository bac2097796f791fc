"""Optional op-table columns: the slowest RISC and the trace's per-RISC times and utilisation
counters (as the file names them), then the performance model's efficiency and recoverable time
and the core skew (optable.PICKABLE_COLUMNS), picked on a small screen; chosen ones join the
table after the device time and sort like the others (`risc:` filters on the slowest RISC)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static

from ..model.columns import BY_KEY
from ..model.read.counters import RISC_COLUMN, RISC_NAMES, RISC_ROLES
from ..model.read.text import clean_text
from ..present.screen import counter_column, on_screen
from ..present.table import OPS
from .optable import PICKABLE_COLUMNS, Col

TITLE_WIDTH = 12


def counter_title(name: str) -> str:
    """A short title: "DEVICE BRISC KERNEL DURATION [ns]" -> "BRISC", "PM FPU UTIL (%)" ->
    "PM FPU%", "Avg SFPU util on full grid (%)" -> "Avg SFPU on…" (a "(ratio)" loses its unit)."""
    for risc in RISC_ROLES:
        if name == RISC_COLUMN.format(risc):
            return risc
    pct = "(%)" in name
    short = re.sub(r"\s*\((%|ratio)\)|\butil\b", " ", name, flags=re.IGNORECASE)
    short = " ".join(short.split()) + ("%" if pct else "")
    return short if len(short) <= TITLE_WIDTH else short[:TITLE_WIDTH - 1] + "…"


def optional_columns(counters: list[str], ops: pd.DataFrame | None = None) -> list[Col]:
    """The columns a view with these counter columns (View.counter_names) can add to the table,
    the slowest RISC first; then the model's columns and the core skew that have a value in
    `ops` (an op with a performance model, per-core times)."""
    out = [on_screen(OPS.by_key["slowest_risc"])] if any(n in RISC_NAMES for n in counters) \
        else []
    for name in counters:
        kind = "ns" if name in RISC_NAMES else "pct" if "(%)" in name else "num"
        title = counter_title(name)
        out.append(counter_column(name, title, max(len(title), 7), kind))
    if ops is not None:
        out += [c for c in PICKABLE_COLUMNS if c.key in ops and ops[c.key].notna().any()]
    return out


def pick_columns(screen: Any, options: list[Col]) -> None:
    """`a` on a table view (tableview.TableViewMixin): the picker over `options`; the checked
    ones become the table's extra columns."""
    if not options:
        screen.notify("This trace has no per-RISC times or counter columns, and no op with a "
                      "performance model", markup=False)
        return

    def done(keys: list[str] | None) -> None:
        if keys is not None:
            screen.table.extra_columns = tuple(c for c in options if c.key in keys)
            screen.refresh_table()

    chosen = [c.key for c in screen.table.extra_columns]
    screen.app.push_screen(ColumnsScreen(options, chosen), done)


class ColumnsScreen(ModalScreen[list[str]]):
    """The optional columns, each with a `[x]` / `[ ]` mark (readable without colour);
    space or enter flips the highlighted one; closing returns the checked keys in order."""

    BINDINGS = [Binding("escape,q,a", "done", "Done", id="ttdash.columns_done"),
                Binding("space", "flip", "Show / hide", show=False, id="ttdash.columns_flip")]
    DEFAULT_CSS = """
    ColumnsScreen { align: center middle; }
    ColumnsScreen > Vertical { width: 64; max-width: 100%; height: auto; max-height: 90%;
                               background: $panel; border: tall $primary; padding: 0 1; }
    ColumnsScreen OptionList { height: auto; max-height: 20; }
    ColumnsScreen .hint { color: $text-muted; }
    """

    def __init__(self, columns: list[Col], chosen: list[str]) -> None:
        super().__init__()
        self.columns = columns
        self.chosen = {c.key for c in columns if c.key in chosen}

    def _prompt(self, col: Col) -> Text:  # header names are the file's: never markup
        mark = "[x]" if col.key in self.chosen else "[ ]"
        spec = BY_KEY.get(col.key)  # ttdash's own columns by their long title
        name = spec.title if spec is not None else col.key
        return Text(f"{mark} {col.title:<{TITLE_WIDTH}}  {clean_text(name)}")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Table columns: per-RISC times, counters, model efficiency, core skew",
                         markup=False)
            yield OptionList(*[self._prompt(c) for c in self.columns])
            yield Static("space/enter: show or hide · esc: done", classes="hint", markup=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._flip(event.option_index)

    def action_flip(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is not None:
            self._flip(index)

    def _flip(self, index: int) -> None:
        col = self.columns[index]
        self.chosen ^= {col.key}
        self.query_one(OptionList).replace_option_prompt_at_index(index, self._prompt(col))

    def action_done(self) -> None:
        self.dismiss([c.key for c in self.columns if c.key in self.chosen])
