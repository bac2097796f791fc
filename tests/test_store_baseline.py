"""Named baselines (#49): `history baseline set NAME` from --last, a run id or a label selection,
`history check PATH --against NAME` comparing with exactly those runs (and saying which), set
again to move it, the content-based run id shown by list, check and export."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_ttdash
from history_fixture import make_store, scaled_copy

from ttdash.history.baseline import baselines
from ttdash.history.store import Store


def _ok(*args: str) -> str:
    res = run_ttdash("history", *args)
    assert res.returncode == 0, (args, res.stderr)
    return res.stdout


def _check(store, path: Path, *args: str):
    res = run_ttdash("history", "check", "--store", store.uri, str(path), "--fail-above", "3",
                     *args, "-f", "json")
    assert res.returncode in (0, 1), res.stderr
    return json.loads(res.stdout), res.returncode


def test_check_against_a_named_baseline(real, tmp_path):
    # a release run (fast), then three slower runs: the last-N gate drifts, the pinned one not
    store, ids, paths = make_store(tmp_path, [1.0, 1.08, 1.09, 1.10], labels={"model": "clip"})
    s = store.uri
    out = _ok("baseline", "set", "release-1.0", "--store", s, "--run", ids[0][:8])
    assert out.strip() == f"baseline release-1.0 = 1 run: {ids[0]}"
    cand = scaled_copy(paths[0], tmp_path / "cand.csv", 1.095)
    drifted, rc = _check(store, cand, "--last", "3")
    assert rc == 0 and drifted["baseline_runs"] == ids[1:]  # within 3% of the slow runs
    pinned, rc = _check(store, cand, "--against", "release-1.0")
    assert rc == 1 and pinned["regression"] and pinned["baseline_runs"] == [ids[0]]
    # the table's verdict names the baseline and the runs compared with, and the run checked
    res = run_ttdash("history", "check", "--store", s, str(cand), "--fail-above", "3",
                     "--against", "release-1.0")
    first = res.stdout.splitlines()[0]
    assert res.returncode == 1 and first.startswith("REGRESSION: steady state ")
    assert f"of run {pinned['run_id']} " in first
    assert f"of the baseline release-1.0's 1 matching run ({ids[0]}; limit +3%)" in first
    # from a label selection and from --last; set again: moved, the old setting kept as history
    _ok("baseline", "set", "slow", "--store", s, "--where", "batch=9")
    assert baselines(Store.open(s))["slow"]["run_ids"] == [ids[1], ids[3]]
    _ok("baseline", "set", "release-1.0", "--store", s, "--last", "2")
    pinned, rc = _check(store, cand, "--against", "release-1.0")
    assert pinned["baseline_runs"] == ids[2:] and rc == 0
    assert len(list((Path(store.root) / "baselines" / "release-1.0").glob("set-*.json"))) == 2
    listed = _ok("baseline", "list", "--store", s).splitlines()
    assert [ln.split()[0] for ln in listed] == ["release-1.0", "slow"]
    assert listed[0].endswith(f"2 runs: {ids[2]} {ids[3]}  (--last 2)")
    # the files beside runs/ and ops/ change nothing that engines or readers see
    assert json.loads(_ok("list", "--store", s, "-f", "json"))["runs"][0]["run_id"] == ids[3]


def test_baseline_mistakes_are_one_line_exit_2(real, tmp_path):
    store, ids, paths = make_store(tmp_path, [1.0, 1.01])
    s = store.uri
    cases = {
        ("baseline", "set", "x", "--store", s): "choose its runs with --run",
        ("baseline", "set", "no/slash", "--store", s, "--last", "1"): "baseline name",
        ("baseline", "set", "x", "--store", s, "--run", "ffff"): "--run ffff: no stored run",
        ("baseline", "set", "x", "--store", s, "--where", "model=none"): "no stored run matches",
        ("check", "--store", s, str(paths[1]), "--fail-above", "3", "--against", "nope"):
            "no baseline 'nope' (baselines: none",
    }
    for args, text in cases.items():
        res = run_ttdash("history", *args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (args, res.stderr)
        assert text in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
    assert not (Path(store.root) / "baselines").exists()  # nothing written by any of them
