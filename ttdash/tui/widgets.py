"""Small screens and widgets: prompt, confirm, help, detail, signpost list, grouped view."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual_plotext import PlotextPlot

from ..format import fmt_int, fmt_num, fmt_pct, fmt_us, is_missing
from ..model.advice import advise
from ..model.query import downsample_sum, group_ops
from ..model.errors import TraceError
from ..model.text import clean_text
from ..report.export import check_target, write_atomic


def plain(value: object) -> Text:
    """Untrusted text as a Text: never parsed as markup; control characters removed."""
    return Text("" if is_missing(value) else str(clean_text(str(value))))


class PromptScreen(ModalScreen[str | None]):
    """One line of input (filter, export path); enter submits, escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="ttdash.prompt_cancel")]
    DEFAULT_CSS = """
    PromptScreen { align: center bottom; }
    PromptScreen > Vertical { height: auto; width: 100%; background: $panel; padding: 0 1; }
    PromptScreen Input { border: none; height: 1; padding: 0; }
    PromptScreen .hint { color: $text-muted; height: auto; }
    """

    def __init__(self, title: str, value: str = "", hint: str = "") -> None:
        super().__init__()
        self.title_text, self.value, self.hint = title, value, hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.title_text))
            yield Input(value=self.value, id="prompt-input")
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
        for bindings in node._bindings.key_to_bindings.values():
            for b in bindings:
                by_id.setdefault(b.id, []).append(b)
        for bid, bindings in by_id.items():
            first = bindings[0]
            if bid in seen or first.action.startswith("focus"):
                continue
            seen.add(bid)
            keys = ", ".join(app.get_key_display(b) for b in bindings)
            rows.append((keys, first.description or first.action, bid or ""))
    return rows


def ask_and_export(screen, title: str, default: str, render, protected: tuple = ()) -> None:
    """Ask for a path, confirm before overwriting, then write `render(path)` atomically (never
    inside a protected, i.e. watched, directory)."""

    def write(target, force: bool) -> None:
        try:
            write_atomic(target, render(target), force=force, protected=protected)
        except TraceError as exc:
            screen.notify(exc.oneline(), severity="error")
            return
        screen.notify(f"Wrote {target}")

    def chosen(path: str | None) -> None:
        if not path:
            return
        try:
            target = check_target(path.strip(), protected)
        except TraceError as exc:
            screen.notify(exc.oneline(), severity="error")
            return
        if target.exists():
            screen.app.push_screen(ConfirmScreen(f"{target} exists. Overwrite?"),
                                   lambda yes: write(target, True) if yes else None)
        else:
            write(target, False)

    screen.app.push_screen(PromptScreen(title, default), chosen)


class HelpScreen(ModalScreen[None]):
    """The keys of the screen that opened it, from its live bindings (remaps included)."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="ttdash.help_close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: 90%; background: $panel;
                                  border: tall $primary; padding: 0 1; }
    """

    def __init__(self, title: str, rows: list[tuple[str, str, str]], notes: list[str]) -> None:
        super().__init__()
        self.title_text, self.rows, self.notes = title, rows, notes

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("Key", no_wrap=True)
        table.add_column("Action")
        table.add_column("Binding id (keymap.toml)", style="dim", no_wrap=True)
        for key, desc, bid in self.rows:
            table.add_row(plain(key), plain(desc), plain(bid))
        with VerticalScroll():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(table)
            for note in self.notes:
                yield Static(plain(note))


class DetailScreen(ModalScreen[None]):
    """Everything about one op: derived figures, timing, tensors, attributes, advice, raw row."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="ttdash.detail_close"),
                Binding("j,down", "scroll(1)", "Down", show=False, id="ttdash.detail_down"),
                Binding("k,up", "scroll(-1)", "Up", show=False, id="ttdash.detail_up")]
    DEFAULT_CSS = """
    DetailScreen { align: center middle; }
    DetailScreen > VerticalScroll { width: 100%; height: 100%; background: $surface;
                                    border: tall $primary; padding: 0 1; }
    DetailScreen .section { text-style: bold; color: $accent; margin-top: 1; }
    """

    def __init__(self, op: dict, raw: pd.Series | None) -> None:
        super().__init__()
        self.op, self.raw = op, raw

    def action_scroll(self, delta: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=delta, animate=False)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield from detail_body(self.op, self.raw)


def detail_body(op: dict, raw: pd.Series | None, title: str = "") -> ComposeResult:
    """The widgets describing one op (shared by the op details and the diff details)."""
    attrs = "" if raw is None or is_missing(raw.get("ATTRIBUTES")) else str(raw["ATTRIBUTES"])
    name = f"{op['op_code']} {op.get('size') or ''}".strip()
    yield Static(plain(f"{title}ID {op['id']}  {name}"))
    yield Static("Figures", classes="section")
    yield Static(_grid([
        ("Device time", fmt_us(op["device_time_us"])),
        ("Op-to-op gap", fmt_us(op["op_to_op_us"])),
        ("Share of total", fmt_pct(op["total_pct"], 2)),
        ("Bound", op["bound"] or "-"),
        ("Cores", f"{fmt_int(op['cores'])} of {fmt_int(op['available_cores'])}"),
        ("DRAM", f"{fmt_num(op['dram_gbps'], 1)} GB/s  {fmt_pct(op['dram_pct'])}"
         if not is_missing(op["dram_gbps"]) else "-"),
        ("FLOPs", f"{fmt_num(op['flops'], 2)} TFLOP/s  {fmt_pct(op['flops_pct'])}"
         if not is_missing(op["flops"]) else "-"),
        ("DRAM traffic (all tensors)", f"{fmt_num(op['io_dram_gbps'], 1)} GB/s  "
         f"{fmt_pct(op['io_dram_pct'])}" if not is_missing(op["io_dram_gbps"]) else "-"),
        ("Math fidelity", op["fidelity_desc"] or op["math_fidelity"] or "-"),
        ("Category", op["category"] or "-"), ("Signpost region", op["signpost"] or "-"),
        ("Device", fmt_int(op["device"])),
        ("Global call count", fmt_int(op["global_call_count"])),
        ("Corrupt timing", "yes (left out of totals)" if op["corrupt"] else "no"),
    ]))
    pm = op.get("pm_ideal_ns")
    if not is_missing(pm) and pm > 1 and not is_missing(op["device_time_us"]):
        ratio = pm / (op["device_time_us"] * 1000) * 100
        yield Static("Performance model", classes="section")
        yield Static(_grid([("Ideal (PM IDEAL)", fmt_us(pm / 1000)),
                            ("Actual", fmt_us(op["device_time_us"])),
                            ("Ideal / actual", fmt_pct(ratio))]))
    advice = advise(op, attrs)
    yield Static("Advice", classes="section")
    yield Static(plain("\n".join(f"• {a}" for a in advice) if advice else
                       "Nothing to suggest for this op."))
    if raw is not None:
        yield Static("Tensors", classes="section")
        yield Static(_tensors(raw))
        yield Static("Timing columns", classes="section")
        yield Static(_grid([(k, fmt_num(raw[k], 0)) for k in raw.index
                            if ("DURATION" in k or "CYCLE" in k or "LATENCY" in k
                                or k.startswith("PM ")) and not is_missing(raw[k])]))
        if attrs:
            yield Static("Attributes", classes="section")
            yield Static(plain(attrs.replace("; ", ";\n  ")))
        yield Static("All columns", classes="section")
        yield Static(_grid([(k, raw[k]) for k in raw.index if not k.startswith("_")
                            and not is_missing(raw[k]) and k != "ATTRIBUTES"]))


def _grid(pairs: list[tuple[str, object]]) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for k, v in pairs:
        t.add_row(plain(k), plain(v))
    return t


def _tensors(raw: pd.Series) -> Table:
    t = Table(box=None, header_style="bold")
    for h in ("Tensor", "Shape W×Z×Y×X (padded[logical])", "Layout", "Dtype", "Memory"):
        t.add_column(h, no_wrap=True)
    for prefix in ("INPUT", "OUTPUT"):
        for i in range(16):
            name = f"{prefix}_{i}"
            if f"{name}_MEMORY" not in raw.index or is_missing(raw[f"{name}_MEMORY"]):
                continue
            dims = []
            for d in "WZYX":
                for key in (f"{name}_{d}_PAD[LOGICAL]", f"{name}_{d}"):
                    if key in raw.index and not is_missing(raw[key]):
                        v = raw[key]
                        dims.append(str(int(v)) if isinstance(v, float) else str(v))
                        break
            t.add_row(plain(name), plain("×".join(dims)), plain(raw.get(f"{name}_LAYOUT")),
                      plain(raw.get(f"{name}_DATATYPE")), plain(raw.get(f"{name}_MEMORY")))
    return t


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


class GroupedView(Vertical):
    """Device time by op code or category (table + bar chart) and a per-op timeline."""

    DEFAULT_CSS = """
    GroupedView { height: 1fr; }
    GroupedView DataTable { height: 1fr; min-height: 5; }
    GroupedView Horizontal { height: 1fr; min-height: 8; }
    GroupedView PlotextPlot { width: 1fr; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.by = "op_code"
        self._ops: pd.DataFrame | None = None
        self._key: tuple | None = None

    def compose(self) -> ComposeResult:
        yield DataTable(id="groups", cursor_type="row", zebra_stripes=True)
        with Horizontal():
            yield PlotextPlot(id="bars")
            yield PlotextPlot(id="timeline")

    def show(self, ops: pd.DataFrame, rows: np.ndarray) -> None:
        """Rebuild only when the data or grouping changed."""
        key = (id(ops), len(rows), hash(rows.tobytes()) if len(rows) < 200_000 else len(rows),
               self.by)
        if key == self._key:
            return
        self._key = key
        sub = ops.iloc[rows]
        groups = group_ops(sub, self.by)
        table = self.query_one("#groups", DataTable)
        table.clear(columns=True)
        title = "Op code" if self.by == "op_code" else "Category"
        table.add_columns(title, "Count", "Total", "Mean", "Max", "Share")
        for g in groups.head(500).itertuples(index=False):
            table.add_row(plain(getattr(g, self.by)), Text(str(int(g.count)), justify="right"),
                          Text(fmt_us(g.total_us), justify="right"),
                          Text(fmt_us(g.mean_us), justify="right"),
                          Text(fmt_us(g.max_us), justify="right"),
                          Text(fmt_pct(g.share_pct), justify="right"))
        top = groups.head(10)
        bars = self.query_one("#bars", PlotextPlot)
        plt = bars.plt
        plt.clear_data()
        plt.clear_figure()
        labels = [str(clean_text(str(v)))[:18] for v in top[self.by]]
        values = [0.0 if is_missing(v) or not math.isfinite(v) else float(v)
                  for v in top["share_pct"]]
        if labels:
            plt.bar(labels[::-1], values[::-1], orientation="horizontal", width=0.6)
        plt.title(f"Share of device time by {title.lower()} (%)")
        bars.refresh()
        timeline = self.query_one("#timeline", PlotextPlot)
        tplt = timeline.plt
        tplt.clear_data()
        tplt.clear_figure()
        dt = sub.loc[~sub["is_signpost"], "device_time_us"].to_numpy(dtype="float64")
        x, y, size = downsample_sum(dt, max(20, (timeline.size.width or 110) - 10))
        if len(x):
            tplt.plot(x.tolist(), y.tolist(), marker="braille", fillx=True)
            tplt.ylim(0, float(y.max()) * 1.05 or 1.0)
        tplt.xlabel("op index")
        tplt.title(f"Device time over the run (us per {size} op{'s' if size > 1 else ''})")
        timeline.refresh()
