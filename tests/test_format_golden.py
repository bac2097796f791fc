"""Every registered (subject, format) pair (ttdash.present.formats) against its golden file made
by scripts/make_format_golden.py: `report` on real traces, `report --summary` and `diff` on real
traces, the history's, doctor's and watch's writers on fixed inputs. A change that means to
change an output regenerates them, and the diff of tests/golden/formats/ shows what it changed;
a pair with no golden file fails."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, real_dir

sys.path.insert(0, str(ROOT / "scripts"))
import make_format_golden as golden  # noqa: E402


@pytest.mark.parametrize("subject,fmt,name", golden.cases(),
                         ids=lambda v: str(v).removeprefix("tt-perf-report__"))
def test_output_equals_its_golden_file(subject, fmt, name):
    if subject in ("report", "summary", "diff"):
        real_dir()
    path = golden.golden_path(name, fmt, subject)
    assert path.exists(), f"{path.name} missing: run python scripts/make_format_golden.py"
    got = golden.make(subject, fmt, name)
    want = path.read_text(encoding="utf-8")
    assert got == want, (f"{subject}/{path.name} differs: review the change, then run "
                         "python scripts/make_format_golden.py")


def test_every_registered_pair_has_a_golden_file():
    from ttdash.present import formats

    assert golden.missing() == [], "add a case to make_format_golden.CASES"
    assert {(s, f) for s, f, _ in golden.cases()} == set(golden.pairs())
    assert ("diff", "tui") in formats.pairs() and ("diff", "tui") not in golden.pairs()
    assert set(golden.FORMATS) == set(formats.choices("report"))


def test_a_pair_without_a_case_is_caught(monkeypatch):
    """A format registered for a subject the script has no case for is missing (so the check
    above means something)."""
    from ttdash.present import formats

    monkeypatch.setattr(formats, "WRITERS", (*formats.WRITERS,
                                             formats.Writer("runs", "xml", "x:y")))
    monkeypatch.setitem(golden.CASES, "runs", ())
    assert ("runs", "xml") in golden.missing()
