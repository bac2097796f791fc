"""Every `--format json` output against its JSON Schema (ttdash/schemas/*.schema.json, shipped in
the package): report (and --summary, --top, --per-device, --advice none) on every real fixture,
diff on real pairs (with a gate), history list/trend/check/sql on a small store, doctor on a fake
sysfs, watch --once and demo --once on a simulated run. Each schema allows no undocumented
top-level key, so a new field fails here until its schema (and docs/reference/json.md) says it.
Integers are strict (tests/strict_schema.py): an ID, a count or a hash written as a float fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli_inproc import run_main
from conftest import ROOT, each_real_file, real_dir
from fake_host import Card, fake_host
from jsonschema import Draft202012Validator
from strict_schema import strict_errors

from ttdash.schemas import NAMES, SCHEMA_VERSION, load

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "ttdash" / "schemas"


def errors(name: str, doc: object) -> list[str]:
    """Where `doc` breaks schema `name`: 'path: message' for each error (none: valid)."""
    return strict_errors(load(name), doc)


def output(*args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> dict:
    """`ttdash ARGS` in process; its stdout as JSON (the exit code one of `ok`)."""
    run = run_main(*args, env=env)
    assert run.returncode in ok, run.describe() if hasattr(run, "describe") else run.stderr
    return json.loads(run.stdout)


def assert_valid(name: str, doc: dict) -> None:
    assert doc.get("schema_version") == SCHEMA_VERSION
    problems = errors(name, doc)
    assert not problems, f"{len(problems)} errors against {name}: " + "\n".join(problems[:10])


# ------------------------------------------------------------------ the schema files
def test_every_schema_is_valid_draft_2020_12_and_shipped():
    files = {p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json")}
    assert files == set(NAMES)
    for name in NAMES:
        schema = load(name)
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["additionalProperties"] is False, name
        assert "schema_version" in schema["required"], name
        # every documented top-level key has a type and a meaning (docs/reference/json.md)
        for key, sub in schema["properties"].items():
            assert "type" in sub and sub.get("description"), (name, key)


def test_the_schemas_can_fail():
    """An extra top-level key, a missing required one, a wrong type, a lower-case op field
    nobody documented and a wrong schema_version are each refused; a counter column is not."""
    doc = output("report", str(real_dir() / "tt-perf-report__bh_p100_dlv3.csv"), "-f", "json",
                 "--top", "3")
    assert not errors("report", doc)
    extra = {**doc, "new_field": 1}
    assert any("new_field" in e for e in errors("report", extra))
    missing = {k: v for k, v in doc.items() if k != "totals"}
    assert any("'totals' is a required property" in e for e in errors("report", missing))
    wrong = {**doc, "clock_mhz": "1 GHz"}
    assert errors("report", wrong)
    assert errors("report", {**doc, "schema_version": 2})
    op = copy.deepcopy(doc)
    op["ops"][0]["new_metric"] = 1.0
    assert any("new_metric" in e for e in errors("report", op))
    op["ops"][0].pop("new_metric")
    op["ops"][0]["PM NEW COUNTER (%)"] = 12.5
    assert not errors("report", op)
    op["ops"][0]["PM NEW COUNTER (%)"] = "high"
    assert errors("report", op)
    nested = copy.deepcopy(doc)
    nested["totals"]["surprise"] = 0
    assert errors("report", nested)
    doctor = {"schema_version": SCHEMA_VERSION, "checks": [{"name": "x", "status": "bad",
                                                            "detail": ""}]}
    assert errors("doctor", doctor)  # status is one of ok, warn, fail, unknown


# ------------------------------------------------------------------ report
@pytest.mark.parametrize("name", each_real_file())
def test_report_json_matches_its_schema(name):
    path = str(real_dir() / name)
    full = output("report", path, "-f", "json")
    assert_valid("report", full)
    assert "advice" in full and "advice_summary" in full
    top = output("report", path, "-f", "json", "--top", "5")
    assert_valid("report", top)
    assert top["ranked_by"]["top"] == 5
    quiet = output("report", path, "-f", "json", "--per-device", "--advice", "none")
    assert_valid("report", quiet)
    assert "advice" not in quiet
    for by in ("op", "memory", "category"):
        summary = output("report", path, "-f", "json", "--summary", "--group-by", by)
        assert_valid("report-summary", summary)
        assert summary["group_by"] == by
    # per device: each group's device id, an integer (it was written as a float, 7.0, in a
    # field the schema did not declare)
    per_device = output("report", path, "-f", "json", "--summary", "--per-device")
    assert_valid("report-summary", per_device)
    assert all(type(g["device"]) is int for g in per_device["groups"]), per_device["groups"][:1]


# ------------------------------------------------------------------ diff
DIFF_PAIRS = [  # (baseline, candidate, gate args)
    ("wh_clip_encoder_2", "bh_64_clip_encoder_1", ()),  # two arches: no gate without --allow
    ("wh_clip_encoder_2", "bh_64_clip_encoder_1", ("--allow-arch-mismatch",)),
    ("bh20_oft", "bh20_oft", ("--fail-above", "5")),
    ("bh_8xp150_deepseek_v3_d_p", "bh_8xp150_deepseek_v3_d_p", ("--fail-above", "5",
                                                                  "--per-device")),
    ("bh20_oft", "bh20_oft_integral_image_trace", ()),
]


@pytest.mark.parametrize("a,b,extra", DIFF_PAIRS)
def test_diff_json_matches_its_schema(a, b, extra):
    real = real_dir()
    doc = output("diff", str(real / f"tt-perf-report__{a}.csv"),
                 str(real / f"tt-perf-report__{b}.csv"), "-f", "json", *extra)
    assert_valid("diff", doc)
    assert (doc["gate"] is None) == ("--fail-above" not in extra)


def test_diff_of_several_runs_matches_its_schema(real, tmp_path):
    """Runs per side (runs, spread), a slower candidate (top regressions with causes)."""
    from history_fixture import CLIP, scaled_copy

    base = [scaled_copy(CLIP, tmp_path / f"a{i}.csv", f) for i, f in enumerate((1.0, 1.01))]
    cand = [scaled_copy(CLIP, tmp_path / f"b{i}.csv", f) for i, f in enumerate((1.2, 1.22))]
    doc = output("diff", "--baseline", *map(str, base), "--candidate", *map(str, cand),
                 "-f", "json", "--fail-above", "5", ok=(1,))
    assert_valid("diff", doc)
    assert len(doc["runs"]["baseline"]) == 2 and doc["spread"] is not None
    assert doc["gate"]["exit_code"] == 1 and doc["top_regressions"]


# ------------------------------------------------------------------ history
def test_history_json_matches_its_schemas(real, tmp_path):
    from history_fixture import make_store

    _, ids, paths = make_store(tmp_path, [1.0, 1.02, 0.99, 1.3])
    store = str(tmp_path / "store")
    listed = output("history", "--store", store, "list", "-f", "json")
    assert_valid("history-list", listed)
    assert [r["run_id"] for r in listed["runs"]] == ids[::-1]
    assert_valid("history-list", output("history", "--store", str(tmp_path / "empty"), "list",
                                        "-f", "json"))
    assert_valid("history-trend", output("history", "--store", store, "trend", "-f", "json"))
    assert_valid("history-trend", output("history", "--store", store, "trend", "--op",
                                         "MinimalMatmulOp", "-f", "json"))
    check = output("history", "--store", store, "check", str(paths[-1]), "-f", "json",
                   "--fail-above", "5", ok=(1,))
    assert_valid("history-check", check)
    assert check["regression"] is True and check["culprits"]
    sql = output("history", "--store", store, "sql",
                 "select run_id, ops, device_time_us, labels from runs", "-f", "json")
    assert_valid("history-sql", sql)
    assert len(sql["rows"]) == 4


# ------------------------------------------------------------------ doctor, watch, demo
def test_doctor_json_matches_its_schema(tmp_path):
    for host, cards in (("one", [Card()]), ("none", []), ("unbound", [Card(bound=False)])):
        doc = output("doctor", "-f", "json", env=fake_host(tmp_path / host, cards), ok=(0, 1, 2))
        assert_valid("doctor", doc)
        assert doc["checks"]


def test_watch_and_demo_once_match_their_schemas(tmp_path):
    from ttdash.sim import simulate_run

    env = fake_host(tmp_path / "host", [Card(), Card()])
    missing = output("watch", str(tmp_path / "nothing"), "--once", env=env)
    assert_valid("watch", missing)
    assert missing["exists"] is False
    simulate_run(tmp_path / "run", n_ops=60, speed=0, devices=2)
    live = output("watch", str(tmp_path / "run"), "--once", env=env)
    assert_valid("watch", live)
    assert live["live"]["ops"] and len(live["telemetry"]) == 2
    demo = output("demo", "--once", "--ops", "40", "--speed", "0")
    assert_valid("demo", demo)
    assert demo["kept"] is False
    kept = output("demo", "--once", "--ops", "40", "--speed", "0", "--dir", str(tmp_path / "d"))
    assert_valid("demo", kept)
    assert kept["kept"] is True


# ------------------------------------------------------------------ generated fixtures
GENERATED = ROOT / "fixtures" / "generated"


@pytest.mark.parametrize("name", sorted(p.name for p in GENERATED.glob("*.csv")))
def test_report_json_of_generated_files_matches_its_schema(name):
    """Other eras and shapes: a realtime (dispatch-timed) log, Grayskull, two devices."""
    doc = output("report", str(GENERATED / name), "-f", "json")
    assert_valid("report", doc)
    assert_valid("report-summary", output("report", str(GENERATED / name), "-f", "json",
                                          "--summary"))


def test_multi_host_report_and_watch_match_their_schemas():
    """tt-run ranks: report's `ranks` and each op's `rank`; watch --once's `ranks`."""
    ttrun = GENERATED / "ttrun"
    doc = output("report", str(ttrun), "-f", "json", "--per-device")
    assert_valid("report", doc)
    assert doc["ranks"] == [0, 1] and "rank" in doc["ops"][0]
    state = output("watch", str(ttrun), "--once")
    assert_valid("watch", state)
    assert [r["rank"] for r in state["ranks"]] == [0, 1] and "live" not in state


# ------------------------------------------------------------------ the shapes the schemas missed
def test_no_schema_field_is_null_only():
    """A field typed "null" alone can never hold a value: each one found held one (a region's
    name, a recorded AICLK, a noise figure) and broke its own schema."""
    def walk(node: object, path: str) -> list[str]:
        found = []
        if isinstance(node, dict):
            if node.get("type") in ("null", ["null"]):
                found.append(path)
            for k, v in node.items():
                found += walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                found += walk(v, f"{path}/{i}")
        return found

    assert [p for name in NAMES for p in walk(load(name), name)] == []


@pytest.mark.parametrize("name", ["bh20_oft", "bh20_oft_integral_image_trace",
                                  "ops_perf_results_2025_09_18_11_39_20"])
def test_diff_of_a_signposted_trace_with_regressions_matches_its_schema(real, tmp_path, name):
    """top_regressions[].region: the region's name (it was typed null only)."""
    from history_fixture import scaled_copy

    src = real / f"tt-perf-report__{name}.csv"
    slow = scaled_copy(src, tmp_path / "slow.csv", 1.3)
    doc = output("diff", str(src), str(slow), "-f", "json", "--top", "20", "--fail-above", "5",
                 ok=(1,))
    assert_valid("diff", doc)
    assert any(isinstance(r["region"], str) for r in doc["top_regressions"])


def test_diff_of_recorded_telemetry_matches_its_schema(real, tmp_path):
    """context.*.aiclk_mhz and temp_c_max hold the readings (they were typed null only)."""
    from history_fixture import scaled_copy
    from trace_inputs import profiler_run

    state = tmp_path / "state"
    src = real / "tt-perf-report__wh_clip_encoder_2.csv"
    a = profiler_run(tmp_path / "a", src, state, [{"aiclk_mhz": 1000, "temp_c": 55.0}] * 3)
    b = profiler_run(tmp_path / "b", scaled_copy(src, tmp_path / "slow.csv", 1.25), state,
                      [{"aiclk_mhz": 800, "temp_c": 96.5, "throttled": True}] * 3)
    env = {"XDG_STATE_HOME": str(state)}
    doc = output("diff", str(a), str(b), "-f", "json", "--metric", "device", env=env)
    assert_valid("diff", doc)
    assert doc["context"]["candidate"]["temp_c_max"] == 96.5
    assert_valid("report", output("report", str(a), "-f", "json", env=env))


def test_replay_sessions_match_their_schemas(tmp_path):
    from history_fixture import scaled_copy

    from ttdash.sim import generate_ops, write_report_csv

    path = write_report_csv(generate_ops(120, trace_replay=True, layers=1, seed=1, devices=2),
                            tmp_path / "replay.csv")
    slow = scaled_copy(path, tmp_path / "slow.csv", 1.25)
    doc = output("report", str(path), "-f", "json")
    assert_valid("report", doc)
    assert doc["replay_sessions"]
    assert_valid("report", output("report", str(path), "-f", "json", "--replay", "1",
                                  "--per-device"))
    assert_valid("report-summary", output("report", str(path), "-f", "json", "--summary"))
    assert_valid("diff", output("diff", str(path), str(slow), "-f", "json"))
    assert_valid("diff", output("diff", str(path), str(slow), "-f", "json", "--replay", "2"))



def test_history_check_with_ops_gone_matches_its_schema(real, tmp_path):
    """common_pct: the change over the ops both runs have (it was typed null only)."""
    from history_fixture import CLIP, make_store
    from trace_inputs import middle_dropped

    make_store(tmp_path, [1.0, 1.02, 0.99])
    doc = output("history", "--store", str(tmp_path / "store"), "check",
                 str(middle_dropped(CLIP, tmp_path / "middle.csv")), "-f", "json",
                 "--fail-above", "2", ok=(1,))
    assert_valid("history-check", doc)
    assert isinstance(doc["common_pct"], float)


def test_an_op_without_an_op_code_is_reported_and_valid(tmp_path):
    """A device op whose OP CODE cell is empty (a hand-edited or damaged file) is in no op-code
    group, and every format still reports the trace (it crashed the why section's grouping)."""
    import pandas as pd

    df = pd.read_csv(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv", dtype=str,
                     keep_default_na=False)
    df.loc[5, "OP CODE"] = ""
    path = tmp_path / "no_op_code.csv"
    df.to_csv(path, index=False)
    doc = output("report", str(path), "-f", "json", "--no-cache")
    assert_valid("report", doc)
    assert sum(g["ops"] for g in doc["why"]["by_op_code"]) == \
        sum(1 for o in doc["ops"] if o["op_type"] == "tt_dnn_device" and o["op_code"]) > 0
    for fmt in ("table", "markdown", "csv"):
        run = run_main("report", str(path), "-f", fmt, "--no-cache")
        assert run.returncode == 0 and run.stdout, run.stderr
