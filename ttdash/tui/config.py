"""User configuration for the TUI: themes (TOML) and key remapping (keymap.toml)."""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

from textual.theme import Theme

from ..model.errors import TraceError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_THEME = "ttdash-dark"
THEME_FIELDS = {"name", "primary", "secondary", "warning", "error", "success", "accent",
                "foreground", "background", "surface", "panel", "boost", "dark", "ansi",
                "variables", "luminosity_spread", "text_alpha"}


def config_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ttdash"


def _theme_from(text: str, source: str) -> Theme:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TraceError(source, f"invalid theme TOML: {exc}") from None
    unknown = set(data) - THEME_FIELDS
    if unknown or "name" not in data or "primary" not in data:
        raise TraceError(source, "a theme needs name and primary; unknown keys: "
                         + ", ".join(sorted(unknown)))
    return Theme(**data)


def load_themes() -> list[Theme]:
    """Bundled themes, then the user's ~/.config/ttdash/themes/*.toml (same name overrides)."""
    themes: dict[str, Theme] = {}
    bundled = resources.files("ttdash").joinpath("themes")
    for entry in sorted(bundled.iterdir() if bundled.is_dir() else [], key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            t = _theme_from(entry.read_text(), entry.name)
            themes[t.name] = t
    user = config_dir() / "themes"
    if user.is_dir():
        for p in sorted(user.glob("*.toml")):
            t = _theme_from(p.read_text(encoding="utf-8"), str(p))
            themes[t.name] = t
    return list(themes.values())


def load_keymap() -> dict[str, str]:
    """~/.config/ttdash/keymap.toml: `binding_id = "key[,key]"` lines (ids listed by `?`)."""
    p = config_dir() / "keymap.toml"
    if not p.is_file():
        return {}
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TraceError(p, f"invalid keymap: {exc}") from None
    table = data.get("keys", data)
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str)}
