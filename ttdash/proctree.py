"""The process tree of a workload `ttdash run` started: every descendant, not only its process
group (no Textual, no model).

ttdash becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``, Linux), so the workload's orphans
(a daemonised or ``setsid`` child, a grandchild left behind when the workload exits) are
re-parented to ttdash instead of init. A thread records the workload's descendants (psutil) four
times a second; an orphan re-parented to ttdash before it was recorded is recognised by a mark
in its environment (``TTDASH_RUN_ID``, inherited from the workload). Orphans that die are reaped
here (they are ttdash's children then).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping

import psutil

from .model.read.text import clean_text

TREE_POLL_S = 0.25  # how often the workload's descendants are recorded
PR_SET_CHILD_SUBREAPER = 36
#: Set in the workload's environment (inherited by its descendants).
RUN_MARK = "TTDASH_RUN_ID"


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux; False elsewhere)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def describe_procs(procs: list[psutil.Process]) -> str:
    """``2 processes: sleep (1234), python3 (1240)``."""
    names = []
    for p in procs[:5]:
        try:
            names.append(f"{clean_text(p.name())} ({p.pid})")
        except psutil.Error:
            names.append(f"pid {p.pid}")
    more = f", +{len(procs) - 5} more" if len(procs) > 5 else ""
    return f"{len(procs)} process{'es' if len(procs) != 1 else ''}: {', '.join(names)}{more}"


class ProcessTree:
    """The descendants of one workload (its leader excluded), recorded while it runs."""

    def __init__(self) -> None:
        self._known: dict[int, psutil.Process] = {}
        self._lock = threading.Lock()
        self._leader: int | None = None
        self._leader_done = threading.Event()
        self._mark = f"{os.getpid()}-{id(self)}-{time.monotonic_ns()}"

    def mark(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with this tree's mark, for the workload."""
        return {**env, RUN_MARK: self._mark}

    def watch(self, leader: int, leader_done: threading.Event) -> None:
        """Record the leader's descendants until `leader_done` is set (a daemon thread)."""
        self._leader, self._leader_done = leader, leader_done

        def loop() -> None:
            while not leader_done.wait(TREE_POLL_S):
                with self._lock:
                    self._record()

        threading.Thread(target=loop, daemon=True, name="ttdash-workload-tree").start()

    def _record(self) -> None:
        roots: list[psutil.Process] = list(self._known.values())
        if self._leader is not None and not self._leader_done.is_set():
            try:
                roots.append(psutil.Process(self._leader))
            except psutil.Error:
                pass
        try:  # orphans re-parented to us (we are their subreaper) before they were recorded
            ours = psutil.Process().children()
        except psutil.Error:
            ours = []
        for p in ours:
            if p.pid in self._known or p.pid == self._leader:
                continue
            try:
                if p.environ().get(RUN_MARK) == self._mark:
                    self._known[p.pid] = p
                    roots.append(p)
            except psutil.Error:
                pass
        for root in roots:
            try:
                kids = root.children(recursive=True)
            except psutil.Error:
                continue
            for k in kids:
                self._known.setdefault(k.pid, k)

    def alive(self) -> list[psutil.Process]:
        """The descendants still running; the dead ones are forgotten (and reaped)."""
        with self._lock:
            self._record()
            out = []
            for pid, p in list(self._known.items()):
                try:
                    if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                        out.append(p)
                        continue
                except psutil.Error:
                    pass
                try:  # an orphan re-parented to us is our child: collect it
                    os.waitpid(pid, os.WNOHANG)
                except (ChildProcessError, OSError):
                    pass
                del self._known[pid]
            return out

    def signal(self, sig: int) -> int:
        """Send `sig` to every descendant still running; how many there were."""
        procs = self.alive()
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        return len(procs)

    def stop(self, grace: float) -> list[psutil.Process]:
        """SIGTERM every descendant, SIGKILL those left after `grace` s; the ones stopped."""
        procs = self.alive()
        if not procs:
            return []
        self.signal(signal.SIGTERM)
        _, left = psutil.wait_procs(procs, timeout=max(grace, 0.0))
        for p in left:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(left, timeout=2.0)
        self.alive()  # reap
        return procs
