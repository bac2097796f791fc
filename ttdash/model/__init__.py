"""The trace model: pure Python + pandas/numpy. Never imports textual.

Names are imported lazily so that `ttdash --version` and `--help` do not pay for pandas.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ArchSpec": "arch", "get_arch": "arch", "registry": "arch",
    "TraceError": "errors",
    "read_ops_csv": "loader",
    "Trace": "trace", "View": "trace", "Window": "trace",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)
