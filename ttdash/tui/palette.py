"""The command palette (ctrl+p): commands named "area: action", from the screen shown (its
`palette_commands()`: the table's sorts, the trace view's views, filters and export) and the
themes."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider


class TTDashCommands(Provider):
    """Palette commands of the current screen, then the ttdash themes."""

    def _commands(self) -> list[tuple[str, Callable[[], Any]]]:
        screen = self.screen
        commands = getattr(screen, "palette_commands", None)
        if commands is None:
            return []
        cmds: list[tuple[str, Callable[[], Any]]] = list(commands())
        for name in sorted(self.app.available_themes):
            if name.startswith("ttdash"):
                cmds.append((f"theme: {name}", partial(setattr, self.app, "theme", name)))
        return cmds

    async def discover(self) -> Hits:
        for name, cb in self._commands():
            yield DiscoveryHit(name, cb)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, cb in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), cb)
