"""ttdash: a terminal dashboard for Tenstorrent profiler output."""

__version__ = "0.1.0"
