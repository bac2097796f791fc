"""docs/contributing.md's "Add an MCP tool", done once: a tool declared as the recipe says (a
function `(session, args) -> dict` on the session's cached view, a `Tool` in
`ttdash.mcp.tools.TOOLS` with its schemas from `ttdash.mcp.schemas`) is listed by `ttdash mcp`
with those schemas, has its arguments checked and answers through the SDK's own stdio client
(which checks the answer against the declared output schema).

The tool cannot be written into the package from a test: a `sitecustomize` module on the
child's PYTHONPATH appends it to TOOLS when each interpreter starts, the server's and its
worker's, as a new entry in tools.py's TOOLS would be there."""

from __future__ import annotations

import os
import sys
import textwrap

import anyio
from conftest import ROOT, real_dir

TRACE = "tt-perf-report__bh_p100_dlv3.csv"

RECIPE_TOOL = '''
"""The recipe's tool (tests/test_mcp_recipe.py)."""
from ttdash.mcp import schemas as sc
from ttdash.mcp import tools
from ttdash.mcp.session import window_options


def count_ops(s, args):
    """Step 1: the answer from the session's cached view, with the model's own figures."""
    sm = s.view(args["path"], window_options(args)).summary()
    return {"ops": int(sm.ops), "devices": [int(d) for d in sm.devices]}


# Step 2: the declaration (in the package: one more entry of TOOLS in ttdash/mcp/tools.py).
TOOL = tools.Tool(
    "count_ops", "The ops and devices of a trace's window.",
    sc.inputs({"path": sc.PATH, **sc.WINDOW}, ("path",)),
    sc.obj({"ops": sc.COUNT, "devices": {"type": "array", "items": sc.INT}}),
    count_ops)
tools.TOOLS = (*tools.TOOLS, TOOL)
tools.BY_NAME[TOOL.name] = TOOL
'''


def test_a_tool_added_the_documented_way_answers_through_the_stdio_client(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ttdash.mcp.session import Session, window_options

    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(RECIPE_TOOL))
    path = str(real_dir() / TRACE)
    expected = Session().view(path, window_options({})).summary()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ttdash", "mcp"],
                                   env=env, cwd=str(ROOT))

    async def session_calls():
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            listed = {t.name: t.model_dump(by_alias=True)
                      for t in (await session.list_tools()).tools}
            good = await session.call_tool("count_ops", {"path": path})
            bad = await session.call_tool("count_ops", {"path": path, "replay": -1})
            return listed, *(r.model_dump(by_alias=True, mode="json") for r in (good, bad))

    listed, good, bad = anyio.run(session_calls)
    assert {"open_trace", "count_ops"} <= set(listed)  # listed beside the package's tools
    tool = listed["count_ops"]
    assert tool["inputSchema"]["required"] == ["path"]
    assert "replay" in tool["inputSchema"]["properties"]
    assert tool["outputSchema"]["required"] == ["ops", "devices"]
    assert not good["isError"], good["content"]
    assert good["structuredContent"] == {"ops": expected.ops,
                                         "devices": [int(d) for d in expected.devices]}
    assert expected.ops == 387
    assert bad["isError"]  # the server checked the argument against the declared input schema
    text = bad["content"][0]["text"]
    assert "\n" not in text and "replay" in text, text
