"""Fake ttnn 0.70.1 (tests only): before the real-time profiler callback API existed."""

__version__ = "0.70.1"

from . import device  # noqa: E402,F401
