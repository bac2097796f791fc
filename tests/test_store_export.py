"""`history export --format benchmark` (#49): stored runs as Tenstorrent's CompleteBenchmarkRun
records with BenchmarkMeasurement lists, checked against those models' field names and types
(written out here from tenstorrent/tt-metal infra/data_collection/pydantic_models.py), and
against what `history list` says of the same runs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from conftest import run_ttdash
from history_fixture import CLIP, T0, make_store

from ttdash.commands.common import load_view
from ttdash.commands.options import WindowOptions
from ttdash.history.record import build
from ttdash.history.store import Store

DT, INT, FLOAT, STR, BOOL, DICT, LIST = "datetime", int, float, str, bool, dict, list
#: CompleteBenchmarkRun: field -> (type, required)
RUN_FIELDS = {
    "run_start_ts": (DT, True), "run_end_ts": (DT, True), "run_type": (STR, True),
    "git_repo_name": (STR, False), "git_commit_hash": (STR, False), "git_commit_ts": (DT, False),
    "git_branch_name": (STR, False), "github_pipeline_id": (INT, False),
    "github_pipeline_link": (STR, False), "github_job_id": (INT, False),
    "user_name": (STR, False), "docker_image": (STR, False), "device_hostname": (STR, True),
    "device_ip": (STR, False), "device_info": (DICT, False), "ml_model_name": (STR, True),
    "ml_model_type": (STR, False), "num_layers": (INT, False), "batch_size": (INT, False),
    "config_params": (DICT, False), "precision": (STR, False), "dataset_name": (STR, False),
    "profiler_name": (STR, False), "input_sequence_length": (INT, False),
    "output_sequence_length": (INT, False), "image_dimension": (STR, False),
    "perf_analysis": (BOOL, False), "training": (BOOL, False), "measurements": (LIST, True),
}
#: BenchmarkMeasurement: field -> (type, required)
MEASUREMENT_FIELDS = {
    "step_start_ts": (DT, True), "step_end_ts": (DT, True), "iteration": (INT, True),
    "step_name": (STR, True), "step_warm_up_num_iterations": (INT, False), "name": (STR, True),
    "value": (FLOAT, True), "target": (FLOAT, False), "device_power": (FLOAT, False),
    "device_temperature": (FLOAT, False),
}


def _problems(doc: dict, fields: dict, where: str) -> list[str]:
    out = [f"{where}: unknown field {k}" for k in doc if k not in fields]
    for name, (kind, required) in fields.items():
        if name not in doc or doc[name] is None:
            if required:
                out.append(f"{where}: {name} missing")
            continue
        v = doc[name]
        if kind == DT:
            try:
                ok = datetime.fromisoformat(v).utcoffset() is not None  # with its time zone
            except (TypeError, ValueError):
                ok = False
        elif kind is FLOAT:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        elif kind is INT:
            ok = isinstance(v, int) and not isinstance(v, bool)
        else:
            ok = isinstance(v, kind)
        if not ok:
            out.append(f"{where}: {name}={v!r} is not {kind}")
    return out


def _export(store: str, *args: str) -> list[dict]:
    res = run_ttdash("history", "export", "--store", store, "--format", "benchmark", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_export_is_complete_benchmark_runs_with_the_stored_numbers(real, tmp_path):
    env = {"GITHUB_SHA": "0123abc", "GITHUB_REF_NAME": "main",
           "GITHUB_REPOSITORY": "tenstorrent/tt-metal", "GITHUB_RUN_ID": "987654"}
    store, ids, paths = make_store(tmp_path, [1.0, 1.05], labels={"model": "clip"})
    res = run_ttdash("history", "add", "--store", store.uri, str(CLIP), "--label",
                     "model=clip", "--label", "batch=8", env=env)
    assert res.returncode == 0, res.stderr
    ci_id = res.stdout.split()[0]  # added now: the newest
    # a run with telemetry recorded (added 9 days after the first)
    view = load_view(str(paths[0]), WindowOptions())
    view.pause_above_us = 500.0  # another analysis of the same file: another run
    hot = build(view, labels={"model": "clip"}, now=T0 + timedelta(days=9),
                telemetry={"readings": 5, "throttled": 0, "temp_c_max": 71.5,
                           "power_w_max": 88.25, "aiclk_mhz_min": 1000.0})
    assert Store.open(store.uri).add(hot)
    ids += [hot.run_id, ci_id]

    records = _export(store.uri)
    assert [r["config_params"]["ttdash_run_id"] for r in records] == ids  # oldest first
    problems = []
    for i, r in enumerate(records):
        problems += _problems(r, RUN_FIELDS, f"run {i}")
        for j, m in enumerate(r["measurements"]):
            problems += _problems(m, MEASUREMENT_FIELDS, f"run {i} measurement {j}")
    assert problems == []

    listed = {r["run_id"]: r for r in json.loads(run_ttdash(
        "history", "list", "--store", store.uri, "-f", "json").stdout)["runs"]}
    stored = {r["run_id"]: r for r in Store.open(store.uri).runs()}
    for r in records:
        rid = r["config_params"]["ttdash_run_id"]
        by = {(m["step_name"], m["name"]): m for m in r["measurements"]}
        assert by["run", "steady_state_us"]["value"] == listed[rid]["steady_us"]
        assert by["run", "device_time_us"]["value"] == listed[rid]["device_time_us"]
        ops = {k[0]: m["value"] for k, m in by.items() if k[1] == "op_device_time_us"}
        assert ops == {g["name"]: g["device_us"] for g in stored[rid]["op_codes"]}
        assert r["ml_model_name"] == "clip" and r["device_info"]["arch"] == "wormhole_b0"
        assert (datetime.fromisoformat(r["run_end_ts"]) - datetime.fromisoformat(
            r["run_start_ts"])) == timedelta(microseconds=stored[rid]["wall_us"])
        hot_run = rid == hot.run_id
        assert all(("device_power" in m) == hot_run for m in r["measurements"])
    ci = records[3]
    assert (ci["git_commit_hash"], ci["git_branch_name"], ci["git_repo_name"],
            ci["github_pipeline_id"], ci["batch_size"]) == (
                "0123abc", "main", "tenstorrent/tt-metal", 987654, 8)
    assert records[0]["git_commit_hash"] is None  # added outside CI
    assert {(m["device_power"], m["device_temperature"]) for m in records[2]["measurements"]
            } == {(88.25, 71.5)}
    # --where / --last select as list does
    assert [r["config_params"]["ttdash_run_id"] for r in _export(store.uri, "--last", "1")
            ] == ids[-1:]


def test_export_of_no_store_is_one_line(tmp_path):
    res = run_ttdash("history", "export", "--store", str(tmp_path / "none"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert str(tmp_path / "none") in res.stderr
