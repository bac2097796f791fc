"""The layering, checked on the source: model <- live <- tui, model <- report, commands above
them, only the CLI knows argv; and no file grows past ~600 lines without saying why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "ttdash"

#: package -> ttdash packages it must never import (directly or by a relative import).
FORBIDDEN = {
    "model": {"live", "tui", "report", "commands", "cli", "sim", "hooks", "runner", "mcp",
              "schemas", "history", "health", "present", "proctree"},
    # the presentation layer (column specs, cells) under the TUI and the text outputs
    "present": {"tui", "report", "commands", "cli", "live", "sim", "runner", "hooks", "mcp"},
    "live": {"tui", "report", "commands", "cli", "sim"},
    "report": {"tui", "live", "commands", "cli", "runner"},
    "tui": {"commands", "cli"},
    "sim": {"tui", "report", "commands", "cli", "live"},
    "hooks": {"tui", "report", "commands", "cli"},
    "runner": {"tui", "report", "commands", "cli"},
    "proctree": {"tui", "report", "commands", "cli", "live", "sim", "runner"},
    "commands": {"cli"},
    "health": {"tui", "report", "commands", "cli", "live", "sim", "model"},
    "history": {"tui", "report", "commands", "cli", "live", "sim", "runner", "hooks"},
}
#: model sub-package -> model sub-packages it must never import: reading knows nothing of the
#: analysis, the analysis nothing of comparing, the live model nothing of comparing. The modules
#: left at model/'s root are the shared base (arch, columns, errors, filters, query, window,
#: progress) and the two that gather the rest (trace, glossary).
MODEL_FORBIDDEN = {
    "read": {"analysis", "compare", "live"},
    "analysis": {"compare", "live"},
    "compare": {"live"},
    "live": {"compare"},
}
MAX_LINES = 600
SIZE_REASON = "Size:"  # a file over MAX_LINES says why in its docstring, after this word


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        yield path, list(rel.parts)


def _imports(path: Path, parts: list[str]) -> set[str]:
    """The ttdash modules `path` imports, as dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        package = parts[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ttdash")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("ttdash"):
                out.add(mod)
                out |= {f"{mod}.{a.name}" for a in node.names}
    return out


def _layer(parts: list[str]) -> str:
    return parts[1] if len(parts) > 2 else parts[1].removesuffix(".py")


@pytest.mark.parametrize("path,parts", list(_modules()), ids=lambda v: getattr(v, "name", ""))
def test_layers(path, parts):
    layer = _layer(parts)
    banned = FORBIDDEN.get(layer, set())
    bad = sorted(m for m in _imports(path, parts)
                 if len(m.split(".")) > 1 and m.split(".")[1] in banned)
    assert not bad, f"{path.relative_to(PKG.parent)} ({layer}) imports {bad}"


def _third_party(path: Path) -> set[str]:
    """The top-level names of the packages `path` imports that are not ttdash's."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out - {"ttdash"}


@pytest.mark.parametrize("layer", ["model", "present"])
def test_model_and_present_never_import_textual(layer):
    users = [p.relative_to(PKG.parent) for p, parts in _modules()
             if _layer(parts) == layer and {"textual", "rich"} & _third_party(p)]
    assert [p for p, parts in _modules() if _layer(parts) == layer], layer  # the layer exists
    assert users == [], users


def _model_part_breaks(path: Path, parts: list[str]) -> list[str]:
    banned = MODEL_FORBIDDEN[parts[2]]
    return sorted(m for m in _imports(path, parts)
                  if m.split(".")[:2] == ["ttdash", "model"] and len(m.split(".")) > 2
                  and m.split(".")[2] in banned)


@pytest.mark.parametrize("path,parts", [(p, q) for p, q in _modules()
                                        if q[:2] == ["ttdash", "model"] and len(q) > 3],
                         ids=lambda v: "/".join(getattr(v, "parts", ())[-2:]))
def test_model_parts(path, parts):
    bad = _model_part_breaks(path, parts)
    assert not bad, f"{path.relative_to(PKG.parent)} (model.{parts[2]}) imports {bad}"


def test_model_part_check_can_fail(tmp_path):
    """A reading module importing the analysis, relatively or not, is caught; every model part
    has a rule."""
    f = tmp_path / "x.py"
    f.write_text("from ..analysis.metrics import num\nimport ttdash.model.compare.diff\n"
                 "from . import loader\nfrom ..trace import Trace\n")
    assert _model_part_breaks(f, ["ttdash", "model", "read", "x"]) == [
        "ttdash.model.analysis.metrics", "ttdash.model.analysis.metrics.num",
        "ttdash.model.compare.diff"]
    assert {q[2] for p, q in _modules() if q[:2] == ["ttdash", "model"] and len(q) > 3} \
        == set(MODEL_FORBIDDEN)


def test_only_the_cli_and_main_import_the_cli():
    users = [p.relative_to(PKG.parent) for p, parts in _modules()
             if any(m == "ttdash.cli" or m.startswith("ttdash.cli.") for m in _imports(p, parts))
             and p.name != "__main__.py"]
    assert users == [], users


def test_the_layer_check_can_fail(tmp_path):
    """The checker sees a relative import that breaks the rule (so a pass above means something)."""
    f = tmp_path / "x.py"
    f.write_text("from ..tui.app import TraceScreen\nfrom . import columns\n")
    assert "ttdash.tui.app" in _imports(f, ["ttdash", "model", "x"])
    assert "ttdash.model.columns" in _imports(f, ["ttdash", "model", "x"])
    f.write_text("import textual.app\nfrom rich.text import Text\n")
    assert _third_party(f) == {"textual", "rich"}


@pytest.mark.parametrize("path", [p for p, _ in _modules()], ids=lambda p: p.name)
def test_no_file_over_600_lines_without_a_reason(path):
    text = path.read_text(encoding="utf-8")
    n = text.count("\n")
    if n <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert SIZE_REASON in doc, (f"{path.relative_to(PKG.parent)} has {n} lines; split it or say "
                                f"why in its docstring ('{SIZE_REASON} ...')")
