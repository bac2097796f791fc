"""`ttdash serve PATH`: `ttdash open` in a browser through textual-serve.

In process: the `ttdash open` argv every session runs (no shell), the one-line errors (bad path
or window, port in use, no textual-serve). In a real process driven by headless Chromium
(Debian's /usr/bin/chromium through Playwright), opening the URL the server prints (its token):
the op table renders, a key switches the view, each page load has its own session, a page of
another origin or host cannot open one, Ctrl+C ends the server and its sessions. What serve
refuses and how its sessions end: tests/test_serve_guard.py.

How the browser test reads the screen: textual-serve's client draws with xterm.js on a WebGL or
canvas layer (no text in the DOM) and keeps its Terminal in a closure. A script added before the
page's own catches the Terminal as the client assigns it (`this.terminal = new Terminal(...)`,
the same in every textual-serve release) and the test reads xterm's public buffer API
(`buffer.active.getLine(y).translateToString()`): the characters the user sees."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import real_dir, run_ttdash

from ttdash.cli import parse
from ttdash.commands.serve import MISSING_EXTRA, open_argv, url_host

SMALL = "tt-perf-report__bh20_oft_integral_image_trace.csv"  # 27 rows
TRACE = "tt-perf-report__bh_p100_dlv3.csv"  # 387 ops, no signposts
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ODD = "a b's \"q\" $(touch x);`id` -dash *?\u00e9"  # a folder name no shell may read


# ------------------------------------------------------------------ in process
def test_the_session_argv_round_trips_through_the_parser(tmp_path: Path) -> None:
    """The session's argv (started without a shell: nothing in it is ever read as shell text)
    gives `ttdash open` the same path, theme and window that `serve` was given."""
    path = str(tmp_path / ODD / "-trace.csv")
    name, opts = parse(["serve", "--theme", "ansi-dark", "--signpost=-x#2", "--arch",
                        "p100", "--per-device", "--pause-above", "0.1", "--start-signpost",
                        "$HOME", path])
    assert name == "serve"
    argv = open_argv(opts)
    assert argv[:4] == [sys.executable, "-m", "ttdash", "open"]
    assert argv[-2:] == ["--", path] and "--start-signpost=$HOME" in argv
    name, back = parse(argv[3:])
    assert name == "open"
    assert (back.path, back.theme, back.window) == (opts.path, opts.theme, opts.window)


def test_every_window_option_reaches_the_session() -> None:
    """Each field of the window, set away from its default, comes back from the session's argv
    (a window option added later and left out of serve's argv fails here)."""
    import dataclasses

    from ttdash.commands.options import WindowOptions

    _, opts = parse(["serve", "--replay", "3", "--perf-report-window", "--steady-state",
                     "--end-signpost", "B", "--signpost", "A", "--start-signpost", "C",
                     "--arch", "p150", "--per-device", "--pause-above", "5", "x.csv"])
    default = WindowOptions()
    changed = {f.name for f in dataclasses.fields(WindowOptions)
               if getattr(opts.window, f.name) != getattr(default, f.name)}
    assert changed == {f.name for f in dataclasses.fields(WindowOptions)}
    _, back = parse(open_argv(opts)[3:])
    assert back.window == opts.window


def test_default_options_give_a_plain_open_line() -> None:
    _, opts = parse(["serve", "trace.csv"])
    assert open_argv(opts)[4:] == ["--", "trace.csv"]
    assert (opts.host, opts.port, opts.max_sessions, opts.export_dir) == ("127.0.0.1", 8000, 4,
                                                                          None)


def test_a_relative_path_starting_with_a_dash_stays_a_path() -> None:
    _, opts = parse(["serve", "--", "-trace.csv"])
    name, back = parse(open_argv(opts)[3:])
    assert (name, back.path) == ("open", "-trace.csv")


@pytest.mark.parametrize("args", [("/nonexistent/trace.csv",), ("/etc/passwd",),
                                  ("--signpost", "no such region", TRACE)])
def test_a_bad_path_or_window_fails_before_serving_with_reports_line(args) -> None:
    """The error `open` (and `report`) print, one line, exit 2, and nothing listens."""
    args = tuple(str(real_dir() / a) if a == TRACE else a for a in args)
    want = run_ttdash("report", *args)
    got = run_ttdash("serve", "--port", str(_free_port()), *args)
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == want.stderr and got.stderr.count("\n") == 1, got.stderr


def test_without_textual_serve_one_line_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)  # import fails
    r = run_ttdash("serve", str(real_dir() / SMALL))
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"ttdash: {MISSING_EXTRA}\n")
    assert "pip install 'ttdash[serve]'" in r.stderr


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_ttdash("serve", "--port", str(port), str(real_dir() / SMALL))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"ttdash: 127.0.0.1:{port}: port in use: give another with --port\n"


def test_the_printed_host() -> None:
    """A wildcard --host (every interface) is printed as this machine's name, which another
    machine can open; an IPv6 address goes in brackets."""
    assert url_host("127.0.0.1") == "127.0.0.1"
    assert url_host("0.0.0.0") == url_host("::") == socket.gethostname()
    assert url_host("::1") == "[::1]"
    assert url_host("box.example") == "box.example"


def test_only_the_serve_command_imports_textual_serve() -> None:
    root = Path(__file__).resolve().parent.parent / "ttdash"
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "textual_serve" in p.read_text(encoding="utf-8"))
    assert users == ["commands/serve.py"]


# ------------------------------------------------------------------ a real server, a browser
#: Added to every page before its scripts: keeps the xterm.js Terminal that textual-serve's
#: client assigns to `this.terminal` (a setter on Object.prototype that then steps aside).
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true,
                                             enumerable: true});
    if (value && value.buffer && typeof value.onData === "function") window.__xterm = value;
  },
});
"""
#: The terminal's visible lines, as text.
SCREEN = """() => {
  const t = window.__xterm;
  if (!t) return "";
  const b = t.buffer.active, out = [];
  for (let y = 0; y < t.rows; y++) {
    const line = b.getLine(b.viewportY + y);
    out.push(line ? line.translateToString(true) : "");
  }
  return out.join("\\n");
}"""
#: The op table: the status line, the header (sorted by device time), the first row, the cursor
OPS_VIEW = ("387 ops", "Device\u2193", "Matmul b={32} x 512", "row 1/387")
GROUPED_VIEW = "Share of device time by op code"
#: textual-serve's log line when a session's process exits before it speaks Textual's protocol
FAILED_TO_START = "Application failed to start"

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, predicate, timeout: float = 60.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while not (got := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)
    return got


def _listening(pid: int, port: int) -> list[str]:
    proc = psutil.Process(pid)
    conns = getattr(proc, "net_connections", None) or proc.connections
    return [c.laddr.ip for c in conns(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port]


def _sessions(pid: int) -> list[psutil.Process]:
    """The `ttdash open` processes under the server (textual-serve starts each through sh)."""
    out = []
    for p in psutil.Process(pid).children(recursive=True):
        try:
            if "open" in p.cmdline() and "ttdash" in p.cmdline():
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _page(port: int, host: str, token: str) -> tuple[int, str]:
    """The status and page served to a browser that asked for `host` with the token."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", f"/?token={token}", headers={"Host": host})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def _page_websocket(port: int, host: str, token: str) -> str:
    """The websocket address in the page served to a browser that asked for `host`."""
    status, page = _page(port, host, token)
    assert status == 200, page
    return re.findall(r'data-session-websocket-url="([^"]*)"', page)[0]


def _ws_status(port: int, origin: str, token: str) -> int:
    """The HTTP status of a websocket handshake on /ws sent with this Origin and the token."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", f"/ws?token={token}", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Origin": origin,
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.slow
def test_serve_in_a_browser(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    folder = tmp_path / ODD  # the session's shell line must carry this name intact
    folder.mkdir()
    (folder / TRACE).symlink_to(real_dir() / TRACE)
    port = _free_port()
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as o, err.open("w") as e:
        server = subprocess.Popen([sys.executable, "-m", "ttdash", "serve", "--port", str(port),
                                   str(folder / TRACE)], stdout=o, stderr=e,
                                  stdin=subprocess.DEVNULL, cwd=tmp_path)
    try:
        line = _wait("the URL line", lambda: out.read_text() or server.poll() is not None)
        assert server.poll() is None, (out.read_text(), err.read_text())
        token = re.findall(r"\?token=([\w-]+) ", line)[0]
        url = f"http://127.0.0.1:{port}/?token={token}"
        assert line == (f"ttdash serve: {url} (one session per page load, at most 4; Ctrl+C "
                        "stops)\n")
        assert _listening(server.pid, port) == ["127.0.0.1"]  # this machine only
        assert _ws_status(port, "http://elsewhere.example", token) == 403
        # the page connects back to the address the browser used, one the server answers to
        assert _page_websocket(port, f"localhost:{port}", token) == f"ws://localhost:{port}/ws"
        assert _page(port, f"box.example:{port}", token)[0] == 403

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1000, "height": 600})
                context.add_init_script(CATCH_TERMINAL)
                # The page asks a font site for its stylesheet: keep the test off the network.
                context.route(re.compile(rf"^(?!(http|ws)://127\.0\.0\.1:{port}/)"),
                              lambda route: route.abort())

                def shows(page, want) -> None:
                    """Wait until the page's screen holds every string of `want`; fail at once
                    when its session ended or never started (textual-serve logs why)."""
                    def done():
                        log = out.read_text() + err.read_text()
                        ended = page.evaluate("document.body.classList.contains('-closed')")
                        assert FAILED_TO_START not in log and not ended, log
                        return all(s in page.evaluate(SCREEN) for s in want)

                    _wait(f"{want} on screen", done)

                def load():
                    page = context.new_page()
                    page.goto(url, wait_until="domcontentloaded")
                    shows(page, OPS_VIEW)
                    return page

                def press(page, key: str, shown: str) -> None:
                    page.focus(".xterm-helper-textarea")  # keys, no mouse click
                    page.keyboard.press(key)
                    shows(page, [shown])

                a = load()
                b = load()  # a second page load: its own `ttdash open`
                sessions = _wait("two sessions", lambda: len(_sessions(server.pid)) == 2
                                 and _sessions(server.pid))

                press(a, "2", GROUPED_VIEW)
                assert GROUPED_VIEW not in b.evaluate(SCREEN)
                assert all(s in b.evaluate(SCREEN) for s in OPS_VIEW)
                press(b, "2", GROUPED_VIEW)
                press(a, "1", OPS_VIEW[1])  # back to the op table in a; b stays grouped
                assert GROUPED_VIEW not in a.evaluate(SCREEN)
                assert GROUPED_VIEW in b.evaluate(SCREEN)

                server.send_signal(signal.SIGINT)  # Ctrl+C with two pages open
                assert server.wait(timeout=60) == 130
                _wait("the sessions' end", lambda: not any(_alive(s) for s in sessions))
                for page in (a, b):  # textual-serve's client shows "Session ended."
                    page.wait_for_selector("body.-closed", timeout=30_000)
            finally:
                browser.close()

        logs = out.read_text() + err.read_text()
        assert "Traceback" not in logs and "Error" not in logs, logs
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
