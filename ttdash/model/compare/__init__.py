"""Comparing traces: alignment, pairs, what changed, the diff and its gate."""
