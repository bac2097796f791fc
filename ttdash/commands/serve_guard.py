"""What `ttdash serve` checks before a browser gets a session, and how a session's process ends.

No aiohttp or textual-serve here (commands/serve.py wires these into its server):

- the Host a request names: only the names the server is bound to (a DNS-rebinding page names
  its own host, with this server's address behind it), any Host for a wildcard bind;
- the launch token: a random token per launch, in the URL the server prints (kept in a cookie
  after the first page load), required on every request, page and websocket alike;
- the terminal size a page asks for, clamped to what a screen can show;
- ending a session's process: its own process group (started with a new session), every
  descendant, escalating from the quit message to SIGTERM to SIGKILL within bounded waits.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import signal
from urllib.parse import urlsplit

import psutil

#: The largest terminal a session gets (columns, rows): a 4K screen at a small font shows less.
#: A page asking for more (`?width=20000&height=5000`) gets this, not a session that renders
#: nothing with ~1 GB.
MAX_COLS, MAX_ROWS = 500, 200
#: The smallest: below this the op table has no room for a row.
MIN_COLS, MIN_ROWS = 10, 4
#: Loopback names a browser on this machine uses, whatever --host is.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def cookie_name(port: int) -> str:
    """Cookies do not keep ports apart: two servers on one host each keep their own."""
    return f"ttdash_serve_{port}"


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind: str) -> frozenset[str] | None:
    """The Host names a request may carry (lower case, no port, no brackets); None: any (a
    wildcard bind answers every name this machine has)."""
    if is_wildcard(bind):
        return None
    return LOOPBACK_NAMES | {bind.strip("[]").lower()}


def host_name(header: str | None) -> str | None:
    """The name in a Host header (`box:8000`, `[::1]:8000`), lower case; None when unreadable."""
    if not header:
        return None
    try:
        name = urlsplit(f"//{header}").hostname
    except ValueError:
        return None
    return name or None


def host_allowed(header: str | None, allowed: frozenset[str] | None) -> bool:
    name = host_name(header)
    return name is not None and (allowed is None or name in allowed)


def same_origin(origin: str | None, host: str | None) -> bool:
    """A websocket's Origin names the page's own host:port (no Origin: not a browser)."""
    if origin is None:
        return True
    try:
        return urlsplit(origin).netloc.lower() == (host or "").lower()
    except ValueError:
        return False


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A page's terminal size as a session gets it: whole cells within the bounds above; what
    is not a number is the 80x24 a terminal starts with."""
    def one(value: object, default: int, low: int, high: int) -> int:
        try:
            n = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            return default
        return min(max(n, low), high)

    return one(width, 80, MIN_COLS, MAX_COLS), one(height, 24, MIN_ROWS, MAX_ROWS)


def tree(pid: int) -> list[psutil.Process]:
    """The process and its descendants, as psutil sees them now (empty once it is gone)."""
    try:
        leader = psutil.Process(pid)
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def signal_tree(pid: int, procs: list[psutil.Process], sig: int) -> None:
    """`sig` to the process group `pid` leads (while its leader is unreaped the group id is
    still its own) and to every process of `procs` still running (psutil checks each is the
    same process, not a reused pid): a descendant that left the group is reached too."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def kill_tree_now(pid: int, procs: list[psutil.Process]) -> None:
    """SIGKILL to whatever of a session is left (the server's last step on its way out)."""
    signal_tree(pid, procs, signal.SIGKILL)
