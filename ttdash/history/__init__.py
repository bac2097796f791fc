"""The run history: runs and their ops kept in a Parquet dataset (store), built from a view
(record), queried for trends and a gate (query)."""
