"""Stream ttnn's real-time profiler into a CSV that ``ttdash watch`` / ``ttdash run`` tail live.

In the workload::

    from ttdash.hooks import ttnn as ttdash_hook
    ttdash_hook.install()          # before or after opening the device

``install()`` registers ``ttnn.device.RegisterProgramRealtimeProfilerCallback`` (ttnn 0.71 and
later) and appends every batch of program records to
``<profiler dir>/.logs/ttdash_realtime_profile.csv`` (the profiler dir as ``ttdash watch`` finds
it: ``$TT_METAL_PROFILER_DIR``, ``$TT_METAL_HOME/generated/profiler``, ``./generated/profiler``).
The file has the live-source columns ``GLOBAL CALL COUNT``, ``DEVICE ID``, ``OP NAME``,
``DEVICE KERNEL DURATION [ns]`` and ``OP TO OP LATENCY [ns]``, plus the raw record fields and a
``DROPPED`` count, so any ttdash live view reads it like the device profiler's own
``cpp_device_perf_report.csv``.

The hook never raises into the workload: a failure is logged once (logger ``ttdash.hooks.ttnn``,
on stderr when logging is not configured) and the hook turns itself off. Importing this module does
not import ``ttnn``; only :func:`install` does.

Record shapes handled (read with ``getattr``, dicts accepted too):

* ttnn 0.76 and later: the callback gets a ``ProgramRealtimeRecordBatch`` with ``records`` and
  ``dropped``; a record has ``runtime_id``, ``chip_id``, ``start_timestamp``, ``end_timestamp``
  (device ticks), ``frequency`` (ticks per ns, i.e. GHz) and ``kernel_sources``.
* ttnn 0.71 to 0.75: the callback gets one ``ProgramRealtimeRecord`` per call (``program_id`` in
  0.71/0.72, ``runtime_id`` from 0.74), with no dropped count.
"""

from __future__ import annotations

import atexit
import csv
import io
import logging
import math
import os
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "REALTIME_CSV", "RealtimeCsvWriter", "install", "is_installed",
           "op_name_from_sources", "status", "uninstall"]

log = logging.getLogger("ttdash.hooks.ttnn")

#: File name under ``<profiler dir>/.logs/``.
REALTIME_CSV = "ttdash_realtime_profile.csv"
#: First ttnn release on PyPI whose ``ttnn.device`` has the callback API.
FIRST_TTNN_WITH_CALLBACK = "0.71"

COLUMNS = (
    "GLOBAL CALL COUNT",            # the record's runtime id (what the device profiler calls it)
    "DEVICE ID",                    # chip id
    "DEVICE ARCH",                  # guessed from the clock: wormhole_b0, blackhole, grayskull
    "OP NAME",                      # derived from the kernel source paths (empty when unknown)
    "DEVICE KERNEL DURATION [ns]",  # (end - start) / frequency
    "OP TO OP LATENCY [ns]",        # start - end of the previous record of the same device
    "DEVICE KERNEL START CYCLE",    # raw start timestamp (device ticks)
    "DEVICE KERNEL END CYCLE",      # raw end timestamp
    "FREQUENCY [GHz]",              # ticks per ns as reported
    "RUNTIME ID",                   # raw
    "DROPPED",                      # records lost just before this row (on a batch's first row)
    "KERNEL SOURCES",               # raw, joined with "|"
)

_CLOCKS_MHZ = ((1000.0, "wormhole_b0"), (1350.0, "blackhole"), (1202.0, "grayskull"))
_MISSING = object()


# --------------------------------------------------------------------------- record reading
def _field(obj: Any, *names: str) -> Any:
    """The first of ``names`` present on ``obj`` (attribute or mapping key), else None."""
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        else:
            try:
                value = getattr(obj, name, _MISSING)
            except Exception:  # a property that raises
                value = _MISSING
            if value is not _MISSING:
                return value
    return None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, float):
            return int(value) if math.isfinite(value) else None
        return int(value)
    except (TypeError, ValueError, OverflowError):
        try:
            f = float(value)
        except (TypeError, ValueError):
            return None
        return int(f) if math.isfinite(f) else None


def _ghz(value: Any) -> float | None:
    """Ticks per ns. ttnn reports GHz (1.0 wormhole, 1.35 blackhole); a value in MHz is scaled."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(f) or f <= 0:
        return None
    return f / 1000.0 if f > 50 else f


def _records_of(batch: Any) -> tuple[list[Any], int]:
    """(records, dropped) of what the callback got: a batch, a list of records or one record."""
    records = _field(batch, "records")
    if records is not None and not isinstance(records, (str, bytes)):
        return list(records), max(0, _int(_field(batch, "dropped")) or 0)
    if isinstance(batch, (list, tuple)):
        return list(batch), 0
    if batch is None:
        return [], 0
    return [batch], 0


def _sources(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)):
        value = [value]
    try:
        return tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                     for v in value)
    except TypeError:
        return (str(value),)


@lru_cache(maxsize=4096)
def op_name_from_sources(sources: tuple[str, ...]) -> str:
    """A short op name from kernel source paths: the folder under ``ttnn/operations/`` that holds
    ``device/kernels`` (``.../operations/eltwise/binary/device/kernels/...`` -> ``binary``).
    Compute kernels are preferred (reader/writer kernels are often shared between ops)."""
    ordered = sorted(sources, key=lambda s: "/compute/" not in s.replace("\\", "/"))
    for src in ordered:
        parts = [p for p in src.replace("\\", "/").split("/") if p]
        if "operations" not in parts:
            continue
        i = len(parts) - 1 - parts[::-1].index("operations")
        names = []
        for p in parts[i + 1:]:
            if p in ("device", "kernels", "kernel") or "." in p:
                break
            names.append(p)
        if names:
            return names[-1]
    return ""


def _arch_for(ghz: float | None) -> str:
    if ghz is None:
        return ""
    mhz = ghz * 1000.0
    for clock, name in _CLOCKS_MHZ:
        if abs(clock - mhz) <= 0.02 * clock:
            return name
    return ""


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


# --------------------------------------------------------------------------- the CSV writer
class RealtimeCsvWriter:
    """Appends record batches to one CSV (thread-safe; no ttnn needed, so tests use it directly).

    The header is written when the file is new; each batch is written and flushed as whole lines.
    A file deleted or replaced behind our back is started again (with its header).
    """

    def __init__(self, path: str | os.PathLike[str], *, fresh: bool = True) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fh: io.TextIOWrapper | None = None
        self._ident: tuple[int, int] | None = None
        self._prev_end: dict[int | None, int] = {}
        self._pending_dropped = 0
        self.rows_written = 0
        self.batches = 0
        self.dropped = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:  # a new run: like the device profiler, which deletes its .logs at device open
            self.path.unlink(missing_ok=True)
        self._open()

    def _open(self) -> None:
        fh = open(self.path, "a", encoding="utf-8", newline="")
        try:
            if fh.tell() == 0:
                fh.write(",".join(COLUMNS) + "\n")
                fh.flush()
            st = os.fstat(fh.fileno())
        except BaseException:
            fh.close()
            raise
        self._fh, self._ident = fh, (st.st_dev, st.st_ino)
        self._prev_end.clear()

    def _reopen_if_replaced(self) -> None:
        try:
            st = os.stat(self.path)
            same = (st.st_dev, st.st_ino) == self._ident
        except FileNotFoundError:
            same = False
        if not same:
            if self._fh is not None:
                self._fh.close()
            self._fh = None
            self._open()

    @property
    def closed(self) -> bool:
        return self._fh is None

    def write_batch(self, batch: Any) -> int:
        """Append the records of ``batch``; returns the rows written (0 once closed)."""
        records, dropped = _records_of(batch)
        with self._lock:
            if self._fh is None:
                return 0
            self._reopen_if_replaced()
            self.batches += 1
            if dropped:
                self.dropped += dropped
                self._pending_dropped += dropped
                self._prev_end.clear()  # the gap to the last record we saw is not an op-to-op gap
            rows = [self._row(r) for r in records]
            if not rows:
                return 0
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            assert self._fh is not None
            self._fh.write(buf.getvalue())
            self._fh.flush()
            self.rows_written += len(rows)
            return len(rows)

    def _row(self, r: Any) -> list[str]:
        rid = _int(_field(r, "runtime_id", "program_id", "global_call_count",
                          "GLOBAL CALL COUNT"))
        chip = _int(_field(r, "chip_id", "device_id", "DEVICE ID"))
        start = _int(_field(r, "start_timestamp", "start_cycle", "start"))
        end = _int(_field(r, "end_timestamp", "end_cycle", "end"))
        raw_freq = _field(r, "frequency", "frequency_ghz")
        ghz = _ghz(raw_freq)
        sources = _sources(_field(r, "kernel_sources"))
        name = _field(r, "op_name", "OP NAME")
        name = str(name) if name not in (None, "") else op_name_from_sources(sources)
        duration = gap = None
        if ghz is not None and start is not None and end is not None and end >= start:
            duration = round((end - start) / ghz)
        prev = self._prev_end.get(chip)
        if ghz is not None and start is not None and prev is not None:
            gap = round((start - prev) / ghz)
        if end is not None:
            self._prev_end[chip] = end
        dropped, self._pending_dropped = self._pending_dropped, 0
        return [_cell(rid), _cell(chip), _arch_for(ghz), name, _cell(duration), _cell(gap),
                _cell(start), _cell(end), _cell(raw_freq), _cell(rid), str(dropped),
                "|".join(sources)]

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                try:
                    self._fh.close()
                finally:
                    self._fh = None


# --------------------------------------------------------------------------- install / uninstall
class _Hook:
    def __init__(self, writer: RealtimeCsvWriter, version: str) -> None:
        self.writer = writer
        self.version = version
        self.handle: Any = None
        self.unregister: Any = None
        self.disabled = False
        self.error: str | None = None
        self.drop_warned = False

    def callback(self, batch: Any) -> None:
        """Called by ttnn on its profiler thread: nothing may escape from here."""
        if self.disabled:
            return
        try:
            self.writer.write_batch(batch)
            if self.writer.dropped and not self.drop_warned:
                self.drop_warned = True
                _warn(f"ttdash: the realtime profiler dropped {self.writer.dropped} record(s): "
                      "the DROPPED column of the CSV counts them")
        except BaseException as exc:  # noqa: BLE001 - an exception here would reach C++
            self.disabled = True
            self.error = _one_line(exc)
            _warn(f"ttdash: realtime profiler hook disabled after an error: {self.error}")


_hook: _Hook | None = None
_lock = threading.Lock()
_atexit_registered = False


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def _warn(message: str) -> None:
    try:
        log.warning("%s", " ".join(message.split()))
    except Exception:  # logging itself failed: still never raise
        pass


def _ttnn_version(mod: Any) -> str:
    version = getattr(mod, "__version__", None)
    if not version:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("ttnn")
        except Exception:
            version = None
    return str(version) if version else "(unknown version)"


def _target(path: str | os.PathLike[str] | None) -> Path:
    if path is None:
        from ..model.read.discover import resolve_profiler_dir

        return resolve_profiler_dir(None) / ".logs" / REALTIME_CSV
    p = Path(path).expanduser()
    if p.suffix.lower() == ".csv":
        return p
    if p.name == ".logs":
        return p / REALTIME_CSV
    return p / ".logs" / REALTIME_CSV


def install(path: str | os.PathLike[str] | None = None, *, fresh: bool = True) -> bool:
    """Register the realtime profiler callback; True when it is registered.

    ``path``: a profiler directory (the CSV goes to its ``.logs/``), a ``.csv`` file, or None for
    the profiler directory from the environment. ``fresh`` (default) starts a new file, as the
    device profiler does with its own ``.logs`` files at device open. Calling it again while
    installed does nothing and returns True. Never raises (an ``Exception``): a problem is logged
    as one line and False is returned.
    """
    try:
        return _install(path, fresh)
    except Exception as exc:  # noqa: BLE001 - never into the workload
        _warn(f"ttdash: realtime profiler hook not installed: {_one_line(exc)}")
        return False


def _install(path: str | os.PathLike[str] | None, fresh: bool) -> bool:
    global _hook, _atexit_registered
    with _lock:
        if _hook is not None:
            return True
        try:
            import ttnn  # the one place ttdash imports ttnn
        except Exception as exc:  # noqa: BLE001 - ImportError, or ttnn failing to load
            _warn(f"ttdash: cannot import ttnn ({_one_line(exc)}); the realtime profiler hook "
                  "is off")
            return False
        version = _ttnn_version(ttnn)
        register = unregister = None
        for owner in (getattr(ttnn, "device", None),
                      getattr(getattr(ttnn, "_ttnn", None), "device", None)):
            register = getattr(owner, "RegisterProgramRealtimeProfilerCallback", None)
            if callable(register):
                unregister = getattr(owner, "UnregisterProgramRealtimeProfilerCallback", None)
                break
        if not callable(register):
            _warn(f"ttdash: ttnn {version} has no realtime profiler callback "
                  "(ttnn.device.RegisterProgramRealtimeProfilerCallback, in ttnn "
                  f"{FIRST_TTNN_WITH_CALLBACK} and later); only the device profiler's own .logs "
                  "files will be watched")
            return False
        writer = RealtimeCsvWriter(_target(path), fresh=fresh)
        hook = _Hook(writer, version)
        try:
            hook.handle = register(hook.callback)
        except Exception:
            writer.close()
            raise
        hook.unregister = unregister if callable(unregister) else None
        _hook = hook
        if not _atexit_registered:
            atexit.register(uninstall)
            _atexit_registered = True
        log.info("ttdash: realtime profiler records -> %s (ttnn %s)", writer.path, version)
        return True


def uninstall() -> bool:
    """Unregister the callback and close the CSV; True if a hook was installed. Never raises."""
    global _hook
    try:
        with _lock:
            hook, _hook = _hook, None
        if hook is None:
            return False
        hook.disabled = True
        if hook.unregister is not None and hook.handle is not None:
            try:
                hook.unregister(hook.handle)  # blocks until an in-flight callback has returned
            except Exception as exc:  # noqa: BLE001
                _warn(f"ttdash: could not unregister the realtime profiler callback: "
                      f"{_one_line(exc)}")
        hook.writer.close()
        return True
    except Exception:  # noqa: BLE001
        return False


def is_installed() -> bool:
    return _hook is not None


def status() -> dict[str, Any]:
    """What the hook did so far: installed, path, rows, batches, dropped, disabled, error."""
    hook = _hook
    if hook is None:
        return {"installed": False}
    w = hook.writer
    return {"installed": True, "path": str(w.path), "ttnn_version": hook.version,
            "rows": w.rows_written, "batches": w.batches, "dropped": w.dropped,
            "disabled": hook.disabled, "error": hook.error}
