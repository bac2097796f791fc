"""Stored runs as Tenstorrent's benchmark records (`history export --format benchmark`): one
`CompleteBenchmarkRun` per run, the record tt-metal's CI sends to its dashboards
(infra/data_collection/pydantic_models.py in tenstorrent/tt-metal), with `measurements`, each a
`BenchmarkMeasurement`: the run's steady-state, device, dispatch and wall time, and each op
code's device time.

Where each field comes from:
    run_end_ts            the report file's time (run_at: when the profiler wrote it)
    run_start_ts          run_end_ts less the run's wall time (first op start to last op end)
    run_type              the run's `run_type` label, else "ttdash_device_perf"
    git_commit_hash, git_branch_name, git_repo_name, github_pipeline_id
                          the `commit`, `branch`, `repo`, `pipeline` labels (`history add` reads
                          them from the CI's variables: record.ENV_LABELS)
    device_hostname       the `machine` label (the host that added the run)
    user_name             the `user` label
    ml_model_name         the `model` label, else the report's file name
    batch_size            the `batch` label when it is a whole number
    device_info           arch, device ids, clock
    config_params         the run id (content-based: the same report is one run), window,
                          device merge, pause threshold, every label, the report's path
    measurements          step_start_ts/step_end_ts = the run's; iteration 0; step_name "run"
                          (totals) or the op code; device_power / device_temperature: the highest
                          reading recorded during the run, when telemetry was recorded
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import PurePath
from typing import Any

RUN_TYPE = "ttdash_device_perf"
PROFILER = "tt-metal device profiler (ttdash)"
#: (measurement name, run field) of the whole-run measurements, step "run"
TOTALS = (("steady_state_us", "steady_us"), ("device_time_us", "device_time_us"),
          ("dispatch_us", "dispatch_us"), ("wall_us", "wall_us"))
OP_MEASUREMENT = "op_device_time_us"


def _iso(t: datetime) -> str:
    return t.isoformat()


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).strip()) if text is not None else None
    except ValueError:
        return None


def benchmark_run(run: dict[str, Any]) -> dict[str, Any]:
    """One stored run (Store.runs row, all fields) as a CompleteBenchmarkRun record (JSON
    types: timestamps as ISO 8601 with their offset)."""
    labels = run.get("labels") or {}
    end = run.get("run_at") or run["added_at"]
    start = end - timedelta(microseconds=float(run.get("wall_us") or 0.0))
    tel = run.get("telemetry") or {}
    power, temp = tel.get("power_w_max"), tel.get("temp_c_max")

    def measurement(step: str, name: str, value: float) -> dict[str, Any]:
        m: dict[str, Any] = {"step_start_ts": _iso(start), "step_end_ts": _iso(end),
                             "iteration": 0, "step_name": step, "name": name,
                             "value": float(value)}
        if power is not None:
            m["device_power"] = float(power)
        if temp is not None:
            m["device_temperature"] = float(temp)
        return m

    measurements = [measurement("run", name, run[field]) for name, field in TOTALS
                    if run.get(field) is not None]
    measurements += [measurement(g["name"] or "(no op code)", OP_MEASUREMENT, g["device_us"])
                     for g in run.get("op_codes") or () if g.get("device_us") is not None]
    model = labels.get("model") or PurePath(str(run.get("file") or "run")).stem
    return {
        "run_start_ts": _iso(start), "run_end_ts": _iso(end),
        "run_type": labels.get("run_type") or RUN_TYPE,
        "git_repo_name": labels.get("repo"), "git_commit_hash": labels.get("commit"),
        "git_branch_name": labels.get("branch"),
        "github_pipeline_id": _int(labels.get("pipeline")),
        "user_name": labels.get("user"),
        "device_hostname": labels.get("machine") or "unknown",
        "device_info": {"arch": run.get("arch"), "devices": list(run.get("devices") or []),
                        "clock_mhz": run.get("clock_mhz")},
        "ml_model_name": model,
        "batch_size": _int(labels.get("batch")),
        "config_params": {"ttdash_run_id": run["run_id"], "window": run.get("window"),
                          "per_device": run.get("per_device"),
                          "pause_above_us": run.get("pause_above_us"),
                          "file": run.get("file"), "labels": dict(labels)},
        "profiler_name": PROFILER,
        "perf_analysis": True,
        "measurements": measurements,
    }
