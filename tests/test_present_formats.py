"""The format registry keyed by subject (ttdash.present.formats): every command's --format
choices are the registry's, a pair nobody registered is refused in one line (exit 2), never
written as another format; a new format is one registry entry and its writer (done here once
for `report` and once for `history list`, as docs/contributing.md says)."""

from __future__ import annotations

import contextlib
import io

import pytest
from conftest import real_dir

from ttdash.present import formats

TRACE = "tt-perf-report__bh20_oft_integral_image_trace.csv"


def tsv_report(view, out, shown):
    """A test format: the op ids and codes, tab-separated."""
    out.write("id\top_code\n")
    for r in view.op_rows[["id", "op_code"]].itertuples(index=False):
        out.write(f"{r.id}\t{r.op_code}\n")


def tsv_runs(rows, out, title="", extra=None):
    out.write("run_id\tops\n" + "".join(f"{r['run_id']}\t{r['ops']}\n" for r in rows))


@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test."""
    monkeypatch.setattr(formats, "FORMATS", formats.FORMATS)
    monkeypatch.setattr(formats, "WRITERS", formats.WRITERS)
    monkeypatch.setattr(formats, "BY_NAME", dict(formats.BY_NAME))
    monkeypatch.setattr(formats, "_BY_PAIR", dict(formats._BY_PAIR))
    return formats


def run(*argv: str) -> tuple[int, str, str]:
    from ttdash.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _choices(parser, *path: str) -> tuple[str, ...]:
    for name in path:
        sub = next(a for a in parser._actions if a.dest in ("command", "action")
                   and name in (a.choices or {}))
        parser = sub.choices[name]
    return tuple(next(a for a in parser._actions if a.dest == "format").choices)


def test_each_commands_format_choices_are_the_registrys():
    from ttdash.cli import build_parser

    parser = build_parser()
    for path, subject in ((("report",), "report"), (("diff",), "diff"),
                          (("doctor",), "doctor"), (("watch",), "watch"),
                          (("history", "list"), "runs"), (("history", "trend"), "trend"),
                          (("history", "check"), "check"), (("history", "sql"), "sql")):
        assert _choices(parser, *path) == formats.choices(subject), path
    assert formats.choices("summary") == ("table", "csv", "json", "markdown")


def test_an_unregistered_pair_raises_one_line():
    with pytest.raises(formats.Unregistered) as exc:
        formats.writer("summary", "perfetto")
    assert "\n" not in str(exc.value) and "report --summary" in str(exc.value)
    with pytest.raises(formats.Unregistered):
        formats.write("doctor", "csv", [], io.StringIO(), 80)
    with pytest.raises(formats.Unregistered):
        formats.writer("nonsense", "json")


def test_a_format_for_report_only_is_refused_by_summary(registry):
    """Registered for `report` alone: `report -f tsv` writes it, `report --summary -f tsv` is a
    usage error in one line and exit 2 (it printed the plain table, exit 0, before)."""
    registry.register(registry.Writer("report", "tsv", "test_present_formats:tsv_report"),
                      registry.OutputFormat("tsv", "tab-separated ids", (".tsv",)))
    path = str(real_dir() / TRACE)
    rc, out, err = run("report", path, "-f", "tsv", "--no-cache")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "id\top_code" and len(lines) > 2 and "\t" in lines[1]
    rc, out, err = run("report", path, "-f", "tsv", "--summary", "--no-cache")
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "has no --format tsv" in err
    from ttdash.cli import build_parser

    assert "tsv" in _choices(build_parser(), "report")
    assert "tsv" not in _choices(build_parser(), "diff")


def test_a_format_for_history_list_is_one_entry(registry, tmp_path):
    """A new format of `history list` (docs/contributing.md, "Add an output format"): its
    writer and one entry; `list` offers and writes it, `trend` does not offer it."""
    registry.register(registry.Writer("runs", "tsv", "test_present_formats:tsv_runs"),
                      registry.OutputFormat("tsv", "tab-separated", (".tsv",)))
    from ttdash.cli import build_parser

    assert "tsv" in _choices(build_parser(), "history", "list")
    assert "tsv" not in _choices(build_parser(), "history", "trend")
    rc, out, err = run("history", "--store", str(tmp_path / "store"), "list", "-f", "tsv")
    assert rc == 0, err
    assert out == "run_id\tops\n"
