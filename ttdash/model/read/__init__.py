"""Reading a trace: the CSV of any era, its cells, the columnar cache, runs on disk."""
