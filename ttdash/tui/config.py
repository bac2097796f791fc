"""User configuration for the TUI: themes (TOML) and key remapping (keymap.toml)."""

from __future__ import annotations

import sys
from importlib import resources

from textual.theme import BUILTIN_THEMES, Theme

from ..model.errors import TraceError
from ..paths import config_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_THEME = "ttdash-dark"
THEME_FIELDS = {"name", "primary", "secondary", "warning", "error", "success", "accent",
                "foreground", "background", "surface", "panel", "boost", "dark", "ansi",
                "variables", "luminosity_spread", "text_alpha"}


def _theme_from(text: str, source: str) -> Theme:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TraceError(source, f"invalid theme TOML: {exc}") from None
    unknown = set(data) - THEME_FIELDS
    if unknown or "name" not in data or "primary" not in data:
        raise TraceError(source, "a theme needs name and primary; unknown keys: "
                         + ", ".join(sorted(unknown)))
    if data.get("ansi"):
        # An ANSI theme gets only a few generated variables; Textual's own ANSI themes carry the
        # rest (e.g. `$ansi-background`, used by Screen's CSS since textual 8.2). Start from theirs
        # so a Textual release that adds one does not break ours.
        base = BUILTIN_THEMES["ansi-dark" if data.get("dark", True) else "ansi-light"]
        data["variables"] = {**base.variables, **data.get("variables", {})}
    try:
        theme = Theme(**data)
        theme.to_color_system().generate()  # bad colours fail here, not inside the running app
    except Exception as exc:  # Textual raises several types (ColorParseError, TypeError, ...)
        raise TraceError(source, f"invalid theme: {exc}") from None
    return theme


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
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise TraceError(p, f"cannot read theme: {getattr(exc, 'strerror', None) or exc}"
                                 ) from None
            t = _theme_from(text, str(p))
            themes[t.name] = t
    return list(themes.values())


def load_keymap() -> dict[str, str]:
    """~/.config/ttdash/keymap.toml: `binding_id = "key[,key]"` lines (ids listed by `?`)."""
    p = config_dir() / "keymap.toml"
    if not p.is_file():
        return {}
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TraceError(p, f"invalid keymap: {exc}") from None
    table = data.get("keys", data)
    if not isinstance(table, dict):
        raise TraceError(p, "invalid keymap: [keys] must be a table of binding_id = \"key\"")
    bad = [k for k, v in table.items() if not isinstance(v, str)]
    if bad:
        raise TraceError(p, f"invalid keymap: {bad[0]!r} must map to a key name in quotes")
    return {str(k): str(v) for k, v in table.items()}
