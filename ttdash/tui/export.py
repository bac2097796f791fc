"""Export by file name: the suffix picks the format from the one registry (report.formats), as
`report -o` and `diff -o` do; the trace screen's op rows and grouped table, the diff screen's diff.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import numpy as np

from ..model import View
from ..model.errors import TraceError
from ..report import formats
from ..report.single import groups_csv, groups_markdown

#: What the op table exports: every registered format with a writer and a file suffix.
OP_EXPORTS = tuple(f.name for f in formats.FORMATS if f.writer and f.suffixes)
#: The grouped view's writers, by registry format.
GROUP_WRITERS: dict[str, Callable[..., None]] = {"csv": groups_csv, "markdown": groups_markdown}


def suffix_list(offered: tuple[str, ...]) -> str:
    """The offered formats' suffixes, as a prompt or an error names them."""
    return ", ".join(f.suffixes[0] for f in formats.FORMATS if f.name in offered and f.suffixes)


def export_format(target: Path, offered: tuple[str, ...]) -> formats.OutputFormat:
    """The format `target`'s suffix asks for, among `offered`; TraceError otherwise."""
    fmt = formats.for_path(target, offered)
    if fmt is None:
        raise TraceError(target, f"no export format for this name; end it in "
                         f"{suffix_list(offered)}")
    return fmt


def write_ops(fmt: formats.OutputFormat, view: View, rows: np.ndarray,
              shown: Callable[[], View], out: TextIO) -> None:
    """The op rows a table shows, in `fmt`: a writer that takes `rows` gets the table's rows (its
    order and filter; shares stay those of the whole window); a whole-view writer (Perfetto, the
    text report) gets `shown()`, the shown ops as a view."""
    write = fmt.write()
    if "rows" in inspect.signature(write).parameters:
        write(view, out, rows=rows)
    else:
        write(shown(), out)
