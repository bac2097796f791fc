"""The MCP server on stdio: the only module that imports the MCP SDK (`pip install
'ttdash[mcp]'`). It serves ttdash.mcp.tools.TOOLS through the SDK's low-level server: each tool
with its declared input and output schema, its answer as structured content (and the same JSON
as text, for clients that read only text), a failure as a tool error whose text is the one line
the CLI prints. Works with the SDK's 1.x (decorator handlers) and 2.x (constructor handlers)."""

from __future__ import annotations

import functools
import inspect
import json
import logging
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from .session import Session, ToolError
from .tools import TOOLS, call

NAME = "ttdash"
INSTRUCTIONS = (
    "ttdash analyses Tenstorrent profiler reports (ops_perf_results*.csv). Start with "
    "open_trace PATH, then top_ops / explain_op / group_summary; diff and gate compare two "
    "runs; history_* read the run history; watch_status a live profiler directory; doctor "
    "the host. Paths are read with the server user's permissions, relative to its working "
    "directory; nothing is written beside them. Lists come in slices with their counts.")


def tool_list() -> list[Any]:
    return [types.Tool.model_validate({"name": t.name, "description": t.description,
                                       "inputSchema": t.input_schema,
                                       "outputSchema": t.output_schema}) for t in TOOLS]


def _text(doc: Any) -> list[Any]:
    return [types.TextContent(type="text", text=json.dumps(doc, separators=(",", ":"),
                                                           ensure_ascii=False))]


async def _run(session: Session, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """The tool in a worker thread (the event loop keeps answering pings meanwhile)."""
    return await anyio.to_thread.run_sync(functools.partial(call, session, name, args))


def _result(doc: dict[str, Any] | None, error: str | None) -> Any:
    if error is not None:
        return types.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": error}], "isError": True})
    return types.CallToolResult.model_validate(
        {"content": [c.model_dump(by_alias=True) for c in _text(doc)], "structuredContent": doc,
         "isError": False})


def build(session: Session) -> Any:
    """The SDK's Server with our tools, whichever API the installed SDK has."""
    if "on_call_tool" in inspect.signature(Server.__init__).parameters:  # mcp 2.x
        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tool_list())

        async def call_tool(ctx: Any, params: Any) -> Any:
            try:
                doc = await _run(session, params.name, params.arguments)
            except ToolError as exc:
                return _result(None, str(exc))
            return _result(doc, None)

        return Server(NAME, version=__version__, instructions=INSTRUCTIONS,
                      on_list_tools=list_tools, on_call_tool=call_tool)

    server = Server(NAME, version=__version__, instructions=INSTRUCTIONS)  # mcp 1.x

    @server.list_tools()
    async def list_tools_v1() -> list[Any]:
        return tool_list()

    @server.call_tool(validate_input=False)
    async def call_tool_v1(name: str, arguments: dict[str, Any] | None) -> Any:
        try:
            doc = await _run(session, name, arguments)
        except ToolError as exc:
            raise RuntimeError(str(exc)) from None  # the SDK makes it an isError result
        return _text(doc), doc

    return server


async def serve(session: Session) -> None:
    server = build(session)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run(store: str | None = None) -> int:
    """Serve on stdin/stdout until the client closes them."""
    logging.basicConfig(level=logging.WARNING)  # the SDK's own logging goes to stderr
    anyio.run(serve, Session(store=store))
    return 0
