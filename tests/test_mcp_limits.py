"""`ttdash mcp` calls that can be stopped and answered: the filter language's bounds (length and
terms, one parser for the TUI's `/` and the MCP tools), numbers checked before they are
converted (10**400, -1, 2.5 where a whole number is wanted, NaN, Infinity: tool errors), the
per-call time limit, a cancelled call and a client gone away killing the work. The server is
driven over its real pipes with JSON-RPC written here (the protocol itself, whatever the SDK's
client does with NaN or cancellation); `python -m ttdash mcp` is the child."""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import ROOT, real_dir

from ttdash.model.filters import MAX_FILTER_CHARS, MAX_FILTER_TERMS, Filter, FilterError

BH20 = "tt-perf-report__bh20_oft.csv"
SDK_MAJOR = int(version("mcp").split(".")[0])
WAIT_S = 60.0  # the longest any step waits for the server (a slow shared machine)


# ------------------------------------------------------------------ the filter's bounds
def test_a_filter_is_bounded_in_length_and_terms():
    at_length = "a" * MAX_FILTER_CHARS
    at_terms = " ".join(["matmul"] * MAX_FILTER_TERMS)
    assert len(Filter(at_length).terms()) == 1
    assert len(Filter(at_terms).terms()) == MAX_FILTER_TERMS
    with pytest.raises(FilterError) as long:
        Filter("a" * (1 << 20)).terms()
    assert str(long.value) == ("the filter is 1,048,576 characters long; a filter takes at "
                               "most 4,096")
    with pytest.raises(FilterError) as many:
        Filter(at_terms + " conv").terms()
    assert str(many.value) == "the filter has 65 terms; a filter takes at most 64"
    quoted = " ".join(['"a b"'] * MAX_FILTER_TERMS)  # a quoted term is one term
    assert len(Filter(quoted).terms()) == MAX_FILTER_TERMS



async def test_the_tui_filter_refuses_a_filter_past_the_limit():
    """`/` in the TUI parses with the same Filter: a 65-term filter is one line in a toast,
    and the table keeps every op."""
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app
    from ttdash.tui.optable import OpTable
    from ttdash.tui.widgets import PromptScreen

    view = Trace.load(real_dir() / BH20).view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(120, 36)) as pilot:
        rows = len(app.screen.query_one(OpTable).rows)
        await pilot.press("slash")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = " ".join(["matmul"] * 65)
        await pilot.press("enter")
        await pilot.pause()
        msgs = [str(n.message) for n in app._notifications]
        assert "the filter has 65 terms; a filter takes at most 64" in msgs
        assert len(app.screen.query_one(OpTable).rows) == rows

# ------------------------------------------------------------------ a server on real pipes
class Server:
    """`python -m ttdash mcp` with JSON-RPC lines written and read here; stderr to a file."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.err_path = tmp / "stderr.txt"
        self.err = self.err_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ttdash", "mcp"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.err, cwd=str(ROOT),
            env={**os.environ, **(env or {})})
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "test", "version": "0"}})
        assert "result" in init, init
        self.notify("notifications/initialized")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "method": method,
                              **({"params": params} if params else {})}))

    def start(self, method: str, params: dict | None = None, *, raw: str | None = None) -> int:
        """Send a request (its params as `raw` JSON text when given); its id."""
        self.next_id += 1
        body = raw if raw is not None else json.dumps(params or {})
        self.send(f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"{method}","params":{body}}}')
        return self.next_id

    def answer(self, rid: int) -> dict:
        """The response to request `rid` (notifications and other responses skipped)."""
        while True:
            msg = json.loads(self.lines.get(timeout=WAIT_S))
            if msg.get("id") == rid:
                return msg

    def request(self, method: str, params: dict | None = None, **kw) -> dict:
        return self.answer(self.start(method, params, **kw))

    def call(self, name: str, args: dict | None = None, *, raw_args: str | None = None) -> dict:
        """A tools/call's result: {"isError": ..., "content": ...}."""
        raw = None if raw_args is None else f'{{"name":"{name}","arguments":{raw_args}}}'
        msg = self.request("tools/call", {"name": name, "arguments": args or {}}, raw=raw)
        assert "result" in msg, msg  # never a protocol error
        return msg["result"]

    def worker(self) -> int:
        """The pid of the server's worker process (its one child running Python)."""
        kids = children(self.proc.pid)
        assert len(kids) == 1, kids
        return kids[0]

    def close(self) -> str:
        """Close stdin; the server's exit code 0 and its stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=WAIT_S) == 0
        self.err.close()
        return self.err_path.read_text()


def error_line(result: dict) -> str:
    assert result["isError"] is True, result
    text = result["content"][0]["text"]
    assert "\n" not in text and "Traceback" not in text
    return text


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def wait_gone(pid: int, timeout: float = WAIT_S) -> bool:
    """Whether process `pid` (not a child of this one) ends within `timeout`: its pidfd
    becomes readable when it does."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def until(condition, what: str, timeout: float = WAIT_S) -> None:
    """Wait for a condition of another process that offers no event to wait on."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.02)


def held_fifo(tmp_path: Path) -> tuple[Path, int]:
    """A FIFO that a call blocks on: this process holds it open for reading and writing (a
    writer that never writes nor closes), so a reader of it waits in read() for good."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    return fifo, os.open(fifo, os.O_RDWR | os.O_NONBLOCK)


def reading(pid: int, fifo: Path) -> bool:
    """Whether process `pid` has `fifo` open (the worker is inside the call, in read())."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(fifo) for fd in fds.iterdir())
    except OSError:  # an fd closed or the process gone while listed
        return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and waits on pidfds")


# ------------------------------------------------------------------ numbers, sizes
def test_numbers_and_sizes_are_checked_before_they_are_converted(tmp_path):
    path = json.dumps(str(real_dir() / BH20))
    s = Server(tmp_path)
    cases = {  # the arguments as JSON text (10**400 and NaN as a client may write them)
        "offset-huge": f'{{"path":{path},"offset":{10 ** 400}}}',
        "offset-negative-huge": f'{{"path":{path},"offset":-{10 ** 400}}}',
        "offset-negative": f'{{"path":{path},"offset":-1}}',
        "limit-fraction": f'{{"path":{path},"limit":2.5}}',
        "limit-1e308": f'{{"path":{path},"limit":1e308}}',
        "offset-2**70": f'{{"path":{path},"offset":{2 ** 70}}}',
        "pause-huge": f'{{"path":{path},"pause_above_us":{10 ** 400}}}',
        "filter-1MB": f'{{"path":{path},"filter":"{"a" * (1 << 20)}"}}',
        "filter-65-terms": f'{{"path":{path},"filter":"{" ".join(["x"] * 65)}"}}',
    }
    lines = {k: error_line(s.call("top_ops", raw_args=v)) for k, v in cases.items()}
    for word in ("NaN", "Infinity", "-Infinity"):  # what Python's json writes for them
        r = s.call("top_ops", raw_args=f'{{"path":{path},"limit":{word}}}')
        if SDK_MAJOR >= 2:  # the SDK hands them over: refused by name
            assert error_line(r).endswith(f"'limit': expected a finite number, got "
                                          f"{float(word)!r}")
        else:  # 1.x's messages turn them into null (an argument left out) before any tool
            assert not r["isError"]
    big_id = error_line(s.call("explain_op", raw_args=f'{{"path":{path},"id":{10 ** 400}}}'))
    runs = error_line(s.call("diff", {"baseline": "a", "candidate": "b",
                                      "baseline_runs": ["a"] * 65}))
    gate = error_line(s.call("gate", raw_args='{"baseline":"a","candidate":"b",'
                                              f'"fail_above":{10 ** 400}}}'))
    whole = s.call("top_ops", raw_args=f'{{"path":{path},"limit":3.0}}')  # 3.0 is 3
    assert not whole["isError"] and len(json.loads(whole["content"][0]["text"])["ops"]) == 3
    stderr = s.close()
    assert lines["offset-huge"] == ("ttdash top_ops: argument 'offset': a 1332-bit integer is "
                                    f"above the maximum {2 ** 53}")
    assert lines["offset-negative-huge"].endswith("a negative 1332-bit integer is below the "
                                                  "minimum 0")
    assert lines["offset-negative"].endswith("'offset': -1 is below the minimum 0")
    assert lines["limit-fraction"].endswith("expected a whole number, got 2.5")
    assert lines["limit-1e308"].endswith("1e+308 is above the maximum 500")
    assert lines["offset-2**70"].endswith(f"{2 ** 70} is above the maximum {2 ** 53}")
    assert lines["pause-huge"].endswith("'pause_above_us': a 1332-bit integer is above the "
                                        "maximum 1e+300")
    assert lines["filter-1MB"].endswith("'filter': 1,048,576 characters long; at most 4,096")
    assert lines["filter-65-terms"].endswith("the filter has 65 terms; a filter takes at most "
                                             "64")
    assert "'id'" in big_id and "above the maximum" in big_id
    assert runs.endswith("'baseline_runs': 65 items; at most 64")
    assert "'fail_above'" in gate
    assert stderr == ""  # no traceback, nothing a normal run would not print


# ------------------------------------------------------------------ time limit, cancel, gone
def test_a_call_past_its_time_limit_is_stopped_and_the_server_goes_on(tmp_path):
    fifo, held = held_fifo(tmp_path)
    # 8 s: the call after the stopped one starts a fresh worker that imports ttdash and loads
    # a trace within the same limit (3 s was too short under CI's load: it timed out too)
    s = Server(tmp_path, env={"TTDASH_MCP_CALL_TIMEOUT": "8"})
    rid = s.start("tools/call", {"name": "top_ops", "arguments": {"path": str(fifo)}})
    try:
        until(lambda: len(children(s.proc.pid)) == 1, "the worker starting")
        worker = s.worker()
        until(lambda: reading(worker, fifo), "the worker blocked reading the FIFO")
        pong = s.request("ping")  # answered while the call runs
        assert pong["result"] == {} and s.lines.empty()
        result = s.answer(rid)["result"]
        assert error_line(result) == ("ttdash top_ops: stopped after 8 s, the time limit of a "
                                      "call (TTDASH_MCP_CALL_TIMEOUT); a smaller window or a "
                                      "narrower filter asks for less")
        assert wait_gone(worker)  # the work was killed, not left to finish
    finally:
        os.close(held)
    again = s.call("top_ops", {"path": str(real_dir() / BH20), "limit": 1})
    assert not again["isError"], again
    assert s.worker() != worker  # a new worker
    assert s.close() == ""


def test_a_cancelled_call_stops_its_work(tmp_path):
    fifo, held = held_fifo(tmp_path)
    s = Server(tmp_path)
    rid = s.start("tools/call", {"name": "top_ops", "arguments": {"path": str(fifo)}})
    try:
        until(lambda: len(children(s.proc.pid)) == 1, "the worker starting")
        worker = s.worker()
        until(lambda: reading(worker, fifo), "the worker blocked reading the FIFO")
        s.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
        assert wait_gone(worker)
    finally:
        os.close(held)
    again = s.call("top_ops", {"path": str(real_dir() / BH20), "limit": 1})
    assert not again["isError"]
    assert s.close() == ""


def test_the_work_stops_when_the_client_goes_away(tmp_path):
    """A diff of 63 runs a side (~10 CPU-seconds of loading) is running when the client
    closes the pipe: the server exits and its worker with it, burning nothing after."""
    path = str(real_dir() / BH20)
    s = Server(tmp_path)
    s.start("tools/call", {"name": "diff", "arguments": {
        "baseline": path, "candidate": path, "baseline_runs": [path] * 63,
        "candidate_runs": [path] * 63}})
    until(lambda: len(children(s.proc.pid)) == 1, "the worker starting")
    worker = s.worker()
    until(lambda: cpu_seconds(worker) > 1.0, "the worker at work")
    assert s.close() == ""  # the server exits (0) with the call unanswered
    assert wait_gone(worker, timeout=10)


def test_the_time_limit_comes_from_the_environment():
    from conftest import run_ttdash

    from ttdash.mcp.worker import DEFAULT_TIMEOUT_S, call_timeout

    assert call_timeout({}) == DEFAULT_TIMEOUT_S == 300
    assert call_timeout({"TTDASH_MCP_CALL_TIMEOUT": "2.5"}) == 2.5
    assert call_timeout({"TTDASH_MCP_CALL_TIMEOUT": "0"}) is None  # no limit
    r = run_ttdash("mcp", env={"TTDASH_MCP_CALL_TIMEOUT": "soon"}, process=True)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "ttdash: TTDASH_MCP_CALL_TIMEOUT='soon' is not a number of seconds\n"
