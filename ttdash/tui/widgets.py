"""Small screens and widgets: prompt, confirm, help, signpost list, advice, grouped view (the
op details: tui.details)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.visual import Visual
from textual.widgets import DataTable, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual_plotext import PlotextPlot

from ..format import (
    bar,
    fmt_us,
    is_missing,
    linear_ticks,
)
from ..model.analysis.advice import GAP_LIMIT_US
from ..model.errors import TraceError
from ..model.query import downsample_sum, group_ops
from ..model.read.text import clean_text
from ..present.table import SCREEN, cells, op_groups
from ..report.export import check_target, write_atomic
from .details import DetailScreen, detail_body  # noqa: F401  (re-exported: importers of widgets)
from .richtext import bullet_list, plain


class SteadyFooter(Footer):
    """Textual's key footer, rebuilt only when what it shows changes.

    Textual's rebuilds every key widget on each focus change and screen push, shown keys the
    same or not: ~40 ms of CPU a time, two times a view switch (measured: 23 rebuilds in 29 keys,
    ~1 of 2.3 CPU-s). Each rebuild here is skipped unless a shown key, its label, its state or
    the focused screen's bindings differ."""

    _shown: tuple | None = None
    #: (the keys, the width) the footer was last fitted to (None: not since its last rebuild;
    #: a fit after a rebuild hides the keys that do not fit: a layout of the screen)
    fitted: tuple[tuple | None, int] | None = None

    @staticmethod
    def shown_of(screen) -> tuple:
        """What the footer shows of `screen`'s keys (a rebuild when it changes)."""
        return tuple((b.key, b.action, b.description, b.key_display, b.show, id(b.group), on, tip)
                     for _, b, on, tip in screen.active_bindings.values())

    def bindings_changed(self, screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self.shown_of(screen)
            if shown == self._shown and self._bindings_ready:
                return
            self._shown = shown
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        self.fitted = None  # not fitted since this rebuild (its fit comes after a refresh)
        await super().recompose()
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the keys that fit whole, in their order, and hide the rest (at 80 columns the
        last key was cut to "R R"): every key stays in `?` and the command palette."""
        from textual.widgets._footer import FooterKey

        def width(key) -> int:
            margin = key.styles.margin
            return key.render().cell_len + margin.left + margin.right

        keys = list(self.query(FooterKey))
        room = self.size.width - sum(width(k) for k in keys if k.has_class("-command-palette"))
        fits = True
        for key in keys:
            if key.has_class("-command-palette"):
                continue
            room -= width(key)
            fits = fits and room >= 0
            key.display = fits
        self.fitted = (self._shown, self.size.width)


class HeaderText(Visual):
    """A header of two lines laid out at the width it is drawn in: the first line as given
    (cropped with "…"), the second the facts that fit (report.header.fit_facts: whole facts
    dropped least important first, the window and a host-op share kept), after `extra` (what
    is live, or loading)."""

    def __init__(self, line1: Text, facts: list, extra: str = "") -> None:
        self.line1, self.facts, self.extra = line1, facts, extra

    def line2(self, width: int) -> Text:
        from ..report.header import fit_facts

        lead = f"{clean_text(self.extra)} · " if self.extra else ""
        line = Text(lead)
        for k, f in enumerate(fit_facts(self.facts, max(0, width - len(lead)))):
            if k:
                line.append(" · ")
            line.append_text(Text.assemble(plain(f.label), (str(clean_text(f.value)), "bold")))
        return line

    def content(self, width: int) -> Content:
        lines = []
        for line in (self.line1.copy(), self.line2(width)):
            line.truncate(width, overflow="ellipsis")
            lines.append(Content.from_rich_text(line))
        return Content("\n").join(lines)

    def render_strips(self, width, height, style, options):
        return self.content(width).render_strips(width, height, style, options)

    def get_optimal_width(self, rules, container_width: int) -> int:
        return container_width

    def get_minimal_width(self, rules) -> int:
        return 1

    def get_height(self, rules, width: int) -> int:
        return 2

    def __str__(self) -> str:  # every fact, as on a wide screen
        return f"{self.line1.plain}\n{self.line2(10_000).plain}"


def rows_key(rows: np.ndarray) -> tuple[int, int]:
    """What a view redraws on: the table's rows (filter, region, sort); a hash of 1M rows costs
    a few ms."""
    return len(rows), hash(np.ascontiguousarray(rows).tobytes())


class OpPicked(Message):
    """A view (timeline, roofline) moved to another op: `pos` is its row in the view's ops; the
    screen moves the op table's cursor there."""

    def __init__(self, pos: int) -> None:
        super().__init__()
        self.pos = pos


class PromptScreen(ModalScreen[str | None]):
    """One line of input (filter, export path); enter submits, escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="ttdash.prompt_cancel")]
    DEFAULT_CSS = """
    PromptScreen { align: center bottom; }
    PromptScreen > Vertical { height: auto; width: 100%; background: $panel; padding: 0 1; }
    PromptScreen Input { height: 1; padding: 0; }
    PromptScreen .hint { color: $text-muted; height: auto; }
    """

    def __init__(self, title: str, value: str = "", hint: str = "") -> None:
        super().__init__()
        self.title_text, self.value, self.hint = title, value, hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.title_text))
            # compact: no border, one line (a bordered Input squeezed to one line hides what is
            # typed, as textual 8.2's `Input:focus { border: tall }` wins over a plain selector).
            yield Input(value=self.value, id="prompt-input", compact=True)
            if self.hint:
                yield Static(plain(self.hint), classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes", id="ttdash.confirm_yes"),
                Binding("n,escape", "answer(False)", "No", id="ttdash.confirm_no")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static { width: auto; max-width: 90%; background: $panel; padding: 1 2;
                             border: tall $warning; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(plain(f"{self.question}  [y/n]"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def help_rows(app, *nodes) -> list[tuple[str, str, str]]:
    """(keys, description, binding id) of the nodes' bindings, as currently mapped."""
    rows: list[tuple[str, str, str]] = []
    seen: set[str | None] = set()
    for node in nodes:
        by_id: dict[str | None, list] = {}
        mapped = node._bindings.copy()  # the keymap applied, as Textual does to keys arriving
        mapped.apply_keymap(app._keymap)
        for bindings in mapped.key_to_bindings.values():
            for b in bindings:
                by_id.setdefault(b.id, []).append(b)
        for bid, bindings in by_id.items():
            first = bindings[0]
            # Only ttdash's own bindings: Textual's (focus, copy-text, ...) are not this view's
            # keys and only crowd the list.
            if bid in seen or not (bid or "").startswith("ttdash."):
                continue
            seen.add(bid)
            keys = ", ".join(app.get_key_display(b) for b in bindings)
            rows.append((keys, first.description or first.action, bid or ""))
    return rows


def ask_and_export(screen, title: str, default: str, render, protected: tuple = ()) -> None:
    """Ask for a path, confirm before overwriting, then write `render(path)` atomically (never
    inside a protected, i.e. watched, directory). In a browser session (`ttdash serve`) the name
    is a file name in the server's export directory, never a path (tui.export.served_target);
    without one, export is off and says so."""
    from .export import EXPORT_OFF, SERVE_EXPORT_DIR, served_target

    web = screen.app.is_web
    if web and not os.environ.get(SERVE_EXPORT_DIR):
        screen.notify(EXPORT_OFF, severity="warning", markup=False)
        return

    def target_of(path: str) -> Path:
        return served_target(path) if web else check_target(path.strip(), protected)

    def write(target, force: bool) -> None:
        try:
            if web:  # checked again: the directory may have changed while the user answered
                target = served_target(target.name)
            write_atomic(target, render(target), force=force, protected=protected)
        except TraceError as exc:
            screen.notify(exc.oneline(), severity="error", markup=False)
            return
        screen.notify(str(clean_text(f"Wrote {target}")), markup=False)

    def chosen(path: str | None) -> None:
        if not path:
            return
        try:
            target = target_of(path)
        except TraceError as exc:
            screen.notify(exc.oneline(), severity="error", markup=False)
            return
        if target.exists():
            screen.app.push_screen(ConfirmScreen(f"{target} exists. Overwrite?"),
                                   lambda yes: write(target, True) if yes else None)
        else:
            write(target, False)

    if web:
        title = f"{title} (a file name: it goes into the server's export directory)"
    screen.app.push_screen(PromptScreen(title, default), chosen)


class HelpScreen(ModalScreen[None]):
    """The keys of the screen that opened it, from its live bindings (remaps included), then
    the glossary (model.glossary: columns, classes, categories, marks, filter, timeline, diff).
    `legend`: lines beyond the glossary (a line it already holds is not repeated)."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="ttdash.help_close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: 90%; background: $panel;
                                  border: tall $primary; padding: 0 1; }
    """

    def __init__(self, title: str, rows: list[tuple[str, str, str]], notes: list[str],
                 legend: list[tuple[str, str]] | None = None,
                 warnings: list[str] | None = None, glossary: bool = True) -> None:
        from ..model.glossary import Section, glossary_rows
        from ..model.glossary import glossary as sections

        super().__init__()
        self.title_text, self.rows, self.notes = title, rows, notes
        self.warnings = warnings or []
        known = set(glossary_rows()) if glossary else set()
        extra = tuple(r for r in legend or [] if r not in known)
        self.sections = (sections() if glossary else []) + \
            ([Section("Legend", extra)] if extra else [])

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("Key", no_wrap=True)
        table.add_column("Action")
        table.add_column("Binding id (keymap.toml)", style="dim", no_wrap=True)
        for key, desc, bid in self.rows:
            table.add_row(plain(key), plain(desc), plain(bid))
        with VerticalScroll():
            if self.warnings:  # the header's "! N warnings" points here
                yield Static(Text("Data warnings", style="bold"))
                yield Static(bullet_list(self.warnings, "!"))
                yield Static("")
            yield Static(Text(self.title_text, style="bold"))
            yield Static(table)
            for note in self.notes:
                yield Static(plain(note))
            for section in self.sections:
                yield Static(Text(f"\n{section.title}", style="bold"))
                lg = Table(box=None, show_header=False, expand=True)
                lg.add_column(style="bold", max_width=28)
                lg.add_column()
                for term, meaning in ((("", section.intro),) if section.intro else ()) \
                        + section.rows:
                    lg.add_row(plain(term), plain(meaning))
                yield Static(lg)


class SignpostList(OptionList):
    """Signpost regions: label, ops, device time. `enter` narrows the table to one."""

    DEFAULT_CSS = "SignpostList { width: 34; height: 1fr; border: none; }"

    def set_signposts(self, sp: pd.DataFrame) -> None:
        self.clear_options()
        options = [Option(plain("(whole trace)"), id="0")]
        for r in sp.itertuples(index=False):
            line = Text.assemble(plain(r.label), ("\n", ""),
                                 (f"  {int(r.ops)} ops · {fmt_us(r.device_time_us)}", "dim"))
            options.append(Option(line, id=str(int(r.index))))
        self.add_options(options)
        self.highlighted = 0


class AdviceView(OptionList):
    """The advice grouped as `report` prints it (report.advice.summary_sections); `f` switches
    to every entry (report.single.advice_sections) and back. `enter` on an entry shows its op
    in the op table (the screen does that)."""

    DEFAULT_CSS = "AdviceView { height: 1fr; border: none; }"
    BINDINGS = [Binding("j", "cursor_down", show=False), Binding("k", "cursor_up", show=False),
                Binding("g", "first", show=False), Binding("G", "last", show=False),
                Binding("f", "toggle_full", "Every entry", id="ttdash.advice_full")]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._for: object = None
        self._view, self.full = None, False

    @staticmethod
    def op_id(option: Option) -> int | None:
        return None if option.id is None else int(option.id.partition(":")[2])

    def action_toggle_full(self) -> None:
        self.full = not self.full
        if self._view is not None:
            self._for = None
            self.show(self._view)

    def show(self, view) -> None:
        """Rebuild for a new view only (advice covers the whole view, not the filter)."""
        if self._for is view.ops:
            return
        from ..report.advice import listed_sections

        self._for, self._view = view.ops, view
        self.clear_options()
        lead, sections = listed_sections(view, self.full, "f")
        options = [Option(plain(lead), disabled=True)] if sections else []
        for title, entries in sections:
            options.append(Option(Text(title, style="bold"), disabled=True))
            for op_id, head, bullets in entries:
                line: Text | Group = plain(head.strip())
                if bullets:
                    line = Group(line, bullet_list(bullets, " •"))
                # an op can be in two sections (a gap and a matmul): ids must be unique
                options.append(Option(line, id=None if op_id is None else
                                      f"{len(options)}:{op_id}", disabled=op_id is None))
        if not options:
            options.append(Option(plain("No advice: no host fallback, no op-to-op gap above "
                                        f"{GAP_LIMIT_US:g} us, no matmul."), disabled=True))
        self.add_options(options)
        first = next((i for i, o in enumerate(options) if not o.disabled), None)
        self.highlighted = first


def bar_chart(labels: list[str], values: list[float], width: int, unit: str,
              diverging: bool = False) -> Text:
    """A horizontal bar chart in text: one line per label (aligned by construction, unlike a plot
    whose axis skips labels when short of rows), value and unit at the end. `diverging`: negative
    values grow left (green), positive right (red). Laid out by hand, column by column, so it
    looks the same with every Rich release."""
    label_w = max(6, min(18, max((len(x) for x in labels), default=6)))
    value_w = 12 if diverging else 6
    bar_w = max(4, width - label_w - value_w - 2)
    top = max((abs(v) for v in values), default=0.0) or 1.0
    lines = []
    for label, v in zip(labels, values):
        cut = label if len(label) <= label_w else label[:label_w - 1] + "…"
        if diverging:
            half = bar_w // 2
            n = int(round(min(abs(v) / top, 1.0) * half))
            text = (" " * (half - n) + "█" * n + "│" + " " * half) if v < 0 else \
                (" " * half + "│" + "█" * n + " " * (half - n))
            style = "green" if v < 0 else "red" if v > 0 else ""
            value = f"{v:+,.1f}{unit}"
        else:
            text = bar(v / top * 100.0, bar_w)
            style = "bold"
            value = f"{v:,.1f}{unit}"
        lines.append(Text.assemble(plain(cut.ljust(label_w)), " ",
                                   (text.ljust(bar_w)[:bar_w], style), " ",
                                   value.rjust(value_w)))
    out = Text("\n").join(lines)
    out.no_wrap = True
    return out


GROUP_TITLES = {"op_code": "Op code", "category": "Category",
                "memory": "Op code (input 0 memory)"}
#: The chart's title; kept short enough for the half of an 80-column screen it gets.
CHART_TITLES = {"op_code": "Share of device time by op code (%)",
                "category": "Share of device time by category (%)",
                "memory": "Share by op code and in0 memory (%)"}


class GroupedView(Vertical):
    """Device time by op code or category: a table, a bar chart of shares, and device time over
    the run. `enter` on a group narrows the op table to it (the screen does that)."""

    DEFAULT_CSS = """
    GroupedView { height: 1fr; }
    GroupedView DataTable { height: 1fr; min-height: 5; }
    GroupedView Horizontal { height: 1fr; min-height: 8; }
    GroupedView #bars { width: 1fr; height: 1fr; padding: 0 1; }
    GroupedView PlotextPlot { width: 1fr; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.by = "op_code"
        self._key: tuple | None = None
        self._names: list[str] = []
        self._last: tuple[pd.DataFrame, np.ndarray] | None = None

    def compose(self) -> ComposeResult:
        yield DataTable(id="groups", cursor_type="row", zebra_stripes=True)
        with Horizontal():
            yield Static(id="bars")
            yield PlotextPlot(id="over-run")

    def current_group(self) -> str | None:
        table = self.query_one("#groups", DataTable)
        if not self._names or table.cursor_row is None:
            return None
        return self._names[table.cursor_row] if table.cursor_row < len(self._names) else None

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last)

    def show(self, ops: pd.DataFrame, rows: np.ndarray) -> None:
        """Rebuild only when the data, the grouping or the width changed."""
        self._last = (ops, rows)
        key = (id(ops), rows_key(rows), self.by, self.size.width)
        if key == self._key:
            return
        self._key = key
        sub = ops.iloc[rows]
        groups = group_ops(sub, self.by)
        table = self.query_one("#groups", DataTable)
        table.clear(columns=True)
        title = GROUP_TITLES[self.by]
        # Numbers keep their width; the name gets what is left (6 columns of 1-cell padding on
        # each side, and the scrollbar), so Max and Share are never pushed off an 80-column
        # screen by a long op code.
        width = self.size.width or self.app.size.width
        name_w = max(10, width - (6 + 9 + 9 + 9 + 6) - 12 - 2)
        spec = op_groups(self.by, title)  # present.table: the columns and their cells
        name_col, *numbers = spec.columns
        table.add_column(title, width=name_w)
        for c in numbers:
            table.add_column(Text(c.head, justify="right"), width=c.width)
        shown = groups.head(500)
        texts, _ = cells(shown, spec, where=SCREEN, severity=False)
        self._names = [str(clean_text(t)) for t in texts[self.by]]
        for i, name in enumerate(self._names):
            cut = name if len(name) <= name_w else name[:name_w - 1] + "…"
            table.add_row(plain(cut), *(Text(texts[c.key][i], justify="right")
                                        for c in numbers))
        top = groups.head(10)
        bars = self.query_one("#bars", Static)
        values = [0.0 if is_missing(v) or not math.isfinite(v) else float(v)
                  for v in top["share_pct"]]
        chart = bar_chart(self._names[:len(values)], values, max(30, width // 2 - 3), "%")
        bars.update(Group(Text(CHART_TITLES[self.by], style="bold"),
                          chart))
        timeline = self.query_one("#over-run", PlotextPlot)
        tplt = timeline.plt
        tplt.clear_data()
        tplt.clear_figure()
        dt = sub.loc[~sub["is_signpost"], "device_time_us"].to_numpy(dtype="float64")
        x, y, size = downsample_sum(dt, max(20, (timeline.size.width or 110) - 10))
        if len(x):
            tplt.plot(x.tolist(), y.tolist(), marker="braille", fillx=True)
            top = float(y.max()) * 1.05 or 1.0
            tplt.ylim(0, top)
            # round ticks at even steps (plotext's own: 124892.4 / 104077.0 / 62446.2)
            tplt.yticks(*linear_ticks(0, top, 4))
            tplt.xticks(*linear_ticks(float(x.min()), float(x.max()), 6))
        tplt.xlabel("op index")
        tplt.ylabel("us")
        tplt.title(f"Device time over the run (us per {size} op{'s' if size > 1 else ''})")
        timeline.refresh()
