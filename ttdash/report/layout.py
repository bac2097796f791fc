"""Laying out the plain-text report on a terminal of a given width: which columns give way
(least useful first; the ID, device time and gap never: the op code is cut with "…" instead),
and header lines broken between words."""

from __future__ import annotations

from ..model.columns import BY_KEY

#: Dropped first when a terminal is too narrow for every column, before the op code is shortened.
DROP_ORDER = ("config", "fidelity_desc", "overlap_us", "dram_gbps", "flops", "device", "rank")
#: Dropped next, once the op code is down to OP_MIN cells. The ID (advice points at it), the
#: device time and the gap are never dropped: the op code is cut (with "…") instead.
DROP_LATER = ("cores", "flops_pct", "dram_pct", "bound", "total_pct")
OP_MIN, OP_FLOOR = 24, 12


def wrap(line: str, width: int | None) -> list[str]:
    """A header or footer line in `width` columns, broken between words (never inside one);
    continuation lines indented."""
    import textwrap

    if not width or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False) or [line]


def fit_columns(fields: list[str], widths: dict[str, int], width: int,
                titles: dict[str, str]) -> None:
    """Drop and narrow columns (in place) until the table fits `width`: short titles first,
    then the least useful columns, then the op code down to OP_MIN cells, then the next
    columns, then the op code down to OP_FLOOR."""
    def need() -> int:
        return sum(widths[k] for k in fields) + 2 * (len(fields) - 1)

    if need() > width:  # the narrow titles ("Gap", "Device") and cells set the widths
        for f in fields:
            titles[f] = BY_KEY[f].short
            widths[f] = max(widths[f] - len(BY_KEY[f].title) + len(titles[f]), len(titles[f]),
                            widths.get(f"_cells:{f}", 0))

    def shrink_op(floor: int) -> None:
        if "op_code" in fields and need() > width:
            widths["op_code"] = max(floor, widths["op_code"] - (need() - width))

    for f in DROP_ORDER:
        if need() <= width:
            break
        if f in fields:
            fields.remove(f)
    shrink_op(OP_MIN)
    for f in DROP_LATER:
        if need() <= width:
            break
        if f in fields:
            fields.remove(f)
    shrink_op(OP_FLOOR)
