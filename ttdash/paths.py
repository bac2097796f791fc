"""Where ttdash keeps the user's files (one definition of the XDG locations)."""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/ttdash`, else `~/.config/ttdash`: themes/, keymap.toml, arches.toml."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ttdash"


def data_dir() -> Path:
    """`$XDG_DATA_HOME/ttdash`, else `~/.local/share/ttdash`: the run history."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "ttdash"


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/ttdash`, else `~/.cache/ttdash`: columnar copies of large traces."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ttdash"
