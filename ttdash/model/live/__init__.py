"""The live op table of a run being profiled, and its ranks."""
