"""Where ttdash keeps the user's files (one definition of the XDG locations)."""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/ttdash`, else `~/.config/ttdash`: themes/, keymap.toml, arches.toml."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ttdash"
