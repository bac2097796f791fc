"""Hooks that a workload installs in its own process to feed ttdash live.

``ttdash.hooks.ttnn``: stream ttnn's real-time profiler records into
``<profiler dir>/.logs/ttdash_realtime_profile.csv`` (``from ttdash.hooks import ttnn as hook;
hook.install()``).

Importing this package never imports ``ttnn``: only ``ttdash.hooks.ttnn.install()`` does.
"""

from __future__ import annotations

import importlib

__all__ = ["ttnn"]


def __getattr__(name: str):
    if name == "ttnn":  # our submodule (which itself imports the real ttnn only in install())
        return importlib.import_module(".ttnn", __name__)
    raise AttributeError(name)
