"""The commands: each takes typed options (commands.options), loads through the model and hands
the result to a front end (report/ for text outputs, tui/ for screens). Only `ttdash.cli` knows
argv."""
