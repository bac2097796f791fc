"""The code's habits, checked by the suite: ruff (config in pyproject.toml) over the whole
repository, mypy --strict over ttdash/model and ttdash/present (config in pyproject.toml: third-party packages are
read as Any, so the newest and the lowest-dependency runs agree)."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing() -> None:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet", str(ROOT)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict_on_the_model(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues found in" in r.stdout
