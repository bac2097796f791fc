"""The recorded tt-perf-report outputs the suite replays (tests/golden/tt-perf-report, made by
scripts/make_oracle_golden.py) are what tt-perf-report prints today: every recorded run whose
inputs are real fixtures or files of the repo is run again and compared byte for byte. Marker
`oracle`: the newest-dependency CI pass runs it, the lowest pass (same pinned tt-perf-report)
does not need to."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import real_dir
from oracle import GOLDEN, _sha, execute_many, placeholders, resolve_ref, shaped, unshaped

pytestmark = pytest.mark.oracle

RECORDED = sorted(GOLDEN.glob("*.json.gz"))


def _load(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_there_are_recorded_runs_for_every_oracle_helper():
    docs = [_load(p) for p in RECORDED]
    assert len(docs) >= 50
    kinds = {("--csv" in d["argv"], "--summary-file" in d["argv"]) for d in docs}
    assert kinds == {(True, False), (False, True), (False, False)}  # rows, summary, printed


def test_recorded_outputs_are_current(tmp_path):
    real_dir()  # fail in CI, skip locally, when ../shared is missing
    todo = []
    for i, path in enumerate(RECORDED):
        doc = _load(path)
        if not all(inp["ref"] for inp in doc["inputs"]):
            continue  # made by a test: keyed by its content, re-recorded with the test
        inputs = []
        for inp in doc["inputs"]:
            src = resolve_ref(inp["ref"])
            assert _sha(src) == inp["sha256"], f"{inp['ref']} changed since {path.name}"
            inputs.append(src)
        outputs = []
        for name in doc["outputs"]:
            out = tmp_path / f"{i}" / name
            out.parent.mkdir(exist_ok=True)
            # the token names the output; a summary file is the token + ".csv"
            token = str(out)[:-4] if "--summary-file" in doc["argv"] else str(out)
            outputs.append((token, out))
        subst = placeholders(inputs, outputs)
        argv = [unshaped(a, subst) for a in doc["argv"]]
        todo.append((path.name, doc, argv, outputs, subst))
    assert len(todo) >= 50

    runs = execute_many([argv for _, _, argv, _, _ in todo])  # two at a time
    stale = []
    for (name, doc, _, outputs, subst), run in zip(todo, runs):
        got = [f.read_text() if f.exists() else None for _, f in outputs]
        if (run.returncode, shaped(run.stdout, subst), got) != (
                doc["returncode"], doc["stdout"], doc["files"]):
            stale.append(name)
    assert stale == [], f"re-record with scripts/make_oracle_golden.py: {stale}"
