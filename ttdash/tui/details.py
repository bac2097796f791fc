"""The details of one op (enter): derived figures, the performance model, the spread over
devices of a merged op, timing, tensors, attributes, advice and every column of its row. Long
values (kernel sources, hashes, LOC) are cut to a few lines with the count of what is left out;
`x` shows them whole."""

from __future__ import annotations

import pandas as pd
from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..format import cell_text, fmt_int, fmt_num, fmt_pct, fmt_us, is_missing
from ..model.analysis.advice import op_advice
from ..model.columns import BY_KEY
from ..model.read.counters import RISC_COLUMN, RISC_ROLES, counter_cells, risc_times, slowest_risc
from .richtext import bullet_list, plain

#: A value longer than this is cut (with the count of characters left out) until `x`.
LONG_VALUE = 160


class DetailScreen(ModalScreen[None]):
    """Everything about one op: derived figures, timing, tensors, attributes, advice, raw row."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="ttdash.detail_close"),
                Binding("j,down", "scroll(1)", "Down", show=False, id="ttdash.detail_down"),
                Binding("k,up", "scroll(-1)", "Up", show=False, id="ttdash.detail_up"),
                Binding("x", "expand", "Whole values", id="ttdash.detail_expand")]
    DEFAULT_CSS = """
    DetailScreen { align: center middle; }
    DetailScreen > VerticalScroll { width: 100%; height: 100%; background: $surface;
                                    border: tall $primary; padding: 0 1; }
    DetailScreen .section { text-style: bold; color: $accent; margin-top: 1; }
    """

    def __init__(self, op: dict, raw: pd.Series | None) -> None:
        super().__init__()
        self.op, self.raw = op, raw
        self.expanded = False

    def action_scroll(self, delta: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=delta, animate=False)

    async def action_expand(self) -> None:
        """Long values whole (again: cut), where the reader was."""
        self.expanded = not self.expanded
        y = self.query_one(VerticalScroll).scroll_y
        await self.recompose()
        scroll = self.query_one(VerticalScroll)
        self.call_after_refresh(lambda: scroll.scroll_to(y=y, animate=False))

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield from detail_body(self.op, self.raw, expanded=self.expanded)


def T(key: str) -> str:
    """A figure's label in the details: its column's title (model.columns)."""
    return BY_KEY[key].title


def detail_body(op: dict, raw: pd.Series | None, title: str = "",
                expanded: bool = False) -> ComposeResult:
    """The widgets describing one op (shared by the op details and the diff details); long
    values cut unless `expanded` (`x`)."""

    def grid(pairs: list[tuple[str, object]]) -> Table:
        return _grid(pairs, expanded)

    attrs = "" if raw is None or is_missing(raw.get("ATTRIBUTES")) else str(raw["ATTRIBUTES"])
    name = f"{op['op_code']} {op.get('size') or ''}".strip()
    yield Static(plain(f"{title}ID {op['id']}  {name}"))
    yield Static("Figures", classes="section")
    yield Static(grid([
        (T("device_time_us"), fmt_us(op["device_time_us"])),
        (T("op_to_op_us"), fmt_us(op["op_to_op_us"]) if not is_missing(op["op_to_op_us"])
         or is_missing(op.get("gap_signed_us")) else
         f"{fmt_us(op['gap_signed_us'])} (negative: left out of totals)"),
        *([("Overlap (sub-devices)", f"{fmt_us(op['overlap_us'])} of it ran concurrently")]
          if not is_missing(op.get("overlap_us")) else []),
        (T("total_pct"), fmt_pct(op["total_pct"], 2)),
        (T("bound"), op["bound"] or "-"),
        (T("cores"), f"{fmt_int(op['cores'])} of {fmt_int(op['available_cores'])}"),
        ("DRAM", f"{fmt_num(op['dram_gbps'], 1)} GB/s  {fmt_pct(op['dram_pct'])}"
         if not is_missing(op["dram_gbps"]) else "-"),
        ("FLOPs", f"{fmt_num(op['flops'], 2)} TFLOP/s  {fmt_pct(op['flops_pct'])}"
         if not is_missing(op["flops"]) else "-"),
        ("DRAM traffic (est., DRAM tensors)", f"{fmt_num(op['io_dram_gbps'], 1)} GB/s  "
         f"{fmt_pct(op['io_dram_pct'])}"
         + (" * capped: the estimate exceeded the DRAM peak" if op.get("io_dram_capped") else "")
         if not is_missing(op["io_dram_gbps"]) else "-"),
        (T("fidelity_desc"), op["fidelity_desc"] or op["math_fidelity"] or "-"),
        *([(T("config"), op["config"])] if op.get("config") else []),
        (T("category"), op["category"] or "-"), (T("signpost"), op["signpost"] or "-"),
        (T("device"), fmt_int(op["device"])),
        (T("global_call_count"), fmt_int(op["global_call_count"])),
        (T("corrupt"), "yes (left out of totals)" if op["corrupt"] else "no"),
    ]))
    yield from _model_section(op)
    yield from _devices_section(op)
    if raw is not None and (times := risc_times(raw)):
        yield Static("Per-RISC kernel time", classes="section")
        yield Static(grid([(f"{risc} ({RISC_ROLES[risc]})", fmt_us(ns / 1000))
                            for risc, ns in times]
                           + [("Slowest", slowest_risc(raw))]))
    if raw is not None and (counters := counter_cells(raw)):
        yield Static("Utilisation counters", classes="section")
        yield Static(grid(counters))
    advice = [a.message[:1].upper() + a.message[1:] for a in op_advice(op)]
    yield Static("Advice", classes="section")
    if advice:
        yield Static(bullet_list(advice))
    else:
        yield Static(plain("Nothing to suggest for this op."))
    if raw is not None:
        yield Static("Tensors", classes="section")
        yield Static(_tensors(raw))
        yield Static("Timing columns", classes="section")
        shown = {RISC_COLUMN.format(r) for r in RISC_ROLES}  # the per-RISC section has them
        yield Static(grid([(k, fmt_num(raw[k], 0)) for k in raw.index
                            if ("DURATION" in k or "CYCLE" in k or "LATENCY" in k
                                or k.startswith("PM ")) and not is_missing(raw[k])
                            and k not in shown and "UTIL" not in k]))
        if attrs:
            yield Static("Attributes", classes="section")
            yield Static(plain(_cut(attrs, expanded, 8 * LONG_VALUE).replace("; ", ";\n  ")))
        yield Static("All columns", classes="section")
        yield Static(grid([(k, raw[k]) for k in raw.index if not k.startswith("_")
                            and not is_missing(raw[k]) and k != "ATTRIBUTES"]))


def _model_section(op: dict) -> ComposeResult:
    """The op against the profiler's performance model (model.perfmodel's columns)."""
    pm = op.get("pm_ideal_ns")
    if is_missing(op.get("device_time_us")) or is_missing(pm):
        return
    yield Static("Performance model", classes="section")
    if is_missing(op.get("pm_eff_pct")):
        yield Static(plain("unmodelled: the profiler's model has no time for this op "
                           f"(PM IDEAL {cell_text(pm)} ns); not a sign it is fine"))
        return
    yield Static(_grid([("Ideal (PM IDEAL)", fmt_us(pm / 1000)),
                        ("Actual", fmt_us(op["device_time_us"])),
                        (T("pm_eff_pct"), fmt_pct(op["pm_eff_pct"])),
                        (T("recoverable_us"), fmt_us(op.get("recoverable_us"))),
                        *([(T("pm_bound"), op["pm_bound"])] if op.get("pm_bound") else [])]))


def _devices_section(op: dict) -> ComposeResult:
    """A merged op of a multi-device run: its kernel time on each device, as min / median /
    max (the row itself is the slowest device's, or a CCL op's mean: tt-perf-report's merge)."""
    n = op.get("dev_n")
    if is_missing(n) or n < 2:
        return
    yield Static("Devices", classes="section")
    yield Static(_grid([
        ("Devices with a valid time", fmt_int(n)),
        ("Min / median / max", f"{fmt_us(op['dev_min_us'])} / {fmt_us(op['dev_median_us'])} / "
                               f"{fmt_us(op['dev_max_us'])}"),
        ("This row", "the mean over devices (a CCL op)" if op.get("dev_mean")
         else "the slowest device's"),
    ]))


def _cut(text: str, expanded: bool, limit: int = LONG_VALUE) -> str:
    if expanded or len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit:,} characters: x shows them)"


def _grid(pairs: list[tuple[str, object]], expanded: bool = False) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")  # a long token (a path, a hash list) wraps, never "…"
    for k, v in pairs:
        t.add_row(plain(k), plain(_cut(cell_text(v), expanded)))
    return t


def _tensors(raw: pd.Series) -> Table:
    t = Table(box=None, header_style="bold", padding=(0, 1), collapse_padding=True, expand=True)
    # Short headers and a fixed name column: at 80 columns the table fits without cutting
    # "Tensor" or the names; shapes and memory wrap inside their own cells.
    t.add_column("Tensor", no_wrap=True, min_width=8)
    t.add_column("Shape W×Z×Y×X", min_width=9, overflow="fold")
    t.add_column("Layout", overflow="fold")
    t.add_column("Dtype", no_wrap=True)
    t.add_column("Memory", overflow="fold")
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
                        dims.append(cell_text(v))  # float32 4096.0 is "4096"
                        break
            t.add_row(plain(name), plain("×".join(dims)), plain(raw.get(f"{name}_LAYOUT")),
                      plain(raw.get(f"{name}_DATATYPE")), plain(raw.get(f"{name}_MEMORY")))
    return t
