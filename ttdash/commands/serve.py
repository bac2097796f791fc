"""`ttdash serve PATH`: `ttdash open PATH` in a web browser, through textual-serve.

Every page load starts its own `python -m ttdash open PATH ...` (the same interpreter, so the same
install) with Textual's web driver: one session per page, its keys and screen its own. Only this
module imports textual_serve (the `serve` extra).

Bound to 127.0.0.1 unless --host says otherwise. Before it listens the trace is loaded once, as
`open` loads it, so a wrong path or window fails here with `open`'s one line (exit 2) rather than
in every browser session; a large trace's parse is then cached for the sessions. A page on
another site cannot drive a session: a websocket whose Origin is not the page's own is refused.

Exit codes: 0 on SIGTERM, 130 on Ctrl+C (SIGINT), 2 for a bad path or window, a port in use or an
address that cannot be bound, and without textual-serve (one line naming the extra)."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import shlex
import signal
import sys
from urllib.parse import urlsplit

from .common import load_view, stderr_line
from .options import ServeOptions, WindowOptions

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 2, 130
#: How long a stop lets requests in flight finish before it cancels their handlers. A session's
#: websocket handler never finishes by itself: cancelled, it tells its `open` to quit and waits
#: for it (textual-serve's own path), so waiting longer here only delays the stop.
SHUTDOWN_S = 0.5
MISSING_EXTRA = "`ttdash serve` needs textual-serve: pip install 'ttdash[serve]'"


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
    """argv of the `ttdash open` every browser session runs. The path goes after `--`, so a
    name starting with a dash stays a path."""
    argv = [sys.executable, "-m", "ttdash", "open"]
    if opts.theme:
        argv.append(f"--theme={opts.theme}")
    return [*argv, *window_argv(opts.window), "--", opts.path]


def open_command(opts: ServeOptions) -> str:
    """open_argv as the POSIX shell line textual-serve runs (each word quoted by shlex)."""
    return shlex.join(open_argv(opts))


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


def serve(opts: ServeOptions) -> int:
    try:
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        stderr_line(MISSING_EXTRA)
        return EXIT_BAD_INPUT
    load_view(opts.path, opts.window, columns="lazy")  # `open`'s own errors (TraceError: exit 2)

    class PageServer(Server):
        """textual-serve's Server: quiet (one URL line is ours), the page's websocket URL from
        the address the browser used (a wildcard --host has none it could use), and a websocket
        from a page of another origin refused."""

        async def on_startup(self, app: web.Application) -> None:
            pass  # textual-serve prints a banner; the URL line is printed once listening

        async def handle_index(self, request: web.Request):  # type: ignore[override]
            # Read by the page's template before its first await: never seen by another request.
            self.public_url = f"{request.scheme}://{request.host}"
            return await super().handle_index(request)

        async def handle_websocket(self, request: web.Request):  # type: ignore[override]
            origin = request.headers.get("Origin")
            if origin is not None and urlsplit(origin).netloc != request.host:
                raise web.HTTPForbidden(text="ttdash serve: a page of another site\n")
            return await super().handle_websocket(request)

    name = opts.path.rstrip("/").rsplit("/", 1)[-1] or opts.path
    server = PageServer(open_command(opts), host=opts.host, port=opts.port,
                        title=f"ttdash {name}")
    return asyncio.run(_run(server, opts))


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
        sys.stdout.write(f"ttdash serve: http://{url_host(opts.host)}:{opts.port}/ "
                         "(one session per page load; Ctrl+C stops)\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        await runner.cleanup()
    return EXIT_INTERRUPTED if got and got[0] == signal.SIGINT else EXIT_OK
