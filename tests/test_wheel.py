"""The built wheel works in a fresh virtual environment.

Catches what an editable install hides: package data left out of the wheel (themes, data/*.toml),
dependencies missing from pyproject.toml, a broken console script. One test; it builds a wheel
from a copy of the source (the work tree gets no build/ or egg-info litter), makes a venv,
installs the wheel (dependencies from the package index, the pip cache reused), and runs the
installed `ttdash` from a neutral directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, real_dir

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                ".pytest_cache", ".hypothesis", ".ruff_cache", ".benchmarks",
                                "out", "*.pyc")


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict | None = None,
         problems: list[str] | None = None):
    """Run a command; a failure fails the test at once, or is recorded in `problems` (so the
    later checks still run and the report lists every problem)."""
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV",
                                                           "PYTHONHOME", "NO_COLOR")}
    e.update(env or {})
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e,
                       stdin=subprocess.DEVNULL)
    msg = (f"$ {' '.join(map(str, cmd))}\nexit {r.returncode}\n--- stdout ---\n"
           f"{r.stdout[-4000:]}\n--- stderr ---\n{r.stderr[-4000:]}")
    if problems is None:
        assert r.returncode == 0, msg
    elif r.returncode != 0:
        problems.append(msg)
        return None
    return r


def _json(r, problems: list[str], what: str):
    if r is None:
        return None
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        problems.append(f"{what}: not JSON ({exc}): {r.stdout[-2000:]}")
        return None


@pytest.mark.wheel
def test_wheel_installs_and_runs(tmp_path):
    fixture = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE, symlinks=True)
    out = tmp_path / "dist"

    # 1. Build the wheel (isolated build environment, as pip or CI would).
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
         cwd=tmp_path, timeout=300)
    wheels = list(out.glob("ttdash-*.whl"))
    assert len(wheels) == 1, wheels
    wheel = wheels[0]

    # 2. Every data file of the package is in the wheel (themes, data tables, styles).
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    pkg = ROOT / "ttdash"
    data_files = sorted(str(p.relative_to(ROOT)).replace(os.sep, "/")
                        for p in pkg.rglob("*") if p.is_file() and p.suffix in
                        (".toml", ".tcss", ".json", ".css"))
    assert data_files, "expected package data files (data/*.toml, themes/*.toml)"
    problems: list[str] = []
    missing = [f for f in data_files if f not in names]
    if missing:
        problems.append(f"package data missing from the wheel: {missing}")

    # 3. A fresh venv with only the wheel (and its declared dependencies).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, timeout=120)
    bindir = venv / "bin"
    py, exe = bindir / "python", bindir / "ttdash"
    # --no-compile: as the README's install (pip compiling every dependency took ~1/3 of it)
    _run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)], cwd=tmp_path,
         timeout=900)
    work = tmp_path / "elsewhere"  # never the source tree: the installed package must be used
    work.mkdir()
    where = _run([str(py), "-c", "import ttdash, sys; print(ttdash.__file__)"], cwd=work,
                 timeout=60).stdout.strip()
    assert Path(where).is_relative_to(venv), f"imported ttdash from {where}, not the venv"

    # 4. The console script.
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    r = _run([str(exe), "--version"], cwd=work, timeout=60, problems=problems)
    if r is not None and r.stdout.strip() != f"ttdash {version}":
        problems.append(f"--version printed {r.stdout!r}, expected 'ttdash {version}'")

    r = _run([str(exe), "report", str(fixture), "--format", "json"], cwd=work, timeout=180,
             problems=problems)
    doc = _json(r, problems, "report --format json")
    if doc is not None and not (doc["arch"] == "wormhole_b0"
                                and doc["totals"]["ops"] == len(doc["ops"]) > 0):
        problems.append(f"report: unexpected document {str(doc)[:500]}")

    r = _run([str(exe), "demo", "--ops", "200", "--speed", "0", "--once"], cwd=work, timeout=300,
             problems=problems)
    doc = _json(r, problems, "demo --once")
    if doc is not None and doc.get("ops") != 200:
        problems.append(f"demo --once: ops {doc.get('ops')}, expected 200: {doc}")

    # 5. The interactive side imports and finds its bundled themes (the default one included),
    #    as `ttdash open` needs; headless, so no terminal is required.
    probe = (
        "import asyncio, sys\n"
        "from ttdash.model import Trace, Window\n"
        "from ttdash.tui.app import open_app\n"
        "from ttdash.tui.config import load_themes\n"
        "names = sorted(t.name for t in load_themes())\n"
        "assert {'ttdash-dark', 'ttdash-light', 'ttdash-ansi'} <= set(names), names\n"
        "app = open_app(Trace.load(sys.argv[1], columns='all').view(Window('all')))\n"
        "async def main():\n"
        "    async with app.run_test(size=(120, 36)) as pilot:\n"
        "        await pilot.press('j', 'enter', 'escape', '2', '1')\n"
        "asyncio.run(main())\n"
        "print('ok', names)\n"
    )
    r = _run([str(py), "-c", probe, str(fixture)], cwd=work, timeout=180,
             env={"XDG_CONFIG_HOME": str(tmp_path / "no-config")}, problems=problems)
    if r is not None and not r.stdout.startswith("ok"):
        problems.append(f"open probe: {r.stdout[-2000:]}")

    assert not problems, "\n\n".join(problems)
