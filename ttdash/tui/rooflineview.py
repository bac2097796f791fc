"""The roofline view: placed ops (or op codes) by arithmetic intensity against TFLOP/s, under the
arch's DRAM and compute roofs, the op table's cursor op highlighted (model.roofline)."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ..format import log_ticks
from ..model.analysis.roofline import Points, points, roofs
from .widgets import OpPicked, plain, rows_key

MAX_POINTS = 4000  # scatter cells on screen are far fewer; the rest are drawn by a sample


class RooflineView(Vertical, can_focus=True):
    """Keys: left/right previous/next placed op, c per op / per op code, enter details."""

    DEFAULT_CSS = """
    RooflineView { height: 1fr; }
    RooflineView #roof-info { height: 3; padding: 0 1; text-wrap: nowrap;
                              text-overflow: ellipsis; }
    RooflineView PlotextPlot { height: 1fr; }
    """
    BINDINGS = [
        Binding("left", "step(-1)", "Roofline: previous placed op", show=False,
                id="ttdash.roofline_prev"),
        Binding("right", "step(1)", "Roofline: next placed op", show=False,
                id="ttdash.roofline_next"),
        Binding("c", "per_group", "Roofline: per op / per op code", show=False,
                id="ttdash.roofline_group"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.by_op_code = False
        self.view = None
        self.pts: Points | None = None
        self.cursor_pos: int | None = None
        self._key: tuple | None = None
        self._rows: np.ndarray | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="roof-info")
        yield PlotextPlot(id="roof-plot")

    def show(self, view, rows: np.ndarray, cursor_pos: int | None) -> None:
        self._rows = rows
        key = (id(view.ops), rows_key(rows), self.by_op_code)
        if key != self._key:
            self._key = key
            self.view = view
            self.pts = points(view.ops, rows, self.by_op_code)
        self.cursor_pos = cursor_pos
        self.draw()

    def on_resize(self) -> None:
        if self.pts is not None:
            self.draw()

    def _selected(self) -> int | None:
        if self.pts is None or self.by_op_code or self.cursor_pos is None:
            return None
        hit = np.flatnonzero(self.pts.pos == self.cursor_pos)
        return int(hit[0]) if len(hit) else None

    def action_step(self, d: int) -> None:
        """The previous / next placed op in the table's order."""
        if self.pts is None or self.by_op_code or not len(self.pts.pos) or self._rows is None:
            return
        order = self.pts.order  # left/right walk the table's order
        here = np.flatnonzero(self._rows == self.cursor_pos)
        c = int(here[0]) if len(here) else -1
        i = int(np.searchsorted(order, c, side="right")) if d > 0 \
            else int(np.searchsorted(order, c, side="left")) - 1
        i = min(max(i, 0), len(order) - 1)
        self.cursor_pos = int(self.pts.pos[i])
        self.post_message(OpPicked(self.cursor_pos))
        self.draw()

    def action_per_group(self) -> None:
        self.by_op_code = not self.by_op_code
        if self.view is not None and self._rows is not None:
            self.show(self.view, self._rows, self.cursor_pos)

    def draw(self) -> None:
        pts, view = self.pts, self.view
        if pts is None or view is None:
            return
        arch = view.trace.arch
        sel = self._selected()
        fid = pts.fidelity[sel] if sel is not None else None
        if not isinstance(fid, str) or not fid:
            known = [f for f in pts.fidelity if isinstance(f, str) and f]
            fid = max(set(known), key=known.count) if known else "LoFi"
        slope, peak = roofs(arch, fid)
        what = "op codes" if self.by_op_code else "ops"
        head = Text.assemble(("Roofline", "bold"),
                             f" · {arch.name} · DRAM {arch.dram_gbps:g} GB/s · ")
        head.append(f"{fid} roof {peak:,.0f} TFLOP/s ({arch.worker_cores} cores)" if peak
                    else f"no {fid} peak for {arch.name}")
        n = len(pts.label)
        counts = Text(f"{n:,} {what} placed; {pts.unplaced:,} of {pts.device_ops:,} device ops "
                      "not (no FLOPs or DRAM bytes: matmuls with shapes) · c: per "
                      + ("op" if self.by_op_code else "op code"))
        line2 = Text()
        if sel is not None:
            op = view.ops.iloc[int(pts.pos[sel])]
            x, y = float(pts.intensity[sel]), float(pts.tflops[sel])
            roof = min(x * slope, peak) if peak else x * slope
            side = "" if not peak else (" (DRAM side of the ridge)" if x * slope < peak
                                        else " (compute side of the ridge)")
            line2 = Text.assemble(("▶ ", "bold"), (f"#{op['id']} ", "bold"))
            line2.append_text(plain(str(op["op_code"])))
            line2.append(f" · {x:,.1f} FLOP/B · {y:,.1f} TFLOP/s = {y / roof * 100:.0f}% of "
                         f"the roof there{side}")
        elif not self.by_op_code:
            line2 = Text("the table's op is not placed (left/right: placed ops)", style="dim")
        for line in (head, counts, line2):
            line.no_wrap, line.overflow = True, "ellipsis"
        info = Text("\n", no_wrap=True, overflow="ellipsis").join([head, counts, line2])
        self.query_one("#roof-info", Static).update(info)

        plot = self.query_one("#roof-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if n:  # (plotext's log scale fails on an empty plot)
            plt.xscale("log")
            plt.yscale("log")
            x = pts.intensity.astype(float)
            y = pts.tflops.astype(float)
            ridge = peak / slope if peak else float(np.median(x))
            lo = min(float(x.min()), ridge / 10) / 2
            hi = max(float(x.max()), ridge * 4) * 2
            grid = np.geomspace(lo, hi, 60)
            dram = grid * slope
            if peak:
                plt.plot(grid.tolist(), np.minimum(dram, peak).tolist(), marker="braille",
                         color="red", label=f"roof ({fid})")
            else:
                plt.plot(grid.tolist(), dram.tolist(), marker="braille", color="red",
                         label="DRAM roof")
            if n > MAX_POINTS:  # drawn by an even sample: the cells cannot show more
                keep = np.linspace(0, n - 1, MAX_POINTS).astype(int)
                x, y = x[keep], y[keep]
            plt.scatter(x.tolist(), y.tolist(), marker="dot", color="cyan", label=what)
            # decade ticks on both log axes (plotext's own: 40.4 / 256.5)
            ys = np.concatenate([y, np.minimum(grid * slope, peak) if peak else grid * slope])
            plt.xticks(*log_ticks(lo, hi))
            plt.yticks(*log_ticks(float(ys[ys > 0].min()), float(ys.max())))
            if sel is not None:
                plt.scatter([float(pts.intensity[sel])], [float(pts.tflops[sel])], marker="@",
                            color="yellow", label="selected")
        else:
            plt.title("no op can be placed: no matmul with shapes in these ops")
        plt.xlabel("FLOP per DRAM byte")
        plt.ylabel("TFLOP/s")
        plot.refresh()
