"""The ttdash Textual app and the trace screen that `open`, `watch` and `demo` share."""

from __future__ import annotations

import gc
import io
import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, OptionList, Static

from ..format import fmt_mhz, fmt_us, plural
from ..memory import trim
from ..model import View, Window
from ..model.columns import COPY_FIELDS, legend
from ..model.errors import TraceError
from ..model.query import FILTER_KEYS, Filter, group_ops
from ..model.read.text import clean_text
from ..report import formats
from ..report.header import timing_facts
from .config import DEFAULT_THEME, load_keymap, load_themes
from .export import GROUP_WRITERS, OP_EXPORTS, export_format, suffix_list, write_ops
from .guard import run_guarded  # noqa: F401  (the commands' and tests' name)
from .optable import OpTable
from .palette import TTDashCommands
from .tableview import TABLE_BINDINGS, TableViewMixin
from .views import VIEWS, TraceView
from .widgets import (
    AdviceView,
    DetailScreen,
    GroupedView,
    HeaderText,
    HelpScreen,
    OpPicked,
    PromptScreen,
    SignpostList,
    SteadyFooter,
    ask_and_export,
    help_rows,
    plain,
)

FILTER_HINT = ("text matches the op code; keys bound:DRAM cat:TM dev:1 rank:1 sp:decode fid:LoFi "
               "mem:dram op:Matmul risc:NCRISC; -term or !term excludes; terms are ANDed; "
               "empty clears")


def summary_text(view: View, extra: str = "", order: str = "") -> HeaderText:
    """Two lines, each kept to one line (cropped, or facts dropped, at the header's width);
    `order`, the table's ("sort: Device ↓"), early in the first: every width shows it."""
    sm = view.summary()
    devices = f"{len(sm.devices)} dev" if sm.devices else "no dev"
    if view.trace.ranks:  # a multi-host run
        devices += f" / {plural(len(view.trace.ranks), 'rank')}"
    arch = sm.arch or "arch not detected"
    clock = f" {fmt_mhz(sm.clock_mhz)}" if sm.clock_mhz else ""
    line1 = Text.assemble((f"{sm.ops:,} ops", "bold"), " · ")
    if sm.warnings:  # early in the line: it must survive the crop at 80 columns
        line1.append(f"! {len(sm.warnings)} warning{'s' if len(sm.warnings) > 1 else ''} (?)",
                     style="bold reverse")
        line1.append(" · ")
    if order:
        line1.append_text(Text.assemble(plain(order), " · "))
    line1.append_text(Text.assemble((f"{arch}{clock}", "bold"), f" · {devices} · ",
                                    plain(view.trace.path.name)))
    line1.no_wrap, line1.overflow = True, "ellipsis"
    # the second line is laid out at the header's width (report.header's facts)
    return HeaderText(line1, timing_facts(view), extra)


class TraceScreen(TableViewMixin, Screen):
    """Op table + signposts + grouped view of one View."""

    BINDINGS = [
        Binding("question_mark,h", "help", "Help", id="ttdash.help"),
        *TABLE_BINDINGS,
        Binding("enter", "details", "Details", id="ttdash.details"),
        Binding("s", "toggle_signposts", "Signposts", show=False, id="ttdash.toggle_signposts"),
        *(v.binding() for v in VIEWS),
        Binding("c", "group_by", "Group by", show=False, id="ttdash.group_by"),
        Binding("a", "columns", "Columns", show=False, id="ttdash.columns"),
        Binding("y", "copy_row", "Copy", show=False, id="ttdash.copy"),
        Binding("e", "export", "Export", id="ttdash.export"),
        Binding("w", "whole_trace", "Whole trace", show=False, id="ttdash.whole_trace"),
        Binding("i", "replay", "Replay session", show=False, id="ttdash.replay"),
        Binding("tab", "app.focus_next", "Focus", show=False, id="ttdash.focus_next"),
        Binding("q", "app.quit", "Quit", id="ttdash.quit"),
    ]
    DEFAULT_CSS = """
    TraceScreen #summary { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap;
                           text-overflow: ellipsis; }
    TraceScreen #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    TraceScreen #body { height: 1fr; }
    TraceScreen SignpostList { border-right: vkey $panel; }
    """
    filter_keys = FILTER_KEYS
    filter_hint = FILTER_HINT
    #: the status line's own part after the table's (a stored run's id, the live state)
    status_extra: var[str] = var("", init=False)
    #: the screen's state the status line shows, each a reactive: a change asks for the status
    #: line, which is computed once after the message that changed it (update_status)
    STATUS_STATE: tuple[str, ...] = ("status_extra",)
    #: how many times the status line was computed (tests count them per live refresh)
    status_draws = 0
    #: the heaviest ops first (host ops, without device time, after every device op)
    default_sort: str | None = "device_time_us"

    def __init__(self, view: View, *, protected: tuple[Path, ...] = ()) -> None:
        super().__init__()
        self.view = view
        self.protected = protected
        self.state = self.new_state(view.ops)
        #: the views (tui.views.VIEWS as it is now: a view appended to it before the screen is
        #: made is mounted, bound, shown and listed like the others)
        self.views = tuple(VIEWS)
        self._bind_views()
        self.status_extra = ""
        self._status_due = False
        self._status_row: tuple[int, int] | None = None  # (cursor, rows) the status line shows
        self.loading_note = ""  # the whole trace still loading: its progress, first in the header

    @classmethod
    def late_bindings(cls, views: tuple[TraceView, ...] | None = None) -> list[Binding]:
        """The keys of views declared after the class was made (its BINDINGS has the others);
        the keys page lists them too."""
        merged = cls._merged_bindings
        bound = {b.id for bs in merged.key_to_bindings.values() for b in bs} if merged else set()
        return [v.binding() for v in (VIEWS if views is None else views)
                if v.binding_id not in bound]

    def _bind_views(self) -> None:
        for key, bindings in BindingsMap(self.late_bindings(self.views)).key_to_bindings.items():
            self._bindings.key_to_bindings.setdefault(key, []).extend(bindings)

    def trace_view(self, view_id: str | None) -> TraceView:
        return next(v for v in self.views if v.id == view_id)

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with Horizontal(id="body"):
            yield SignpostList(id="signposts")
            with ContentSwitcher(initial=self.views[0].id, id="switcher"):
                for v in self.views:
                    yield v.widget(id=v.id)
        yield from self.panels()
        yield Static(id="status")
        yield SteadyFooter()

    def panels(self) -> ComposeResult:
        """Extra panels between the table and the status line (the run screen's output)."""
        yield from ()

    # Textual calls an `on_mount` of every class in the MRO; subclasses extend these two hooks
    # instead (explicit super() calls), so the order is the code's, not the dispatcher's.
    def on_mount(self) -> None:
        self.mounted()

    def on_unmount(self) -> None:
        self.unmounted()

    def mounted(self) -> None:
        for name in self.STATUS_STATE:
            self.watch(self, name, self.update_status, init=False)
        # the header's trust warnings found, and their temporaries given back, before the
        # table's arrays are made (over them, a million ops' ~100 MB was the peak of `open`)
        self.view.warnings()
        trim()
        self.set_view(self.view)
        self.query_one(OpTable).focus()
        self.show_window_note()

    def show_window_note(self) -> None:
        note = self.view.window_note()
        if note:
            self.notify(note + " (w: whole trace)", title="Window", timeout=10, markup=False)

    def unmounted(self) -> None:
        pass

    # ------------------------------------------------------------ state -> widgets
    def set_view(self, view: View, *, keep_state: bool = True) -> None:
        self.view = view
        sp = view.trace.signposts
        panel = self.query_one(SignpostList)
        panel.set_signposts(sp)
        panel.display = bool(len(sp)) and self.app.size.width >= 100 \
            and not getattr(self, "_panel_hidden", False)
        # a sorted table at its top stays there (the whole trace replacing its first rows)
        top = self.state.sort_key is not None and self.table.cursor == 0
        if keep_state:
            self.state.frame = view.ops
        else:
            self.state = self.new_state(view.ops)
        self.recompute(top=top)

    def recompute(self, *, top: bool = False) -> None:
        self.refresh_table(top=top, multi_device=len(self.view.trace.devices) > 1)

    def table_changed(self) -> None:
        self.refresh_current_view()
        self.update_header()

    def refresh_current_view(self) -> None:
        """The view shown, when it `follows` the table (grouped, timeline, roofline, why), shows
        the table's rows."""
        v = self.trace_view(self.query_one(ContentSwitcher).current)
        if v.follows:
            self.fill(v)

    def fill(self, v: TraceView) -> None:
        if v.show is not None:
            v.show(self, self.query_one(f"#{v.id}"))

    def on_op_picked(self, message: OpPicked) -> None:
        """The timeline or roofline moved to an op: the table's cursor follows."""
        hit = np.flatnonzero(self.table.rows == message.pos)
        if len(hit):
            self.table.cursor = int(hit[0])
        self.update_status()

    def update_header(self) -> None:
        extra = self.loading_note
        if self.narrowed:
            r = self.view.trace.signposts.iloc[self.narrowed - 1]
            region = f"region {r['label']}: {int(r['ops'])} ops, {fmt_us(r['device_time_us'])}"
            extra = f"{extra} · {region}" if extra else region
        self.query_one("#summary", Static).update(summary_text(self.view, extra,
                                                               self.sort_text()))
        self.update_status()

    def update_status(self) -> None:
        """Ask for the status line: computed once, right after the message being handled,
        however many changes of it asked (a live refresh changes rows, header and cursor)."""
        if not self._status_due:
            self._status_due = True
            self.call_next(self._draw_status)

    @property
    def status_pending(self) -> bool:
        """A change asked for the status line and it is not drawn yet."""
        return self._status_due

    def _draw_status(self) -> None:
        try:
            if self.is_mounted:
                self.status_draws += 1
                self.draw_status()
        finally:  # what the drawing changed itself asks for nothing more
            self._status_due = False

    def draw_status(self) -> None:
        """The status line of the screen's state (subclasses add their part, then call this)."""
        rows = self.table.rows
        self._status_row = (self.table.cursor, len(rows))
        n_ops = int(self.view.totals()["ops"])  # kept per view (a live one's as rows come)
        if len(rows) == len(self.view.ops):  # every row, in some order: no pass over them
            shown = n_ops  # (two passes over a live table at each refresh: 8 ms at 600k rows)
        else:
            is_sp = self.view.ops["is_signpost"].to_numpy(dtype=bool)
            shown = int((~is_sp[rows]).sum()) if len(rows) else 0
        parts = self.status_parts()
        if shown != n_ops:
            parts.insert(1, f"showing {shown:,} of {n_ops:,} ops")
        if self.status_extra:
            parts.append(self.status_extra)
        # one line high whatever it says: no layout of the screen (a live refresh draws it)
        self.query_one("#status", Static).update(plain(" · ".join(parts)), layout=False)

    def on_op_table_cursor_moved(self, message: OpTable.CursorMoved) -> None:
        if self._status_row != (self.table.cursor, len(self.table.rows)):
            self.update_status()  # not when the status line already shows this row

    def on_resize(self) -> None:
        panel = self.query_one(SignpostList)
        panel.display = bool(len(self.view.trace.signposts)) and self.app.size.width >= 100 \
            and not getattr(self, "_panel_hidden", False)

    def filter_applied(self, f) -> None:
        if any(t.field == "device" for t in f.terms()) and self.view.merged \
                and len(self.view.trace.devices) > 1:
            self.notify("Devices are merged (one row per op: the slowest device, CCL ops "
                        "averaged): dev:N matches ops whose shown row is device N. "
                        "`ttdash open --per-device` has every device's row.",
                        title="dev: on a merged view", timeout=10, markup=False)

    # ------------------------------------------------------------ actions
    def action_help(self) -> None:
        notes = ["ctrl+p: command palette (sort, views, themes, export).",
                 f"Filter: {FILTER_HINT}.",
                 "Remap keys in ~/.config/ttdash/keymap.toml: binding_id = \"key\"."]
        keyed = [self.query_one(OpTable)] + [self.query_one(v.keys) for v in self.views if v.keys]
        self.app.push_screen(HelpScreen("ttdash keys: trace view",
                                        help_rows(self.app, self, *keyed),
                                        notes, legend=legend(),
                                        warnings=[w.message for w in self.view.warnings()]))

    def action_whole_trace(self) -> None:
        """The whole trace, whatever window the command line chose."""
        if self.view.window.mode == "all":
            self.notify("Already the whole trace", markup=False)
            return
        self.set_view(self.view.trace.view(Window("all"), merge=self.view.merged),
                      keep_state=False)

    def action_replay(self) -> None:
        """One metal-trace replay session (or, empty, the whole trace): `--replay N` on screen."""
        trace = self.view.trace
        sessions = trace.replay_sessions
        if not sessions:
            self.notify("No metal-trace replay sessions in this trace", markup=False)
            return

        def done(value: str | None) -> None:
            if value is None:
                return
            try:
                window = Window("replay", region=int(value)) if value.strip() else Window("all")
                view = trace.view(window, merge=self.view.merged)
            except (ValueError, TraceError) as exc:
                self.notify(str(exc) if isinstance(exc, TraceError) else
                            f"not a session number: {value!r}", title="Replay session",
                            severity="error", markup=False)
                return
            view.pause_above_us = self.view.pause_above_us
            self.set_view(view, keep_state=False)

        now = self.view.window
        self.app.push_screen(PromptScreen(
            f"Replay session ({sessions[0]}-{sessions[-1]}; empty: the whole trace):",
            str(now.region) if now.mode == "replay" else "",
            "ttdash report FILE compares the sessions; --replay N opens one"), done)

    def action_details(self) -> None:
        """enter: the shown view's `details` (None: its widget takes enter itself, as the
        signposts panel does)."""
        if isinstance(self.focused, SignpostList):
            return  # handled by on_option_list_option_selected
        v = self.trace_view(self.query_one(ContentSwitcher).current)
        if v.details is not None:
            v.details(self, self.query_one(f"#{v.id}"))

    def push_details(self, op) -> None:
        try:
            raw = self.view.trace.row(int(op["id"]))
        except KeyError:
            raw = None
        self.app.push_screen(DetailScreen(op, raw))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on the grouped table (the DataTable takes enter itself)."""
        if event.data_table.id == "groups":
            self.narrow_to_group()

    def narrow_to_group(self) -> None:
        """enter on a group: the op table, filtered to that op code / category."""
        g = self.query_one(GroupedView)
        name = g.current_group()
        if name is None:
            return
        if g.by == "memory":  # "Matmul (in0:dram_interleaved)": op code and input 0 memory
            op, _, mem = name.partition(" (in0:")
            text = f"op:={shlex.quote(op)}" + (f" mem:{shlex.quote(mem[:-1])}" if mem else "")
        else:
            text = f"{'op' if g.by == 'op_code' else 'cat'}:={shlex.quote(name)}"
        self.state.filter = Filter.for_keys(text, self.filter_keys)
        self.action_show("ops")
        self.recompute(top=True)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if isinstance(event.option_list, AdviceView):
            op_id = AdviceView.op_id(event.option)
            if op_id is not None:
                self.show_op(op_id)
            return
        self.narrow(int(event.option.id or 0))
        self.query_one(OpTable).focus()

    def show_op(self, op_id: int) -> None:
        """The op table with the cursor on op `op_id` (filter and region dropped when they hide
        it)."""
        self.action_show("ops")
        table = self.table
        ids = self.view.ops["id"].to_numpy()
        if not (ids[table.rows] == op_id).any():
            self.state.filter = Filter.for_keys("", self.filter_keys)
            self.state.narrowed = 0
            self.recompute()
        hit = np.flatnonzero(ids[table.rows] == op_id)
        if len(hit):
            table.cursor = int(hit[0])

    def narrow(self, region: int) -> None:
        self.state.narrowed = region
        self.recompute(top=True)

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
        v = self.trace_view(name)
        self.query_one(ContentSwitcher).current = v.id
        self.fill(v)
        widget = self.query_one(f"#{v.id}")
        (widget.query_one(v.focus) if v.focus is not None else widget).focus()

    def action_group_by(self) -> None:
        g = self.query_one(GroupedView)
        cycle = ("op_code", "category", "memory")  # the last: tt-perf-report's summary groups
        g.by = cycle[(cycle.index(g.by) + 1) % len(cycle)]
        self.fill(self.trace_view("grouped"))

    def action_copy_row(self) -> None:
        op = self.query_one(OpTable).current_row()
        if op is None:
            return
        text = "\t".join("" if op.get(f) is None else str(op.get(f)) for f in COPY_FIELDS)
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied op {op['id']} (tab-separated)", markup=False)

    def action_export(self) -> None:
        """The op rows as the table shows them (filter and order), or the grouped table, in the
        format the file's suffix names (report.formats, the registry `report` uses too)."""
        grouped = self.query_one(ContentSwitcher).current == "grouped"
        offered = tuple(GROUP_WRITERS) if grouped else OP_EXPORTS

        def render(target: Path) -> str:
            fmt = export_format(target, offered)
            buf = io.StringIO()
            if grouped:
                g = self.query_one(GroupedView)
                groups = group_ops(self.view.ops.iloc[self.table.rows], g.by)
                GROUP_WRITERS[fmt.name](groups, g.by, buf)
                return buf.getvalue()
            write_ops(fmt, self.view, self.table.rows, self.shown_view, buf)
            return buf.getvalue()

        what = "the grouped table" if grouped else "the current view"
        default = "ttdash_groups.csv" if grouped else "ttdash_export.csv"
        if self.query_one(ContentSwitcher).current == "timeline":
            default = "ttdash_trace" + formats.BY_NAME["perfetto"].suffixes[0]
        ask_and_export(self, f"Export {what}; the suffix picks the format: "
                       f"{suffix_list(offered)}", default, render, self.protected)

    def palette_commands(self) -> list[tuple[str, Callable[[], Any]]]:
        """The table's commands (sort) and the trace view's, for the palette (tui.palette)."""
        cmds = super().palette_commands()
        cmds += [(v.palette, partial(self.action_show, v.id)) for v in self.views]
        cmds += [
            ("view: toggle signpost panel", self.action_toggle_signposts),
            ("filter: ops…", self.action_filter),
            ("filter: clear (whole trace)", self.action_widen),
            ("view: whole trace (drop the window)", self.action_whole_trace),
            (f"export: current view ({suffix_list(OP_EXPORTS)})…", self.action_export),
            ("copy: current row", self.action_copy_row),
        ]
        for b in ("DRAM", "FLOP", "BOTH", "SLOW", "HOST"):
            cmds.append((f"filter: bound {b}", partial(self._set_filter, f"bound:{b}")))
        return cmds

    def _set_filter(self, text: str) -> None:
        self.op_filter = Filter(text)
        self.recompute(top=True)

    def shown_view(self) -> View:
        """The view as the table shows it (filter, region), for the Perfetto export."""
        rows = self.table.rows
        if len(rows) == len(self.view.ops):
            return self.view
        keep = np.zeros(len(self.view.ops), dtype=bool)
        keep[rows] = True
        return self.view.subset(keep, what="as filtered on screen")


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
        # What exists once the first screen is up (modules, Textual, an opened trace) stays for
        # the session: the collector's full passes skip it from then on. They scanned it all, a
        # 50-90 ms pause of the screen or the live feed every few seconds of a Galaxy's rows.
        # (Unfrozen when the app ends: a process that runs apps one after another, as the
        # tests do, keeps none of an ended one's.)
        self.call_after_refresh(gc.freeze)

    def on_unmount(self) -> None:
        gc.unfreeze()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast (a screen's or widget's notify calls this): no control or bidi character
        reaches the terminal. Markup stays the caller's: untrusted text goes with markup=False."""
        super().notify(str(clean_text(message.replace("\n", " "))), title=str(clean_text(title)),
                       severity=severity, timeout=timeout, markup=markup)

    def panic(self, *renderables) -> None:
        """Textual's exit on an error it shows itself (e.g. a stylesheet error in a user's
        theme): the process must not report success."""
        self._return_code = EXIT_UI_ERROR
        super().panic(*renderables)


EXIT_UI_ERROR = 2


def open_app(view: View, theme: str | None = None) -> TTDashApp:
    return TTDashApp(lambda: TraceScreen(view), theme=theme)


def open_loading_app(load: Callable[[], View], name: str, theme: str | None = None,
                     preview: Callable[[Any], View] | None = None) -> TTDashApp:
    """The open view of a trace still to be loaded: the loading screen first (progress in its
    header, `q` works), the trace screen on the first rows as soon as `preview` made them a view
    (the loading progress in its header), then on the whole trace. The app's `loading` is the
    loading screen."""
    from .loading import LoadingScreen

    screen = LoadingScreen(load, name, TraceScreen, preview=preview)
    app = TTDashApp(lambda: screen, theme=theme)
    app.loading = screen
    return app


def run_open_loading(load: Callable[[], View], name: str, theme: str | None = None,
                     preview: Callable[[Any], View] | None = None) -> int:
    """run_open for a large trace; a load error is raised once the terminal is restored."""
    app = open_loading_app(load, name, theme, preview)
    code = run_guarded(app)
    if app.loading.error is not None:
        raise app.loading.error
    return code


def run_open(view: View, theme: str | None = None) -> int:
    return run_guarded(open_app(view, theme))
