"""`ttdash serve PATH`: `ttdash open PATH` in a web browser, through textual-serve.

Every page load starts its own `python -m ttdash open PATH ...` (the same interpreter, so the same
install) with Textual's web driver: one session per page, its keys and screen its own. Only this
module imports textual_serve (the `serve` extra); what it checks is in serve_guard.

Bound to 127.0.0.1 unless --host says otherwise. Before it listens the trace is loaded once, as
`open` loads it, so a wrong path or window fails here with `open`'s one line (exit 2) rather than
in every browser session; a large trace's parse is then cached for the sessions.

Who gets a session: a request must name a Host the server is bound to (127.0.0.1, localhost,
--host; any with a wildcard --host), carry the launch's token (in the printed URL; a cookie after
the first page load), and a websocket's Origin must be the page's own: 403 otherwise. At most
--max-sessions sessions run (503 for the one over), each in a terminal of at most 500x200. A
session's process runs in its own process group; when its websocket closes, and for every session
when the server stops, it is told to quit, then its whole tree gets SIGTERM, then SIGKILL.
Exports in a session go only into --export-dir (tui.export; off without it).

Exit codes: 0 on SIGTERM, 130 on Ctrl+C (SIGINT), 2 for a bad path, window or export directory,
a port in use or an address that cannot be bound, and without textual-serve (one line naming the
extra)."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import os
import shlex
import signal
import sys
from pathlib import Path

from ..model.errors import TraceError
from ..tui.export import SERVE_EXPORT_DIR
from . import serve_guard as guard
from .common import load_view, stderr_line
from .options import ServeOptions, WindowOptions

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 2, 130
#: How long a stop lets requests in flight finish before it cancels their handlers (the
#: sessions are ended before that, by `end_all`).
SHUTDOWN_S = 0.5
#: A session's end: how long its `open` has to quit after the quit message, then after SIGTERM
#: to its process group, before SIGKILL.
QUIT_S, TERM_S = 2.0, 2.0
MISSING_EXTRA = "`ttdash serve` needs textual-serve: pip install 'ttdash[serve]'"
NOT_LOOPBACK = ("warning: {host} is reachable from other machines and has no login: anyone "
                "with the URL (its token) gets a session")
BAD_HOST = "ttdash serve: this server does not answer to that host name\n"
NO_TOKEN = "ttdash serve: open the URL the server printed (it carries the token)\n"
OTHER_SITE = "ttdash serve: a page of another site\n"
FULL = ("ttdash serve: all {n} sessions are in use (--max-sessions {n}); close a tab and "
        "reload\n")


def window_argv(w: WindowOptions) -> list[str]:
    """The window options as `ttdash open` parses them (`--opt=VALUE`: a value starting with a
    dash stays a value)."""
    from ..model.columns import PAUSE_ABOVE_US

    out: list[str] = []
    for flag, value in (("--signpost", w.signpost), ("--start-signpost", w.start_signpost),
                        ("--end-signpost", w.end_signpost), ("--arch", w.arch)):
        if value is not None:
            out.append(f"{flag}={value}")
    if w.replay is not None:
        out.append(f"--replay={w.replay}")
    if w.perf_report_window:
        out.append("--perf-report-window")
    if w.per_device:
        out.append("--per-device")
    if w.steady_state:
        out.append("--steady-state")
    if w.pause_above_us != PAUSE_ABOVE_US:
        out.append(f"--pause-above={w.pause_above_us!r}")
    return out


def open_argv(opts: ServeOptions) -> list[str]:
    """argv of the `ttdash open` every browser session runs (no shell between). The path goes
    after `--`, so a name starting with a dash stays a path."""
    argv = [sys.executable, "-m", "ttdash", "open"]
    if opts.theme:
        argv.append(f"--theme={opts.theme}")
    return [*argv, *window_argv(opts.window), "--", opts.path]


def url_host(host: str) -> str:
    """The host part of a URL for --host: an IPv6 address in brackets; a wildcard address
    (every interface) as this machine's name, which other machines can reach."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.is_unspecified:
        import socket

        return socket.gethostname()
    return f"[{host}]" if ip.version == 6 else host


def bind_warning(host: str) -> str | None:
    """The warning a bind other machines can reach gets (stderr, once listening)."""
    return None if guard.is_loopback(host) else NOT_LOOPBACK.format(host=host)


def export_dir(opts: ServeOptions) -> str | None:
    """--export-dir resolved (a symlinked directory is its target), or TraceError."""
    if opts.export_dir is None:
        return None
    p = Path(opts.export_dir).expanduser()
    if not p.is_dir():
        why = "not a directory" if p.exists() else "no such directory"
        raise TraceError(p, f"{why} (--export-dir)")
    if not os.access(p, os.W_OK | os.X_OK):
        raise TraceError(p, "not writable (--export-dir)")
    return str(p.resolve())


def serve(opts: ServeOptions) -> int:
    try:
        from aiohttp import web  # noqa: F401
        from textual_serve.server import Server  # noqa: F401
    except ImportError:
        stderr_line(MISSING_EXTRA)
        return EXIT_BAD_INPUT
    exports = export_dir(opts)
    load_view(opts.path, opts.window, columns="lazy")  # `open`'s own errors (TraceError: exit 2)
    if exports is not None:
        os.environ[SERVE_EXPORT_DIR] = exports  # the sessions' environment is this one's
    else:
        os.environ.pop(SERVE_EXPORT_DIR, None)
    server = page_server(opts, guard.new_token())
    return asyncio.run(_run(server, opts))


def page_server(opts: ServeOptions, token: str):
    """textual-serve's Server with serve_guard's checks on every request, a session per
    websocket up to --max-sessions, and each session's process ended, whole, when it closes."""
    from aiohttp import WSMsgType, web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server

    argv = open_argv(opts)
    allowed = guard.allowed_hosts(opts.host)
    cookie = guard.cookie_name(opts.port)

    class Session(AppService):
        """One `ttdash open`: started without a shell in a process group of its own; a resize
        clamped; stopped within bounded waits, its whole tree."""

        ending: asyncio.Task[None] | None = None

        async def _open_app_process(self, width: int = 80, height: int = 24):
            env = self._build_environment(width=width, height=height)
            pipe = asyncio.subprocess.PIPE
            self._process = process = await asyncio.create_subprocess_exec(
                *argv, stdin=pipe, stdout=pipe, stderr=pipe, env=env, start_new_session=True)
            self._stdin = process.stdin
            return process

        async def start(self, width: int, height: int) -> None:
            await super().start(*guard.clamp_size(width, height))

        async def set_terminal_size(self, width: int, height: int) -> None:
            await super().set_terminal_size(*guard.clamp_size(width, height))

        async def run(self) -> None:
            await super().run()
            await self.remote_close()  # its process is gone: the page shows the session ended

        @property
        def running(self) -> bool:
            """Starting, or its process not ended: what holds a place under --max-sessions
            (one whose process is gone frees it while its last output drains)."""
            process = self._process
            return process is None or process.returncode is None

        @property
        def pid(self) -> int | None:
            return self._process.pid if self._process is not None else None

        async def stop(self) -> None:
            """Idempotent and bounded: every caller waits for the one ending (shielded: a
            handler cancelled at shutdown does not abandon a process half-ended)."""
            if self.ending is None:
                self.ending = asyncio.ensure_future(self._end())
            await asyncio.shield(self.ending)

        async def _end(self) -> None:
            process = self._process
            if process is None:
                return
            procs = guard.tree(process.pid)
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            for sig, wait in ((None, QUIT_S), (signal.SIGTERM, TERM_S), (signal.SIGKILL, None)):
                if process.returncode is not None:
                    break
                if sig is None:
                    try:
                        await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_S)
                    except asyncio.TimeoutError:
                        pass  # its stdin is full: it is not reading
                else:
                    guard.signal_tree(process.pid, procs, sig)
                try:
                    await asyncio.wait_for(process.wait(), wait)
                except asyncio.TimeoutError:
                    pass
            if guard.alive(procs):  # a descendant outlived the leader: it goes too
                guard.kill_tree_now(process.pid, guard.alive(procs))
            if self._task is not None:
                try:  # the output ends with the last writer of the pipe
                    await asyncio.wait_for(asyncio.shield(self._task), TERM_S)
                except asyncio.TimeoutError:
                    self._task.cancel()
            close_pipes(process)

    class PageServer(Server):
        """textual-serve's Server: quiet (one URL line is ours), the guard's checks on every
        route, the page's websocket URL from the address the browser used (a wildcard --host
        has none it could use)."""

        sessions: set[Session]  # set per server (page_server): the sessions running now
        closing = False

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(self.check)
            return app

        @web.middleware
        async def check(self, request: web.Request, handler):
            if not guard.host_allowed(request.headers.get("Host"), allowed):
                raise web.HTTPForbidden(text=BAD_HOST)
            if not (guard.token_matches(request.query.get("token"), token)
                    or guard.token_matches(request.cookies.get(cookie), token)):
                raise web.HTTPForbidden(text=NO_TOKEN)
            return await handler(request)

        async def on_startup(self, app: web.Application) -> None:
            pass  # textual-serve prints a banner; the URL line is printed once listening

        def full(self) -> bool:
            return self.closing or sum(s.running for s in self.sessions) >= opts.max_sessions

        async def handle_index(self, request: web.Request):  # type: ignore[override]
            if self.full():
                raise web.HTTPServiceUnavailable(text=FULL.format(n=opts.max_sessions))
            # Read by the page's template before its first await: never seen by another request.
            self.public_url = f"{request.scheme}://{request.host}"
            response = await super().handle_index(request)
            response.headers["Cache-Control"] = "no-store"
            response.set_cookie(cookie, token, httponly=True, samesite="Strict")
            return response

        async def handle_websocket(self, request: web.Request):  # type: ignore[override]
            """textual-serve's, with the Origin check, the cap, the clamp and a bounded end."""
            if not guard.same_origin(request.headers.get("Origin"), request.host):
                raise web.HTTPForbidden(text=OTHER_SITE)
            if self.full():
                raise web.HTTPServiceUnavailable(text=FULL.format(n=opts.max_sessions))
            websocket = web.WebSocketResponse(heartbeat=15)
            session = Session(shlex.join(argv), write_bytes=websocket.send_bytes,
                              write_str=websocket.send_str, close=websocket.close,
                              download_manager=self.download_manager)
            self.sessions.add(session)  # counted from here: the cap holds under a burst
            try:
                await websocket.prepare(request)
                await session.start(*guard.clamp_size(request.query.get("width"),
                                                      request.query.get("height")))
                await self._process_messages(websocket, session)
            except asyncio.CancelledError:
                await websocket.close()
            except (ConnectionError, RuntimeError):
                pass  # the browser went away mid-write
            except Exception as exc:  # one line, not textual-serve's logged traceback
                stderr_line(f"a session failed: {type(exc).__name__}: {exc}")
            finally:
                try:
                    await session.stop()
                finally:
                    self.sessions.discard(session)
            return websocket

        async def _process_messages(self, websocket, app_service) -> None:
            """textual-serve's loop, where a message it cannot read is skipped (its own raises
            and logs a traceback)."""
            async for message in websocket:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    envelope = json.loads(message.data)
                except ValueError:
                    continue
                if not isinstance(envelope, list) or not envelope:
                    continue
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
                if kind == "stdin" and isinstance(data, str):
                    await app_service.send_bytes(data.encode("utf-8", "replace"))
                elif kind == "resize" and isinstance(data, dict):
                    await app_service.set_terminal_size(data.get("width"), data.get("height"))
                elif kind == "ping":
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await app_service.blur()
                elif kind == "focus":
                    await app_service.focus()

        async def end_all(self) -> None:
            """Every session ended (bounded: quit, SIGTERM, SIGKILL), no new one started."""
            self.closing = True
            await asyncio.gather(*(s.stop() for s in list(self.sessions)),
                                 return_exceptions=True)

        def kill_left(self) -> None:
            for s in list(self.sessions):
                if s.pid is not None:
                    guard.kill_tree_now(s.pid, guard.alive(guard.tree(s.pid)))
                if s._process is not None:
                    close_pipes(s._process)

    name = opts.path.rstrip("/").rsplit("/", 1)[-1] or opts.path
    server = PageServer(shlex.join(argv), host=opts.host, port=opts.port,
                        title=f"ttdash {name}")
    server.sessions = set()
    server.token = token  # type: ignore[attr-defined]
    return server


def close_pipes(process) -> None:
    """A session's process pipes closed, so its transport finishes while the loop runs."""
    for pipe in (process.stdin,):
        if pipe is not None and not pipe.is_closing():
            pipe.close()
    transport = getattr(process, "_transport", None)  # (asyncio keeps it private)
    if transport is not None and process.returncode is not None:
        transport.close()


async def _run(server, opts: ServeOptions) -> int:
    from aiohttp import web

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    got: list[int] = []

    def on_signal(signum: int) -> None:
        got.append(signum)
        stop.set()

    # _make_app: textual-serve's routes (page, websocket, statics, downloads); its serve() would
    # print a banner and the URL before the port is bound, and takes no say over the signals
    runner = web.AppRunner(await server._make_app(), handle_signals=False,
                           shutdown_timeout=SHUTDOWN_S)
    await runner.setup()
    signals: tuple[int, ...] = ()
    try:
        try:
            await web.TCPSite(runner, opts.host, opts.port).start()
        except OSError as exc:
            why = ("port in use: give another with --port" if exc.errno == errno.EADDRINUSE
                   else exc.strerror or str(exc))
            stderr_line(f"{opts.host}:{opts.port}: {why}")
            return EXIT_BAD_INPUT
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, on_signal, sig)
        if warning := bind_warning(opts.host):
            stderr_line(warning)
        sys.stdout.write(f"ttdash serve: http://{url_host(opts.host)}:{opts.port}/"
                         f"?token={server.token} (one session per page load, at most "
                         f"{opts.max_sessions}; Ctrl+C stops)\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        try:
            await server.end_all()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
            await runner.cleanup()
            server.kill_left()
            # the pipes' transports close on this loop, not in a garbage collection after it
            # ends (which printed "Exception ignored ... Event loop is closed" under load)
            await asyncio.sleep(0)
    return EXIT_INTERRUPTED if got and got[0] == signal.SIGINT else EXIT_OK
