"""`ttdash serve` cannot be fooled: who gets a session, how many, how large, how it ends, and
where a session's export may write.

In process: serve_guard's rules (Host names, Origin, token, the size clamp, the bind warning) and
tui.export's rule for a browser session's export name. In a real server on 127.0.0.1, driven by
aiohttp's websocket client (every connection bounded in time, every wait a bounded poll on a
condition): a foreign Host, a foreign Origin, a missing or wrong token are refused (403) and start
nothing; the token gets a session that renders; a huge page size reaches the session clamped;
twenty websockets at once get --max-sessions sessions and 503 for the rest; a closed socket ends
its session's process (a stopped one too: SIGTERM, then SIGKILL); a typed path exports nothing
outside --export-dir; SIGTERM and SIGINT end the server and every session. After each, the
server's process tree is checked with psutil."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import real_dir, run_ttdash
from test_serve import SMALL, _free_port, _listening, _wait

from ttdash.commands import serve_guard as guard
from ttdash.commands.serve import bind_warning
from ttdash.model.errors import TraceError
from ttdash.tui.export import EXPORT_OFF, NAME_ONLY, SERVE_EXPORT_DIR, served_target

MAX_SESSIONS = 3
#: A session of the 27-op trace holds ~110-150 MB; three must stay far below twenty's worth.
SESSION_MB = 400
IO_S = 60.0  # any one request or websocket read of these tests


# ------------------------------------------------------------------ in process
def test_host_names_a_server_answers_to() -> None:
    """A DNS-rebinding page names its own host (with this server's address behind it)."""
    loop = guard.allowed_hosts("127.0.0.1")
    assert guard.host_allowed("127.0.0.1:8000", loop)
    assert guard.host_allowed("LOCALHOST:8000", loop)
    assert guard.host_allowed("[::1]:8000", loop)
    for bad in ("attacker.example:8000", "attacker.example", "127.0.0.1.nip.io:8000",
                "", None, "[bad", "localhost.attacker.example"):
        assert not guard.host_allowed(bad, loop), bad
    named = guard.allowed_hosts("box.example")
    assert guard.host_allowed("box.example:8000", named)
    assert not guard.host_allowed("other.example:8000", named)
    # every interface: any name this machine has (the token still decides)
    assert guard.allowed_hosts("0.0.0.0") is None and guard.allowed_hosts("::") is None
    assert guard.host_allowed("anything.example:8000", None)


def test_origin_must_be_the_pages_own() -> None:
    assert guard.same_origin("http://127.0.0.1:8000", "127.0.0.1:8000")
    assert guard.same_origin(None, "127.0.0.1:8000")  # not a browser: the token decides
    assert not guard.same_origin("http://attacker.example:8000", "127.0.0.1:8000")
    assert not guard.same_origin("http://127.0.0.1:8001", "127.0.0.1:8000")


def test_the_token() -> None:
    a, b = guard.new_token(), guard.new_token()
    assert a != b and len(a) >= 32
    assert guard.token_matches(a, a)
    assert not guard.token_matches(b, a) and not guard.token_matches(None, a)
    assert not guard.token_matches("", a)


@pytest.mark.parametrize(("width", "height", "want"), [
    (20000, 5000, (500, 200)), ("120", "40", (120, 40)), (-5, 0, (10, 4)),
    ("1e9", None, (80, 24)), (10**30, 10**30, (500, 200)), ({}, [], (80, 24))])
def test_the_terminal_size_is_clamped(width, height, want) -> None:
    assert guard.clamp_size(width, height) == want


def test_only_a_loopback_bind_goes_without_the_warning() -> None:
    assert guard.is_loopback("127.0.0.1") and guard.is_loopback("localhost")
    assert guard.is_loopback("::1") and guard.is_loopback("127.0.0.2")
    assert not guard.is_loopback("0.0.0.0") and not guard.is_loopback("::")
    assert not guard.is_loopback("192.168.1.5") and not guard.is_loopback("box.example")
    assert bind_warning("127.0.0.1") is None and bind_warning("localhost") is None
    assert bind_warning("0.0.0.0") == ("warning: 0.0.0.0 is reachable from other machines and "
                                       "has no login: anyone with the URL (its token) gets a "
                                       "session")


def test_a_browser_sessions_export_is_a_name_in_the_export_dir(tmp_path: Path) -> None:
    root = tmp_path / "exports"
    root.mkdir()
    assert served_target(" ops.csv ", str(root)) == root / "ops.csv"
    outside = tmp_path / "outside.csv"
    for typed in ("../outside.csv", str(outside), "sub/ops.csv", "..", ".", ".hidden.csv",
                  "~/ops.csv", "a\\b.csv", "", "  "):
        with pytest.raises(TraceError) as err:
            served_target(typed, str(root))
        assert NAME_ONLY in err.value.oneline() or "~" in typed, typed
    (root / "link.csv").symlink_to(outside)
    (root / "dir.csv").mkdir()
    for name in ("link.csv", "dir.csv"):
        with pytest.raises(TraceError, match="not a regular file"):
            served_target(name, str(root))
    with pytest.raises(TraceError) as err:
        served_target("ops.csv", "")
    assert err.value.oneline() == EXPORT_OFF


@pytest.mark.parametrize("what", ["no such directory", "not a directory"])
def test_an_export_dir_that_is_not_one_is_one_line(tmp_path: Path, what: str) -> None:
    bad = tmp_path / "nope"
    if what == "not a directory":
        bad.write_text("")
    r = run_ttdash("serve", "--port", str(_free_port()), "--export-dir", str(bad),
                   str(real_dir() / SMALL))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"ttdash: {bad}: {what} (--export-dir)\n"


# ------------------------------------------------------------------ a real server
class Served:
    def __init__(self, proc: subprocess.Popen, port: int, token: str, logs: list[Path],
                 exports: Path) -> None:
        self.proc, self.port, self.token, self.logs, self.exports = (proc, port, token, logs,
                                                                     exports)
        self.base = f"http://127.0.0.1:{port}"
        self.cookie = {"Cookie": f"{guard.cookie_name(port)}={token}"}

    def log(self) -> str:
        return "".join(p.read_text() for p in self.logs)

    def sessions(self) -> list[psutil.Process]:
        """Every process under the server (the sessions start no shell: each is a child)."""
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def no_sessions(self, timeout: float = 30.0) -> None:
        """Every session's process ended and reaped by the server (a zombie is one the server
        has not yet seen end: it still holds its place under --max-sessions)."""
        _wait("no session left", lambda: not self.sessions(), timeout=timeout)


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start(tmp_path: Path, *extra: str) -> Served:
    port = _free_port()
    exports = tmp_path / "exports"
    exports.mkdir(exist_ok=True)
    out, err = tmp_path / f"stdout-{port}", tmp_path / f"stderr-{port}"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([sys.executable, "-m", "ttdash", "serve", "--port", str(port),
                                 "--max-sessions", str(MAX_SESSIONS), "--export-dir",
                                 str(exports), *extra, str(real_dir() / SMALL)],
                                stdout=o, stderr=e, stdin=subprocess.DEVNULL, cwd=tmp_path)
    line = _wait("the URL line", lambda: out.read_text() or proc.poll() is not None)
    assert proc.poll() is None, (out.read_text(), err.read_text())
    token = re.fullmatch(rf"ttdash serve: http://127\.0\.0\.1:{port}/\?token=([\w-]+) \(one "
                         rf"session per page load, at most {MAX_SESSIONS}; Ctrl\+C stops\)\n",
                         line)
    assert token, line
    assert _listening(proc.pid, port) == ["127.0.0.1"]
    return Served(proc, port, token.group(1), [out, err], exports)


def _stop(s: Served, sig: int = signal.SIGTERM) -> int:
    if s.proc.poll() is None:
        s.proc.send_signal(sig)
    try:
        return s.proc.wait(timeout=60)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    s = _start(tmp_path_factory.mktemp("serve"))
    try:
        yield s
    finally:
        kids = s.sessions()
        assert _stop(s) == 0
        assert not [p for p in kids if _running(p)]
        log = s.log()
        assert "Traceback" not in log, log


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * IO_S))


async def _get(s: Served, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
        async with http.get(s.base + path, headers=headers or {}) as r:
            return r.status, await r.text()


async def _ws_refused(s: Served, path: str, headers: dict[str, str]) -> int:
    """The HTTP status of a websocket handshake that must fail."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as err:
            async with http.ws_connect(s.base + path, headers=headers):
                pass
        return err.value.status


async def _read_until(ws, want: bytes, limit: int = 2_000_000) -> bytes:
    """The session's screen output until it holds `want` (bounded in bytes and by IO_S)."""
    import aiohttp

    got = b""
    while want not in got:
        msg = await asyncio.wait_for(ws.receive(), IO_S)
        if msg.type == aiohttp.WSMsgType.BINARY:
            got += msg.data
        elif msg.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"the session ended before {want!r}: {got[-400:]!r}")
        assert len(got) < limit, got[-400:]
    return got


#: An op code of the 27-op trace's table: the session rendered.
RENDERED = b"PermuteDeviceOperation"


def test_foreign_host_origin_or_token_is_refused(served: Served) -> None:
    port, token = served.port, served.token
    rebind = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}

    async def go() -> list[int]:
        return [
            (await _get(served, f"/?token={token}", rebind))[0],
            (await _get(served, "/"))[0],
            (await _get(served, "/?token=wrong"))[0],
            (await _get(served, "/", {"Cookie": f"{guard.cookie_name(port)}=wrong"}))[0],
            (await _get(served, "/static/js/textual.js"))[0],
            await _ws_refused(served, "/ws", {**rebind, **served.cookie}),
            await _ws_refused(served, f"/ws?token={token}", rebind),
            await _ws_refused(served, "/ws", {"Origin": "http://attacker.example",
                                              **served.cookie}),
            await _ws_refused(served, "/ws", {"Origin": f"http://127.0.0.1:{port}"}),
            await _ws_refused(served, "/ws?token=wrong", {}),
        ]

    assert _run(go()) == [403] * 10
    assert served.sessions() == []  # nothing refused started a process


def test_the_token_gets_a_page_a_cookie_and_a_session(served: Served) -> None:
    import aiohttp

    async def go() -> tuple[int, str, list]:
        jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP address, as a browser
        async with aiohttp.ClientSession(cookie_jar=jar,
                                         timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
            async with http.get(f"{served.base}/?token={served.token}") as r:
                status, page = r.status, await r.text()
            async with http.get(f"{served.base}/static/js/textual.js") as r:  # the cookie
                assert r.status == 200
            origin = {"Origin": served.base}
            async with http.ws_connect(f"{served.base}/ws?width=100&height=30",
                                       headers=origin) as ws:
                await _read_until(ws, RENDERED)
                return status, page, served.sessions()

    status, page, kids = _run(go())
    assert status == 200 and f'"ws://127.0.0.1:{served.port}/ws"' in page
    assert len(kids) == 1
    env = kids[0].environ()
    assert (env["COLUMNS"], env["ROWS"]) == ("100", "30")
    assert env[SERVE_EXPORT_DIR] == str(served.exports.resolve())  # its exports go only there
    served.no_sessions()  # the socket closed: its process is gone


def test_a_huge_page_gets_a_clamped_terminal(served: Served) -> None:
    async def go():
        import aiohttp

        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
            async with http.ws_connect(f"{served.base}/ws?width=20000&height=5000",
                                       headers=served.cookie) as ws:
                await _read_until(ws, RENDERED)
                kid = served.sessions()[0]
                env = kid.environ()
                await ws.send_json(["resize", {"width": 20000, "height": 5000}])
                await ws.send_json(["resize", {"width": "x", "height": None}])
                await ws.send_str("not json")
                await ws.send_json({"not": "a list"})
                await ws.send_json(["ping", "1"])  # answered: the odd messages were skipped
                while (msg := await asyncio.wait_for(ws.receive(), IO_S)).type == \
                        aiohttp.WSMsgType.BINARY:
                    pass
                return env, kid.memory_info().rss, msg.data

    env, rss, pong = _run(go())
    assert (env["COLUMNS"], env["ROWS"]) == ("500", "200")
    assert rss < SESSION_MB * 2**20, rss
    assert pong == '["pong", "1"]'
    served.no_sessions()


def test_twenty_sessions_at_once_get_max_sessions(served: Served) -> None:
    import aiohttp

    served.no_sessions()  # (an earlier test's, ended: none holds a place)

    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
            async def one():
                try:
                    return await http.ws_connect(f"{served.base}/ws", headers=served.cookie)
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status

            got = await asyncio.gather(*(one() for _ in range(20)))
            opened = [w for w in got if not isinstance(w, int)]
            try:
                for ws in opened:
                    await _read_until(ws, RENDERED)
                kids = served.sessions()
                rss = sum(k.memory_info().rss for k in kids)
                full = await _get(served, "/", served.cookie)  # a page load while full
            finally:
                for ws in opened:
                    await ws.close()
            return sorted(w for w in got if isinstance(w, int)), len(opened), kids, rss, full

    refused, opened, kids, rss, full = _run(go())
    assert opened == MAX_SESSIONS and refused == [503] * (20 - MAX_SESSIONS)
    assert len(kids) == MAX_SESSIONS
    assert rss < MAX_SESSIONS * SESSION_MB * 2**20
    assert full[0] == 503 and f"all {MAX_SESSIONS} sessions are in use" in full[1]
    served.no_sessions()
    assert _run(_get(served, "/", served.cookie))[0] == 200  # room again


def test_a_closed_socket_ends_even_a_stopped_session(served: Served) -> None:
    """A session that cannot read the quit message (stopped here: SIGSTOP; a huge render in
    the report) is ended when its socket closes: SIGTERM, then SIGKILL to its process group."""
    import aiohttp

    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
            async with http.ws_connect(f"{served.base}/ws", headers=served.cookie) as ws:
                await _read_until(ws, RENDERED)
                kid = served.sessions()[0]
                kid.suspend()
                return kid

    kid = _run(go())
    served.no_sessions(timeout=20)
    assert not _running(kid)


def _web(monkeypatch, exports: Path | None) -> None:
    """This process's apps as a browser session sees them: Textual's web driver (is_web) and
    the export directory `ttdash serve` gives its sessions (None: started without one)."""
    from textual.app import App

    monkeypatch.setattr(App, "is_web", property(lambda self: True))
    if exports is None:
        monkeypatch.delenv(SERVE_EXPORT_DIR, raising=False)
    else:
        monkeypatch.setenv(SERVE_EXPORT_DIR, str(exports))


def _trace_app():
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    return open_app(Trace.load(real_dir() / SMALL, columns="all").view(Window("all")))


async def test_a_typed_path_exports_nothing_outside_the_export_dir(monkeypatch,
                                                                   tmp_path: Path) -> None:
    """In a browser session each typed path (absolute, `..`, over an existing file, then `y`,
    what confirmed the overwrite before) is refused and writes nothing; a plain name lands in
    the export dir."""
    from ttdash.tui.widgets import ConfirmScreen, PromptScreen

    exports = tmp_path / "exports"
    exports.mkdir()
    _web(monkeypatch, exports)
    victim = tmp_path / "victim.csv"
    victim.write_text("keep\n")
    tries = [str(tmp_path / "outside.csv"), "../up.csv", str(victim),
             "../" * 12 + str(victim)[1:], f"{exports}/../up.csv", "~/home.csv"]
    app = _trace_app()
    async with app.run_test(size=(120, 36)) as pilot:
        msgs: list[str] = []  # each try's notice as it comes (older ones time out under load)
        for typed in tries:
            await pilot.press("e")
            assert isinstance(app.screen, PromptScreen)
            app.screen.query_one("Input").value = typed
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen), typed
            msgs += [str(n.message) for n in list(app._notifications)[-1:]]
            await pilot.press("y")  # on the table: copies the row
        await pilot.press("e")
        app.screen.query_one("Input").value = "inside.csv"
        await pilot.press("enter")
        await pilot.pause()
    assert sum(NAME_ONLY in m for m in msgs) == len(tries), msgs
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["inside.csv",
                                                                          "victim.csv"]
    assert victim.read_text() == "keep\n"
    assert (exports / "inside.csv").read_text().startswith('"id","op_code"')


async def test_without_an_export_dir_a_browser_session_does_not_export(monkeypatch) -> None:
    from ttdash.tui.widgets import PromptScreen

    _web(monkeypatch, None)
    app = _trace_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("e")
        assert not isinstance(app.screen, PromptScreen)  # nothing to type a path into
        assert [str(n.message) for n in app._notifications] == [EXPORT_OFF]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_stopping_the_server_ends_every_session(tmp_path: Path, sig: int, code: int) -> None:
    """SIGTERM or Ctrl+C with sessions open, one of them stopped: the server exits and no
    process of its tree is left."""
    import aiohttp

    s = _start(tmp_path)
    try:
        async def go():
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=IO_S)) as http:
                wss = [await http.ws_connect(f"{s.base}/ws", headers=s.cookie)
                       for _ in range(2)]
                for ws in wss:
                    await _read_until(ws, RENDERED)
                kids = s.sessions()
                assert len(kids) == 2
                kids[0].suspend()
                everything = [psutil.Process(s.proc.pid), *s.sessions()]
                s.proc.send_signal(sig)
                for ws in wss:  # each page is told its session ended
                    while (await asyncio.wait_for(ws.receive(), IO_S)).type == \
                            aiohttp.WSMsgType.BINARY:
                        pass
                return everything

        everything = _run(go())
        assert s.proc.wait(timeout=60) == code
        _wait("the whole tree gone", lambda: not [p for p in everything if _running(p)],
              timeout=20)
        assert "Traceback" not in s.log(), s.log()
    finally:
        _stop(s)

