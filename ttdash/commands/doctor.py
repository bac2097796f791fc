"""`ttdash doctor`: the host checks of health.doctor, as a table, markdown or JSON."""

from __future__ import annotations

import json
import shutil
import textwrap
from typing import TextIO

from ..model.errors import TraceError
from ..model.text import clean_text
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

    def render(out: TextIO) -> None:
        if opts.format == "json":
            json.dump({"schema_version": SCHEMA_VERSION,  # schemas/doctor.schema.json
                       "checks": [c.as_dict() for c in checks]}, out, indent=1)
            out.write("\n")
        elif opts.format == "markdown":
            out.write("| check | status | detail |\n|---|---|---|\n")
            for c in checks:
                out.write(f"| {md_cell(clean_text(c.name))} | {c.status} | "
                          f"{md_cell(clean_text(c.detail))} |\n")
        else:
            counts = {s: sum(c.status == s for c in checks) for s in MARK}
            out.write("ttdash doctor: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
                      + " (read-only: sysfs, procfs and the environment)\n")
            for c in checks:  # names and details carry file and env text: made inert
                out.write(f"{MARK[c.status]:<5} {clean_text(c.name)}\n")
                out.write(textwrap.fill(str(clean_text(c.detail)), width, initial_indent="      ",
                                        subsequent_indent="      ", break_on_hyphens=False)
                          + "\n")

    write_output(opts.out, render)
    return exit_code(checks)


def _load_snapshot(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not JSON: {exc.msg}", line=exc.lineno, column=exc.colno) \
            from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(path, getattr(exc, "strerror", None) or str(exc)) from None
    except RecursionError:
        raise TraceError(path, "not a tt-smi snapshot: JSON nested too deep") from None
    except ValueError as exc:  # an integer past Python's digit limit (4,300)
        raise TraceError(path, f"not a tt-smi snapshot: {str(exc).split(';')[0]}") from None
    if not isinstance(doc, dict):
        raise TraceError(path, "not a tt-smi snapshot (a JSON object with device_info)")
    return doc
