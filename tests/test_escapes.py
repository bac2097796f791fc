"""Never a raw escape (#37.2): every TUI toast, every stderr line and every markdown output over
the hostile-name corpus (tests/hostile_corpus.py), scanned for live escape sequences (ESC, BEL,
C1 controls, bidi marks) and, in markdown, for live links, images, HTML, mentions and issue
references. In-process: `main([...])` with capsys, the TUI through Pilot."""

from __future__ import annotations

import html
import re
from pathlib import Path

import hostile_corpus as hc
import pytest
from conftest import screen_text, wait_until

from ttdash.cli import main
from ttdash.commands.common import note
from ttdash.history.store import Store
from ttdash.tui.history import HistoryScreen, history_app

#: A file name that sets the clipboard (OSC 52) and the window title (OSC 0), in colour.
EVIL_NAME = "run\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[31m\u202ex\x9b.csv"
#: What markdown must not turn into a link, an image, HTML, a ping or a cross-reference.
MD_EVIL = ["[click](http://evil.example/x)", "![img](http://evil.example/p.png)",
           "<img src=x onerror=alert(1)>", "<http://evil.example>", "ping @octocat now",
           "@octocat first", "@some-org/team cc", "fixes #123", "#456 first", "GH-42 again",
           "[ref][1] x", "a\\](b)", "&#64;entity"]
#: The bare words of MD_EVIL that must still be shown (the names are escaped, not dropped).
MD_WORDS = ("click", "evil.example", "octocat", "some-org", "fixes", "entity")


def inert(text: str, where: str) -> None:
    """No control, escape or bidi character at all (stderr lines and toasts carry no colour)."""
    bad = hc.unsafe_chars(text)
    assert not bad, f"{where}: live control/escape/bidi characters: {bad}"


def one_line(err: str, where: str) -> list[str]:
    lines = err.splitlines()
    for line in lines:
        assert line.startswith("ttdash: "), f"{where}: {line!r}"
    inert(err, where)
    return lines


# ------------------------------------------------------------------ markdown

def _odd_backslashes(text: str, i: int) -> bool:
    n = 0
    while i - 1 - n >= 0 and text[i - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


#: A link/image's "](" or "][", an HTML tag or autolink's "<", GitHub's @mention and issue
#: references (its mention filter reads the rendered text: a backslash does not stop it).
LINK_RE = re.compile(r"\][(\[]|<[A-Za-z/!?]")
PING_RE = re.compile(r"(?:^|(?<=[^\w]))(@[A-Za-z0-9]|#[0-9]|GH-[0-9])", re.IGNORECASE)


def live_markdown(text: str) -> list[str]:
    """The live markdown constructs in `text` (with context)."""
    hits = [m.start() for m in LINK_RE.finditer(text) if not _odd_backslashes(text, m.start())]
    out = [repr(text[max(0, i - 25):i + 25]) for i in sorted(hits)]
    # GitHub's filters read the rendered text: entities decoded, "\&" a literal "&"
    rendered = html.unescape(text.replace("\\&", "&amp;"))
    out += [repr(rendered[max(0, m.start(1) - 25):m.start(1) + 25])
            for m in PING_RE.finditer(rendered)]
    return out[:8]


def assert_markdown_inert(text: str, where: str) -> None:
    inert(text, where)
    live = live_markdown(text)
    assert not live, f"{where}: live markdown (links, images, HTML, mentions): {live}"
    for word in MD_WORDS:
        assert word in text, f"{where}: {word!r} not shown"


def test_the_markdown_scan_finds_what_it_looks_for():
    """The scanner itself: each construct is found raw and not once escaped."""
    for raw in ("[x](y)", "![x](y)", "[x][y]", "<img src=x>", "<http://x>", "hi @bob", "#12",
                "gh-3", "a\\\\](b)", "&#64;bob", "\\@bob"):
        assert live_markdown(raw), raw
    for safe in ("[x\\](y)", "\\<img", "@&#8203;bob", "#&#8203;12", "a@b", "[bold red]x[/]",
                 "a\\\\\\](b)", "\\&#&#8203;64;bob"):
        assert not live_markdown(safe), safe


def md_table(names: list[str]) -> tuple[list[str], list[list[str]]]:
    """The base trace with MD_EVIL and the corpus's op names as op codes."""
    header, rows = hc.base_table(n_ops=40, seed=3)
    ops = hc._op_rows(header, rows)
    j = header.index("OP CODE")
    for k, name in enumerate(names):
        rows[ops[k]][j] = name
    return header, rows


@pytest.fixture(scope="module")
def md_files(tmp_path_factory) -> tuple[Path, Path]:
    """(hostile trace, the base trace): op codes are MD_EVIL, then the corpus's EVIL_OPS."""
    d = tmp_path_factory.mktemp("md")
    evil = d / "ops_perf_results_md.csv"
    evil.write_text(hc.to_csv_text(*md_table(MD_EVIL + hc.EVIL_OPS[:8])), encoding="utf-8")
    return evil, hc.write_base(d / "ops_perf_results_base.csv")


@pytest.mark.parametrize("args", [("--format", "markdown"),
                                  ("--format", "markdown", "--ignore-signposts"),
                                  ("--format", "markdown", "--summary", "--group-by", "op")])
def test_report_markdown_keeps_names_inert(md_files, capsys, args):
    evil, _ = md_files
    assert main(["report", str(evil), *args]) == 0
    assert_markdown_inert(capsys.readouterr().out, f"report {' '.join(args)}")


@pytest.mark.parametrize("direction", ["evil_vs_base", "base_vs_evil"])
def test_diff_markdown_keeps_names_inert(md_files, capsys, direction):
    evil, base = md_files
    a, b = (evil, base) if direction == "evil_vs_base" else (base, evil)
    assert main(["diff", str(a), str(b), "--format", "markdown", "--top", "60",
                 "--ignore-signposts"]) in (0, 1)
    assert_markdown_inert(capsys.readouterr().out, f"diff markdown ({direction})")


def test_history_markdown_keeps_names_inert(md_files, capsys, tmp_path):
    from history_fixture import scaled_copy

    evil, _ = md_files
    store = str(tmp_path / "store")
    assert main(["history", "add", "--store", store, str(evil), "--label",
                 "owner=@octocat [click](http://evil.example/x) fixes #123"]) == 0
    slower = scaled_copy(evil, tmp_path / "ops_perf_results_slower.csv", 3.0)
    capsys.readouterr()
    outs = {}
    for args in (("list",), ("trend",), ("check", str(slower), "--fail-above", "1")):
        rc = main(["history", *args, "--store", store, "--format", "markdown"])
        cap = capsys.readouterr()
        assert rc in (0, 1), cap.err
        inert(cap.out, f"history {args[0]} markdown")
        live = live_markdown(cap.out)
        assert not live, f"history {args[0]} markdown: live markdown: {live}"
        one_line(cap.err, f"history {args[0]} stderr")
        outs[args[0]] = cap.out
    assert rc == 1 and "| \\<img" in outs["check"]  # the 3x slower copy: culprits named
    assert "octocat" in outs["list"] and "evil.example" in outs["list"]  # the label


def test_tui_markdown_exports_keep_names_inert(md_files):
    """The TUI's markdown exports (the op table, a grouping) are the same writers."""
    import io

    from ttdash.model import Trace, Window
    from ttdash.model.query import group_ops
    from ttdash.report.single import groups_markdown, to_markdown

    evil, _ = md_files
    view = Trace.load(evil).view(Window("all"))
    buf = io.StringIO()
    to_markdown(view, buf, rows=list(range(len(view.ops))))
    assert_markdown_inert(buf.getvalue(), "TUI export (ops)")
    buf = io.StringIO()
    groups_markdown(group_ops(view.ops, "op_code"), "op_code", buf)
    assert_markdown_inert(buf.getvalue(), "TUI export (grouped)")


# ------------------------------------------------------------------ stderr

@pytest.mark.parametrize("name", hc.EVIL_OPS + [EVIL_NAME, "two\nlines\r\x0bthree\u2028four"])
def test_note_lines_are_inert(capsys, name):
    note(f"about {name}")
    err = capsys.readouterr().err
    assert len(one_line(err, "note")) == 1 and err.startswith("ttdash: note: about ")


def test_store_file_names_in_note_lines(capsys, tmp_path):
    """A store file with escapes in its name, unreadable: named in a `note:` line, inert."""
    bad = tmp_path / "store" / "runs" / "arch=wormhole_b0" / f"run-{EVIL_NAME}.parquet"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not parquet")
    assert main(["history", "list", "--store", str(tmp_path / "store")]) == 0
    lines = one_line(capsys.readouterr().err, "history list")
    assert len(lines) == 1 and lines[0].startswith("ttdash: note: ") and "ZXZpbA==" in lines[0]


def test_data_warnings_name_the_file_inertly(capsys, tmp_path):
    """warn_data's lines (CSV output has no place for the trust warnings) name the file."""
    path = tmp_path / EVIL_NAME
    hc.CASES["corrupt_timing_6_9e9"].make(path)
    assert main(["report", str(path), "--format", "csv"]) == 0
    lines = one_line(capsys.readouterr().err, "report --format csv")
    assert lines and all(ln.startswith("ttdash: warning: ") and "ZXZpbA==" in ln
                         for ln in lines), lines


def test_usage_errors_are_inert(capsys):
    """argparse echoes what the user typed (an unknown argument) in its one error line."""
    with pytest.raises(SystemExit) as exc:
        main(["report", "x.csv", f"--{EVIL_NAME}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "unrecognized arguments" in err
    inert(err, "usage error")


@pytest.mark.parametrize("args", [("report", "{p}"), ("diff", "{p}", "{p}"),
                                  ("history", "add", "--store", "{d}/store", "{p}")])
def test_error_lines_name_the_file_inertly(capsys, tmp_path, args):
    """A file that cannot be read: one line naming it, exit 2 (no traceback)."""
    path = tmp_path / EVIL_NAME
    hc.CASES["header_only"].make(path)
    rc = main([a.format(p=path, d=tmp_path) for a in args])
    lines = one_line(capsys.readouterr().err, " ".join(args[:2]))
    assert rc == 2 and len(lines) == 1 and "ZXZpbA==" in lines[0]


# ------------------------------------------------------------------ toasts

def toasts(app) -> list[str]:
    return [t for n in app._notifications for t in (str(n.message), str(n.title))]


async def test_history_enter_on_a_moved_file_with_escapes_in_its_name(tmp_path):
    """#37.2: the stored path of a moved CSV reached the terminal raw in the toast."""
    from history_fixture import T0, add_run

    csv_path = hc.write_base(tmp_path / EVIL_NAME)
    store = Store.open(str(tmp_path / "store"))
    add_run(store, csv_path, T0)
    csv_path.rename(tmp_path / "moved.csv")
    app = history_app(store)
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                         and app.screen.loaded)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("moved or changed" in m for m in toasts(app)))
        for m in toasts(app):
            inert(m, "history toast")
        assert any("ZXZpbA==" in m and "pwned" in m for m in toasts(app)), toasts(app)
        await wait_until(pilot, lambda: "moved or" in screen_text(app)[0])  # the toast shown
        _, styled = screen_text(app)
        assert "\x1b]" not in styled and not hc.unsafe_chars(styled, allow_sgr=True)


async def test_every_toast_is_inert(tmp_path):
    """TTDashApp.notify is every screen's and widget's way to a toast: the corpus's names
    through it, from the app, a screen and a widget, as message and as title."""
    store = Store.open(str(tmp_path / "store"))
    app = history_app(store)
    names = [n[:200] for n in hc.EVIL_OPS + hc.EVIL_SIGNPOSTS + [EVIL_NAME]]
    async with app.run_test(size=(160, 60), notifications=True) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                         and app.screen.loaded)
        for k, name in enumerate(names):
            who = (app, app.screen, app.screen.query_one("#status"))[k % 3]
            who.notify(f"wrote {name}", title=name, markup=False)
        await wait_until(pilot, lambda: len(app._notifications) == len(names))
        assert len(app._notifications) == len(names)
        for m in toasts(app):
            inert(m, "toast")
        assert any("pwned" in m for m in toasts(app))
        await wait_until(pilot, lambda: "wrote" in screen_text(app)[0])  # the toasts shown
        _, styled = screen_text(app)
        assert "\x1b]" not in styled and not hc.unsafe_chars(styled, allow_sgr=True)
