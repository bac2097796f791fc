"""The presentation layer: what every table, section and output format is, without Textual.

`table.py`: what a table's columns are (`Column`, `TableSpec`, one spec per table) and one
vectorised `cells` that turns a frame into the texts and colours (severities) the TUI tables
and every text output draw. Imports the model, never Textual, tui/, report/ or commands/
(tests/test_layers.py); `mypy --strict` clean like the model (tests/test_lint.py)."""
