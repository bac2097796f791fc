"""`ttdash doctor`: the host checks of health.doctor, as a table, markdown or JSON."""

from __future__ import annotations

import json
import os
import shutil
import stat
import textwrap
from typing import TextIO

from ..model.errors import TraceError
from ..model.read.text import clean_text
from ..present.formats import write
from ..report.safe import md_cell
from ..schemas import SCHEMA_VERSION
from .common import refuse_input_as_output, write_output
from .options import DoctorOptions

MARK = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "unknown": "?"}


def doctor(opts: DoctorOptions) -> int:
    from ..health.doctor import exit_code, run_checks, smi_checks

    if opts.smi_snapshot:
        refuse_input_as_output(opts.out, [opts.smi_snapshot])
    checks = run_checks()
    if opts.smi_snapshot:
        checks += smi_checks(_load_snapshot(opts.smi_snapshot))
    width = max(60, min(shutil.get_terminal_size().columns, 120))

    write_output(opts.out, lambda out: write("doctor", opts.format, checks, out, width))
    return exit_code(checks)


def checks_json(checks: list, out: TextIO, width: int) -> None:
    json.dump({"schema_version": SCHEMA_VERSION,  # schemas/doctor.schema.json
               "checks": [c.as_dict() for c in checks]}, out, indent=1)
    out.write("\n")


def checks_markdown(checks: list, out: TextIO, width: int) -> None:
    out.write("| check | status | detail |\n|---|---|---|\n")
    for c in checks:
        out.write(f"| {md_cell(clean_text(c.name))} | {c.status} | "
                  f"{md_cell(clean_text(c.detail))} |\n")


def checks_table(checks: list, out: TextIO, width: int) -> None:
    counts = {s: sum(c.status == s for c in checks) for s in MARK}
    out.write("ttdash doctor: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
              + " (read-only: sysfs, procfs and the environment)\n")
    for c in checks:  # names and details carry file and env text: made inert
        out.write(f"{MARK[c.status]:<5} {clean_text(c.name)}\n")
        out.write(textwrap.fill(str(clean_text(c.detail)), width, initial_indent="      ",
                                subsequent_indent="      ", break_on_hyphens=False) + "\n")


#: A tt-smi snapshot is a few KB per board: past this it is not one (/dev/zero streams forever).
SNAPSHOT_MAX_BYTES = 16 << 20


def _read_snapshot(path: str) -> str:
    """The text of a snapshot file: a regular file only (a FIFO would wait for a writer, a
    character device such as /dev/zero never ends), opened without blocking, at most
    SNAPSHOT_MAX_BYTES; TraceError (one line naming it, exit 2) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (pipe)"
                    if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
                    else "not a regular file")
            raise TraceError(path, f"{kind}: a tt-smi snapshot is a JSON file (save one with "
                             "`tt-smi -s`)")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(SNAPSHOT_MAX_BYTES + 1)
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if len(data) > SNAPSHOT_MAX_BYTES:
        raise TraceError(path, f"larger than {SNAPSHOT_MAX_BYTES >> 20} MiB: not a tt-smi "
                         "snapshot (a few KB per board)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(path, f"not UTF-8 text (byte {exc.start + 1})") from None


def _load_snapshot(path: str) -> dict:
    try:
        doc = json.loads(_read_snapshot(path))
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not JSON: {exc.msg}", line=exc.lineno, column=exc.colno) \
            from None
    except RecursionError:
        raise TraceError(path, "not a tt-smi snapshot: JSON nested too deep") from None
    except ValueError as exc:  # an integer past Python's digit limit (4,300)
        raise TraceError(path, f"not a tt-smi snapshot: {str(exc).split(';')[0]}") from None
    if not isinstance(doc, dict):
        raise TraceError(path, "not a tt-smi snapshot (a JSON object with device_info)")
    return doc
