"""Hardening: every hostile input through report, diff, open (headless) and watch --once.

The rule for every command and every case: it either works (exit 0, valid JSON: no NaN or
Infinity, nothing but the document on stdout, nothing on stderr) or it prints exactly one line
on stderr naming the bad file (with line/column where that makes sense) and exits 2. Never a
traceback, never a hang (60 s), never more than 1.5 GiB of memory.

Also: untrusted text (Rich markup, terminal escapes, bidi controls, 10k-char strings,
spreadsheet formulas) stays inert in every output, and exports are written safely.

The commands run in this process (`cli_inproc.run_main`: `ttdash.cli.main` with stdout and
stderr captured as a child's would be), except what only a real process shows
(`hostile_corpus.run_cli`): the 2 GiB files (their memory peak), the FIFOs (a blocked open
would hang the test process, not a child that can be killed), the console script, a terminal.
"""

from __future__ import annotations

import csv
import errno
import io
import math
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import hostile_corpus as hc
import pytest
from cli_inproc import run_main
from conftest import screen_text
from hostile_corpus import CASES, RSS_LIMIT, Case, Run, run_cli, strict_json

CASE_NAMES = list(CASES)
TS = "2025_01_01_00_00_00"
#: Library internals a user should never have to read in an error message.
INTERNAL_WORDS = ("Traceback", "pyarrow", "ArrowInvalid", "straddl", "block size", "Exception",
                  "Error:", "numpy", "pandas")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    return hc.write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    return hc.write_base(tmp_path_factory.mktemp("valid") / "ops_perf_results_valid.csv")


@pytest.fixture(scope="module")
def base_report(valid) -> dict:
    r = run_main("report", str(valid), "--format", "json")
    assert r.returncode == 0, r.describe()
    return strict_json(r.stdout)


@pytest.fixture(scope="module")
def base_watch(tmp_path_factory, valid) -> dict:
    out = {}
    for placement in ("logs", "report"):
        root = tmp_path_factory.mktemp(f"watch_base_{placement}")
        target = place(root, placement)
        shutil.copyfile(valid, target)
        r = run_main("watch", str(root), "--once")
        assert r.returncode == 0, r.describe()
        out[placement] = strict_json(r.stdout)
    return out


def in_a_process(case: Case) -> bool:
    """The cases only a child process can run: a 2 GiB file (its memory peak is the check) and
    a FIFO (an open that blocks would hang the test process itself)."""
    return case.big or case.name == "fifo"


@pytest.fixture(scope="module")
def ran(corpus, valid, tmp_path_factory, open_pool) -> dict[tuple[str, str, str],
                                                            tuple[Run, Path]]:
    """Every case through `report`, `diff` (both ways) and `watch --once` (in .logs and as a
    report): {(command, case, variant): (the run, the damaged file)}. Each stays a test of its
    own below. In this process one after the other (`run_main`), but the `in_a_process` cases
    as children, in a thread meanwhile (the headless `open` sessions run in `open_pool`'s
    workers at the same time)."""
    from concurrent.futures import ThreadPoolExecutor

    jobs: dict[tuple[str, str, str], tuple[tuple[str, ...], Path]] = {}
    for name in CASE_NAMES:
        path = corpus[name]
        jobs[("report", name, "")] = (("report", str(path), "--format", "json"), path)
        for direction in ("case_vs_valid", "valid_vs_case"):
            a, b = (path, valid) if direction == "case_vs_valid" else (valid, path)
            jobs[("diff", name, direction)] = (("diff", str(a), str(b), "--format", "json"), path)
        for placement in ("logs", "report"):
            root = tmp_path_factory.mktemp(f"watch_{placement}") / "profiler"
            target = place(root, placement)
            CASES[name].make(target)
            jobs[("watch", name, placement)] = (("watch", str(root), "--once"), target)
    children = [k for k in jobs if in_a_process(CASES[k[1]])]  # 2 big cases, the FIFO: 15
    with ThreadPoolExecutor(max_workers=1) as pool:
        futures = {k: pool.submit(run_cli, *jobs[k][0]) for k in children}
        runs = {k: run_main(*args) for k, (args, _) in jobs.items() if k not in futures}
        runs.update((k, f.result()) for k, f in futures.items())
    return {k: (runs[k], jobs[k][1]) for k in jobs}


def place(root: Path, placement: str) -> Path:
    """Where a case goes inside a profiler directory."""
    if placement == "logs":
        p = root / ".logs" / "cpp_device_perf_report.csv"
    else:
        p = root / "reports" / TS / f"ops_perf_results_{TS}.csv"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


# --------------------------------------------------------------------------- the rule


def check_outcome(r: Run, case: Case, bad: Path, what: str) -> dict | None:
    """The hostile-input rule; returns the JSON document when the command worked."""
    ctx = f"[{case.name}] {what}\n{r.describe()}"
    assert not r.hung, f"HANG: killed after {r.seconds:.0f}s\n{ctx}"
    assert "Traceback" not in r.stderr, f"traceback on stderr\n{ctx}"
    assert r.peak_rss < RSS_LIMIT, f"peak RSS {r.peak_rss / 2**30:.2f} GiB >= 1.5 GiB\n{ctx}"
    if r.returncode == 0:
        assert case.expect != "error", f"expected a clean error (exit 2), got exit 0\n{ctx}"
        assert r.stderr == "", f"exit 0 but stderr is not empty\n{ctx}"
        try:
            return strict_json(r.stdout)
        except ValueError as exc:
            pytest.fail(f"exit 0 but stdout is not valid JSON ({exc})\n{ctx}")
    assert r.returncode == 2, f"exit {r.returncode}, expected 0 or 2\n{ctx}"
    assert case.expect != "work", f"this input must work, got an error\n{ctx}"
    lines = r.stderr.splitlines()
    assert len(lines) == 1, f"{len(lines)} lines on stderr, expected exactly one\n{ctx}"
    prefix = f"ttdash: {bad}"
    assert lines[0].startswith(prefix), f"error line does not start with {prefix!r}\n{ctx}"
    rest = lines[0][len(prefix):]
    if case.where:
        assert re.match(case.where, rest), (f"error position {rest[:30]!r} does not match "
                                            f"{case.where!r}\n{ctx}")
    leaked = [w for w in INTERNAL_WORDS if w in rest]
    assert not leaked, f"error message leaks library internals {leaked}: not a clear error\n{ctx}"
    assert r.stdout == "", f"exit 2 but something on stdout\n{ctx}"
    return None


def check_report_doc(doc: dict, case: Case, base: dict | None, ctx: str) -> None:
    tot = doc["totals"]
    for k in ("device_time_us", "op_to_op_us"):
        assert isinstance(tot[k], (int, float)) and math.isfinite(tot[k]), (k, tot, ctx)
    assert isinstance(doc["ops"], list) and tot["ops"] == len(doc["ops"]), ctx
    if case.same_ops and base is not None:
        assert tot["ops"] == base["totals"]["ops"], (
            f"{ctx}: {tot['ops']} ops, the same trace without the damage has "
            f"{base['totals']['ops']}")
    if case.name.startswith("corrupt_timing"):
        assert tot["corrupt_rows"] > 0 and tot["device_time_us"] < 6.9e6 / 2, (ctx, tot)


# --------------------------------------------------------------------------- report


@pytest.mark.parametrize("name", CASE_NAMES)
def test_report(name, ran, base_report):
    case = CASES[name]
    r, path = ran[("report", name, "")]
    doc = check_outcome(r, case, path, "report --format json")
    if doc is not None:
        check_report_doc(doc, case, base_report, f"[{name}] report")


def test_report_installed_binary(corpus, valid):
    """The console script, not `python -m`: a good file, a cut file, a FIFO, a 2 GiB file.
    The good and the cut file also in this process: `run_main` gives what the process gave."""
    exe = shutil.which("ttdash", path=str(Path(sys.executable).parent)) or shutil.which("ttdash")
    assert exe, "the ttdash console script is not installed next to the interpreter"
    r = run_cli("report", str(valid), "--format", "json", exe=exe)
    assert r.returncode == 0 and strict_json(r.stdout)["totals"]["ops"] > 0, r.describe()
    same_in_process(r, "report", str(valid), "--format", "json")
    for name in ("cut_last_line", "fifo", "sparse_2gb_after_header"):
        r = run_cli("report", str(corpus[name]), "--format", "json", exe=exe)
        check_outcome(r, CASES[name], corpus[name], f"installed {exe} report")
        if name == "cut_last_line":
            same_in_process(r, "report", str(corpus[name]), "--format", "json")


def same_in_process(process: Run, *args: str) -> None:
    inproc = run_main(*args)
    assert (inproc.returncode, inproc.stdout, inproc.stderr) == (
        process.returncode, process.stdout, process.stderr), (
        f"in this process:\n{inproc.describe()}\nas a process:\n{process.describe()}")


# --------------------------------------------------------------------------- diff


@pytest.mark.parametrize("direction", ["case_vs_valid", "valid_vs_case"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_diff(name, direction, ran):
    case = CASES[name]
    r, path = ran[("diff", name, direction)]
    doc = check_outcome(r, case, path, f"diff {direction} --format json")
    if doc is not None:
        for side in ("baseline", "candidate"):
            assert doc[side]["ops"] >= 0, doc[side]
        assert isinstance(doc["ops"], list)


# --------------------------------------------------------------------------- open (headless)


@pytest.fixture(scope="module")
def open_pool(corpus):
    """Every small case driven headless (`drive_open`), in two worker processes: each case is
    a whole Textual session, CPU-bound, and CI has two cores. Started before the CLI runs
    (`ran` asks for it) so that they go on meanwhile: {name: future of `open_outcome`}."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    small = [n for n in CASE_NAMES if not CASES[n].big]
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        yield {n: pool.submit(hc.open_outcome, str(corpus[n])) for n in small}


@pytest.fixture(scope="module")
def opened(open_pool) -> dict[str, tuple[str, str | None]]:
    """The sessions' outcomes; the cases stay separate tests below; a crash comes back as its
    traceback."""
    return {n: f.result() for n, f in open_pool.items()}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_open_headless(name, corpus, opened):
    case, path = CASES[name], corpus[name]
    if case.big:
        # 2 GiB on disk: drive the same headless app in a child, to measure its memory.
        script = Path(__file__).with_name("hostile_corpus.py")
        r = run_cli(str(script), "open", str(path), exe=sys.executable)
        ctx = f"[{name}] open (headless, child process)\n{r.describe()}"
        assert not r.hung and "Traceback" not in r.stderr and r.returncode == 0, ctx
        assert r.peak_rss < RSS_LIMIT, ctx
        err = strict_json(r.stdout.strip().splitlines()[-1])["error"]
    else:
        status, err = opened[name]
        assert status == "ok", f"[{name}] open crashed:\n{err}"
    if err is None:
        assert case.expect != "error", f"[{name}] open: expected a clean TraceError, it loaded"
    else:
        assert case.expect != "work", f"[{name}] open: this input must work: {err}"
        assert err.startswith(str(path)) and "\n" not in err, f"[{name}] open: {err!r}"


# --------------------------------------------------------------------------- watch --once


@pytest.mark.parametrize("placement", ["logs", "report"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_watch_once(name, placement, ran, base_watch):
    case = CASES[name]
    r, target = ran[("watch", name, placement)]
    root = target.parents[2] if placement == "report" else target.parents[1]
    # A bad file inside a watched directory is not bad input to `watch`: it must keep working.
    doc = check_outcome(r, Case(case.name, case.make, expect="work"), target,
                        f"watch --once with the case as {target.relative_to(root)}")
    assert doc["exists"] is True
    base = base_watch[placement]
    if placement == "logs" and case.same_ops:
        assert doc["live"]["rows"] == base["live"]["rows"], (doc["live"], base["live"])
    if placement == "report":
        assert len(doc["runs"]) <= 1
        if case.expect == "work":
            assert len(doc["runs"]) == 1 and doc["runs"][0]["complete"], doc["runs"]


def test_fifo_named_like_a_report(tmp_path, valid):
    """reports/x/ops_perf_results_x.csv as a FIFO: nobody may open it (that would block)."""
    root = tmp_path / "profiler"
    fifo = root / "reports" / "x" / "ops_perf_results_x.csv"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    r = run_cli("watch", str(root), "--once")
    assert r.returncode == 0 and not r.hung, r.describe()
    assert strict_json(r.stdout)["runs"] == []
    for args in (("report", str(root), "--format", "json"), ("report", str(fifo)),
                 ("diff", str(root), str(valid), "--format", "json"),
                 ("diff", str(valid), str(fifo), "--format", "json")):
        r = run_cli(*args)
        assert not r.hung and r.returncode == 2, r.describe()
        assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.describe()
    # Next to a real report, the FIFO is ignored and the report is used.
    good = root / "reports" / TS / f"ops_perf_results_{TS}.csv"
    good.parent.mkdir()
    shutil.copyfile(valid, good)
    r = run_cli("report", str(root), "--format", "json")
    assert r.returncode == 0 and strict_json(r.stdout)["file"] == str(good), r.describe()


def test_symlink_loops_in_watched_dir(tmp_path, valid):
    root = tmp_path / "profiler"
    good = root / "reports" / TS / f"ops_perf_results_{TS}.csv"
    good.parent.mkdir(parents=True)
    shutil.copyfile(valid, good)
    reports = root / "reports"
    os.symlink("..", reports / "up")  # reports/up -> profiler (contains reports again)
    os.symlink(".", reports / TS / "self")
    os.symlink("b", reports / "a")
    os.symlink("a", reports / "b")  # a <-> b: ELOOP
    os.symlink("ops_perf_results_loop.csv", reports / "ops_perf_results_loop.csv")
    logs = root / ".logs"
    logs.mkdir()
    os.symlink("cpp_device_perf_report.csv", logs / "cpp_device_perf_report.csv")
    os.symlink(".", logs / "again.csv")  # a directory named like a CSV, looping
    r = run_main("watch", str(root), "--once")
    assert r.returncode == 0 and not r.hung and "Traceback" not in r.stderr, r.describe()
    doc = strict_json(r.stdout)
    assert [Path(x["path"]).resolve() for x in doc["runs"]] == [good.resolve()], doc["runs"]
    r = run_main("report", str(root), "--format", "json")
    assert r.returncode == 0, r.describe()
    assert Path(strict_json(r.stdout)["file"]).resolve() == good.resolve()


# --------------------------------------------------------------------------- untrusted text


def _pty_run(args: list[str], timeout: float = 60) -> str:
    """Run `python -m ttdash ARGS` with stdout on a pseudo-terminal (so colour is on)."""
    import pty

    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "ttdash", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    os.close(slave)
    chunks, t0 = [], time.monotonic()
    try:
        while True:
            if time.monotonic() - t0 > timeout:
                proc.kill()
                pytest.fail(f"HANG: {args} on a pty")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
    err = proc.stderr.read().decode()
    proc.wait(timeout=10)
    assert proc.returncode == 0, err
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def assert_inert(text: str, where: str, allow_sgr: bool = False) -> None:
    bad = hc.unsafe_chars(text, allow_sgr=allow_sgr)
    assert not bad, f"{where}: control/escape/bidi characters in the output: {bad}"
    if allow_sgr:
        assert "\x1b]" not in text, f"{where}: an OSC sequence (title/clipboard/hyperlink)"


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    return hc.write_evil(tmp_path_factory.mktemp("evil") / "ops_perf_results_evil.csv")


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_untrusted_text_report(evil, fmt):
    r = run_main("report", str(evil), "--format", fmt, "--ignore-signposts",
                env={"NO_COLOR": "1"})
    assert r.returncode == 0 and r.stderr == "", r.describe()
    out = r.stdout
    assert_inert(out, f"report --format {fmt}")
    if fmt == "json":
        doc = strict_json(out)
        for s in hc.strings_in(doc):
            assert_inert(s, "report json (decoded strings)")
        codes = [o["op_code"] for o in doc["ops"]]
        for lit in hc.LITERALS:
            assert lit in codes, f"{lit!r} not shown literally in json op codes"
        names = {s["name"] for s in doc["signposts"]}
        assert "[bold red]x[/]" in names and "[link=file:///etc/passwd]y[/link]" in names
    else:
        for lit in hc.LITERALS:
            assert lit in out, f"{lit!r} not shown literally in report --format {fmt}"
    if fmt == "table":
        widest = max(len(line) for line in out.splitlines())
        assert widest <= 400, f"a 10k-char op code made a {widest}-char table line"


def test_untrusted_text_report_forced_color(evil):
    """On a terminal (colour on), only SGR colour codes may appear: no OSC, no raw text
    escapes, no hyperlinks from `[link=...]` markup."""
    out = _pty_run(["report", str(evil), "--ignore-signposts"])
    assert "\x1b[" in out, "expected colour on a terminal"
    assert_inert(out, "report table on a terminal", allow_sgr=True)
    plain = hc.SGR_RE.sub("", out)
    for lit in hc.LITERALS:
        assert lit in plain


def test_untrusted_text_table_renderer_forced_color(evil):
    """The table renderer itself with colour forced (what a colour terminal gets)."""
    from ttdash.model import Trace, Window
    from ttdash.report.single import to_table

    view = Trace.load(evil).view(Window("all"))
    buf = io.StringIO()
    to_table(view, buf, color=True)
    out = buf.getvalue()
    assert "\x1b[" in out
    assert_inert(out, "to_table(color=True)", allow_sgr=True)
    for lit in hc.LITERALS:
        assert lit in hc.SGR_RE.sub("", out)


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


NUMERIC_REPORT_FIELDS = ("id", "device", "device_time_us", "op_to_op_us", "total_pct", "cores",
                         "dram_gbps", "dram_pct", "flops", "flops_pct", "io_dram_gbps",
                         "io_dram_pct", "global_call_count")


def test_formulas_neutralised_in_report_csv(evil):
    r = run_main("report", str(evil), "--format", "csv", "--ignore-signposts")
    assert r.returncode == 0, r.describe()
    rows = _csv_rows(r.stdout)
    codes = [row["op_code"] for row in rows]
    for f in hc.FORMULAS:
        assert "'" + f in codes, f"{f!r} not neutralised in report csv (op codes: " \
                                 f"{[c for c in codes if f in c]})"
    for row in rows:
        for col in ("op_code", "signpost", "op_type", "math_fidelity", "category", "size"):
            assert row[col][:1] not in ("=", "+", "-", "@", "\t", "\r"), (col, row[col])
        for col in NUMERIC_REPORT_FIELDS:
            assert row[col] == "" or _is_number(row[col]), (col, row[col])


@pytest.mark.parametrize("values", [["=1+1", "ok", "@SUM(A1)", None, "=1+1"],
                                    ["=x", "'=x", "-2", "ok"]])  # two categories made one
def test_a_categorical_text_column_is_neutralised_as_its_values_are(values):
    """The CSV writer neutralises a categorical column through its categories (no work per
    row); where two categories would become one ("=x" and "'=x"), row by row: the same texts."""
    import pandas as pd

    from ttdash.report.safe import neutralise_formula, neutralise_series

    got = neutralise_series(pd.Series(values, dtype="category"))
    assert [None if pd.isna(v) else v for v in got] == \
        [None if v is None else neutralise_formula(v) for v in values]


def test_negative_numbers_stay_numbers_in_csv(tmp_path, valid):
    """A -1.5 in a numeric column is a number, not a formula: no apostrophe."""
    faster = tmp_path / "faster.csv"
    header, rows = hc.base_table()
    j = header.index("DEVICE KERNEL DURATION [ns]")
    for r in rows:
        if r[j]:
            r[j] = str(max(1, int(r[j]) // 2))
    faster.write_text(hc.to_csv_text(header, rows))
    r = run_main("diff", str(valid), str(faster), "--format", "csv")
    assert r.returncode == 0, r.describe()
    rows = _csv_rows(r.stdout)
    deltas = [row["delta_us"] for row in rows if row["delta_us"]]
    assert deltas and all(_is_number(d) for d in deltas), deltas[:5]
    assert any(float(d) < 0 for d in deltas)
    assert all(_is_number(row["delta_pct"]) for row in rows if row["delta_pct"])


@pytest.mark.parametrize("direction", ["evil_vs_valid", "valid_vs_evil"])
@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_untrusted_text_diff(evil, valid, fmt, direction):
    a, b = (evil, valid) if direction == "evil_vs_valid" else (valid, evil)
    r = run_main("diff", str(a), str(b), "--format", fmt, "--ignore-signposts", "--top", "50",
                env={"NO_COLOR": "1"})
    assert r.returncode == 0 and r.stderr == "", r.describe()
    assert_inert(r.stdout, f"diff --format {fmt} ({direction})")
    if fmt == "json":
        for s in hc.strings_in(strict_json(r.stdout)):
            assert_inert(s, "diff json (decoded strings)")
    if fmt in ("table", "markdown"):
        assert "[bold red]x[/]" in r.stdout, f"markup not shown literally in diff {fmt}"
    if fmt == "json":
        assert "[bold red]x[/]" in hc.strings_in(strict_json(r.stdout)), \
            "markup not shown literally in diff json"
    if fmt == "csv":
        rows = _csv_rows(r.stdout)
        codes = [row["op_code"] for row in rows]
        for f in hc.FORMULAS:
            assert "'" + f in codes, f"{f!r} not neutralised in diff csv"
        for row in rows:
            for col in ("op_code", "size", "region"):
                assert row[col][:1] not in ("=", "+", "-", "@"), (col, row[col])
            for col in ("delta_us", "delta_pct", "baseline_us", "candidate_us"):
                assert row[col] == "" or _is_number(row[col]), (col, row[col])
    if fmt == "markdown":
        for f in ('=HYPERLINK("http://x")', "@SUM(1)", "+1+2"):
            assert f"'{_md(f)}" in r.stdout, f"{f!r} not neutralised in diff markdown"


def _md(formula: str) -> str:
    """A formula as markdown shows it after its apostrophe: an "@" is also a mention, broken by
    a zero-width space entity (#37.2)."""
    return formula.replace("@", "@&#8203;")


def test_formulas_neutralised_in_report_markdown(evil):
    r = run_main("report", str(evil), "--format", "markdown", "--ignore-signposts")
    assert r.returncode == 0, r.describe()
    for f in ('=HYPERLINK("http://x")', "@SUM(1)", "+1+2"):
        assert f"| '{_md(f)}" in r.stdout, f"{f!r} not neutralised in report markdown"


@pytest.mark.parametrize("column", ["MATH FIDELITY", "INPUT_0_DATATYPE", "DEVICE ARCH",
                                    "SUB DEVICE ID"])
def test_untrusted_text_in_other_columns(tmp_path, column):
    """Escapes in other text columns the outputs show (fidelity, dtypes, arch)."""
    header, rows = hc.base_table()
    if column not in header:
        header, rows = header + [column], [r + [""] for r in rows]
    j = header.index(column)
    for r in rows:
        r[j] = "\x1b]0;pwned\x07\x1b[31mHiFi4\u202e\x9b"
    p = tmp_path / "ops_perf_results_cols.csv"
    p.write_text(hc.to_csv_text(header, rows))
    for fmt in ("table", "csv", "json", "markdown"):
        r = run_main("report", str(p), "--format", fmt, "--ignore-signposts",
                    env={"NO_COLOR": "1"})
        if r.returncode == 2 and column == "DEVICE ARCH":
            # An unknown arch may be refused, but cleanly and without echoing the escapes.
            assert len(r.stderr.splitlines()) == 1, r.describe()
            assert_inert(r.stderr, f"report error with a hostile {column}")
            continue
        assert r.returncode == 0, r.describe()
        assert_inert(r.stdout, f"report --format {fmt} with a hostile {column}")
        if fmt == "json":
            for s in hc.strings_in(strict_json(r.stdout)):
                assert_inert(s, f"report json strings with a hostile {column}")


async def test_untrusted_text_in_other_columns_open(tmp_path):
    """The same hostile fidelity / dtype / memory cells in the open view and its detail."""
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app
    from ttdash.tui.optable import OpTable
    from ttdash.tui.widgets import DetailScreen

    header, rows = hc.base_table()
    evil = "\x1b]0;pwned\x07\x1b[31mHiFi4\u202e\x9b[bold]"
    for col in ("MATH FIDELITY", "INPUT_0_DATATYPE", "INPUT_0_MEMORY", "INPUT_0_LAYOUT"):
        j = header.index(col)
        for r in rows:
            r[j] = evil
    p = tmp_path / "ops_perf_results_cols.csv"
    p.write_text(hc.to_csv_text(header, rows))
    view = Trace.load(p, columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(200, 48)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        lines = "\n".join("".join(seg.text for seg in t.render_line(y))
                          for y in range(t.size.height))
        assert_inert(lines, "OpTable.render_line with hostile fidelity/dtype cells")
        assert_screen_inert(app, "open main screen with hostile fidelity/dtype cells")
        ops = [i for i in range(len(view.ops)) if not view.ops["is_signpost"].iloc[i]]
        t.cursor = int(list(t.rows).index(ops[3]))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await scroll_through(app, pilot, "detail screen with hostile fidelity/dtype cells")


# ----------------------------------------------------------------- untrusted text in the TUI


def assert_screen_inert(app, where: str) -> str:
    plain, styled = screen_text(app)
    assert_inert(plain, where)
    assert_inert(styled, where + " (styled)", allow_sgr=True)
    return plain


async def scroll_through(app, pilot, where: str) -> str:
    """Every page of the current screen's scrollable body, checked and joined."""
    from textual.containers import VerticalScroll

    body = app.screen.query_one(VerticalScroll)
    pages, y = [], 0
    while True:
        body.scroll_to(y=y, animate=False)
        await pilot.pause()
        pages.append(assert_screen_inert(app, f"{where} (scrolled to {y})"))
        if y >= body.max_scroll_y:
            return "\n".join(pages)
        y = min(y + max(1, body.size.height - 2), body.max_scroll_y)


async def test_untrusted_text_in_open(evil):
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app
    from ttdash.tui.optable import OpTable
    from ttdash.tui.widgets import DetailScreen, HelpScreen

    view = Trace.load(evil, columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("o")  # file order: the hostile rows are the file's first ones
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        lines = ["".join(seg.text for seg in t.render_line(y)) for y in range(t.size.height)]
        joined = "\n".join(lines)
        assert_inert(joined, "OpTable.render_line")
        for lit in hc.LITERALS:
            assert lit in joined, f"{lit!r} not shown literally in the op table"
        screen = assert_screen_inert(app, "open: main screen with the signpost panel")
        assert "[bold red]x[/]" in screen
        assert "[link=file:///etc/" in screen, "the signpost panel hides the markup signpost"

        codes = view.ops["op_code"].to_numpy(dtype=object)
        for code in ("[bold red]x[/]", "\x1b]0;pwned\x07 title", "L" * 10_000,
                     "\u202eevil bidi\u202c"):
            cleaned = hc.UNSAFE_RE.sub("", code)
            hits = [i for i, c in enumerate(codes) if c in (code, cleaned)
                    and not view.ops["is_signpost"].iloc[i]]
            assert hits, f"op {code[:20]!r} missing from the view"
            t.cursor = int(list(t.rows).index(hits[0]))
            await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, DetailScreen), app.screen
            detail = await scroll_through(app, pilot, f"detail screen of {code[:20]!r}")
            if code == "[bold red]x[/]":
                assert "[bold red]x[/]" in detail and "'a': '[bold red]x[/]'" in detail
            await pilot.press("escape")
            await pilot.pause()

        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert_screen_inert(app, "help screen")
        await pilot.press("escape")
        await pilot.press("2")
        await pilot.pause()
        grouped = assert_screen_inert(app, "grouped view")
        assert "[bold red]x[/]" in grouped
        await pilot.press("1", "right_square_bracket", "enter")  # narrow to an evil signpost
        await pilot.pause()
        assert_screen_inert(app, "narrowed to a hostile signpost region")
        await pilot.press("escape", "slash", "left_square_bracket", *"bold",
                          "right_square_bracket", "enter")
        await pilot.pause()
        assert_screen_inert(app, "filtered by markup text")


# --------------------------------------------------------------------------- exports


def _temps(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".")]


def test_write_atomic_never_overwrites_without_force(tmp_path):
    from ttdash.model.errors import TraceError
    from ttdash.report.export import write_atomic

    target = tmp_path / "out.csv"
    assert write_atomic(target, "a,b\n") == target
    assert target.read_text() == "a,b\n"
    with pytest.raises(TraceError, match="exists"):
        write_atomic(target, "x\n")
    assert target.read_text() == "a,b\n"
    write_atomic(target, "c,d\n", force=True)
    assert target.read_text() == "c,d\n"
    with pytest.raises(TraceError):
        write_atomic(tmp_path, "x\n", force=True)  # a directory
    with pytest.raises(TraceError):
        write_atomic(tmp_path / "no" / "such" / "dir.csv", "x\n")
    assert _temps(tmp_path) == []


def test_write_atomic_refuses_watched_directory(tmp_path):
    from ttdash.model.errors import TraceError
    from ttdash.report.export import write_atomic

    watched = tmp_path / "profiler"
    (watched / "reports" / TS).mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(watched / "reports", tmp_path / "elsewhere" / "link")
    os.symlink(watched, tmp_path / "watched_link")
    os.symlink(watched / "reports" / "new.csv", tmp_path / "dangling.csv")
    targets = [watched / "x.csv", watched / "reports" / TS / "x.csv",
               tmp_path / "elsewhere" / "link" / "x.csv",  # through a symlinked directory
               watched / "reports" / ".." / "x.csv",
               tmp_path / "elsewhere" / ".." / "profiler" / "y.csv",
               tmp_path / "dangling.csv"]  # a symlink pointing into the watched dir
    for protected in ((watched,), (tmp_path / "watched_link",)):
        for target in targets:
            with pytest.raises(TraceError, match="watched"):
                write_atomic(target, "x\n", force=True, protected=protected)
    written = [p for p in watched.rglob("*") if p.is_file()]
    assert written == [], written
    ok = write_atomic(tmp_path / "elsewhere" / "fine.csv", "x\n", protected=(watched,))
    assert ok.read_text() == "x\n"


def test_write_atomic_refuses_the_target_of_a_symlink_inside_the_watched_directory(tmp_path):
    """`.logs` linked to another disk: writing there is writing into the watched run."""
    from ttdash.model.errors import TraceError
    from ttdash.report.export import write_atomic

    watched, disk = tmp_path / "profiler", tmp_path / "scratch" / "logs"
    watched.mkdir()
    disk.mkdir(parents=True)
    os.symlink(disk, watched / ".logs")
    with pytest.raises(TraceError, match="linked from"):
        write_atomic(disk / "export.csv", "x\n", protected=(watched,))
    assert list(disk.iterdir()) == []
    ok = write_atomic(tmp_path / "scratch" / "fine.csv", "x\n", protected=(watched,))
    assert ok.read_text() == "x\n"


def _failing_fdopen(monkeypatch, exc: BaseException, after: int = 5):
    """os.fdopen whose file writes `after` characters, then raises `exc`."""
    real_fdopen = os.fdopen

    class Failing:
        def __init__(self, fh):
            self.fh = fh

        def write(self, s):
            self.fh.write(s[:after])
            self.fh.flush()
            raise exc

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()
            return False

    def fdopen(fd, *a, **kw):
        return Failing(real_fdopen(fd, *a, **kw))

    import ttdash.report.export as export

    monkeypatch.setattr(export.os, "fdopen", fdopen)


@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device"),
                                 MemoryError(), KeyboardInterrupt()],
                         ids=["ENOSPC", "MemoryError", "KeyboardInterrupt"])
def test_write_atomic_failed_write_leaves_nothing(tmp_path, monkeypatch, exc):
    """A write that fails half-way leaves neither a partial export nor a temp file, and an
    existing file untouched."""
    from ttdash.report.export import write_atomic

    new, old = tmp_path / "new.csv", tmp_path / "old.csv"
    old.write_text("original\n")
    _failing_fdopen(monkeypatch, exc)
    for target, force in ((new, False), (old, True)):
        with pytest.raises(BaseException):  # noqa: B017 - MemoryError, KeyboardInterrupt, OSError
            write_atomic(target, "a,b,c\n" * 1000, force=force)
        assert not new.exists(), "a partial export was left at the target"
        assert old.read_text() == "original\n", "the existing file was damaged"
        left = _temps(tmp_path)
        assert left == [], f"temp files left behind after {type(exc).__name__}: {left}"


def test_write_atomic_failed_rename_leaves_nothing(tmp_path, monkeypatch):
    from ttdash.model.errors import TraceError
    from ttdash.report import export

    old = tmp_path / "old.csv"
    old.write_text("original\n")

    def replace(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(export.os, "replace", replace)
    with pytest.raises(TraceError):
        export.write_atomic(old, "new\n", force=True)
    assert old.read_text() == "original\n"
    assert _temps(tmp_path) == []


def test_write_atomic_is_a_rename(tmp_path, monkeypatch):
    """The data goes to a temp file in the same directory, then one rename: a reader never
    sees a partial target."""
    from ttdash.report import export

    target = tmp_path / "out.csv"
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append((Path(src).parent, Path(dst), Path(src).read_text(), target.exists()))
        return real_replace(src, dst)

    monkeypatch.setattr(export.os, "replace", replace)
    export.write_atomic(target, "x,y\n")
    assert seen == [(tmp_path, target, "x,y\n", False)]
    assert target.read_text() == "x,y\n" and _temps(tmp_path) == []


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_untrusted_text_history(evil, fmt, tmp_path):
    """Op codes and labels from files and users, through the run history's outputs."""
    from history_fixture import scaled_copy

    store = str(tmp_path / "store")
    r = run_main("history", "add", "--store", store, str(evil), "--label",
                "note=[bold]x[/] \x1b]0;title\x07")
    assert r.returncode == 0, r.describe()
    slower = scaled_copy(evil, tmp_path / "ops_perf_results_slower.csv", 3.0)
    for args in (("list",), ("trend",), ("check", str(slower), "--fail-above", "1")):
        r = run_main("history", *args, "--store", store, "--format", fmt,
                    env={"NO_COLOR": "1"})
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.describe()
        assert_inert(r.stdout, f"history {args[0]} --format {fmt}")
        if fmt == "json":
            for s in hc.strings_in(strict_json(r.stdout)):
                assert_inert(s, f"history {args[0]} json (decoded strings)")
    assert r.returncode == 1  # the 3x slower copy fails the gate
