"""The ttdash Textual app and the trace screen that `open`, `watch` and `demo` share."""

from __future__ import annotations

import io
import os
import signal
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, OptionList, Static

from ..format import fmt_us
from ..model import View
from ..model.errors import TraceError
from ..model.query import Filter, signpost_positions, sort_order
from ..report.single import to_csv, to_markdown
from .config import DEFAULT_THEME, load_keymap, load_themes
from .optable import SORTABLE, OpTable
from .widgets import (DetailScreen, GroupedView, HelpScreen, PromptScreen, SignpostList,
                      ask_and_export, help_rows, plain)

FILTER_HINT = ("text matches the op code; also bound:DRAM cat:TM dev:1 sp:decode fid:LoFi; "
               "terms are ANDed; empty clears")


def summary_text(view: View, extra: str = "") -> Text:
    """Two lines, each kept to one line (the widget crops them)."""
    t, tot = view.trace, view.totals()
    devices = f"{len(t.devices)} dev" if t.devices else "no dev"
    clock = f"{t.clock_mhz:g} MHz" if t.clock_mhz else "? MHz"
    line1 = Text.assemble((f"{tot['ops']:,} ops", "bold"), " · ",
                          (f"{t.arch.name} {clock}", "bold"), f" · {devices} · ",
                          plain(t.path.name))
    shares = view.bound_shares()
    line2 = Text.assemble("device ", (fmt_us(tot["device_time_us"]), "bold"), " · gaps ",
                          (fmt_us(tot["op_to_op_us"]), "bold"))
    if tot["corrupt_rows"]:
        line2.append(f" · {tot['corrupt_rows']} corrupt", style="bold")
    if extra:
        line2.append(" · ")
        line2.append_text(plain(extra))
    if shares:
        line2.append(" · " + " ".join(f"{k} {v:.0f}%" for k, v in list(shares.items())[:5]))
    line2.append(" · ")
    line2.append_text(plain(view.description))
    for line in (line1, line2):
        line.no_wrap, line.overflow = True, "ellipsis"
    return Text("\n", no_wrap=True).join([line1, line2])


class TraceScreen(Screen):
    """Op table + signposts + grouped view of one View."""

    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        Binding("slash", "filter", "Filter", id="ttdash.filter"),
        Binding("less_than_sign", "sort(-1)", "Sort ←", id="ttdash.sort_prev"),
        Binding("greater_than_sign", "sort(1)", "Sort →", id="ttdash.sort_next"),
        Binding("r", "reverse", "Reverse", id="ttdash.reverse"),
        Binding("o", "original_order", "Orig order", show=False, id="ttdash.original_order"),
        Binding("left_square_bracket", "signpost(-1)", "◆ prev", id="ttdash.signpost_prev"),
        Binding("right_square_bracket", "signpost(1)", "◆ next", id="ttdash.signpost_next"),
        Binding("enter", "details", "Details", id="ttdash.details"),
        Binding("escape", "widen", "Clear", show=False, id="ttdash.widen"),
        Binding("s", "toggle_signposts", "Signposts", id="ttdash.toggle_signposts"),
        Binding("1", "show('ops')", "Ops", show=False, id="ttdash.view_ops"),
        Binding("2", "show('grouped')", "Grouped", id="ttdash.view_grouped"),
        Binding("c", "group_by", "By code/cat", show=False, id="ttdash.group_by"),
        Binding("y", "copy_row", "Copy", show=False, id="ttdash.copy"),
        Binding("e", "export", "Export", id="ttdash.export"),
        Binding("tab", "focus_next", "Focus", show=False, id="ttdash.focus_next"),
        Binding("q", "app.quit", "Quit", id="ttdash.quit"),
    ]
    DEFAULT_CSS = """
    TraceScreen #summary { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap;
                           text-overflow: ellipsis; }
    TraceScreen #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    TraceScreen #body { height: 1fr; }
    TraceScreen SignpostList { border-right: vkey $panel; }
    """

    def __init__(self, view: View, *, protected: tuple[Path, ...] = ()) -> None:
        super().__init__()
        self.view = view
        self.protected = protected
        self.op_filter = Filter("")
        self.narrowed = 0  # 0 = whole trace, k = signpost region k
        self.sort_key: str | None = None
        self.sort_desc = True
        self.rows = np.zeros(0, dtype=np.int64)
        self.status_extra = ""

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with Horizontal(id="body"):
            yield SignpostList(id="signposts")
            with ContentSwitcher(initial="ops", id="switcher"):
                yield OpTable(id="ops")
                yield GroupedView(id="grouped")
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.set_view(self.view)
        self.query_one(OpTable).focus()

    # ------------------------------------------------------------ state -> widgets
    def set_view(self, view: View, *, keep_state: bool = True) -> None:
        self.view = view
        sp = view.trace.signposts
        panel = self.query_one(SignpostList)
        panel.set_signposts(sp)
        panel.display = bool(len(sp)) and self.app.size.width >= 100
        if not keep_state:
            self.op_filter, self.narrowed, self.sort_key = Filter(""), 0, None
        self.recompute()

    def recompute(self) -> None:
        ops = self.view.ops
        mask = self.op_filter.mask(ops)
        if self.narrowed:
            mask &= ops["region"].to_numpy() == self.narrowed
            mask &= ~ops["is_signpost"].to_numpy(dtype=bool)
        rows = np.flatnonzero(mask)
        self.rows = sort_order(ops, rows, self.sort_key, self.sort_desc)
        table = self.query_one(OpTable)
        table.sort_key, table.sort_desc = self.sort_key, self.sort_desc
        table.set_data(ops, self.rows, multi_device=len(self.view.trace.devices) > 1)
        if self.query_one(ContentSwitcher).current == "grouped":
            self.query_one(GroupedView).show(ops, self.rows)
        self.update_header()

    def update_header(self) -> None:
        extra = ""
        if self.narrowed:
            r = self.view.trace.signposts.iloc[self.narrowed - 1]
            extra = f"region {r['label']}: {int(r['ops'])} ops, {fmt_us(r['device_time_us'])}"
        self.query_one("#summary", Static).update(summary_text(self.view, extra))
        self.update_status()

    def update_status(self) -> None:
        table = self.query_one(OpTable)
        n_ops = int((~self.view.ops["is_signpost"]).sum())
        shown = int((~self.view.ops["is_signpost"].to_numpy()[self.rows]).sum()) \
            if len(self.rows) else 0
        parts = [f"row {table.cursor + 1 if len(self.rows) else 0:,}/{len(self.rows):,}"]
        if shown != n_ops:
            parts.append(f"showing {shown:,} of {n_ops:,} ops")
        if self.op_filter.text:
            parts.append(f"filter: {self.op_filter.text}")
        if self.sort_key:
            title = next(c.title for c in SORTABLE if c.key == self.sort_key)
            parts.append(f"sort: {title} {'↓' if self.sort_desc else '↑'}")
        if self.status_extra:
            parts.append(self.status_extra)
        self.query_one("#status", Static).update(plain(" · ".join(parts)))

    def on_op_table_cursor_moved(self, message: OpTable.CursorMoved) -> None:
        self.update_status()

    def on_resize(self) -> None:
        panel = self.query_one(SignpostList)
        panel.display = bool(len(self.view.trace.signposts)) and self.app.size.width >= 100 \
            and not getattr(self, "_panel_hidden", False)

    # ------------------------------------------------------------ actions
    def action_help(self) -> None:
        notes = ["ctrl+p: command palette (sort, views, themes, export).",
                 f"Filter: {FILTER_HINT}.",
                 "Remap keys in ~/.config/ttdash/keymap.toml: binding_id = \"key\"."]
        self.app.push_screen(HelpScreen("ttdash keys: trace view",
                                        help_rows(self.app, self, self.query_one(OpTable)),
                                        notes))

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self.op_filter = Filter(value.strip())
                self.recompute()
        self.app.push_screen(PromptScreen("Filter ops:", self.op_filter.text, FILTER_HINT), done)

    def action_sort(self, step: int) -> None:
        """Sort by the next/previous column on screen."""
        keys = [c.key for c in self.query_one(OpTable).visible_columns()]
        i = keys.index(self.sort_key) if self.sort_key in keys else (-1 if step > 0 else 0)
        self.sort_key = keys[(i + step) % len(keys)]
        self.sort_desc = self.sort_key not in ("id", "op_code", "signpost", "category")
        self.recompute()

    def sort_by(self, key: str | None, descending: bool = True) -> None:
        self.sort_key, self.sort_desc = key, descending
        self.recompute()

    def action_reverse(self) -> None:
        if self.sort_key is None:
            self.sort_key, self.sort_desc = "id", True
        else:
            self.sort_desc = not self.sort_desc
        self.recompute()

    def action_original_order(self) -> None:
        self.sort_by(None)

    def action_signpost(self, direction: int) -> None:
        table = self.query_one(OpTable)
        starts = signpost_positions(self.view.ops, self.rows)
        if not len(starts):
            self.notify("No signposts in this view", severity="warning")
            return
        cur = table.cursor
        later, earlier = starts[starts > cur], starts[starts < cur]
        if direction > 0:
            target = later[0] if len(later) else starts[0]
        else:
            target = earlier[-1] if len(earlier) else starts[-1]
        table.cursor = int(target)
        table.scroll_to(y=max(0, int(target)), animate=False)

    def action_details(self) -> None:
        focused = self.focused
        if isinstance(focused, SignpostList):
            return  # handled by on_option_list_option_selected
        op = self.query_one(OpTable).current_row()
        if op is None:
            return
        if op["is_signpost"]:
            self.narrow(int(op["region"]))
            return
        try:
            raw = self.view.trace.row(int(op["id"]))
        except KeyError:
            raw = None
        self.app.push_screen(DetailScreen(op, raw))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.narrow(int(event.option.id or 0))
        self.query_one(OpTable).focus()

    def narrow(self, region: int) -> None:
        self.narrowed = region
        self.query_one(OpTable).cursor = 0
        self.recompute()

    def action_widen(self) -> None:
        if self.narrowed or self.op_filter.text:
            self.narrowed, self.op_filter = 0, Filter("")
            self.recompute()

    def action_toggle_signposts(self) -> None:
        panel = self.query_one(SignpostList)
        if not len(self.view.trace.signposts):
            self.notify("This trace has no signposts", severity="warning")
            return
        panel.display = not panel.display
        self._panel_hidden = not panel.display
        if panel.display:
            panel.focus()

    def action_show(self, name: str) -> None:
        self.query_one(ContentSwitcher).current = name
        if name == "grouped":
            self.query_one(GroupedView).show(self.view.ops, self.rows)
            self.query_one("#groups").focus()
        else:
            self.query_one(OpTable).focus()

    def action_group_by(self) -> None:
        g = self.query_one(GroupedView)
        g.by = "category" if g.by == "op_code" else "op_code"
        g.show(self.view.ops, self.rows)

    def action_copy_row(self) -> None:
        op = self.query_one(OpTable).current_row()
        if op is None:
            return
        fields = ("id", "op_code", "size", "device", "device_time_us", "op_to_op_us",
                  "total_pct", "cores", "dram_pct", "flops_pct", "bound", "math_fidelity")
        text = "\t".join("" if op.get(f) is None else str(op.get(f)) for f in fields)
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied op {op['id']} (tab-separated)")

    def action_export(self) -> None:
        def render(target: Path) -> str:
            buf = io.StringIO()
            if target.suffix.lower() in (".md", ".markdown"):
                to_markdown(self.view, buf, rows=self.rows)
            else:
                to_csv(self.view, buf, rows=self.rows)
            return buf.getvalue()

        ask_and_export(self, "Export the current view to (.csv or .md):", "ttdash_export.csv",
                       render, self.protected)


class TTDashCommands(Provider):
    """Palette commands, named "area: action"."""

    def _commands(self):
        screen = self.screen
        if not isinstance(screen, TraceScreen):
            return []
        cmds = [
            ("view: ops table", partial(screen.action_show, "ops")),
            ("view: grouped by op code / category", partial(screen.action_show, "grouped")),
            ("view: toggle signpost panel", screen.action_toggle_signposts),
            ("filter: ops…", screen.action_filter),
            ("filter: clear (whole trace)", screen.action_widen),
            ("sort: original order", screen.action_original_order),
            ("sort: reverse", screen.action_reverse),
            ("export: current view to csv/markdown…", screen.action_export),
            ("copy: current row", screen.action_copy_row),
        ]
        for c in SORTABLE:
            cmds.append((f"sort: by {c.title.lower()}",
                         partial(screen.sort_by, c.key, c.key not in ("id", "op_code"))))
        for b in ("DRAM", "FLOP", "BOTH", "SLOW", "HOST"):
            cmds.append((f"filter: bound {b}", partial(self._set_filter, screen, f"bound:{b}")))
        for name in sorted(self.app.available_themes):
            if name.startswith("ttdash"):
                cmds.append((f"theme: {name}", partial(setattr, self.app, "theme", name)))
        return cmds

    @staticmethod
    def _set_filter(screen: TraceScreen, text: str) -> None:
        screen.op_filter = Filter(text)
        screen.recompute()

    async def discover(self) -> Hits:
        for name, cb in self._commands():
            yield DiscoveryHit(name, cb)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, cb in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), cb)


class TTDashApp(App):
    TITLE = "ttdash"
    COMMANDS = App.COMMANDS | {TTDashCommands}
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, screen_factory, *, theme: str | None = None) -> None:
        super().__init__()
        self._screen_factory = screen_factory
        for t in load_themes():
            self.register_theme(t)
        wanted = theme or DEFAULT_THEME
        if wanted not in self.available_themes:
            raise TraceError(None, f"unknown theme {wanted!r} (available: "
                             + ", ".join(sorted(self.available_themes)) + ")")
        self.theme = wanted
        keymap = load_keymap()
        if keymap:
            self.set_keymap(keymap)

    def on_mount(self) -> None:
        self.push_screen(self._screen_factory())


def run_guarded(app: App, cleanup: Callable[[], None] | None = None) -> None:
    """Run a Textual app so that a lost terminal (SIGHUP: SSH drop, tmux kill) or SIGTERM never
    leaves a process behind: `cleanup` runs at once, the app is asked to exit, and if Textual's
    shutdown blocks on the dead terminal the process exits after 2 s anyway."""

    def on_signal(signum, frame) -> None:
        if cleanup is not None:
            try:
                cleanup()
            except Exception:  # cleanup is best effort; exiting matters more
                pass
        app.exit()
        timer = threading.Timer(2.0, os._exit, args=(128 + signum,))
        timer.daemon = True
        timer.start()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        app.run()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def open_app(view: View, theme: str | None = None) -> TTDashApp:
    return TTDashApp(lambda: TraceScreen(view), theme=theme)


def run_open(view: View, theme: str | None = None) -> int:
    run_guarded(open_app(view, theme))
    return 0
