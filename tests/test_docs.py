"""The README and the docs site: the README short and starting with the two commands (the second
what CI runs), its links alive; the generated reference pages and schema tables current;
`mkdocs build --strict` clean."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys

import pytest
from conftest import ROOT

README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference"
README_MAX_BYTES = 10 * 1024
DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/ttdash demo"


def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ci_command() -> str:
    """The command .ci/run's first pass runs (the README's second command, verbatim)."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    found = re.findall(r"^(python3 -m venv \.venv && .*?)\s*\|\|\s*newest=\$\?\s*$", text, re.M)
    assert len(found) == 1, "cannot find the README command in .ci/run"
    return found[0]


def readme_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert block, "the README has no ```sh block"
    # Nothing but the title and the one-paragraph introduction comes before the commands.
    before = text[:block.start()]
    assert "```" not in before and before.count("\n#") == 0, before
    return block.group(1).rstrip("\n").split("\n")


def test_readme_is_short():
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size:,} bytes; move detail into docs/"


def test_readme_starts_with_the_two_commands():
    commands = readme_commands()
    assert commands == [DEMO_COMMAND, ci_command()]


def test_readme_says_how_ttdash_gets_on_path():
    text = README.read_text(encoding="utf-8")
    assert ". .venv/bin/activate" in text and 'PATH="$PWD/.venv/bin:$PATH"' in text


def test_contributing_has_the_ci_command():
    assert ci_command() in (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 10  # the screenshots and the docs pages
    missing = [link for link in local if not (ROOT / link.split("#")[0]).is_file()]
    assert not missing, f"README links to missing files: {missing}"


def test_generated_reference_is_current(tmp_path):
    gen = gen_docs()
    assert gen.main(["--out", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in REFERENCE.glob("*.md"))
    stale = [name for name in written if (tmp_path / name).read_text(encoding="utf-8")
             != (REFERENCE / name).read_text(encoding="utf-8")]
    assert not stale, f"docs/reference/{stale} are stale: run python scripts/gen_docs.py"


def gen_schemas():
    gen_docs()._gen_schemas()
    import gen_schemas as mod

    return mod


def test_generated_schemas_are_current():
    """ttdash/schemas' tables are scripts/gen_schemas.py's, from the column specs (as the
    reference pages are gen_docs')."""
    gen = gen_schemas()
    assert gen.stale() == [], "stale schemas: run python scripts/gen_docs.py"
    assert gen.main(["--check"]) == 0


def test_a_schema_table_follows_its_specs(monkeypatch):
    """A column's meaning is its description, its kind its type, null only where nullable:
    changing the spec makes the committed schema stale."""
    gen = gen_schemas()
    ops = json.loads(gen.generate()["report.schema.json"])["properties"]["ops"]["items"]
    from ttdash.model.columns import BY_KEY
    from ttdash.present import table

    assert ops["properties"]["id"] == {"type": "integer", "description": BY_KEY["id"].meaning}
    assert ops["properties"]["cores"]["type"] == ["integer", "null"]
    assert ops["properties"]["total_pct"]["description"] == BY_KEY["total_pct"].meaning
    monkeypatch.setattr(table, "CULPRITS", table.CULPRITS.replace("ops", meaning="changed"))
    assert gen.stale() == ["history-check.schema.json"]
    monkeypatch.setattr(table, "DIFF_PAIRS", table.DIFF_PAIRS.replace("status", nullable=True))
    assert gen.stale() == ["diff.schema.json", "history-check.schema.json"]


def test_every_table_of_every_schema_is_generated(monkeypatch):
    """Each row object (an array's items with properties) of a schema is a generated table's,
    each of its fields a spec's column (type from its kind, description its meaning), and a
    field an output adds that no spec declares stops the generator."""
    gen = gen_schemas()
    from ttdash.present.table import JSON_TYPES
    from ttdash.schemas import NAMES, load

    generated = {(t.schema, t.path) for t in gen.TABLES}
    for t in gen.TABLES:
        node = load(t.schema)
        for key in t.path:
            node = node[key]
        for c in t.columns():
            field = node["properties"][c.key]
            assert field["description"] == c.meaning, (t.schema, c.key)
            assert field["type"] == ([JSON_TYPES[c.kind], "null"] if c.nullable
                                     else JSON_TYPES[c.kind]), (t.schema, c.key)
    tables = {("report", ("properties", "ops", "items")),
              ("report", ("properties", "why", "properties", "by_op_code", "items")),
              ("report-summary", ("properties", "groups", "items")),
              ("history-list", ("properties", "runs", "items")),
              ("history-trend", ("properties", "runs", "items")),
              ("history-check", ("properties", "culprits", "items")),
              *(("diff", ("properties", k, "items")) for k in (
                  "ops", "by_op_code", "by_region", "top_regressions", "top_improvements"))}
    assert tables <= generated and {n for n, _ in generated} <= set(NAMES)
    import ttdash.report.diff as diff

    monkeypatch.setattr(diff, "JSON_OP_FIELDS", (*diff.JSON_OP_FIELDS, "undeclared"))
    with pytest.raises(KeyError, match="undeclared"):
        gen.generate()


def test_reference_covers_the_parser_and_columns():
    from ttdash.cli import build_parser
    from ttdash.model.columns import COLUMNS

    cli = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        assert f"`ttdash {name}`" in cli
        for action in parser._actions:
            for opt in action.option_strings:
                assert f"`{opt}`" in cli, opt
    columns = (REFERENCE / "columns.md").read_text(encoding="utf-8")
    assert all(f"| `{c.key}` |" in columns for c in COLUMNS)


def test_glossary_page_holds_the_glossary_and_every_filter_key():
    from ttdash.model.filters import DIFF_FILTER_KEYS, FILTER_KEYS
    from ttdash.model.glossary import glossary

    page = (REFERENCE / "glossary.md").read_text(encoding="utf-8")
    for s in glossary():
        assert f"## {s.title}" in page
        for term, _ in s.rows:
            assert f"| {gen_docs().cell(term)} |" in page, term
    for key in {**FILTER_KEYS, **DIFF_FILTER_KEYS}:
        assert f"`{key}`" in page, key
    assert "reference/glossary.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_json_page_lists_every_schema_field():
    """docs/reference/json.md is generated from ttdash/schemas: every schema's section names its
    every top-level and nested field; formats.md and the nav link to it, and no longer spell
    the shapes by hand."""
    from ttdash.schemas import NAMES, load

    page = (REFERENCE / "json.md").read_text(encoding="utf-8")

    def fields(schema: dict, path: str = ""):
        for key, sub in schema.get("properties", {}).items():
            yield f"{path}.{key}" if path else key
            yield from fields(sub, f"{path}.{key}" if path else key)
            if isinstance(sub.get("items"), dict):
                yield from fields(sub["items"], (f"{path}.{key}" if path else key) + "[]")

    for name in NAMES:
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for field in fields(load(name)):
            assert f"| `{field}` |" in section, (name, field)
    assert "| `ops[].<^[A-Z]>` | number or null |" in page  # report's counter columns
    formats = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert "(reference/json.md)" in formats and '"peaks_arch", "clock_mhz"' not in formats
    assert "reference/json.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")

def test_every_screen_with_keys_is_documented():
    """A new screen or view with ttdash bindings gets a section on the keys page."""
    import ttdash.tui

    documented = {cls for _, cls, _, _ in gen_docs().documented_screens()}
    with_keys = set()
    for info in pkgutil.iter_modules(ttdash.tui.__path__):
        mod = importlib.import_module(f"ttdash.tui.{info.name}")
        for cls in vars(mod).values():
            if inspect.isclass(cls) and cls.__module__ == mod.__name__ \
                    and cls.__dict__.get("BINDINGS"):
                with_keys.add(cls)
    assert len(with_keys) >= 15
    assert with_keys <= documented, sorted(c.__name__ for c in with_keys - documented)


def test_key_names_are_shown_as_keys():
    """Every bound key reads as the key (`/`, `<`, `←`), not Textual's name for it."""
    gen = gen_docs()
    shown = [gen.key_display(k) for _, cls, _, _ in gen.documented_screens()
             for keys, _ in gen.bindings_of(cls) for k in keys]
    assert "/" in shown and "<" in shown and "←" in shown
    assert not [k for k in shown if "_" in k], shown


@pytest.mark.parametrize("key, shown", [("slash", "/"), ("question_mark", "?"),
                                        ("shift+left", "shift+←"), ("full_stop", "."),
                                        ("G", "G"), ("ctrl+c", "ctrl+c")])
def test_key_display(key, shown):
    assert gen_docs().key_display(key) == shown


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                        "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--fail-above" in (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for page in ("index", "benchmarks", "limits", "formats", "contributing", "exit-codes",
                 "reference/keys", "reference/columns", "reference/glossary", "reference/json",
                 "commands/report",
                 "commands/history"):
        assert (site / f"{page}.html").is_file(), page
    assert (site / "screenshots" / "open-80x24.svg").is_file()
