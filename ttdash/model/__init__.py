"""The trace model: pure Python + pandas/numpy. Never imports textual."""

from .arch import ArchSpec, get_arch, registry
from .errors import TraceError
from .loader import read_ops_csv
from .trace import Trace, View, Window

__all__ = ["ArchSpec", "Trace", "TraceError", "View", "Window", "get_arch", "read_ops_csv",
           "registry"]
