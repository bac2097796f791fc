"""Where the tools run: a child process (`python -m ttdash.mcp.worker`) that holds the session
(its cached views) and answers one call at a time, so the server's own process only speaks the
protocol and can always stop a call. The server (ttdash.mcp.server) checks a call's arguments,
writes it to the worker as one JSON line and waits for the one-line answer; when the call runs
past its time limit, when the client cancels it or when the client goes away, the server kills
the worker (the work stops at once, whatever it was doing) and the next call starts a new one
(the views it had cached are read again). The worker also ends when the server's process does
(Linux: the parent-death signal; elsewhere a watch on the parent's id).

The protocol, one JSON object per line: READY out once started, then `{"name": TOOL, "args":
{...}}` in, `{"ok": DOC}` or `{"error": LINE}` out. Nothing here imports the MCP SDK; no tool
writes to the protocol's descriptors (stdout is pointed at stderr, stdin at /dev/null, for the
call's code)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any, BinaryIO

#: The environment variable that sets the per-call time limit in seconds (0: none).
TIMEOUT_ENV = "TTDASH_MCP_CALL_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
#: The worker's first line: started, its imports done (a call's time limit excludes them)
READY = b'{"ready":true}\n'
#: How long a worker may take to start (imports on a loaded machine)
START_TIMEOUT_S = 120.0
#: The longest answer line read from the worker (the largest tool answer is ~0.4 MB).
MAX_ANSWER_BYTES = 256 << 20


def call_timeout(env: dict[str, str] | None = None) -> float | None:
    """The per-call limit from TIMEOUT_ENV (seconds; 0 or below: none); ValueError naming the
    variable when it is not a number."""
    raw = (os.environ if env is None else env).get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw[:40]!r} is not a number of seconds") from None
    if value != value:
        raise ValueError(f"{TIMEOUT_ENV}={raw[:40]!r} is not a number of seconds")
    return value if value > 0 else None


def command(store: str | None) -> list[str]:
    """The worker's command line."""
    return [sys.executable, "-m", "ttdash.mcp.worker", *(["--store", store] if store else [])]


# ------------------------------------------------------------------ the worker process
def _die_with_parent() -> None:
    """End this process when the server's does: PR_SET_PDEATHSIG on Linux, else (and against
    the race before it is set) a thread watching the parent's id."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def serve(requests: BinaryIO, answers: BinaryIO, store: str | None) -> None:
    """Answer each request line until `requests` ends."""
    from ..commands import common  # noqa: F401 (pandas, the model: loaded before "ready")
    from .session import Session, ToolError
    from .tools import call

    session = Session(store=store)
    answers.write(READY)  # the server counts a call's time from here on, not the start-up
    answers.flush()
    for line in requests:
        try:
            req = json.loads(line)
            name, args = req["name"], req.get("args")
        except (ValueError, KeyError, TypeError):
            out: dict[str, Any] = {"error": "ttdash: internal error: a request the worker "
                                            "cannot read"}
        else:
            try:
                out = {"ok": call(session, name, args)}
            except ToolError as exc:
                out = {"error": str(exc)}
        answers.write(json.dumps(out, separators=(",", ":"), ensure_ascii=False)
                      .encode("utf-8") + b"\n")
        answers.flush()


def main(argv: list[str]) -> int:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is the server's to handle
    store = argv[argv.index("--store") + 1] if "--store" in argv else None
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the tools' code never reads the protocol
    os.close(devnull)
    os.dup2(2, 1)  # nor writes into it: a stray print goes to stderr
    sys.stdout = sys.stderr
    serve(requests, answers, store)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
