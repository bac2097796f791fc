"""`ttdash mcp`: ttdash's analyses as Model Context Protocol tools for agents (docs/mcp.md).

tools.py is the registry (schemas from ttdash/schemas, functions in trace_tools.py and
run_tools.py, the session's cache in session.py); server.py is the only module that imports the
MCP SDK."""
