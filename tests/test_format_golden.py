"""Every output format of `report` on real traces, against golden files made by
scripts/make_format_golden.py (a change that means to change an output regenerates them, and the
diff of tests/golden/formats/ shows what it changed)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, real_dir

sys.path.insert(0, str(ROOT / "scripts"))
import make_format_golden as golden  # noqa: E402


@pytest.mark.parametrize("fmt", list(golden.FORMATS))
@pytest.mark.parametrize("name", golden.TRACES)
def test_report_output_equals_its_golden_file(name, fmt):
    real_dir()
    path = golden.golden_path(name, fmt)
    got = golden.render(name, fmt)
    assert path.exists(), f"{path.name} missing: run python scripts/make_format_golden.py"
    want = path.read_text(encoding="utf-8")
    assert got == want, (f"{path.name} differs: review the change, then run "
                         "python scripts/make_format_golden.py")


def test_every_format_of_the_registry_has_golden_files():
    from ttdash.report import formats

    assert set(golden.FORMATS) == set(formats.choices("report"))
