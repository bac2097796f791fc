"""The command line's checks of names a user types (cli.py's argparse types): paths that are
not empty and are UTF-8. Linux hands Python the bytes of an argument that are not UTF-8 as lone
surrogates (os.fsdecode's surrogateescape); pyarrow cannot open such a name, JSON and the
history store cannot carry it, a terminal cannot print it. They are refused here, in one line
that shows those bytes as \\xNN."""

from __future__ import annotations

import argparse

NOT_UTF8 = "not a UTF-8 name (its other bytes shown as \\xNN); ttdash takes UTF-8 names only"


def shown(text: str) -> str:
    """`text` printable: the bytes that are not UTF-8 as \\xNN."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that came from no byte (only in-process)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def path_arg(text: str) -> str:
    """A file or directory to read: not empty (Path("") would be the current directory) and
    UTF-8."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    if not is_utf8(text):
        raise argparse.ArgumentTypeError(f"{shown(text)}: {NOT_UTF8}")
    return text


def output_path(text: str) -> str:
    """--output FILE: not empty (an empty name quietly meant stdout). Other bytes are fine: the
    file is only created and written, its name never printed to stdout."""
    if not text:
        raise argparse.ArgumentTypeError("an empty file name (leave out -o to write to stdout)")
    return text


def text_error(args: argparse.Namespace) -> str | None:
    """The first argument that is not UTF-8 text, as a usage error (None: all are). The paths
    were checked by path_arg; the workload's own arguments (run's) pass through untouched."""
    for key, value in vars(args).items():
        if key in ("cmd", "output"):
            continue
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, str) and not is_utf8(v):
                return f"'{shown(v)}' is not UTF-8 text (its other bytes shown as \\xNN)"
    return None
