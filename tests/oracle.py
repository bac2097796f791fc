"""Run tt-perf-report 1.4.1 (the reference) and line its rows up with ttdash's, by ID.

Every tt-perf-report run goes through :func:`tt_perf_report`, which by default does not run it:
it replays the run's recorded output from ``tests/golden/tt-perf-report/`` (one gzipped JSON
per run: its argv with the inputs and outputs as placeholders, the inputs' sha256, the exit
code, stdout and the files it wrote), keyed by the argv and the inputs' contents. So a changed
input, option or tt-perf-report release has no golden file and fails, never compares against
stale output. ``TTDASH_ORACLE``:

* unset or ``golden``: replay (a missing golden file fails, naming the script that makes it);
* ``record``: run tt-perf-report and write the golden file (``scripts/make_oracle_golden.py``);
* ``live``: run tt-perf-report and fail unless its output equals the golden file.

``test_oracle_golden.py`` re-runs every recorded run whose inputs are the real fixtures or
files of the repo, and compares (the newest-dependency CI pass; marker ``oracle``). It runs
them through :func:`execute_many`: one child imports tt-perf-report once and forks each run
from there (``oracle_batch.py``), so ~55 runs do not each pay ~1 s of imports.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

from ttdash.model import Trace, Window

GOLDEN = Path(__file__).resolve().parent / "golden" / "tt-perf-report"
ROOT = Path(__file__).resolve().parent.parent
MODULE = ["-m", "tt_perf_report.perf_report"]


class Run:
    """What one tt-perf-report run gave: exit code and stdout (its files are written where it
    was told to write them)."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_ref(path: Path) -> str | None:
    """How a golden file names an input it can be re-run from: `shared:NAME` (a real
    fixture) or `repo:RELPATH`; None for a file made by the test (only its hash is kept)."""
    from conftest import SHARED_REAL

    p = Path(path).resolve()
    for prefix, base in (("shared:", SHARED_REAL.resolve()), ("repo:", ROOT)):
        try:
            rel = p.relative_to(base)
        except ValueError:
            continue
        return prefix + rel.as_posix()
    return None


def resolve_ref(ref: str) -> Path:
    from conftest import SHARED_REAL

    kind, _, rel = ref.partition(":")
    return (SHARED_REAL if kind == "shared" else ROOT) / rel


def placeholders(inputs: list[Path], outputs: list[tuple[str, Path]]) -> dict[str, str]:
    """{path as given: placeholder} for the inputs ({in0}, ...) and output tokens ({out0})."""
    subst = {str(p): f"{{in{i}}}" for i, p in enumerate(inputs)}
    subst.update({tok: f"{{out{i}}}" for i, (tok, _) in enumerate(outputs)})
    return subst


def shaped(text: str, subst: dict[str, str]) -> str:
    """`text` (what tt-perf-report printed) with the run's paths as placeholders, longest
    first (it prints the file it writes)."""
    for path in sorted(subst, key=len, reverse=True):
        text = text.replace(path, subst[path])
    return text


def unshaped(text: str, subst: dict[str, str]) -> str:
    for path, ph in subst.items():
        text = text.replace(ph, path)
    return text


def golden_key(argv: list[str], inputs: list[Path], outputs: list[tuple[str, Path]]) -> tuple[
        str, list[str], list[str]]:
    """(key, argv with placeholders, input hashes)."""
    subst = placeholders(inputs, outputs)
    shape = [subst.get(a, a) for a in argv]
    hashes = [_sha(Path(p)) for p in inputs]
    key = hashlib.sha256(json.dumps([version("tt-perf-report"), shape, hashes]).encode()
                         ).hexdigest()[:24]
    return key, shape, hashes


def execute(argv: list[str]) -> Run:
    """`python ARGV` in a scratch working directory (nothing it might drop lands in the repo)."""
    with tempfile.TemporaryDirectory(prefix="tt-perf-report-") as cwd:
        res = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                             timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)
    return Run(res.returncode, res.stdout, res.stderr)


def execute_many(argvs: list[list[str]]) -> list[Run]:
    """`execute` for each argv, in one child that imports tt-perf-report once and forks a run
    from that state for each (`oracle_batch.py`): the same runs less ~1 s of imports each."""
    with tempfile.TemporaryDirectory(prefix="oracle-jobs-") as tmp:
        jobs = Path(tmp) / "jobs.json"
        jobs.write_text(json.dumps(argvs))
        res = subprocess.run([sys.executable, str(Path(__file__).with_name("oracle_batch.py")),
                              str(jobs)], capture_output=True, text=True, timeout=600,
                             cwd=tmp, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    return [Run(r["returncode"], r["stdout"], r["stderr"]) for r in json.loads(res.stdout)]


def tt_perf_report(argv: list[str], inputs: list[Path], outputs: list[tuple[str, Path]]
                   ) -> Run:
    """Run `python ARGV` (tt-perf-report) or replay it (see the module docstring). `inputs`:
    the files it reads (as they appear in argv); `outputs`: (the argv token naming an output,
    the file it writes)."""
    mode = os.environ.get("TTDASH_ORACLE", "golden")
    key, shape, hashes = golden_key(argv, inputs, outputs)
    path = GOLDEN / f"{key}.json.gz"
    if mode == "golden":
        if not path.exists():
            raise AssertionError(f"no recorded tt-perf-report output for {shape} (inputs "
                                 f"{hashes}): run `python scripts/make_oracle_golden.py`")
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for (_, file), text in zip(outputs, doc["files"]):
            if text is not None:
                Path(file).write_text(text)
        subst = placeholders(inputs, outputs)
        return Run(doc["returncode"], unshaped(doc["stdout"], subst),
                   unshaped(doc["stderr"], subst))
    run = execute(argv)
    subst = placeholders(inputs, outputs)
    doc = {"tt_perf_report": version("tt-perf-report"), "argv": shape,
           "inputs": [{"ref": input_ref(p), "sha256": h} for p, h in zip(inputs, hashes)],
           "outputs": [f.name for _, f in outputs], "returncode": run.returncode,
           "stdout": shaped(run.stdout, subst), "stderr": shaped(run.stderr, subst),
           "files": [Path(f).read_text() if Path(f).exists() else None for _, f in outputs]}
    if mode == "record":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(json.dumps(doc, indent=0).encode(), mtime=0))
    elif mode == "live":
        assert path.exists(), f"no golden file for {shape}: run scripts/make_oracle_golden.py"
        old = json.loads(gzip.decompress(path.read_bytes()))
        assert {k: old[k] for k in ("returncode", "stdout", "files")} == \
            {k: doc[k] for k in ("returncode", "stdout", "files")}, \
            f"tt-perf-report's output changed for {shape}: re-record the golden files"
    return run

_ROOFLINE = re.compile(r"Overall DRAM roofline \(modeled ops\): ([\d.]+)% \(([\d.]+) GB/s\)")


def perf_report_csv(path: Path | list[Path], out: Path, arch: str | None, tracing: bool,
                    ignore_signposts: bool, merge: bool = True,
                    flags: tuple[str, ...] = ()) -> pd.DataFrame:
    inputs = [Path(p) for p in (path if isinstance(path, list) else [path])]
    cmd = [*MODULE, *map(str, inputs), "--csv", str(out),
           "--no-advice", "--no-summary", *flags] + (["--arch", arch] if arch else [])
    if tracing:
        cmd.append("--tracing-mode")
    if ignore_signposts:
        cmd.append("--ignore-signposts")
    if not merge:
        cmd.append("--no-merge-devices")
    res = tt_perf_report(cmd, inputs, [(str(out), out)])
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    if not out.exists():  # nothing to report in that window
        return pd.DataFrame(columns=["ID"])
    df = pd.read_csv(out)
    m = _ROOFLINE.search(res.stdout)
    df.attrs["roofline"] = (float(m.group(1)), float(m.group(2))) if m else None
    return df


def compare(path: Path | list[Path], tmp: Path, ignore_signposts: bool, merge: bool = True,
            flags: tuple[str, ...] = ()) -> dict:
    """Both tools on one file (or several reports of one run); returns the joined frame and
    mismatch lists per metric. `flags`: report options both tools have (--id-range,
    --no-host-ops), given to tt-perf-report and, parsed by ttdash's CLI, applied to ttdash's
    view as `ttdash report` applies them."""
    from ttdash.cli import parse
    from ttdash.commands.report import restrict

    trace = Trace.load_many(path) if isinstance(path, list) else Trace.load(path)
    view = trace.view(Window("all" if ignore_signposts else "default"), merge=merge)
    if flags:
        view = restrict(view, parse(["report", "x.csv", *flags])[1])
    ours = view.ops[~view.ops["is_signpost"]].set_index("id")
    ref = perf_report_csv(path, tmp / "ref.csv", trace.arch.perf_report_name, trace.trace_mode,
                          ignore_signposts, merge, flags)
    roofline = ref.attrs.get("roofline")
    ref = ref[~ref["OP Code"].astype(str).str.endswith("(signpost)")].set_index("ID") \
        if len(ref) else ref.set_index("ID")
    joined = ours.join(ref, how="outer")
    out = {"ours": len(ours), "ref": len(ref), "joined": joined, "mismatch": {},
           "roofline": roofline, "view": view}
    pairs = {"device_time_us": "Device Time", "op_to_op_us": "Op-to-Op Gap",
             "dram_pct": "DRAM %", "flops_pct": "FLOPs %", "total_pct": "Total %"}
    for mine, theirs in pairs.items():
        a = joined[mine].astype("float64").to_numpy()
        b = pd.to_numeric(joined[theirs], errors="coerce").to_numpy(dtype="float64")
        both = ~np.isnan(a) & ~np.isnan(b)
        rel = np.zeros_like(a)
        rel[both] = np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-9)
        bad = (np.isnan(a) != np.isnan(b)) | (both & (rel > 0.005) & (np.abs(a - b) > 1e-6))
        out["mismatch"][mine] = list(joined.index[bad])
    # tt-perf-report's op text: the op code with size and config appended; its "Math Fidelity"
    size = joined["size"].astype(object).fillna("").astype(str)
    config = joined["config"].astype(object).fillna("").astype(str)
    text = joined["op_code"].astype(str) + (" " + size).where(size != "", "") \
        + (" " + config).where(config != "", "")
    out["mismatch"]["op_text"] = list(joined.index[text != joined["OP Code"].astype(str)])
    fid_ref = joined["Math Fidelity"].astype(object).where(joined["Math Fidelity"].notna(), "")
    out["mismatch"]["fidelity_desc"] = list(
        joined.index[joined["fidelity_desc"].astype(object).fillna("").astype(str) != fid_ref.astype(str)])
    bound_ref = joined["Bound"].astype(object).where(joined["Bound"].notna(), "").astype(str)
    bound_ours = joined["bound"].astype(object).fillna("").astype(str)
    out["mismatch"]["bound"] = list(joined.index[bound_ref != bound_ours])
    return out


# ---------------------------------------------------------------- the printed report (advice, footer)
_FOOTER = re.compile(r"(\d+) device ops, (\d+) host ops, (\d+) signposts")
_SAVING = re.compile(r"could save (\d+) μs \(([\d.]+|nan)% of overall time\)")
_ROW = re.compile(r"^\s*(\d+)\s")
_SECTIONS = {"Fallback": "host", "High Op-to-Op Gap": "gap", "Matmul Optimization": "matmul"}


def perf_report_printed(path: Path, arch: str | None, tracing: bool) -> dict:
    """tt-perf-report's terminal report of the whole file (--ignore-signposts), parsed: the
    footer counts, the tracing saving, and per advice section the IDs it lists (for matmuls, the
    number of bullets under each; 0 for "Optimized")."""
    cmd = [*MODULE, str(path), "--ignore-signposts",
           "--no-summary", "--no-color"] + (["--arch", arch] if arch else [])
    if tracing:
        cmd.append("--tracing-mode")
    res = tt_perf_report(cmd, [Path(path)], [])
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    out: dict = {"host": [], "gap": [], "matmul": {}, "saving": None, "footer": None}
    section, current = None, None
    for line in res.stdout.splitlines():
        if m := _FOOTER.search(line):
            out["footer"] = tuple(int(g) for g in m.groups())
        if m := _SAVING.search(line):
            out["saving"] = (float(m.group(1)), float(m.group(2)))
        if line.strip() in _SECTIONS:
            section = _SECTIONS[line.strip()]
            continue
        if section is None:
            continue
        if m := _ROW.match(line):
            current = int(m.group(1))
            if section == "matmul":
                out["matmul"][current] = 0
            else:
                out[section].append(current)
        elif section == "matmul" and line.startswith("- ") and current is not None:
            out["matmul"][current] += 1
        elif line.startswith(("These ops", "Alternatively")):
            section = None
    return out


_SUMMARY = """
import sys
import tt_perf_report.perf_report as m
m.plot_stacked_report = lambda *a, **k: None  # its PNG: not compared, and slow
sys.argv = sys.argv[1:]
m.main()
"""


def perf_report_summary(path: Path, out: Path, arch: str | None, tracing: bool,
                        group_by: str) -> pd.DataFrame:
    """tt-perf-report's --summary-file CSV of the whole file for `group_by`."""
    cmd = ["-c", _SUMMARY, "tt-perf-report", str(path), "--ignore-signposts",
           "--no-advice", "--no-color", "--group-by", group_by, "--summary-file", str(out)] \
        + (["--arch", arch] if arch else []) + (["--tracing-mode"] if tracing else [])
    res = tt_perf_report(cmd, [Path(path)], [(str(out), Path(f"{out}.csv"))])
    if res.returncode != 0:
        raise RuntimeError(f"tt-perf-report failed: {res.stderr[-2000:]}")
    return pd.read_csv(f"{out}.csv", keep_default_na=False, na_values=[""])
