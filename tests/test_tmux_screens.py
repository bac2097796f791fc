"""What a user sees in a real terminal (tmux), screen by screen, on the real profiler files.

Each test drives the installed `ttdash` in a tmux pane (80x24 unless said otherwise) and polls the
pane until the whole expectation holds: every assertion is part of a wait predicate, so a partial
frame is never mistaken for a result, and a failure prints the screen as it was. HOME and
XDG_CONFIG_HOME point into the test's tmp dir (a user's themes or keymap never leak in).

The `report` checks at the end (pipes, FIFOs, empty windows) need no terminal: plain subprocesses.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, real_dir, run_ttdash
from tmux import EXIT_MARK, Tmux, ttdash_bin

CLIP_WH = "tt-perf-report__wh_clip_encoder_2.csv"  # 1,872 ops, wormhole, no signposts
CLIP_BH = "tt-perf-report__bh_64_clip_encoder_1.csv"  # 660 ops, the same model on blackhole
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"  # 26 ops x 8 devices, long op codes
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"  # host ops
DLV3 = "tt-perf-report__bh_p100_dlv3.csv"  # 387 ops
SIGNPOSTED = "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"  # 50 signposts
OFT = "tt-perf-report__bh20_oft.csv"  # 1,621 rows, 50 signposts

LOAD = 30.0  # first frame of a freshly started program (import + load + first paint)
ROW = re.compile(r"\brow ([\d,]+)/([\d,]+)")
SGR = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def tmux_dir():
    """A tmux server of this module's own (TMUX_TMPDIR): other tmux users on the machine (a
    `kill-server`, a resized window) cannot touch these panes."""
    d = tempfile.mkdtemp(prefix="ttdash-tmux-")  # short: a socket path has a length limit
    yield d
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    subprocess.run(["tmux", "kill-server"], env={**env, "TMUX_TMPDIR": d}, capture_output=True,
                   check=False)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def private_tmux(tmux_dir, monkeypatch):
    monkeypatch.setenv("TMUX_TMPDIR", tmux_dir)
    monkeypatch.delenv("TMUX", raising=False)
    # Under pytest the process environment (C level, not os.environ) holds COLUMNS=80 LINES=24
    # (set by readline): a program in a 200x50 pane would inherit them and draw 80x24. Set and
    # delete through os.environ, which unsets them for the children.
    for var in ("COLUMNS", "LINES"):
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)


@pytest.fixture
def term_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a program in the pane: an empty HOME and config dir of its own.
    Without tmux: skipped on a developer's machine, a failure in CI."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing in CI")
        pytest.skip("tmux is not installed")
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def real(name: str) -> str:
    return str(real_dir() / name)


def ready(screen: str) -> bool:
    """The trace or diff screen is up: a table header and the `row N/M` status line."""
    return "Op code" in screen and ROW.search(screen) is not None


def status_row(screen: str) -> tuple[int, int] | None:
    m = ROW.search(screen)
    return (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))) if m else None


def has_word(line: str, word: str) -> bool:
    """`word` whole on the line: not cut (`Tens…`), not part of a longer word."""
    return re.search(rf"(?<![\w…]){re.escape(word)}(?![\w…])", line) is not None


def line_with(screen: str, *needles: str) -> str:
    """The first line holding every needle ('' when none does)."""
    return next((ln for ln in screen.splitlines() if all(n in ln for n in needles)), "")


def prompt_text(screen: str, title: str) -> str:
    """What the prompt titled `title` shows: the rest of its title line and the two lines
    under it."""
    lines = screen.splitlines()
    for i, ln in enumerate(lines):
        if title in ln:
            return "\n".join([ln.split(title, 1)[1]] + lines[i + 1:i + 3])
    return ""


def body_rows(screen: str) -> list[str]:
    """Op rows of the op table (lines between the header and the status line starting with an
    op id)."""
    return [ln for ln in screen.splitlines()[3:-2] if ln.split() and ln.split()[0].isdigit()]


def styled(t: Tmux) -> str:
    """The pane with its colours (SGR escapes): a highlight has no other trace in plain text."""
    return subprocess.run(t.cmd("capture-pane", "-p", "-e", "-t", t.name),
                          capture_output=True, text=True, check=True).stdout


def style_at(styled_screen: str, needle: str) -> str | None:
    """The SGR codes in effect where `needle` starts (those since the last reset on its line)."""
    for ln in styled_screen.splitlines():
        i = ln.find(needle)
        if i < 0:
            continue
        before = ln[:i]
        reset = max(before.rfind("\x1b[0m"), before.rfind("\x1b[m"))
        return ";".join(re.findall(r"\x1b\[([0-9;]*)m", before[reset + 1:] if reset >= 0
                                   else before))
    return None


def wait_styled(t: Tmux, predicate, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = styled(t)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError("timed out; screen was:\n" + SGR.sub("", text))


def wait_stable(t: Tmux, predicate, timeout: float = 20.0, settle: float = 0.5) -> str:
    """Like `wait_for`, on a screen that has not changed for `settle` seconds: a layout is judged
    once it has settled (a table may paint a frame before its column widths are final)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    text = ""
    while time.monotonic() < deadline:
        text = t.screen()
        if text != last:
            last, since = text, time.monotonic()
        elif predicate(text) and time.monotonic() - since >= settle:
            return text
        time.sleep(0.1)
    raise AssertionError(f"timed out; screen was:\n{text}")


def page_through(t: Tmux, first: str, key: str = "PageDown") -> list[str]:
    """`first` (a scrolled view at its top, longer than the screen), then the settled screen
    after each press of `key` until the bottom. The bottom is the screen `End` shows, so the end
    is seen, not guessed from a screen that did not move in time on a loaded machine. Settled,
    not the first frame that differs: a page scrolls animated, and the next press scrolls on
    from where the last one was going, so a frame caught mid-way would skip what the page
    showed."""
    t.send("End")
    last = wait_stable(t, lambda s: s != first)
    t.send("Home")
    wait_stable(t, lambda s: s == first)
    screens = [first]
    while screens[-1] != last:
        assert len(screens) < 40, "paging never reached the bottom"
        t.send(key)
        screens.append(wait_stable(t, lambda s, before=screens[-1]: s != before))
    return screens


def replace_value(t: Tmux, title: str, shown, text: str) -> None:
    """Replace the value of the open prompt titled `title` like a user who watches the screen:
    see it (`shown(prompt text)`), clear it (home, delete to the end), see it gone, type
    `text`, see it."""
    t.wait_for(lambda s: shown(prompt_text(s, title)))
    t.send("C-a")
    t.send("C-k")
    t.wait_for(lambda s: title in s and not shown(prompt_text(s, title)))
    t.send(text, literal=True)
    t.wait_for(lambda s: text in prompt_text(s, title))


def no_traceback(screen: str) -> bool:
    return "Traceback" not in screen


# ---------------------------------------------------------------- 1. prompts show what is typed
def test_open_filter_prompt_shows_typed_text_then_filters(term_env):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/1,872" in s, LOAD)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("bound:dram", literal=True)
        t.wait_for(lambda s: "bound:dram" in prompt_text(s, "Filter ops:"))
        t.send("Enter")
        t.wait_for(lambda s: "Filter ops:" not in s and "filter: bound:dram" in s)
        t.send("q")
        assert t.exit_status() == 0


def test_open_counter_columns_picked_in_a_real_terminal(term_env):
    """`a`, space on the slowest RISC and on BRISC, esc: both columns in the 80-column table,
    after the device time; `>` sorts by them and `risc:` filters on the slowest RISC."""
    with Tmux([ttdash_bin(), "open", real(DLV3)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/387" in s, LOAD)
        t.send("a")
        t.wait_text("[ ] RISC")
        t.send("Space")  # each mark read back before the next key
        t.wait_text("[x] RISC")
        t.send("Down")
        t.send("Space")
        t.wait_text("[x] BRISC")
        t.send("Escape")
        screen = t.wait_for(lambda s: "Table columns" not in s and has_word(
            line_with(s, "Op code"), "BRISC"))
        head = line_with(screen, "Op code")
        assert head.index("Device") < head.index("RISC") < head.index("BRISC"), screen
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("risc:NCRISC", literal=True)
        t.send("Enter")
        t.wait_for(lambda s: "filter: risc:NCRISC" in s and status_row(s) is not None
                   and 0 < status_row(s)[1] < 387)
        t.send("q")
        assert t.exit_status() == 0


def test_open_export_prompt_shows_typed_path_then_writes(term_env):
    title = "Export the current view"
    # A short directory: the whole typed path must fit the 80-column prompt to be read back
    # (pytest's tmp_path grows with its run counter and scrolled out of view one day).
    with tempfile.TemporaryDirectory(prefix="ttd") as short, \
            Tmux([ttdash_bin(), "open", real(DLV3)], 80, 24, term_env) as t:
        target = Path(short) / "x.csv"
        t.wait_for(ready, LOAD)
        t.send("e")
        t.wait_text(title)
        replace_value(t, title, lambda p: "ttdash_export.csv" in p, str(target))
        t.send("Enter")
        t.wait_for(lambda s: title not in s and target.is_file()
                   and "op" in target.read_text(encoding="utf-8").splitlines()[0].lower())
        t.send("q")
        assert t.exit_status() == 0


def test_diff_filter_and_threshold_prompts_show_typed_text(term_env):
    with Tmux([ttdash_bin(), "diff", real(CLIP_BH), real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "regression ≥ 5%" in s, LOAD)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("op:Matmul", literal=True)
        t.wait_for(lambda s: "op:Matmul" in prompt_text(s, "Filter ops:"))
        t.send("Enter")
        t.wait_for(lambda s: "Filter ops:" not in s and "filter: op:Matmul" in s
                   and bool(body_rows_diff(s))
                   and all("Matmul" in r for r in body_rows_diff(s)))
        t.send("t")
        t.wait_text("Regression threshold")
        replace_value(t, "Regression threshold", lambda p: re.search(
            r"(?<![\w.])5(?![\w.])", p) is not None, "12.5")  # the current threshold, 5
        t.send("Enter")
        t.wait_for(lambda s: "Regression threshold" not in s and "regression ≥ 12.5%" in s)
        t.send("q")
        assert t.exit_status() == 0


def body_rows_diff(screen: str) -> list[str]:
    """Rows of the diff table: the lines between its header and the status line."""
    lines = screen.splitlines()
    head = next((i for i, ln in enumerate(lines) if "Op code" in ln), None)
    stat_i = next((i for i, ln in enumerate(lines) if ROW.search(ln)), None)
    if head is None or stat_i is None:
        return []
    return [ln for ln in lines[head + 1:stat_i] if ln.strip()]


# ---------------------------------------------------------------- 2. themes
@pytest.mark.parametrize("theme", ["ttdash-dark", "ttdash-light", "ttdash-ansi", "textual-dark"])
def test_every_bundled_theme_opens(term_env, theme):
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK), "--theme", theme], 80, 24, term_env) as t:
        screen = t.wait_for(lambda s: ready(s) or EXIT_MARK in s, LOAD)
        assert "stylesheet" not in screen.lower() and EXIT_MARK not in screen, screen
        t.send("q")
        assert t.exit_status() == 0


def _user_theme(env: dict[str, str], name: str, text: str) -> None:
    d = Path(env["XDG_CONFIG_HOME"]) / "ttdash" / "themes"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.toml").write_text(text, encoding="utf-8")


def test_stylesheet_error_exits_nonzero(term_env):
    """A theme whose colours Textual's CSS cannot use: a stylesheet error (or a one-line
    `ttdash:` error), never exit status 0, never a traceback."""
    _user_theme(term_env, "badcolour", 'name = "badcolour"\ndark = true\nprimary = "#5fafd7"\n'
                '[variables]\n"footer-background" = "not-a-colour"\n')
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK), "--theme", "badcolour"], 80, 24,
              term_env) as t:
        status = t.exit_status(LOAD)
        screen = t.screen()
        assert status != 0, screen
        assert "stylesheet" in screen.lower() or any(
            ln.startswith("ttdash:") for ln in screen.splitlines()), screen
        assert no_traceback(screen), screen


def test_user_ansi_theme_without_variables_works_or_fails_cleanly(term_env):
    """`ansi = true` and nothing else: it either works, or stops with a non-zero status; a
    stylesheet error with exit status 0 (today) is neither."""
    _user_theme(term_env, "bare", 'name = "bare"\ndark = true\nansi = true\n'
                'primary = "ansi_bright_cyan"\n')
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK), "--theme", "bare"], 80, 24, term_env) as t:
        screen = t.wait_for(lambda s: ready(s) or EXIT_MARK in s, LOAD)
        if EXIT_MARK in screen:
            status = t.exit_status()
            assert status != 0 and no_traceback(screen), screen
        else:
            assert "stylesheet" not in screen.lower(), screen
            t.send("q")
            assert t.exit_status() == 0


# ---------------------------------------------------------------- 3. labels uncut at 80x24
def test_open_view_header_at_80_columns(term_env):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        wait_stable(t, lambda s: ready(s) and all(
            has_word(line_with(s, "Op code"), w) for w in ("Op code", "Device", "Bound")), LOAD)


def test_open_view_at_200x50(term_env):
    with Tmux([ttdash_bin(), "open", real(SIGNPOSTED)], 200, 50, term_env) as t:
        wait_stable(t, lambda s: ready(s) and "…" not in line_with(s, "Op code") and all(
            has_word(line_with(s, "Op code"), w)
            for w in ("ID", "Op code", "Device", "Gap", "Wall%", "Cores", "Bound", "Signpost"))
            and "OftNet module started" in s  # the first signpost, in the panel and the table
            and "Quit" in s.splitlines()[-1], LOAD)
        t.send("q")
        assert t.exit_status() == 0


@pytest.mark.parametrize("name", [DEEPSEEK, SEG])
def test_grouped_view_header_at_80_columns(term_env, name):
    with Tmux([ttdash_bin(), "open", real(name)], 80, 24, term_env) as t:
        t.wait_for(ready, LOAD)
        t.send("2")
        wait_stable(t, lambda s: all(has_word(line_with(s, "Count"), w)
                                     for w in ("Count", "Total", "Max", "Share")))


def test_advice_view_at_80x24_then_enter_shows_the_op(term_env):
    """`3` in the installed binary: the advice grouped, `f` every entry with bullets indented;
    enter on an entry lands on that op in the op table (in file order: `o`)."""
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/" in s, LOAD)
        t.send("o")
        t.send("3")
        wait_stable(t, lambda s: "Grouped: 38 entries; f lists each" in s
                    and "Op-to-op gaps over 6.5 us: 25 ops waited" in s)
        t.send("f")
        wait_stable(t, lambda s: "High op-to-op gap (over 6.5 us)" in s
                    and "ID 14  ReduceScatterMinimalAsyncDeviceOperation  gap 5.05 s" in s)
        t.send("G")
        wait_stable(t, lambda s: "ID 201  MatmulDeviceOperation 3200 x 4096 x 7168" in s
                    and "• optimised: no rule applies" in s)
        t.send("Enter")
        wait_stable(t, lambda s: "row 25/26" in s and "Op code" in s)


def test_grouped_by_input0_memory_at_80x24_keeps_its_titles_on_one_line(term_env):
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK)], 80, 24, term_env) as t:
        t.wait_for(ready, LOAD)
        t.send("2")
        wait_stable(t, lambda s: "Share of device time by op code (%)" in s)
        t.send("c")
        wait_stable(t, lambda s: "Share of device time by category (%)" in s)
        t.send("c")
        wait_stable(t, lambda s: "Share by op code and in0 memory (%)" in s and all(
            has_word(line_with(s, "Count"), w) for w in ("Op code (input 0 memory)", "Share")))


def test_details_modal_at_80x24_shows_tensor_header_uncut_and_no_na(term_env):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/" in s, LOAD)
        t.send("o")  # the trace's order: the first op is an embedding with no third input
        t.wait_for(lambda s: "sort: file order" in s)
        t.send("Enter")
        first = wait_stable(t, lambda s: "ID 2 " in s and "Embeddings" in s and "Device time" in s)
        screens = page_through(t, first)
        headers = [line_with(s, "Layout") for s in screens if line_with(s, "Layout")]
        assert headers, "no tensor table (a `Layout` column) in the details:\n" + \
            "\n----\n".join(screens)
        assert has_word(headers[0], "Tensor"), headers[0]
        for s in screens:
            assert "<NA>" not in s, s


def test_diff_grouped_view_shows_delta_pct_at_80_columns(term_env):
    with Tmux([ttdash_bin(), "diff", real(CLIP_BH), real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(ready, LOAD)
        t.send("2")
        t.wait_for(lambda s: "A ops" in s or "B ops" in s or "Share" in s)  # the grouped table
        wait_stable(t, lambda s: has_word(line_with(s, "Op code"), "Δ%")
                   or re.search(r"delta ?%", line_with(s, "Op code"), re.IGNORECASE) is not None)


HELP_NOISE = ("Focus Previous", "shift+tab", "^c", "super+c")


def test_help_at_80x24_lists_no_noise(term_env):
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK)], 80, 24, term_env) as t:
        t.wait_for(ready, LOAD)
        t.send("?")
        # The help lists keys the 80-column footer has no room for.
        first = wait_stable(t, lambda s: "Export" in s and "Details" in s)
        for s in page_through(t, first):
            assert not [n for n in HELP_NOISE if n in s], s


# ---------------------------------------------------------------- 4. sorting puts the cursor on top
def test_sorting_moves_the_cursor_to_the_top(term_env):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        # the sort shown before any press (heaviest first) is the first title: a press is seen
        # when a title not seen yet is (taken for a press, the first screen raced the keys).
        # Settled: a first frame may show the table before its header has the sort.
        first = wait_stable(t, lambda s: ready(s) and "row 1/1,872" in s and "sort: " in s,
                            LOAD)
        titles = [re.search(r"sort: (\S+)", first).group(1)]
        for _ in range(3):
            t.send(">")
            screen = t.wait_for(lambda s: (m := re.search(r"sort: (\S+)", s)) is not None
                                and m.group(1) not in titles)
            titles.append(re.search(r"sort: (\S+)", screen).group(1))
        wait_stable(t, lambda s: f"sort: {titles[-1]}" in s and status_row(s) == (1, 1872))


# ---------------------------------------------------------------- 5. the runs list of `watch`
RUN_NEW, RUN_OLD = "2025-01-02 00:00:00", "2025-01-01 00:00:00"


@pytest.fixture
def profiler_dir(tmp_path: Path) -> Path:
    """A profiler dir with two finished runs: the older the dlv3 model, the newer the clip."""
    root = tmp_path / "profiler"
    for ts, name in (("2025_01_01_00_00_00", DLV3), ("2025_01_02_00_00_00", CLIP_BH)):
        d = root / "reports" / ts
        d.mkdir(parents=True)
        shutil.copyfile(real(name), d / f"ops_perf_results_{ts}.csv")
    return root


def _watch_with_runs(t: Tmux) -> str:
    t.wait_for(lambda s: ready(s) and "660 ops" in s, LOAD)  # the newest report is shown
    t.send("R")
    return t.wait_for(lambda s: RUN_NEW in s and RUN_OLD in s)


def is_diff(screen: str) -> bool:
    return ("A time" in screen and "B time" in screen) or "regression ≥" in screen


def test_runs_list_j_moves_the_highlight(term_env, profiler_dir):
    with Tmux([ttdash_bin(), "watch", str(profiler_dir)], 80, 24, term_env) as t:
        _watch_with_runs(t)
        before = wait_styled(t, lambda s: style_at(s, RUN_NEW) is not None
                             and style_at(s, RUN_NEW) != style_at(s, RUN_OLD))  # one is lit
        t.send("j")
        wait_styled(t, lambda s: style_at(s, RUN_NEW) != style_at(before, RUN_NEW)
                    and style_at(s, RUN_OLD) != style_at(before, RUN_OLD))
        t.send("b")  # marks the run under the highlight: the older one now
        t.wait_for(lambda s: "baseline" in line_with(s, RUN_OLD)
                   and "baseline" not in line_with(s, RUN_NEW))


def test_runs_same_run_as_baseline_and_candidate_is_refused(term_env, profiler_dir):
    with Tmux([ttdash_bin(), "watch", str(profiler_dir)], 80, 24, term_env) as t:
        _watch_with_runs(t)
        t.send("b")
        t.wait_for(lambda s: "baseline" in line_with(s, RUN_NEW))
        t.send("c")
        t.wait_for(lambda s: "candidate" in line_with(s, RUN_NEW))
        t.send("d")
        t.wait_for(lambda s: re.search(r"\bsame\b", s, re.IGNORECASE) is not None and not is_diff(s)
                   and EXIT_MARK not in s)


def test_runs_diff_then_escape_returns_to_watch(term_env, profiler_dir):
    with Tmux([ttdash_bin(), "watch", str(profiler_dir)], 80, 24, term_env) as t:
        _watch_with_runs(t)
        t.send("b")  # the newest, highlighted first
        t.wait_for(lambda s: "baseline" in line_with(s, RUN_NEW))
        t.send("Down")
        t.send("c")
        t.wait_for(lambda s: "candidate" in line_with(s, RUN_OLD))
        t.send("d")
        t.wait_for(lambda s: is_diff(s) and "A ops_perf_results_2025_01_02" in s, LOAD)
        t.send("Escape")
        t.wait_for(lambda s: not is_diff(s) and EXIT_MARK not in s
                   and ((RUN_NEW in s and RUN_OLD in s) or (ready(s) and "660 ops" in s)))


# ---------------------------------------------------------------- 9. filter keys and negation
def test_filter_unknown_key_names_the_valid_keys(term_env):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(ready, LOAD)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("foo:bar", literal=True)
        t.send("Enter")
        t.wait_for(lambda s: re.search(r"\b(unknown|invalid|valid)\b", s, re.IGNORECASE) is not None
                   and re.search(r"\bbound\b", s) is not None
                   and re.search(r"\bcat\b", s) is not None and "foo" in s)


@pytest.mark.parametrize("text,hidden", [("-Reshape", "Reshape"), ("!bound:SLOW", "SLOW")])
def test_filter_negation(term_env, text, hidden):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], 80, 24, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/1,872" in s, LOAD)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("--", text, literal=True)  # `--`: a leading `-` is text, not a tmux flag
        t.send("Enter")
        t.wait_for(lambda s: f"filter: {text}" in s and "Filter ops:" not in s
                   and len(body_rows(s)) >= 10 and not any(hidden in r for r in body_rows(s))
                   and (status_row(s) or (0, 0))[1] > 0)


# ---------------------------------------------------------------- 6-8. `report` without a terminal
def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    return dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))


@pytest.mark.parametrize("name,fmt,reader", [
    (OFT, "table", "head -5"),
    (SEG, "table", "head -5"),
    (CLIP_BH, "table", "head -c 10"),
    (CLIP_BH, "table", "true"),
    (CLIP_BH, "csv", "true"),
])
def test_report_into_a_closed_pipe_exits_0_quietly(tmp_path, name, fmt, reader):
    cmd = (f"{_q(ttdash_bin())} report {_q(real(name))} -f {fmt} 2>{_q(str(tmp_path / 'err'))}"
           f" | {reader} >/dev/null; echo \"status=${{PIPESTATUS[0]}}\"")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120,
                       env=_env(tmp_path), check=False)
    err = (tmp_path / "err").read_text(errors="replace")
    assert "status=0" in r.stdout, (r.stdout, err)
    assert not re.search(r"Traceback|Error|Exception", err), err


def _q(s: str) -> str:
    return shlex.quote(s)


def _report(tmp_path: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([ttdash_bin(), "report", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=_env(tmp_path), check=False)


WINDOW_OPTIONS = ("--ignore-signposts", "--signpost")


def test_report_default_window_never_silently_empty(tmp_path):
    """The file's tt-perf-report window (after the first signpost named like the last one)
    holds no op: either the default shows the ops, or the output says why there are none and
    which option shows them."""
    path = os.path.relpath(real_dir() / SIGNPOSTED, ROOT)  # ../shared/fixtures/real/...
    r = _report(tmp_path, path)
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    empty = re.search(r"Window:[^\n]*\b0 ops\b", out) is not None or \
        "TilizeWithValPadding" not in r.stdout  # its first op
    if empty:
        assert any(o in out for o in WINDOW_OPTIONS), out


def test_report_empty_window_says_why(tmp_path):
    path = os.path.relpath(real_dir() / SIGNPOSTED, ROOT)
    r = _report(tmp_path, path, "--start-signpost", "OftNet finished")  # the last signpost
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    assert any(o in out for o in WINDOW_OPTIONS), out


def test_report_output_to_a_fifo_keeps_the_fifo(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    done = threading.Event()
    got: list[bytes] = []

    def reader() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, without waiting for writers
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:  # a writer is connected, nothing to read yet
                    time.sleep(0.02)
                    continue
                if chunk:
                    got.append(chunk)
                elif done.is_set():
                    break  # the writer closed (or never came) and the command has ended
                else:
                    time.sleep(0.02)
        finally:
            os.close(fd)

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        r = _report(tmp_path, real(DLV3), "-f", "csv", "-o", str(fifo), "--force")
    finally:
        done.set()
        th.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert "Traceback" not in r.stderr, r.stderr
    data = b"".join(got).decode("utf-8", "replace")
    if r.returncode == 0:
        lines = data.splitlines()
        assert lines and re.search(r"op[ _]code", lines[0], re.IGNORECASE), data[:500]
        assert len(lines) > 300, len(lines)  # the whole report went through the FIFO
    else:  # refusing is fine: one line, exit 2
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("ttdash:"), \
            r.stderr


# ---------------------------------------------------------------- timeline and roofline
@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_timeline_in_a_real_terminal(term_env, size):
    """`4` in the installed binary with a lane per device: title, axis, eight lanes, the
    selected op; right moves the table cursor with it (to the lane's next op: rows are in CSV
    order, a row per device, so 8 rows down); + zooms (the range shrinks)."""
    with Tmux([ttdash_bin(), "open", real(DEEPSEEK), "--per-device"], *size, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/" in s, LOAD)
        t.send("o")  # file order: the lane's next op is 8 rows down
        wait_stable(t, lambda s: "sort: file order" in s)
        t.send("4")
        s = wait_stable(t, lambda s: "Timeline 0–" in s and "dev 7" in s and "▶ #" in s)
        assert all(f"dev {d}" in s for d in range(8)) and "┊0" in s and "FW cycles" in s
        span = re.search(r"Timeline 0–(\S+ \S+)", s).group(1)
        t.send("Right")
        wait_stable(t, lambda s: "row 9/" in s)
        t.send("+")
        wait_stable(t, lambda s: (m := re.search(r"Timeline \S+–(\S+ \S+)", s)) is not None
                    and m.group(1) != span)
        t.send("Enter")
        wait_stable(t, lambda s: "Device time" in s)  # the op's details
        t.send("Escape")
        wait_stable(t, lambda s: "Timeline" in s and "Device time" not in s)
        t.send("1")
        wait_stable(t, lambda s: ready(s) and "row 9/" in s)
        t.send("q")
        assert t.exit_status() == 0


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_roofline_in_a_real_terminal(term_env, size):
    with Tmux([ttdash_bin(), "open", real(CLIP_WH)], *size, term_env) as t:
        t.wait_for(lambda s: ready(s) and "row 1/" in s, LOAD)
        t.send("o")
        wait_stable(t, lambda s: "sort: file order" in s)
        t.send("5")
        s = wait_stable(t, lambda s: "Roofline · wormhole_b0" in s
                        and "FLOP per DRAM byte" in s)
        assert "514 ops placed" in s and "HiFi4 roof" in s
        t.send("Right")
        s = wait_stable(t, lambda s: "% of the roof" in s and "row 7/" in s)
        t.send("q")
        assert t.exit_status() == 0


# ---------------------------------------------------------------- run history
def test_history_list_trend_and_diff_in_a_terminal(term_env, tmp_path):
    """`ttdash history add` three runs, then the installed `ttdash history` at 80x24: the runs
    newest first, t (trend) then right (next op code), b / c / d (a diff of two runs), q."""
    from history_fixture import scaled_copy

    store = str(tmp_path / "store")
    paths = [scaled_copy(Path(real(CLIP_WH)), tmp_path / f"clip{i}.csv", f)
             for i, f in enumerate((1.0, 1.02, 1.3))]
    for i, p in enumerate(paths):
        res = subprocess.run([ttdash_bin(), "history", "add", "--store", store, str(p),
                              "--label", f"commit=c{i}"], capture_output=True, text=True,
                             env={**os.environ, **term_env})
        assert res.returncode == 0, res.stderr
    with Tmux([ttdash_bin(), "history", "--store", store], 80, 24, term_env) as t:
        first = t.wait_for(lambda s: "Run history · 3 runs · " in s and "commit=c0" in s, LOAD)
        rows = [ln for ln in first.splitlines() if "wormhole_b0" in ln]
        assert len(rows) == 3 and "commit=c2" in rows[0] and "commit=c0" in rows[2]
        # steady state vs the run before, two decimals as `history list` prints it
        assert re.search(r"\+24\.9\d%", rows[0]) and re.search(r"\+1\.8\d%", rows[1]), rows
        t.send("t")
        t.wait_for(lambda s: "Trend MinimalMatmulOp (1/" in s and "3 runs" in s)
        t.send("Right")
        t.wait_for(lambda s: "(2/" in s and "Trend MinimalMatmulOp" not in s)
        t.send("Escape")
        t.wait_for(lambda s: "Run history" in s)
        t.send("b")
        t.send("Down")
        t.send("Down")
        t.send("c")
        t.wait_for(lambda s: re.search(r"\bB\b.*commit=c2", s) and re.search(r"\bC\b.*commit=c0",
                                                                              s))
        t.send("d")
        t.wait_for(lambda s: "clip2.csv" in s and "clip0.csv" in s and "steady" in s, LOAD)
        t.send("Escape")
        t.wait_for(lambda s: "Run history" in s)
        t.send("q")
        assert t.exit_status() == 0


# ---------------------------------------------------------------- progress on stderr
def test_progress_shows_on_a_terminal_while_piped_output_waits(term_env, tmp_path):
    """`report | slow reader` on a terminal: the phase line is on stderr while the writer waits
    for the pipe, gone when the command ends; the piped bytes are the whole report."""
    go = tmp_path / "go"
    whole = run_ttdash("report", real(CLIP_WH), "-f", "csv",
                       env={"TTDASH_PROGRESS_AFTER": "0"})
    assert whole.returncode == 0 and whole.stderr == ""  # stderr not a terminal: nothing
    reader = f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; wc -c"
    script = f"{shlex.quote(ttdash_bin())} report {shlex.quote(real(CLIP_WH))} -f csv | " \
             f"{{ {reader}; }}"
    env = {**term_env, "TTDASH_PROGRESS_AFTER": "0"}
    with Tmux(["sh", "-c", script], 100, 10, env) as t:
        t.wait_for(lambda s: re.search(r"ttdash: writing csv .*\d+%", s) is not None)
        go.touch()
        assert t.exit_status() == 0
        screen = t.screen()
    assert "ttdash:" not in screen  # the transient line was erased
    assert re.search(rf"^\s*{len(whole.stdout.encode())}\s*$", screen, re.M), screen


def test_open_of_a_large_bad_file_ends_with_its_one_line_error(term_env, tmp_path):
    """A large file opens on the loading screen; a broken line found while it loads ends the
    program with the same one line and exit 2 as a small file, on the restored terminal."""
    lines = (real_dir() / CLIP_WH).read_bytes().splitlines(keepends=True)
    body = lines[1:] * 2
    bad = len(body) - 3  # near the end: found after most of the file is read
    body[bad] = body[bad].rstrip(b"\r\n") + b',"extra"\n'
    big = tmp_path / "big.csv"
    big.write_bytes(lines[0] + b"".join(body))
    assert big.stat().st_size >= 4 << 20
    with Tmux([ttdash_bin(), "open", str(big)], 80, 24, term_env) as t:
        assert t.exit_status(timeout=LOAD) == 2
        screen = t.screen()
    joined = screen.replace("\n", "")  # the long tmp path wraps at 80 columns (a space at
    # the wrap is lost: the pane's lines are right-trimmed)
    assert re.search(rf"ttdash: .*big\.csv:{bad + 2}:\d+: expected \d+ ?fields", joined), screen
    assert "Traceback" not in screen


def test_open_shows_the_first_rows_then_the_whole_large_trace(term_env, tmp_path):
    """A large trace (over 16,384 rows) is shown from its first rows while the rest loads, then
    whole, in a real terminal; a broken line past the first rows still ends the program with its
    one line and exit 2 on the restored terminal."""
    lines = (real_dir() / CLIP_WH).read_bytes().splitlines(keepends=True)
    body = lines[1:] * 10
    good = tmp_path / "big.csv"
    good.write_bytes(lines[0] + b"".join(body))
    with Tmux([ttdash_bin(), "open", str(good)], 80, 24, term_env) as t:
        t.wait_for(lambda s: "row 1/18,720" in s and "loading" not in s, LOAD)
        t.send("j")
        t.wait_for(lambda s: "row 2/18,720" in s)
        t.send("q")
        assert t.exit_status() == 0
    bad = len(body) - 3
    body[bad] = body[bad].rstrip(b"\r\n") + b',"extra"\n'
    broken = tmp_path / "broken.csv"
    broken.write_bytes(lines[0] + b"".join(body))
    with Tmux([ttdash_bin(), "open", str(broken)], 80, 24, term_env) as t:
        assert t.exit_status(timeout=LOAD) == 2
        screen = t.screen()
    joined = screen.replace("\n", "")  # the long tmp path wraps at 80 columns (a space lost)
    assert re.search(rf"ttdash: .*broken\.csv:{bad + 2}:\d+: expected ?\d+ fields", joined), screen
    assert "Traceback" not in screen
