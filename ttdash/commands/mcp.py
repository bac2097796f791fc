"""`ttdash mcp`: a Model Context Protocol server on stdin/stdout (ttdash.mcp.server).

Exit codes: 0 when the client closes the connection; 2 without the MCP SDK (one line naming
the extra that installs it)."""

from __future__ import annotations

import importlib.util

from .common import stderr_line
from .options import McpOptions

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def sdk_missing() -> bool:
    try:
        return importlib.util.find_spec("mcp.server.lowlevel") is None
    except (ImportError, ValueError):  # "mcp" absent, or a stub without a spec
        return True


def mcp(opts: McpOptions) -> int:
    if sdk_missing():
        stderr_line("`ttdash mcp` needs the MCP Python SDK: pip install 'ttdash[mcp]'")
        return EXIT_BAD_INPUT
    from ..mcp.server import run

    return run(opts.store)
