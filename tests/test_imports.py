"""Every module imports on its own, and the model imports itself in no circle (issue #48).

A circle held open by an import inside a function works only in the order the test suite happens
to import things: `import ttdash.model.analysis.guide_rules` first, in a fresh interpreter, used to fail.
So (1) every ttdash module is imported first in a fresh interpreter state, and (2) the model's
module-level imports form no cycle, with the imports left inside functions listed and justified
(`LAZY`), so a new one cannot hide a circle.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ttdash"
MODEL = PKG / "model"

#: The imports of one model module by another that stay inside a function, and why: only to keep
#: a light module light (a lazy heavy dependency), never to break a circle.
LAZY = {
    ("columns", "read.counters"): "columns is pandas-free (the CLI and the TUI read its column names "
                             "before any trace is loaded); counters imports pandas",
}


def _module_names() -> list[str]:
    names = []
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    # the model first (the layer everything else builds on), then the rest
    return sorted(names, key=lambda n: (not n.startswith("ttdash.model"), n))


def _third_party(paths: list[Path]) -> list[str]:
    """Every non-ttdash module the package imports anywhere (preloaded by the fork server)."""
    out: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                out.add(node.module)
    return sorted(m for m in out if m.split(".")[0] not in ("ttdash", "__future__"))


#: Run in a fresh interpreter: import the third-party packages once (what makes an interpreter
#: per module slow: ~2 s each on a small machine), then fork a child per ttdash module, each
#: importing that module first (no ttdash module is in sys.modules before the fork). The child's
#: ttdash import order is exactly a fresh interpreter's; only third-party modules are already
#: loaded, which changes nothing of how ttdash's modules import each other.
_SERVER = textwrap.dedent("""
    import importlib, io, json, os, sys, traceback
    preload, modules, jobs = json.loads(sys.stdin.read())
    for m in preload:
        try:
            importlib.import_module(m)
        except BaseException:
            pass  # (an optional one: the child that needs it reports it)
    assert not [m for m in sys.modules if m.split(".")[0] == "ttdash"], "ttdash preloaded"
    results, running = {}, {}

    def child(name, w):
        sys.argv = ["ttdash", "--version"]  # (ttdash.__main__ runs the CLI when imported)
        sys.stdout = io.StringIO()
        err = ""
        try:
            importlib.import_module(name)
        except SystemExit as e:
            if e.code not in (0, None):
                err = f"SystemExit({e.code!r})"
        except BaseException:
            err = traceback.format_exc()
        os.write(w, err.encode()[-4000:])
        os._exit(0)

    def reap():
        pid, _ = os.wait()
        name, r = running.pop(pid)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        results[name] = b"".join(chunks).decode(errors="replace")

    for name in modules:
        while len(running) >= jobs:
            reap()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(name, w)
        os.close(w)
        running[pid] = (name, r)
    while running:
        reap()
    sys.stdout.write(json.dumps(results))
""")


def _first_imports(modules: list[str], jobs: int = 2) -> dict[str, str]:
    """{module: the error importing it first in a fresh interpreter, "" if none}."""
    preload = _third_party(sorted(PKG.rglob("*.py")))
    out = subprocess.run([sys.executable, "-c", _SERVER], input=json.dumps([preload, modules,
                         jobs]), capture_output=True, text=True, timeout=300, cwd=PKG.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    results: dict[str, str] = json.loads(out.stdout)
    return results


def test_every_module_imports_first_in_a_fresh_interpreter():
    modules = _module_names()
    results = _first_imports(modules)
    assert sorted(results) == sorted(modules)
    bad = {m: err.strip().splitlines()[-1] for m, err in results.items() if err}
    assert not bad, "imported first, these fail:\n" + "\n".join(f"{m}: {e}"
                                                                  for m, e in bad.items())


def test_first_import_check_can_fail(tmp_path):
    """A module whose import raises is reported (so a pass above means something)."""
    results = _first_imports(["ttdash.model", "ttdash.model.no_such_module"])
    assert results["ttdash.model"] == ""
    assert "ModuleNotFoundError" in results["ttdash.model.no_such_module"]


# ---------------------------------------------------------------- the model's import graph

def _model_targets(node: ast.ImportFrom | ast.Import, mods: set[str], here: str,
                   package: bool = False) -> set[str]:
    """The model modules (dotted below ttdash.model: "read.loader", "trace") an import statement
    of the model module `here` names; a package counts as its `__init__`."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level:
        pkg = here.split(".") if package else here.split(".")[:-1]
        if node.level - 1 > len(pkg):
            return set()  # from .. above the model: test_layers' business
        base = pkg[:len(pkg) - (node.level - 1)] + ([node.module] if node.module else [])
        names = [".".join(["ttdash", "model", *base, a.name]) for a in node.names]
        names.append(".".join(["ttdash", "model", *base]))
    elif node.module:
        names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    else:
        return set()
    out = set()
    for n in names:
        parts = n.split(".")
        if parts[:2] == ["ttdash", "model"] and len(parts) > 2:
            for k in range(len(parts), 2, -1):
                if ".".join(parts[2:k]) in mods:
                    out.add(".".join(parts[2:k]))
                    break
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _graph(model: Path = MODEL) -> tuple[dict[str, dict[str, int]], list[tuple[str, str, int]]]:
    """({module: {module it imports at module level: line}}, [(module, imported, line) of each
    import inside a function]), modules named dotted below the model ("read.loader", "trace";
    a sub-package by its own name). `if TYPE_CHECKING:` imports are not run, so not counted."""
    files = {}
    for path in sorted(model.rglob("*.py")):
        parts = list(path.relative_to(model).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts:
            files[".".join(parts)] = path
    mods = set(files)
    top: dict[str, dict[str, int]] = {}
    lazy: list[tuple[str, str, int]] = []
    for m in sorted(mods):
        tree = ast.parse(files[m].read_text(encoding="utf-8"))
        top[m] = {}
        stack: list[tuple[ast.AST, bool]] = [(n, False) for n in tree.body]
        while stack:
            node, in_function = stack.pop()
            if _is_type_checking(node):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _model_targets(node, mods, m, files[m].name == "__init__.py") - {m}:
                    if in_function:
                        lazy.append((m, t, node.lineno))
                    else:
                        top[m].setdefault(t, node.lineno)
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda))
            stack.extend((c, inner) for c in ast.iter_child_nodes(node))
    return top, sorted(lazy)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (as a path a -> ... -> a) per strongly connected component with more than one
    module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    comps.append(comp)
    cycles = []
    for comp in comps:  # a shortest way back to the first module, inside the component
        start = min(comp)
        prev: dict[str, str] = {}
        frontier, seen, end = [start], {start}, None
        while frontier and end is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start:
                        end = v
                        break
                    if w in comp and w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            frontier = nxt
        path = [start]
        v = end
        while v is not None and v != start:
            path.insert(1, v)
            v = prev.get(v)
        cycles.append(path + [start])
    return cycles


def _describe(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + \
        f" -> {cycle[-1]}"


def test_the_model_has_no_import_cycle():
    """No circle of imports, counting those inside functions too (what hides a circle)."""
    graph, lazy = _graph()
    for a, b, line in lazy:
        graph[a].setdefault(b, line)
    cycles = _cycles(graph)
    assert not cycles, "import cycles in ttdash/model:\n" + "\n".join(
        _describe(graph, c) for c in cycles)


def test_imports_inside_functions_are_listed():
    """An import of one model module by another inside a function is in LAZY, with its reason
    (and LAZY lists no import that is gone)."""
    _, lazy = _graph()
    found = {(a, b) for a, b, _ in lazy}
    unlisted = [f"{a}.py:{line} imports {b}" for a, b, line in lazy if (a, b) not in LAZY]
    assert not unlisted, ("imports inside functions (import at module level, or move the code "
                          "both need to a module of its own; a lazy heavy dependency goes in "
                          "LAZY with its reason):\n" + "\n".join(unlisted))
    assert set(LAZY) <= found, f"LAZY lists imports that are gone: {sorted(set(LAZY) - found)}"


def test_the_cycle_check_can_fail(tmp_path):
    """The checker sees a circle closed by relative imports, and one held open by an import
    inside a function run at import time is reported as unlisted."""
    (tmp_path / "a.py").write_text("from .b import x\n")
    (tmp_path / "b.py").write_text("from . import c\nx = 1\n")
    (tmp_path / "c.py").write_text("import ttdash.model.a\n")
    (tmp_path / "d.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "e.py").write_text("if TYPE_CHECKING:\n    from .d import f\n")
    graph, lazy = _graph(tmp_path)
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert lazy == [("d", "a", 2)]
    assert graph["e"] == {}


def test_the_cycle_check_sees_sub_packages(tmp_path):
    """A circle through a sub-package (relative imports up and down, and absolute ones) is seen,
    and a sub-package's __init__ resolves its relative imports from itself."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "__init__.py").write_text("from .x import w\n")
    (tmp_path / "p" / "x.py").write_text("from ..y import z\nw = 1\n")
    (tmp_path / "y.py").write_text("from .p import x\nz = 1\n")
    (tmp_path / "q.py").write_text("import ttdash.model.p.x\n")
    graph, lazy = _graph(tmp_path)
    assert graph["p"] == {"p.x": 1}
    assert graph["y"] == {"p": 1, "p.x": 1}
    assert graph["q"] == {"p.x": 1}
    assert _cycles(graph) == [["p", "p.x", "y", "p"]]
    assert lazy == []
