"""A corpus of hostile inputs, made by code (nothing copied into the repo).

Every case is a :class:`Case` that can create itself at any path (`Case.make(path)`), so the same
bad file can be given to `report`, to `diff`, to the headless `open` and placed inside a watched
profiler directory. :func:`write_corpus` writes them all into one directory.

Valid rows come from `ttdash.sim.generate_ops` (a realistic V2.1 trace with signposts), written
the way the profiler writes them (header, one row per line, empty = missing), with LF endings.

Also here: the subprocess runner used by the hostile tests (wall-clock limit, peak RSS via
wait4), strict JSON parsing, the inert-text checks, and the headless `open` driver. Running this
file as a script (`python hostile_corpus.py open PATH`) drives the headless `open` on PATH in a
fresh process, for files too big to load inside the test process.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------- base trace

BASE_OPS = 30
BASE_SEED = 7
SPARSE_SIZE = 2 * 1024**3

#: The profiler's key columns (docs/FORMATS.md "Key columns"); each is dropped in turn.
REQUIRED_COLUMNS = ("OP CODE", "DEVICE KERNEL DURATION [ns]")
KEY_COLUMNS = (
    "OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "DEVICE ID", "DEVICE ARCH", "ATTRIBUTES",
    "MATH FIDELITY", "CORE COUNT", "AVAILABLE WORKER CORE COUNT", "HOST START TS",
    "DEVICE FW START CYCLE", "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]",
    "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]", "METAL TRACE ID",
    "METAL TRACE REPLAY SESSION ID", "PM IDEAL [ns]", "INPUT_0_MEMORY", "INPUT_0_DATATYPE",
)


def base_table(n_ops: int = BASE_OPS, seed: int = BASE_SEED, **kw) -> tuple[list[str],
                                                                               list[list[str]]]:
    """(header, rows) of a generated trace, every cell a string exactly as the CSV holds it."""
    from ttdash.sim import generate_ops

    df = generate_ops(n_ops, seed=seed, **kw)
    text = df.to_csv(index=False, lineterminator="\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


def to_csv_text(header: list[str], rows: list[list[str]], terminator: str = "\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=terminator)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def base_bytes() -> bytes:
    header, rows = base_table()
    return to_csv_text(header, rows).encode("utf-8")


def write_base(path: Path) -> Path:
    path.write_bytes(base_bytes())
    return path


def base_op_count() -> int:
    """Non-signpost rows of the base trace (what `report --ignore-signposts` counts)."""
    header, rows = base_table()
    t = header.index("OP TYPE")
    return sum(1 for r in rows if r[t] != "signpost")


def _set(header: list[str], rows: list[list[str]], col: str, row: int, value: str) -> None:
    rows[row][header.index(col)] = value


def _op_rows(header: list[str], rows: list[list[str]]) -> list[int]:
    t = header.index("OP TYPE")
    return [i for i, r in enumerate(rows) if r[t] != "signpost"]


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One hostile input.

    expect: "work" (exit 0, valid JSON), "error" (one line on stderr, exit 2) or "either".
    where: regex the error line must match right after the file name (e.g. line:col), if any.
    big: huge on disk (sparse 2 GiB): never load it in the test process.
    same_ops: when it works, it must give exactly the base trace's op count.
    """

    name: str
    make: Callable[[Path], None] = field(repr=False, compare=False)
    expect: str = "either"
    where: str | None = None
    big: bool = False
    same_ops: bool = False
    doc: str = ""


def _bytes_case(name: str, data: Callable[[], bytes], **kw) -> Case:
    def make(path: Path) -> None:
        path.write_bytes(data())
    return Case(name, make, **kw)


def _table_case(name: str, edit: Callable[[list[str], list[list[str]]],
                                          tuple[list[str], list[list[str]]] | None],
                **kw) -> Case:
    def data() -> bytes:
        header, rows = base_table()
        out = edit(header, rows)
        if out is not None:
            header, rows = out
        return to_csv_text(header, rows).encode("utf-8")
    return _bytes_case(name, data, **kw)


def _junk(nul: bool) -> bytes:
    rnd = random.Random(1234)
    if nul:
        return bytes(rnd.randrange(256) for _ in range(8192))
    return bytes(rnd.choice([*range(1, 256), 10, 10, 44, 44]) for _ in range(8192))


def _latin1() -> bytes:
    header, rows = base_table()
    i = _op_rows(header, rows)[0]
    _set(header, rows, "OP CODE", i, "LATIN1PLACEHOLDER")
    data = to_csv_text(header, rows).encode("utf-8")
    return data.replace(b"LATIN1PLACEHOLDER", "MatmulCaf\xe9Op\xb5s".encode("latin-1"))


def _latin1_numeric() -> bytes:
    """A Latin-1 byte inside a number (DEVICE FW START CYCLE of an op row)."""
    header, rows = base_table()
    _set(header, rows, "DEVICE FW START CYCLE", _op_rows(header, rows)[2], "LATIN1PLACEHOLDER")
    data = to_csv_text(header, rows).encode("utf-8")
    return data.replace(b"LATIN1PLACEHOLDER", b"1102\xb50")


def _latin1_header() -> bytes:
    """A Latin-1 byte in a non-key column name (a perf counter in microseconds)."""
    header, rows = base_table()
    header = header + ["PM FPU UTIL (LATIN1PLACEHOLDER)"]
    rows = [r + ["1"] for r in rows]
    data = to_csv_text(header, rows).encode("utf-8")
    return data.replace(b"LATIN1PLACEHOLDER", b"\xb5s")


def _padded_header(header, rows):
    """Column names with spaces around them (a hand-edited or re-exported file)."""
    return [f" {h}" if i % 3 == 0 else f"{h} " if i % 3 == 1 else h
            for i, h in enumerate(header)], rows


def _quoted_newline(header, rows):
    ops = _op_rows(header, rows)
    _set(header, rows, "OP CODE", ops[1], "Matmul\nDeviceOperation")
    _set(header, rows, "ATTRIBUTES", ops[2], "{'a': 'line one\nline two'; 'b': '\"q\"'}")
    _set(header, rows, "OP CODE", ops[3], "Softmax,\r\nWith, \"commas\"")


def _wide(header, rows):
    extra = [f"PERF COUNTER {i} [cycles]" for i in range(10_000 - len(header))]
    return header + extra, [r + [""] * len(extra) for r in rows]


def _duplicate(col: str):
    def edit(header, rows):
        j = header.index(col)
        return header + [col], [r + [r[j]] for r in rows]
    return edit


def _drop(col: str):
    def edit(header, rows):
        j = header.index(col)
        return header[:j] + header[j + 1:], [r[:j] + r[j + 1:] for r in rows]
    return edit


def _cells(values: dict[str, list[str]]):
    """Put values into the first op rows (one value per row), column by column."""
    def edit(header, rows):
        ops = _op_rows(header, rows)
        for col, vals in values.items():
            for k, v in enumerate(vals):
                _set(header, rows, col, ops[2 + 3 * k], v)
    return edit


def _all_cells(col: str, value: str):
    def edit(header, rows):
        for i in _op_rows(header, rows):
            _set(header, rows, col, i, value)
    return edit


def _corrupt() -> bytes:
    header, rows = base_table(corrupt_every=6)
    return to_csv_text(header, rows).encode("utf-8")


def _multi_device() -> bytes:
    """A valid 2-device trace (signposts have empty durations, so that column is float)."""
    header, rows = base_table(devices=2)
    return to_csv_text(header, rows).encode("utf-8")


def _cut() -> bytes:
    data = base_bytes()
    body = data.rstrip(b"\n")
    last = body.rfind(b"\n") + 1
    # Keep the first 5 fields and a few bytes of the 6th of the last row.
    line = body[last:]
    cut = [m.start() for m in re.finditer(b",", line)][4] + 4
    return body[:last] + line[:cut]


def _sparse(min_row_bytes: int) -> Callable[[Path], None]:
    """Header, valid rows (3 of them, or repeated up to `min_row_bytes`), then a hole up to
    2 GiB (reads as NUL bytes, no newline): a sparse file, cheap to make."""
    def make(path: Path) -> None:
        data = base_bytes()
        lines = data.splitlines(keepends=True)
        with open(path, "wb") as f:
            f.write(lines[0])
            if min_row_bytes <= 0:
                f.writelines(lines[1:4])
            else:
                body = b"".join(lines[1:])
                while f.tell() < min_row_bytes:
                    f.write(body)
            f.truncate(SPARSE_SIZE)
    return make


def _symlink_loop(path: Path) -> None:
    os.symlink(path.name, path)  # path -> path: ELOOP on open/stat
    loop_dir = path.parent / "loop_dir"
    if not loop_dir.exists() and not loop_dir.is_symlink():
        os.symlink(".", loop_dir)  # a directory loop beside it


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _safe_id(col: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", col).strip("_")


def build_cases() -> list[Case]:
    cases = [
        _bytes_case("empty", lambda: b"", expect="error", where=r": "),
        _bytes_case("header_only", lambda: base_bytes().split(b"\n", 1)[0] + b"\n",
                    expect="error", where=r":2: "),
        _bytes_case("binary_junk", lambda: _junk(nul=True), expect="error", where=r":1: "),
        _bytes_case("binary_junk_no_nul", lambda: _junk(nul=False), expect="either"),
        _bytes_case("utf8_bom", lambda: b"\xef\xbb\xbf" + base_bytes(), expect="work",
                    same_ops=True),
        _bytes_case("crlf", lambda: base_bytes().replace(b"\n", b"\r\n"), expect="work",
                    same_ops=True),
        _bytes_case("bom_and_crlf", lambda: b"\xef\xbb\xbf" + base_bytes().replace(
            b"\n", b"\r\n"), expect="work", same_ops=True),
        _bytes_case("latin1_opcode", _latin1, expect="either", same_ops=True),
        _bytes_case("latin1_in_numeric_cell", _latin1_numeric, expect="either",
                    where=r":\d+(:\d+)?: "),
        _bytes_case("latin1_header_name", _latin1_header, expect="either", same_ops=True),
        _table_case("header_names_with_spaces", _padded_header, expect="work", same_ops=True),
        _bytes_case("cr_only_line_endings", lambda: base_bytes().replace(b"\n", b"\r"),
                    expect="either"),
        _table_case("quoted_newline", _quoted_newline, expect="work", same_ops=True),
        _table_case("header_10k_columns", _wide, expect="work", same_ops=True),
        _table_case("dup_column_OP_CODE", _duplicate("OP CODE"), expect="either",
                    where=r":1(:\d+)?: "),
        _table_case("dup_column_DEVICE_KERNEL_DURATION", _duplicate(
            "DEVICE KERNEL DURATION [ns]"), expect="either", where=r":1(:\d+)?: "),
        _table_case("dup_column_HOST_END_TS", _duplicate("HOST END TS"), expect="work",
                    same_ops=True),
        _table_case("dup_column_INPUT_0_MEMORY", _duplicate("INPUT_0_MEMORY"), expect="work",
                    same_ops=True),
        _table_case("dup_column_PERF_COUNTER", lambda h, r: (
            h + ["SFPU Util Min (%)"] * 3, [x + ["1", "2", "3"] for x in r]), expect="work",
            same_ops=True),
    ]
    for col in KEY_COLUMNS:
        required = col in REQUIRED_COLUMNS
        cases.append(_table_case(f"missing_{_safe_id(col)}", _drop(col),
                                 expect="error" if required else "work",
                                 where=r":1: " if required else None))
    cases += [
        _table_case("nonnumeric_kernel_duration", _cells({
            "DEVICE KERNEL DURATION [ns]": ["abc"]}), expect="either", where=r":\d+:\d+: "),
        _table_case("nonnumeric_core_count", _cells({"CORE COUNT": ["many"]}),
                    expect="either", where=r":\d+:\d+: "),
        _table_case("nonnumeric_op_to_op", _cells({"OP TO OP LATENCY [ns]": ["1,5"]}),
                    expect="either", where=r":\d+:\d+: "),
        _table_case("nonnumeric_non_key_column", _cells({
            "DEVICE BRISC KERNEL DURATION [ns]": ["n/a", "??"], "PM IDEAL [ns]": ["x"]}),
            expect="either", where=r":\d+:\d+: "),
        _table_case("negative_numbers", _cells({
            "DEVICE KERNEL DURATION [ns]": ["-1500", "-0.5"],
            "OP TO OP LATENCY [ns]": ["-20", "-1e6"],
            "CORE COUNT": ["-8"], "DEVICE ID": ["-1"], "HOST START TS": ["-5"],
            "DEVICE FW DURATION [ns]": ["-100"]}), expect="either"),
        _table_case("nan_values", _cells({
            "DEVICE KERNEL DURATION [ns]": ["nan", "NaN"], "OP TO OP LATENCY [ns]": ["NaN"],
            "CORE COUNT": ["nan"], "HOST START TS": ["nan"], "DEVICE ID": ["NaN"]}),
            expect="either"),
        _table_case("inf_values", _cells({
            "DEVICE KERNEL DURATION [ns]": ["inf", "Infinity"],
            "OP TO OP LATENCY [ns]": ["inf"], "CORE COUNT": ["inf"],
            "DEVICE FW DURATION [ns]": ["inf"]}), expect="either"),
        _table_case("neg_inf_values", _cells({
            "DEVICE KERNEL DURATION [ns]": ["-inf"], "OP TO OP LATENCY [ns]": ["-inf"],
            "HOST START TS": ["-inf"], "DEVICE ID": ["-inf"]}), expect="either"),
        _table_case("huge_1e300_durations", _all_cells("DEVICE KERNEL DURATION [ns]", "1e300"),
                    expect="either"),
        _table_case("huge_1e300_mixed", _cells({
            "DEVICE KERNEL DURATION [ns]": ["1e300", "1.7e308"],
            "OP TO OP LATENCY [ns]": ["1e300", "1.7e308"], "CORE COUNT": ["1e300"],
            "DEVICE FW START CYCLE": ["1e300"], "GLOBAL CALL COUNT": ["1e300"],
            "DEVICE ID": ["1e300"]}), expect="either"),
        _bytes_case("corrupt_timing_6_9e9", _corrupt, expect="work", same_ops=True),
        _bytes_case("multi_device_2", _multi_device, expect="work"),
        _bytes_case("cut_last_line", _cut, expect="error", where=r":\d+:\d+: "),
        Case("sparse_2gb_after_header", _sparse(0), expect="either", big=True),
        Case("sparse_2gb_after_100k_rows", _sparse(100_000), expect="either", big=True),
        Case("symlink_loop", _symlink_loop, expect="error", where=r": "),
        Case("fifo", _fifo, expect="error", where=r": "),
    ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases


CASES: dict[str, Case] = {c.name: c for c in build_cases()}


def write_corpus(directory: str | os.PathLike[str]) -> dict[str, Path]:
    """Write every case into `directory` as `<name>.csv`; returns {name: path}."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, case in CASES.items():
        p = d / f"{name}.csv"
        case.make(p)
        out[name] = p
    return out


# --------------------------------------------------------------------------- untrusted text

EVIL_OPS = [
    "[bold red]x[/]",
    "[link=file:///etc/passwd]y[/link]",
    "\x1b[31mred\x1b[0m csi",
    "\x9b31m c1 csi",
    "\x1b]0;pwned\x07 title",
    "\x1b]52;c;ZXZpbA==\x07 clipboard",
    "\u202eevil bidi\u202c",
    "\u2066isolate\u2069 \u200fmark",
    "L" * 10_000,
    '=HYPERLINK("http://x")',
    "@SUM(1)",
    "+1+2",
    "-2+3",
    "Matmul [bold]\x1b[5m blink",
]
EVIL_SIGNPOSTS = ["[bold red]x[/]", "\x1b]0;pwned\x07sp", "\u202esp",
                  "[link=file:///etc/passwd]y[/link]"]
EVIL_ATTRIBUTES = ("{'a': '[bold red]x[/]'; 'b': '\x1b]52;c;ZXZpbA==\x07'; 'c': '\u202e'; "
                   "'d': '\x1b[2J\x1b[H'; 'e': '" + "A" * 10_000 + "'}")
#: Literal text that must show up as-is (markup not parsed) where op codes are shown.
LITERALS = ("[bold red]x[/]", "[link=file:///etc/passwd]y[/link]")
FORMULAS = ('=HYPERLINK("http://x")', "@SUM(1)", "+1+2", "-2+3")


def evil_table(extra_columns: dict[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """The base trace with hostile op codes, signpost names and attributes.

    extra_columns: {column: value} put into every op row as well (e.g. MATH FIDELITY)."""
    header, rows = base_table(n_ops=40, seed=3)
    ops = _op_rows(header, rows)
    t = header.index("OP TYPE")
    sps = [i for i, r in enumerate(rows) if r[t] == "signpost"]
    for k, s in enumerate(EVIL_OPS):
        _set(header, rows, "OP CODE", ops[k], s)
        _set(header, rows, "ATTRIBUTES", ops[k], EVIL_ATTRIBUTES)
        _set(header, rows, "OP TO OP LATENCY [ns]", ops[k], "1500")
    for k, i in enumerate(sps):
        _set(header, rows, "OP CODE", i, EVIL_SIGNPOSTS[k % len(EVIL_SIGNPOSTS)])
        _set(header, rows, "ATTRIBUTES", i, "\x1b]0;pwned\x07 [bold]msg[/]")
    for col, value in (extra_columns or {}).items():
        for i in ops:
            _set(header, rows, col, i, value)
    return header, rows


def write_evil(path: Path, extra_columns: dict[str, str] | None = None) -> Path:
    header, rows = evil_table(extra_columns)
    path.write_text(to_csv_text(header, rows), encoding="utf-8")
    return path


# ESC, BEL and the other C0 controls except tab/newline, DEL, C1, and bidi controls.
UNSAFE_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                       r"\u2066-\u2069]")
SGR_RE = re.compile(r"\x1b\[[0-9;]*m")


def unsafe_chars(text: str, allow_sgr: bool = False) -> list[str]:
    """The unsafe characters in `text` (with context); SGR colour codes allowed if asked."""
    if allow_sgr:
        text = SGR_RE.sub("", text)
    return [repr(text[max(0, m.start() - 20):m.end() + 20]) for m in UNSAFE_RE.finditer(text)][:5]


def strings_in(doc) -> list[str]:
    """Every string (keys and values) in a decoded JSON document."""
    out = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            out.extend(k for k in x if isinstance(k, str))
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


# --------------------------------------------------------------------------- subprocess runs

RSS_LIMIT = int(1.5 * 1024**3)
TIMEOUT = 60.0


@dataclass
class Run:
    cmd: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int  # bytes
    hung: bool
    #: daemon threads an in-process call left running (cli_inproc.run_main; a process ends them)
    threads_left: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"$ {' '.join(self.cmd)}\n-> exit {self.returncode} after {self.seconds:.1f}s, "
                f"peak RSS {self.peak_rss / 2**20:.0f} MiB{' (HUNG, killed)' if self.hung else ''}"
                f"\n--- stderr ---\n{self.stderr[-3000:]}\n--- stdout (head) ---\n"
                f"{self.stdout[:800]}")


def run_cli(*args: str, exe: str | None = None, timeout: float = TIMEOUT,
            env: dict | None = None, cwd: str | None = None) -> Run:
    """Run `python -m ttdash ARGS` (or `exe ARGS`); measure time and the child's peak RSS."""
    cmd = [exe, *args] if exe else [sys.executable, "-m", "ttdash", *args]
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=e,
                                cwd=cwd, start_new_session=True)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)  # the session this call started
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(cmd, proc.returncode, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), seconds, usage.ru_maxrss * 1024, hung)


def _reject_constant(name: str):
    raise ValueError(f"not JSON: {name}")


def strict_json(text: str):
    """json.loads that rejects NaN/Infinity (not JSON) and trailing garbage."""
    return json.loads(text, parse_constant=_reject_constant)


# --------------------------------------------------------------------------- headless open

OPEN_KEYS = ("j", "G", "enter", "escape", "2", "c", "c", "1", "3", "enter", "4", "right", "t",
             "5", "c", "1", "slash", *"Matmul",
             "enter", "g", "right_square_bracket", "enter", "escape", "s")


async def drive_open(path: str | os.PathLike[str], size: tuple[int, int] = (120, 36)) -> str | None:
    """Load `path` like `ttdash open` and press keys headless.

    Returns None when the app ran, or the TraceError's one line when loading failed cleanly.
    Any other exception propagates.
    """
    from ttdash.model import Trace, TraceError, Window
    from ttdash.model.read.discover import resolve_trace_path
    from ttdash.tui.app import open_app

    try:
        view = Trace.load(resolve_trace_path(path), columns="all").view(Window("all"))
    except TraceError as exc:
        return exc.oneline()
    app = open_app(view)
    async with app.run_test(size=size) as pilot:
        for key in OPEN_KEYS:
            await pilot.press(key)
        await pilot.pause()
    return None


def open_outcome(path: str) -> tuple[str, str | None]:
    """`drive_open` in a worker process: ("ok", TraceError line or None), or ("crash",
    traceback) for any other exception (so a pool can hand it back whatever it was)."""
    import traceback

    try:
        return "ok", asyncio.run(drive_open(path))
    except Exception:  # noqa: BLE001 - reported to the test, which fails with it
        return "crash", traceback.format_exc()


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "open":
        msg = asyncio.run(drive_open(argv[1]))
        print(json.dumps({"error": msg}))
        return 0
    if len(argv) == 1:
        for name, p in write_corpus(argv[0]).items():
            print(name, p)
        return 0
    print("usage: hostile_corpus.py DIR | open PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
