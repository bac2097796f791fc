"""The sort picker (`S`): the table's sortable columns, each with a one-letter hotkey, so any sort
is two keystrokes (`S d`: device time, largest first; `S D`: the other way).

The list is the table's own columns (the ones with data, those on screen first); names come from
the column spec (model.columns: the long title) or, for a table's own column (the diff's), its
table title. Nothing here repeats a title."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..model.columns import BY_KEY
from ..model.query import ASCENDING_KEYS
from ..model.read.text import clean_text
from .optable import Col

#: Mnemonic letters where the title's own letters collide or read badly (DRAM% -> m, FLOP% ->
#: f, op code -> n for name); any other column takes the first free letter of its titles.
#: Keyed by column key: a renamed title keeps its letter.
PREFERRED = {"device_time_us": "d", "op_to_op_us": "g", "total_pct": "t", "cores": "c",
             "dram_pct": "m", "flops_pct": "f", "id": "i", "op_code": "n", "bound": "b",
             "delta_us": "d", "delta_pct": "p", "baseline_us": "a", "candidate_us": "b",
             "pm_eff_pct": "e", "recoverable_us": "r"}
#: The menu's own letters: `o` file order, `q` close, `j` / `k` move.
ORIGINAL_KEY = "o"
RESERVED = frozenset({ORIGINAL_KEY, "q", "j", "k"})
#: The sort for the diff's bar column is its number's.
SORT_KEY_OF = {"delta_bar": "delta_pct"}


def sort_key_of(key: str) -> str:
    return SORT_KEY_OF.get(key, key)


def column_name(col: Col) -> str:
    """What a column is called in words: the spec's long title ("Total % (wall)"), else the
    table's title, else its key; capitalised words lowered ("device time", "ID" kept)."""
    spec = BY_KEY.get(col.key)
    title = (spec.title if spec is not None else col.title) or col.key
    words = [w.lower() if len(w) > 1 and w[0].isupper() and w[1:].islower() else w
             for w in title.split(" ")]
    return str(clean_text(" ".join(words)))  # counter titles are the file's text


def natural_desc(key: str | None) -> bool:
    """Numbers sort largest first, text and ids A→Z (model.query.ASCENDING_KEYS)."""
    return key is not None and key not in ASCENDING_KEYS


@dataclass(frozen=True)
class SortEntry:
    key: str | None  # None: file order
    name: str
    hotkey: str  # "" when every letter of its titles is taken
    on_screen: bool = True


@dataclass(frozen=True)
class SortChoice:
    key: str | None
    descending: bool


def sort_entries(shown: Iterable[Col], others: Iterable[Col] = ()) -> list[SortEntry]:
    """File order, then the columns `shown` (on screen), then `others` (with data, dropped at
    this width), each sort key once, with hotkeys: preferred letters first, then the first free
    letter of the short title, then of the long name."""
    cols: list[tuple[Col, bool]] = []
    seen: set[str] = set()
    for group, on_screen in ((shown, True), (others, False)):
        for c in group:
            key = sort_key_of(c.key)
            if key not in seen:
                seen.add(key)
                cols.append((c, on_screen))
    taken = set(RESERVED)
    letters: dict[str, str] = {}
    for c, _ in cols:
        want = PREFERRED.get(sort_key_of(c.key))
        if want and want not in taken:
            letters[c.key] = want
            taken.add(want)
    for c, _ in cols:
        if c.key in letters:
            continue
        for ch in (c.title + " " + column_name(c)).lower():
            if "a" <= ch <= "z" and ch not in taken:
                letters[c.key] = ch
                taken.add(ch)
                break
    out = [SortEntry(None, "file order", ORIGINAL_KEY)]
    out += [SortEntry(sort_key_of(c.key), column_name(c), letters.get(c.key, ""), on_screen)
            for c, on_screen in cols]
    return out


class SortMenu(ModalScreen[SortChoice | None]):
    """Pick the table's sort: a column's letter sorts by it (numbers largest first, text A→Z),
    the capital letter the other way; enter on a line does the same as its letter."""

    BINDINGS = [Binding("escape,q", "dismiss(None)", "Close", id="ttdash.sort_menu_close"),
                Binding("j", "move(1)", "Down", show=False, id="ttdash.sort_menu_down"),
                Binding("k", "move(-1)", "Up", show=False, id="ttdash.sort_menu_up")]
    DEFAULT_CSS = """
    SortMenu { align: center middle; }
    SortMenu > Vertical { width: 48; max-width: 100%; height: auto; max-height: 100%;
                          background: $panel; border: tall $primary; padding: 0 1; }
    SortMenu OptionList, SortMenu OptionList:focus { height: auto; max-height: 18;
                                                     border: none; padding: 0; }
    SortMenu .hint { color: $text-muted; }
    """

    def __init__(self, entries: list[SortEntry], current: str | None, descending: bool) -> None:
        super().__init__()
        self.entries = entries
        self.current, self.descending = current, descending
        self.by_letter = {e.hotkey: e for e in entries if e.hotkey}

    def _prompt(self, e: SortEntry) -> Text:
        arrow = "" if e.key is None else (" ↓" if natural_desc(e.key) else " ↑")
        line = Text.assemble((f"{e.hotkey or ' '}  ", "bold"), e.name + arrow)
        if not e.on_screen:
            line.append("  (not on screen)", style="dim")
        if e.key == self.current:
            line.append("  ● now" + ("" if e.key is None else
                                      " ↓" if self.descending else " ↑"), style="bold")
        return line

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Sort by", markup=False)
            yield OptionList(*[Option(self._prompt(e), id=str(i))
                               for i, e in enumerate(self.entries)])
            yield Static("letter: sort (↓ largest first, ↑ A→Z) · capital: the other way · "
                         "esc: cancel", classes="hint", markup=False)

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        now = next((i for i, e in enumerate(self.entries) if e.key == self.current), 0)
        ol.highlighted = now
        ol.focus()

    def choose(self, e: SortEntry, reverse: bool = False) -> None:
        desc = natural_desc(e.key)
        self.dismiss(SortChoice(e.key, desc != reverse if e.key is not None else False))

    def on_key(self, event: events.Key) -> None:
        ch = event.character or ""
        e = self.by_letter.get(ch.lower()) if len(ch) == 1 and ch.isalpha() else None
        if e is not None:  # reserved letters are no column's (j, k, q keep their bindings)
            event.stop()
            event.prevent_default()
            self.choose(e, reverse=ch.isupper())

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.choose(self.entries[int(event.option.id or 0)])

    def action_move(self, step: int) -> None:
        ol = self.query_one(OptionList)
        if ol.option_count:
            cur = ol.highlighted if ol.highlighted is not None else 0
            ol.highlighted = max(0, min(ol.option_count - 1, cur + step))
