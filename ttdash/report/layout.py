"""Laying out the plain-text report on a terminal of a given width: which columns give way
(least useful first; the ID, device time and gap never: the op code is cut with "…" instead),
header lines broken between words (an op's label: present.labels.op_labels)."""

from __future__ import annotations

from ..model.columns import BY_KEY, EARLY_DROP_PRIORITY, KEEP_PRIORITY
from ..present.labels import op_labels  # noqa: F401  (report/advice.py's name)

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

    def priority(f: str) -> int:
        return BY_KEY[f].priority if f in BY_KEY else EARLY_DROP_PRIORITY

    def drop(lo: int) -> None:  # highest priority first; ties: the later column first
        for f in sorted((f for f in fields if priority(f) >= lo),
                        key=lambda f: (-priority(f), -fields.index(f))):
            if need() <= width:
                return
            fields.remove(f)

    drop(EARLY_DROP_PRIORITY)
    shrink_op(OP_MIN)
    drop(KEEP_PRIORITY + 1)
    shrink_op(OP_FLOOR)
