"""`ttdash mcp`: the server driven by the MCP SDK's own client, over stdio (`python -m ttdash mcp`
as the child) where only a process shows it and over the SDK's memory streams otherwise, on the
real fixtures. Each tool's structured output equals the CLI's JSON for the
same input (the CLI run in-process); lists are bounded on a 93,600-row trace; a bad path and a
bad argument come back as tool errors with one line; the server never writes where it reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from conftest import ROOT, real_dir, run_ttdash

TOOLS = {"open_trace", "top_ops", "explain_op", "group_summary", "diff", "gate", "history_list",
         "history_trend", "history_check", "doctor", "watch_status"}
BH20 = "tt-perf-report__bh20_oft.csv"  # 1,621 rows, 50 signposts, perf counters
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"  # 8 devices, collectives
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"  # host fallbacks
WH_CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
BH_CLIP = "tt-perf-report__bh_64_clip_encoder_1.csv"


# ------------------------------------------------------------------ helpers
@asynccontextmanager
async def server(*extra: str, env: dict[str, str] | None = None, process: bool = False):
    """An initialised client session of the SDK on ttdash's server: in this process over the
    SDK's memory streams by default (the same Server object `ttdash mcp` runs), or with
    `process` a `python -m ttdash mcp` child over stdio, for what only a process shows (the
    protocol on real pipes, stderr, the command line). The SDK is imported here, so the tests
    without a server run without it."""
    from mcp import ClientSession

    if process:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "ttdash", "mcp", *extra],
                                       env={**os.environ, **(env or {})}, cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
        return
    import anyio
    from mcp.shared.memory import create_client_server_memory_streams

    from ttdash.cli import parse
    from ttdash.mcp.server import build
    from ttdash.mcp.session import Session

    _, opts = parse(["mcp", *extra])
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        srv = build(Session(store=opts.store))
        async with create_client_server_memory_streams() as (client, served):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: srv.run(served[0], served[1],
                                              srv.create_initialization_options()))
                async with ClientSession(client[0], client[1]) as session:
                    await session.initialize()
                    yield session
                tg.cancel_scope.cancel()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def call(session, name: str, **args) -> dict:
    result = await session.call_tool(name, args)
    return result.model_dump(by_alias=True, mode="json")


def ok(result: dict) -> dict:
    assert not result["isError"], result["content"]
    doc = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == doc  # the same JSON as text
    return doc


def error(result: dict) -> str:
    assert result["isError"], result
    text = result["content"][0]["text"]
    assert "\n" not in text and "Traceback" not in text
    return text


def cli(*args: str, ok_codes=(0,), env: dict[str, str] | None = None) -> dict:
    r = run_ttdash(*args, env=env)
    assert r.returncode in ok_codes, r.stderr
    return json.loads(r.stdout)


def cli_error(*args: str, env: dict[str, str] | None = None) -> str:
    """The one line the CLI prints on stderr for a failing command (exit 2)."""
    r = run_ttdash(*args, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    return r.stderr.strip().splitlines()[-1]


async def output_schemas(session) -> dict[str, dict]:
    return {t.name: t.outputSchema if hasattr(t, "outputSchema") else t.output_schema
            for t in (await session.list_tools()).tools}


def valid(schema: dict, doc: dict) -> None:
    import jsonschema

    jsonschema.Draft202012Validator(schema).validate(doc)


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


# ------------------------------------------------------------------ the tool list
async def test_list_tools_gives_every_tool_with_its_schemas():
    from ttdash.schemas import load

    async with server(process=True) as s:  # `ttdash mcp` itself, over real pipes
        tools = {t.name: t.model_dump(by_alias=True) for t in (await s.list_tools()).tools}
    assert set(tools) == TOOLS
    import jsonschema

    for name, t in tools.items():
        assert t["description"], name
        assert t["inputSchema"]["type"] == "object", name
        jsonschema.Draft202012Validator.check_schema(t["outputSchema"])
        assert t["outputSchema"]["type"] == "object", name
    # the outputs that are a CLI JSON output whole carry its schema
    for name, schema in (("history_list", "history-list"), ("history_trend", "history-trend"),
                         ("history_check", "history-check"), ("doctor", "doctor")):
        want = {k: v for k, v in load(schema).items() if k != "$schema"}
        assert tools[name]["outputSchema"] == want, name
    # the report's op record is the report schema's, in every tool that lists ops
    op = load("report")["properties"]["ops"]["items"]
    assert tools["top_ops"]["outputSchema"]["properties"]["ops"]["items"] == op
    assert tools["explain_op"]["outputSchema"]["properties"]["op"] == op
    assert "ops" not in tools["open_trace"]["outputSchema"]["properties"]
    assert "ops" not in tools["diff"]["outputSchema"]["properties"]


# ------------------------------------------------------------------ one trace
@pytest.mark.parametrize("name,window", [
    (BH20, {}),  # the fast tier's; the other window and the 8 devices in the slow one (7 s each)
    pytest.param(BH20, {"perf_report_window": True}, marks=pytest.mark.slow),
    pytest.param(DEEPSEEK, {}, marks=pytest.mark.slow)])
async def test_trace_tools_equal_the_cli_json(name, window):
    path = str(real_dir() / name)
    flags = ["--perf-report-window"] if window else []
    report = cli("report", path, "--format", "json", *flags)
    by_gap = cli("report", path, "--format", "json", "--top", "7", "--rank-by", "gap", *flags)
    by_device = cli("report", path, "--format", "json", "--top", "5", *flags)
    summary = cli("report", path, "--format", "json", "--summary", "--group-by", "op", *flags)
    async with server() as s:
        schemas = await output_schemas(s)
        opened = ok(await call(s, "open_trace", path=path, **window))
        top5 = ok(await call(s, "top_ops", path=path, limit=5, **window))
        gap7 = ok(await call(s, "top_ops", path=path, by="gap", limit=7, **window))
        rec = ok(await call(s, "top_ops", path=path, by="recoverable", limit=12, **window))
        paged = ok(await call(s, "top_ops", path=path, limit=3, offset=2, **window))
        matmul = ok(await call(s, "top_ops", path=path, filter="matmul", limit=500, **window))
        first = top5["ops"][0]["id"]
        explained = ok(await call(s, "explain_op", path=path, id=first, **window))
        groups = ok(await call(s, "group_summary", path=path, by="op", limit=500, **window))
        few = ok(await call(s, "group_summary", path=path, by="op", limit=2, **window))
    for tool, doc in (("open_trace", opened), ("top_ops", top5), ("top_ops", rec),
                      ("explain_op", explained), ("group_summary", groups)):
        valid(schemas[tool], doc)
    # open_trace: the report less its op list and entry-by-entry advice
    assert opened == {k: v for k, v in report.items()
                      if k not in ("ops", "advice", "guide_advice")}
    # top_ops: report --top's records and order
    assert top5["ops"] == by_device["ops"] and gap7["ops"] == by_gap["ops"]
    assert top5["ops_in_window"] == top5["matched"] == len(report["ops"])
    assert paged["ops"] == by_device["ops"][2:5] and paged["offset"] == 2
    modelled = [o for o in report["ops"] if o["recoverable_us"] is not None]
    want = sorted(report["ops"], key=lambda o: (o["recoverable_us"] is None,
                                                -(o["recoverable_us"] or 0)))[:12]
    assert rec["ops"] == want and (not modelled or rec["ops"][0]["recoverable_us"] > 0)
    hits = [o for o in report["ops"] if "matmul" in o["op_code"].lower()]
    assert matmul["matched"] == len(hits) and len(matmul["ops"]) == min(len(hits), 500)
    assert {o["id"] for o in matmul["ops"]} <= {o["id"] for o in hits}
    # explain_op: the op's record and its advice entries as the report has them
    assert explained["op"] == next(o for o in report["ops"] if o["id"] == first)
    assert explained["advice"] == [a for a in report["advice"] if a["id"] == first]
    assert explained["rank_by_device_time"] == 1 and explained["columns"]["OP CODE"]
    # group_summary: report --summary's groups, cut to the limit with the count
    assert groups == {**summary, "groups_total": len(summary["groups"])}
    assert few["groups"] == summary["groups"][:2] and few["groups_total"] == len(summary["groups"])


async def test_explain_op_of_a_host_op_and_of_per_device_rows():
    seg, ds = str(real_dir() / SEG), str(real_dir() / DEEPSEEK)
    report = cli("report", seg, "--format", "json")
    per_device = cli("report", ds, "--format", "json", "--per-device")
    merged = cli("report", ds, "--format", "json")
    host = next(o for o in report["ops"] if o["bound"] == "HOST")
    async with server() as s:
        explained = ok(await call(s, "explain_op", path=seg, id=host["id"]))
        ccl = next(o for o in per_device["ops"] if o["ccl_gbps"] is not None)
        row = ok(await call(s, "explain_op", path=ds, id=ccl["id"], per_device=True))
        one = ok(await call(s, "explain_op", path=ds, id=ccl["id"], per_device=True,
                            device=ccl["device"]))
        code = ccl["op_code"]
        merged_ccl = next(o for o in merged["ops"] if o["op_code"] == code)
        why = ok(await call(s, "explain_op", path=ds, id=merged_ccl["id"]))["op_code_why"]
        other = (ccl["device"] + 1) % 8
        elsewhere = error(await call(s, "explain_op", path=ds, id=ccl["id"], per_device=True,
                                     device=other))
    assert explained["op"] == host
    assert [a["kind"] for a in explained["advice"]] == [
        a["kind"] for a in report["advice"] if a["id"] == host["id"]]
    assert any("host" in line for line in explained["why_slow"])
    assert row == one and one["op"] == ccl  # an ID is one CSV line: one device's row
    assert any("Ethernet links" in line for line in one["why_slow"])
    assert f"no op with ID {ccl['id']} on device {other}" in elsewhere
    # the op code's lines of the report's why-slow lists
    assert why["collective"] == next(e for e in merged["ccl_bandwidth"]["by_op_code"]
                                     if e["op_code"] == code)
    assert why["small_grid"] == next((e for e in merged["core_balance"]["small_grid"]
                                      if e["op_code"] == code), None)


# ------------------------------------------------------------------ two traces
async def test_diff_and_gate_equal_the_cli_json():
    wh, bh = str(real_dir() / WH_CLIP), str(real_dir() / BH_CLIP)
    full = cli("diff", wh, bh, "--format", "json", "--allow-arch-mismatch", "--top", "5")
    same = cli("diff", wh, wh, "--format", "json", "--fail-above", "5")
    untrusted = cli_error("diff", wh, bh, "--format", "json", "--fail-above", "5")
    async with server() as s:
        schemas = await output_schemas(s)
        d = ok(await call(s, "diff", baseline=wh, candidate=bh, allow_arch_mismatch=True, top=5))
        g = ok(await call(s, "gate", baseline=wh, candidate=wh, fail_above=5))
        refused = error(await call(s, "gate", baseline=wh, candidate=bh, fail_above=5))
        no_limit = error(await call(s, "gate", baseline=wh, candidate=wh))
    valid(schemas["diff"], d)
    valid(schemas["gate"], g)
    want = {k: v for k, v in full.items() if k != "ops"}
    want.update(pairs_total=len(full["ops"]), by_op_code=full["by_op_code"][:5],
                by_op_code_total=len(full["by_op_code"]), by_region=full["by_region"][:5],
                by_region_total=len(full["by_region"]))
    assert d == want
    changed = d["top_regressions"] + d["top_improvements"]
    assert changed and all("cause" in r for r in changed)
    assert g["gate"] == same["gate"] and g["verdict"] == same["verdict"]
    assert g["exit_code"] == 0 and g["passed"] is True
    assert refused == untrusted  # fails closed with the CLI's line
    assert "fail_above" in no_limit


# ------------------------------------------------------------------ the run history
async def test_history_tools_equal_the_cli_json(tmp_path):
    from history_fixture import CLIP, make_store, scaled_copy

    real_dir()
    _, ids, _ = make_store(tmp_path, [1.0, 1.02, 0.99, 1.01])
    store = str(tmp_path / "store")
    slower = scaled_copy(CLIP, tmp_path / "slower.csv", 1.3)
    listed = cli("history", "list", "--store", store, "--format", "json")
    trend = cli("history", "trend", "--store", store, "--format", "json", "--last", "3")
    op_trend = cli("history", "trend", "--store", store, "--format", "json", "--op", "Matmul")
    check = cli("history", "check", str(slower), "--store", store, "--fail-above", "5",
                "--format", "json", ok_codes=(1,))
    before = tree(tmp_path / "store")
    async with server("--store", store) as s:
        schemas = await output_schemas(s)
        got_list = ok(await call(s, "history_list"))
        got_trend = ok(await call(s, "history_trend", last=3))
        got_op = ok(await call(s, "history_trend", op="Matmul"))
        got_check = ok(await call(s, "history_check", path=str(slower), fail_above=5))
        missing_op = error(await call(s, "history_trend", op="NoSuchOp"))
    for tool, doc in (("history_list", got_list), ("history_trend", got_trend),
                      ("history_check", got_check)):
        valid(schemas[tool], doc)
    assert got_list == listed and [r["run_id"] for r in got_list["runs"]] == ids[::-1]
    assert got_trend == trend and got_op == op_trend
    assert got_check == check and got_check["regression"] is True
    assert missing_op == cli_error("history", "trend", "--store", store, "--op", "NoSuchOp")
    assert tree(tmp_path / "store") == before  # check reads the store, adds nothing


# ------------------------------------------------------------------ the host and a live run
async def test_doctor_and_watch_status_equal_the_cli_json(tmp_path):
    from fake_host import Card, fake_host

    from ttdash.sim import simulate_run

    env = fake_host(tmp_path / "host", [Card(), Card(temp_c=82.0, aiclk=700)])
    doctor = cli("doctor", "--format", "json", env=env, ok_codes=(0, 1))
    run = tmp_path / "run"
    simulate_run(run, n_ops=60, speed=0)
    (run / ".logs" / "profile_log_device.csv").unlink()  # one live source: the op report
    live = run / ".logs" / "cpp_device_perf_report.csv"
    lines = live.read_text().splitlines(keepends=True)
    live.write_text("".join(lines[:21]))  # the header and 20 rows so far
    first_cli = cli("watch", str(run), "--once", env=env)
    async with server(env=env) as s:
        schemas = await output_schemas(s)
        got_doctor = ok(await call(s, "doctor"))
        first = ok(await call(s, "watch_status", dir=str(run), runs=1))
        with live.open("a") as fh:
            fh.write("".join(lines[21:]))
        second = ok(await call(s, "watch_status", dir=str(run)))
    second_cli = cli("watch", str(run), "--once", env=env)
    valid(schemas["doctor"], got_doctor)
    valid(schemas["watch_status"], first)
    valid(schemas["watch_status"], second)
    assert got_doctor == doctor and any(c["status"] != "ok" for c in doctor["checks"])
    for got, want in ((first, first_cli), (second, second_cli)):
        assert got["live"] == want["live"] and got["root"] == want["root"]
        assert got["runs_total"] == len(want["runs"])
        assert got["newest_report"] == max(want["runs"], key=lambda r: r["timestamp"])
        assert len(got["telemetry"]) == len(want["telemetry"]) == 2
    assert first["live"]["rows"] == 20 and second["live"]["rows"] == 60
    assert first["rate"] is None and len(first["runs"]) == 1
    rate = second["rate"]
    assert rate["rows"] == 60 and rate["rows_before"] == 20 and rate["rows_per_s"] > 0


# ------------------------------------------------------------------ errors
async def test_bad_paths_and_arguments_are_tool_errors_with_the_cli_line(tmp_path):
    real = str(real_dir() / BH20)
    missing = str(tmp_path / "missing.csv")
    (tmp_path / "empty").mkdir()
    async with server(process=True) as s:  # errors never reach the child's stderr as tracebacks
        no_file = error(await call(s, "open_trace", path=missing))
        no_report = error(await call(s, "top_ops", path=str(tmp_path / "empty")))
        bad_limit = error(await call(s, "top_ops", path=real, limit=0))
        bad_by = error(await call(s, "top_ops", path=real, by="fastest"))
        unknown = error(await call(s, "open_trace", path=real, colour="red"))
        no_path = error(await call(s, "explain_op", id=3))
        bad_filter = error(await call(s, "top_ops", path=real, filter="nosuchkey:1"))
        bad_arch = error(await call(s, "open_trace", path=real, arch="pentium"))
        no_op = error(await call(s, "explain_op", path=real, id=99_999_999))
        still = ok(await call(s, "top_ops", path=real, limit=1))  # the server lives on
    assert no_file == cli_error("report", missing, "--format", "json")
    assert no_report == cli_error("report", str(tmp_path / "empty"), "--format", "json")
    assert no_file.startswith("ttdash: ") and "missing.csv" in no_file
    assert "'limit'" in bad_limit and "minimum 1" in bad_limit
    assert "'by'" in bad_by and "fastest" in bad_by
    assert "'colour'" in unknown and "'path'" in no_path
    assert "nosuchkey" in bad_filter and "pentium" in bad_arch
    assert "no op with ID 99999999" in no_op
    assert len(still["ops"]) == 1


# ------------------------------------------------------------------ bounded, read-only
def _repeated(src: Path, times: int, dest: Path) -> Path:
    """`src` with its data rows `times` times, HOST START TS shifted (benchmarks/common.py's
    93,600-row trace at times=50)."""
    import pandas as pd

    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    ts = pd.to_numeric(df["HOST START TS"], errors="coerce")
    span = int(ts.max() - ts.min()) + 1_000_000
    parts = [df.assign(**{"HOST START TS": (ts + k * span).astype("Int64").astype(str)})
             for k in range(times)]
    pd.concat(parts).to_csv(dest, index=False)
    return dest


@pytest.mark.slow  # a 93,600-row trace loaded and diffed: ~1 CPU-minute
async def test_output_is_bounded_on_a_large_trace(tmp_path):
    big = str(_repeated(real_dir() / WH_CLIP, 50, tmp_path / "big.csv"))
    async with server() as s:
        answers = {
            "open_trace": await call(s, "open_trace", path=big),
            "top_ops": await call(s, "top_ops", path=big, limit=500),
            "group_summary": await call(s, "group_summary", path=big, by="memory"),
            "explain_op": await call(s, "explain_op", path=big, id=2),
            "diff": await call(s, "diff", baseline=big, candidate=big),
        }
    sizes = {k: len(r["content"][0]["text"]) for k, r in answers.items()}
    assert all(not r["isError"] for r in answers.values()), sizes
    assert max(sizes.values()) < 1_000_000, sizes  # the CLI's JSON of it is ~100 MB
    top = answers["top_ops"]["structuredContent"]
    assert top["matched"] == top["ops_in_window"] > 90_000 and len(top["ops"]) == 500
    d = answers["diff"]["structuredContent"]
    assert d["pairs_total"] > 90_000 and len(d["top_regressions"]) <= 10
    assert len(d["by_op_code"]) <= 10 < d["by_op_code_total"] or d["by_op_code_total"] <= 10


async def test_the_server_never_writes_into_the_directory_it_reads(tmp_path):
    from ttdash.sim import simulate_run

    src = tmp_path / "in"
    shutil.copytree(real_dir(), src / "real", ignore=shutil.ignore_patterns("*EXCERPT*"))
    simulate_run(src / "prof", n_ops=40, speed=0)
    trace = str(src / "real" / BH20)
    before = tree(src)
    async with server() as s:
        for name, args in (("open_trace", {"path": trace}), ("top_ops", {"path": trace}),
                           ("explain_op", {"path": trace, "id": 5}),
                           ("group_summary", {"path": trace}),
                           ("open_trace", {"path": str(src / "prof")}),
                           ("diff", {"baseline": trace, "candidate": trace}),
                           ("gate", {"baseline": trace, "candidate": trace, "fail_above": 5}),
                           ("watch_status", {"dir": str(src / "prof")})):
            ok(await call(s, name, **args))
    assert tree(src) == before


# ------------------------------------------------------------------ in process, no SDK needed
def test_the_session_keeps_loaded_traces_until_they_change(tmp_path):
    from ttdash.mcp.session import Session
    from ttdash.mcp.tools import call as call_tool

    path = tmp_path / "t.csv"
    shutil.copy(real_dir() / BH20, path)
    s = Session()
    call_tool(s, "open_trace", {"path": str(path)})
    call_tool(s, "top_ops", {"path": str(path), "by": "gap"})
    call_tool(s, "explain_op", {"path": str(path), "id": 5})
    assert s.loads == 1
    call_tool(s, "top_ops", {"path": str(path), "per_device": True})  # another view
    assert s.loads == 2
    os.utime(path, ns=(1, 1))  # the file changed on disk: read again
    call_tool(s, "top_ops", {"path": str(path)})
    assert s.loads == 3


def test_without_the_sdk_mcp_says_how_to_install_it_in_one_line(tmp_path):
    stub = tmp_path / "stub" / "mcp"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")  # an `mcp` that is not the SDK
    r = run_ttdash("mcp", env={"PYTHONPATH": str(tmp_path / "stub")}, process=True)
    assert r.returncode == 2
    assert r.stderr.strip() == ("ttdash: `ttdash mcp` needs the MCP Python SDK: pip install "
                                "'ttdash[mcp]'")
    assert r.stdout == ""


def test_only_the_mcp_command_imports_the_sdk():
    code = ("import sys\nfrom ttdash.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "main(['report', sys.argv[1], '--format', 'json', '--top', '1'])\n"
            "print([m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')],"
            " file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, str(real_dir() / BH20)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]"


# ------------------------------------------------------------------ every op explained (#47)
async def test_top_ops_and_explain_op_carry_the_reports_reasons():
    """An op on 1 core of the 64 the file says were available is under-gridded in explain_op,
    read off the raw CSV (CORE COUNT, AVAILABLE WORKER CORE COUNT); top_ops' `why` is the
    report's entry for each op code of its page, and both answers pass their schemas through
    the SDK's client."""
    import pandas as pd

    raw = pd.read_csv(real_dir() / WH_CLIP)
    one_core = raw.index[(raw["CORE COUNT"] == 1) & (raw["AVAILABLE WORKER CORE COUNT"] == 64)
                         & (raw["DEVICE KERNEL DURATION [ns]"] > 0)
                         & raw["OP CODE"].str.startswith("LayerNorm")]
    assert len(one_core) == 130
    op_id = int(one_core[0]) + 2  # the ID is the CSV's line number (the header is line 1)
    code = str(raw.at[one_core[0], "OP CODE"])
    report = cli("report", str(real_dir() / WH_CLIP), "-f", "json")
    entries = {e["op_code"]: e for e in report["why"]["by_op_code"]}
    async with server() as s:
        op = ok(await call(s, "explain_op", path=str(real_dir() / WH_CLIP), id=op_id))
        page = ok(await call(s, "top_ops", path=str(real_dir() / WH_CLIP), limit=5))
    assert op["op"]["op_code"] == code
    assert op["reason"]["class"] == "under-gridded"
    assert "1 of 64 cores" in op["reason"]["reason"]
    assert op["op_code_reason"] == entries[code]
    assert page["why"]["covered_pct"] == report["why"]["covered_pct"]
    codes = {o["op_code"].split()[0] for o in page["ops"]}
    assert {e["op_code"] for e in page["why"]["by_op_code"]} == codes
    assert all(e == entries[e["op_code"]] for e in page["why"]["by_op_code"])
