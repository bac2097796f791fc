"""Fake ttnn (tests only): the version attribute and the real-time profiler API of ttnn 0.81."""

__version__ = "0.81.1"

from . import device  # noqa: E402,F401  (ttnn.device, as in the real package)
