"""The MCP server on stdio: the only module that imports the MCP SDK (`pip install
'ttdash[mcp]'`). It serves ttdash.mcp.tools.TOOLS through the SDK's low-level server: each tool
with its declared input and output schema, its answer as structured content (and the same JSON
as text, for clients that read only text), a failure as a tool error whose text is the one line
the CLI prints. Works with the SDK's 1.x (decorator handlers) and 2.x (constructor handlers).

The tools run in a worker process (ttdash.mcp.worker), so this one stays free to answer: a call
past its time limit (TTDASH_MCP_CALL_TIMEOUT seconds) is a tool error, a cancelled call or a
client gone away kills the work rather than leaving it to finish."""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from .session import Session, ToolError
from .tools import TOOLS, checked
from .worker import MAX_ANSWER_BYTES, READY, START_TIMEOUT_S, call_timeout, command

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


class Worker:
    """The server's worker process: started at the first call, one call at a time (the others
    wait their turn); killed when a call runs past its time limit (counted from when the
    worker takes it) or is cancelled, and when the server stops; the next call starts
    another."""

    def __init__(self, store: str | None, timeout: float | None) -> None:
        self.store, self.timeout = store, timeout
        self.proc: Any = None
        self.reader: Any = None
        self.lock = anyio.Lock()
        self.started = 0  # worker processes started (a test reads it)

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The tool's answer; ToolError with one line for its failure, for a call stopped at
        the time limit and for a worker that died."""
        from anyio.streams.buffered import BufferedByteReceiveStream

        request = json.dumps({"name": name, "args": args}, ensure_ascii=False) + "\n"
        running = False  # the call is in the worker (not waiting for the one before it)
        try:
            async with self.lock:
                if self.proc is None or self.proc.returncode is not None:
                    self.proc = await anyio.open_process(
                        command(self.store), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=None)
                    self.reader = BufferedByteReceiveStream(self.proc.stdout)
                    self.started += 1
                    with anyio.fail_after(START_TIMEOUT_S):
                        ready = await self.reader.receive_until(b"\n", MAX_ANSWER_BYTES)
                    if ready + b"\n" != READY:
                        raise anyio.EndOfStream
                running = True
                with anyio.fail_after(self.timeout):  # None: no limit
                    await self.proc.stdin.send(request.encode("utf-8"))
                    line = await self.reader.receive_until(b"\n", MAX_ANSWER_BYTES)
        except TimeoutError:
            await self.stop()
            if not running:
                raise ToolError(f"ttdash {name}: internal error: the worker process did not "
                                f"start within {START_TIMEOUT_S:g} s") from None
            raise ToolError(f"ttdash {name}: stopped after {self.timeout:g} s, the time limit "
                            "of a call (TTDASH_MCP_CALL_TIMEOUT); a smaller window or a "
                            "narrower filter asks for less") from None
        except anyio.get_cancelled_exc_class():  # the client cancelled the call or went away
            if running:
                await self.stop()
            raise
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound,
                anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            code = self.proc.returncode if self.proc is not None else None
            await self.stop()
            raise ToolError(f"ttdash {name}: internal error: the worker process ended"
                            + (f" (exit code {code})" if code is not None else "")) from None
        answer = json.loads(line)
        if "error" in answer:
            raise ToolError(str(answer["error"]))
        doc: dict[str, Any] = answer["ok"]
        return doc

    async def stop(self) -> None:
        """Kill the worker (its work stops at once) and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with anyio.CancelScope(shield=True):
            await proc.wait()
            await proc.aclose()


async def _run(worker: Worker, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """The call's arguments checked here (a bad one never reaches the worker), the tool run in
    the worker."""
    tool, checked_args = checked(name, args)
    return await worker.call(tool.name, checked_args)


def _result(doc: dict[str, Any] | None, error: str | None) -> Any:
    if error is not None:
        return types.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": error}], "isError": True})
    return types.CallToolResult.model_validate(
        {"content": [c.model_dump(by_alias=True) for c in _text(doc)], "structuredContent": doc,
         "isError": False})


def build(session: Session, timeout: float | None = None) -> Any:
    """The SDK's Server with our tools, whichever API the installed SDK has; the tools run in
    a worker process with `session`'s store (`timeout`: each call's limit in seconds, default
    TTDASH_MCP_CALL_TIMEOUT's), stopped when the server stops."""
    worker = Worker(session.store, call_timeout() if timeout is None else timeout)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await worker.stop()

    if "on_call_tool" in inspect.signature(Server.__init__).parameters:  # mcp 2.x
        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tool_list())

        async def call_tool(ctx: Any, params: Any) -> Any:
            try:
                doc = await _run(worker, params.name, params.arguments)
            except ToolError as exc:
                return _result(None, str(exc))
            return _result(doc, None)

        return Server(NAME, version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
                      on_list_tools=list_tools, on_call_tool=call_tool)

    server = Server(NAME, version=__version__, instructions=INSTRUCTIONS,  # mcp 1.x
                    lifespan=lifespan)

    @server.list_tools()
    async def list_tools_v1() -> list[Any]:
        return tool_list()

    @server.call_tool(validate_input=False)
    async def call_tool_v1(name: str, arguments: dict[str, Any] | None) -> Any:
        try:
            doc = await _run(worker, name, arguments)
        except ToolError as exc:
            raise RuntimeError(str(exc)) from None  # the SDK makes it an isError result
        return _text(doc), doc

    return server


async def serve(session: Session, timeout: float | None = None) -> None:
    """Serve on stdio until the client closes stdin; then stop at once, calls in flight too
    (their work killed with the worker): the SDK's 1.x would wait for them to finish."""
    server = build(session, timeout)
    async with stdio_server() as (read, write), anyio.create_task_group() as tg:
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for message in read:
                    await send.send(message)
            tg.cancel_scope.cancel()  # end of input: the client is gone

        tg.start_soon(forward)
        await server.run(receive, write, server.create_initialization_options())
        tg.cancel_scope.cancel()


def run(store: str | None = None) -> int:
    """Serve on stdin/stdout until the client closes them; 2 (one line) when
    TTDASH_MCP_CALL_TIMEOUT is not a number."""
    from ..commands.common import stderr_line

    try:
        timeout = call_timeout()
    except ValueError as exc:
        stderr_line(str(exc))
        return 2
    logging.basicConfig(level=logging.WARNING)  # the SDK's own logging goes to stderr
    anyio.run(serve, Session(store=store), timeout)
    return 0
