"""Every MCP tool's answer through the SDK's own client over stdio: one `python -m ttdash mcp`
for the whole module (started once, many calls), whose client checks each structured answer
against the tool's declared output schema (a mismatch raises), on every real fixture and on
the traces where the schemas went wrong before: signposts with regressions (a region name in
top_regressions), metal-trace replays, recorded telemetry (AICLK, temperature), several runs per
side. Each answer is also checked under a stricter reading of the same schema: an "integer" is
a JSON integer, never 7.0 or 3.4e18 (IDs, PROGRAM HASH, call counts, device IDs stay exact).
The CLI's JSON of the same traces is checked in test_json_schemas.py."""

from __future__ import annotations

import csv
import functools
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from conftest import REPORT_FIXTURES, ROOT, each_real_file, real_dir
from strict_schema import strict_errors
from trace_inputs import middle_dropped, profiler_run

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH20 = "tt-perf-report__bh20_oft.csv"  # 50 signposts, perf counters
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"  # PROGRAM HASH past 2**53
LOGS = ("ttnn-visualizer__smoke_profile_log_device__EXCERPT_first20lines.csv",
        "xkuze-Tenstorrent__profile_log_device__EXCERPT_first18lines.csv")


# ------------------------------------------------------------------ the inputs
@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    from fake_host import Card, fake_host
    from history_fixture import make_store, scaled_copy

    from ttdash.sim import generate_ops, simulate_run, write_report_csv

    real = real_dir()
    tmp = tmp_path_factory.mktemp("mcp-outputs")
    out: dict[str, Path] = {"tmp": tmp}
    for name in REPORT_FIXTURES:  # a slower copy of each: regressions (in regions where any)
        out[f"slow:{name}"] = scaled_copy(real / name, tmp / f"slow-{name}", 1.3)
    replay = tmp / "replay.csv"  # a first run, then replay sessions 1-5; 2 devices
    write_report_csv(generate_ops(120, trace_replay=True, layers=1, seed=1, devices=2), replay)
    out["replay"] = replay
    out["slow:replay"] = scaled_copy(replay, tmp / "slow-replay.csv", 1.25)
    state = tmp / "state"
    out["state"] = state
    out["tele_a"] = profiler_run(tmp / "tele_a", real / WH, state, [
        {"aiclk_mhz": 1000, "temp_c": 55.0, "throttled": False}] * 3)
    out["tele_b"] = profiler_run(tmp / "tele_b", scaled_copy(real / WH, tmp / "wh-slow.csv",
                                                              1.25), state, [
        {"aiclk_mhz": 800, "temp_c": 96.5, "throttled": True}] * 3)
    for i, f in enumerate((1.0, 1.01, 1.02)):  # several runs a side, with signposts
        out[f"base{i}"] = scaled_copy(real / BH20, tmp / f"base{i}.csv", f)
        out[f"cand{i}"] = scaled_copy(real / BH20, tmp / f"cand{i}.csv", 1.2 + f / 100)
    _, _, paths = make_store(tmp, [1.0, 1.02, 0.99, 1.01])
    out["store"] = tmp / "store"
    out["check"] = paths[-1]
    out["slower_run"] = scaled_copy(paths[0], tmp / "slower-run.csv", 1.3)
    out["middle"] = middle_dropped(paths[0], tmp / "middle.csv")
    simulate_run(tmp / "live", n_ops=60, speed=0, devices=2)
    out["live"] = tmp / "live"
    out["env"] = fake_host(tmp / "host", [Card(), Card(temp_c=82.0, aiclk=700)])  # type: ignore
    return out


# ------------------------------------------------------------------ one server for the module
class Client:
    """The SDK's client session on one `ttdash mcp` process, called from synchronous tests
    through a blocking portal (the session's event loop runs in the portal's thread)."""

    def __init__(self, portal, session, schemas: dict[str, dict]) -> None:
        self.portal, self.session, self.schemas = portal, session, schemas

    def result(self, name: str, **args) -> dict:
        """The call's result as the protocol has it; the client has checked its structured
        content against the tool's output schema (it raises when that fails)."""
        r = self.portal.call(functools.partial(self.session.call_tool, name, args))
        return r.model_dump(by_alias=True, mode="json")

    def ok(self, name: str, **args) -> dict:
        return self.checked(name, args, self.result(name, **args))

    def checked(self, name: str, args: dict, r: dict) -> dict:
        assert not r["isError"], (name, args, r["content"])
        doc = r["structuredContent"]
        problems = strict_errors(self.schemas[name], doc)
        assert not problems, (name, args, problems[:10])
        assert json.loads(r["content"][0]["text"]) == doc
        return doc

    def answer(self, name: str, **args) -> dict | str:
        """The checked answer, or the one-line tool error (a window a file cannot have)."""
        r = self.result(name, **args)
        return self.one_line(name, args, r) if r["isError"] else self.checked(name, args, r)

    def error(self, name: str, **args) -> str:
        return self.one_line(name, args, self.result(name, **args))

    @staticmethod
    def one_line(name: str, args: dict, r: dict) -> str:
        assert r["isError"], (name, args)
        text = r["content"][0]["text"]
        assert "\n" not in text and "Traceback" not in text
        return text


@asynccontextmanager
async def _stdio(env: dict[str, str], store: Path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ttdash", "mcp", "--store", str(store)],
                                   env={**os.environ, **env}, cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        schemas = {t.name: t.model_dump(by_alias=True)["outputSchema"] for t in tools}
        yield session, schemas


@pytest.fixture(scope="module")
def client(inputs):
    from anyio.from_thread import start_blocking_portal

    env = {**inputs["env"], "XDG_STATE_HOME": str(inputs["state"])}
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(_stdio(env, inputs["store"])) as (session, schemas):
        yield Client(portal, session, schemas)


def _ids_by_device_time(doc: dict, n: int) -> list[int]:
    return [o["id"] for o in doc["ops"][:n]]


# ------------------------------------------------------------------ every real file
@pytest.mark.parametrize("name", each_real_file([*REPORT_FIXTURES]))
def test_every_trace_tool_on_every_real_file_keeps_its_schema(client, inputs, name):
    path = str(real_dir() / name)
    slow = str(inputs[f"slow:{name}"])
    opened = client.ok("open_trace", path=path)
    top = client.ok("top_ops", path=path, limit=500)
    client.ok("top_ops", path=path, by="gap", limit=50)
    client.ok("top_ops", path=path, by="share", filter="-cat:TM", limit=50)
    for by in ("op", "memory", "category"):
        client.ok("group_summary", path=path, by=by, limit=500)
    for op_id in _ids_by_device_time(top, 3):
        client.ok("explain_op", path=path, id=op_id)
    per_device = client.ok("top_ops", path=path, per_device=True, limit=3)
    for op in per_device["ops"]:
        client.ok("explain_op", path=path, id=op["id"], per_device=True, device=op["device"])
    client.ok("diff", baseline=path, candidate=path)
    client.ok("gate", baseline=path, candidate=path, fail_above=5)
    d = client.ok("diff", baseline=path, candidate=slow, top=20)
    assert d["top_regressions"], name
    if opened["signposts"]:  # the regions of a signposted trace: a string, not null only
        assert any(isinstance(r["region"], str) for r in d["top_regressions"]), name
    if opened["signposts"]:  # tt-perf-report's window: ops in it, or one line saying none
        client.answer("open_trace", path=path, perf_report_window=True)
        client.answer("diff", baseline=path, candidate=slow, perf_report_window=True)
    g = client.ok("gate", baseline=path, candidate=slow, fail_above=5)
    assert g["passed"] is (g["exit_code"] == 0)
    if opened["replay_sessions"]:
        session = opened["replay_sessions"][0]["session"]
        client.ok("top_ops", path=path, replay=session, limit=500)
        client.ok("diff", baseline=path, candidate=slow, replay=session)


@pytest.mark.parametrize("name", LOGS)
def test_a_device_log_is_a_tool_error_in_every_trace_tool(client, name):
    path = str(real_dir() / name)
    for tool, args in (("open_trace", {"path": path}), ("top_ops", {"path": path}),
                       ("group_summary", {"path": path}), ("explain_op", {"path": path, "id": 2}),
                       ("diff", {"baseline": path, "candidate": path}),
                       ("gate", {"baseline": path, "candidate": path, "fail_above": 1})):
        assert name in client.error(tool, **args)


def test_explain_op_gives_ids_hashes_and_counts_as_exact_integers(client):
    """PROGRAM HASH past 2**53 is the file's digits, not 3.4e18; call counts and device IDs are
    integers (the loaded frame holds them as floats where a column has an empty cell)."""
    path = real_dir() / DEEPSEEK
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    top = client.ok("top_ops", path=str(path), per_device=True, limit=5)
    for op in top["ops"]:
        row = rows[op["id"] - 2]
        doc = client.ok("explain_op", path=str(path), id=op["id"], per_device=True,
                        device=op["device"])
        cols = doc["columns"]
        assert cols["PROGRAM HASH"] == int(row["PROGRAM HASH"]) > 2 ** 53
        assert cols["GLOBAL CALL COUNT"] == int(row["GLOBAL CALL COUNT"])
        assert cols["DEVICE ID"] == int(row["DEVICE ID"]) == doc["op"]["device"]
        for value in (cols["PROGRAM HASH"], cols["GLOBAL CALL COUNT"], cols["DEVICE ID"],
                      doc["op"]["id"], doc["op"]["device"], doc["op"]["cores"]):
            assert type(value) is int
    seg = real_dir() / "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
    device_op = client.ok("top_ops", path=str(seg), limit=1)["ops"][0]
    cols = client.ok("explain_op", path=str(seg), id=device_op["id"])["columns"]
    assert type(cols["DEVICE ID"]) is int and type(cols["GLOBAL CALL COUNT"]) is int


# ------------------------------------------------------------------ replays, telemetry, runs
def test_replay_sessions_keep_their_schemas(client, inputs):
    path, slow = str(inputs["replay"]), str(inputs["slow:replay"])
    opened = client.ok("open_trace", path=path)
    sessions = [s["session"] for s in opened["replay_sessions"]]
    assert len(sessions) > 2
    for session in (sessions[0], sessions[-1]):
        top = client.ok("top_ops", path=path, replay=session, limit=500)
        client.ok("explain_op", path=path, id=top["ops"][0]["id"], replay=session)
        client.ok("group_summary", path=path, replay=session, by="op")
        client.ok("diff", baseline=path, candidate=slow, replay=session)
    client.ok("top_ops", path=path, per_device=True, limit=500)
    d = client.ok("diff", baseline=path, candidate=slow)
    assert d["top_regressions"]
    client.ok("gate", baseline=path, candidate=slow, fail_above=5)


def test_recorded_telemetry_keeps_its_schema(client, inputs):
    """context.{baseline,candidate}.aiclk_mhz and temp_c_max: numbers (the schema had null)."""
    a, b = str(inputs["tele_a"]), str(inputs["tele_b"])
    client.ok("open_trace", path=a)
    d = client.ok("diff", baseline=a, candidate=b, metric="device")
    ctx = d["context"]
    assert ctx["baseline"]["aiclk_mhz"] == 1000 and ctx["candidate"]["aiclk_mhz"] == 800
    assert ctx["candidate"]["temp_c_max"] == 96.5
    g = client.ok("gate", baseline=a, candidate=b, metric="device", fail_above=5)
    assert g["exit_code"] == 1


def test_several_runs_a_side_keep_their_schemas(client, inputs):
    base = [str(inputs[f"base{i}"]) for i in range(3)]
    cand = [str(inputs[f"cand{i}"]) for i in range(3)]
    d = client.ok("diff", baseline=base[0], baseline_runs=base[1:], candidate=cand[0],
                  candidate_runs=cand[1:], top=30)
    assert len(d["runs"]["baseline"]) == 3 and d["spread"] is not None
    assert any(isinstance(r["region"], str) for r in d["top_regressions"])
    g = client.ok("gate", baseline=base[0], baseline_runs=base[1:], candidate=cand[0],
                  candidate_runs=cand[1:], fail_above=5)
    assert g["exit_code"] == 1
    client.ok("diff", baseline=base[0], baseline_runs=base[1:], candidate=cand[0],
              candidate_runs=cand[1:], signpost="1")


def test_history_doctor_and_watch_keep_their_schemas(client, inputs):
    listed = client.ok("history_list")
    assert len(listed["runs"]) == 4
    client.ok("history_list", where=["batch=8"], last=2)
    client.ok("history_trend")
    client.ok("history_trend", op="MinimalMatmulOp")
    check = client.ok("history_check", path=str(inputs["slower_run"]), fail_above=5)
    assert check["regression"] is True
    client.ok("history_check", path=str(inputs["check"]), fail_above=5)
    gone = client.ok("history_check", path=str(inputs["middle"]), fail_above=2)
    assert isinstance(gone["common_pct"], float)
    client.ok("doctor")
    live = str(inputs["live"])
    client.ok("watch_status", dir=live)
    client.ok("watch_status", dir=live, runs=1)
    client.ok("watch_status", dir=str(inputs["tmp"] / "nothing"))

