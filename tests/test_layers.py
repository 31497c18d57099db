"""The layers of DESIGN.md, checked on every import statement of the project (lazy ones too).

``model/`` imports nothing else of the project; the two checkers (``proofs/``) and the runtime
(``impl/``) import ``model/`` and never each other; the applications (``mcp_inflight/``: command
line, drawing, probe, serve, web explorer) and ``bench/`` sit on top.  Nothing below imports an
application.
"""

from __future__ import annotations

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: folder of the repository -> the package it is installed as (pyproject's package-dir)
PACKAGES = {
    "model": "mcp_inflight.model",
    "proofs": "mcp_inflight.proofs",
    "impl": "mcp_inflight.impl",
    "mcp_inflight": "mcp_inflight",
}

#: layer -> the layers it may import (its own included)
ALLOWED = {
    "model": {"model"},
    "proofs": {"model", "proofs"},
    "impl": {"model", "impl"},
    "app": {"model", "proofs", "impl", "app"},
    "bench": {"model", "proofs", "impl", "app", "bench"},
}


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name of the project (None: not the project's)."""
    parts = module.split(".")
    if parts[0] != "mcp_inflight":
        return None
    if len(parts) > 1 and parts[1] in ("model", "proofs", "impl"):
        return parts[1]
    return "app"


def module_of(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    top = rel.parts[0]
    if top == "bench":
        return "bench." + rel.stem
    names = list(rel.with_suffix("").parts[1:])
    if names and names[-1] == "__init__":
        names = names[:-1]
    return ".".join([PACKAGES[top], *names])


@functools.cache
def imports(source: str, module: str, is_package: bool) -> tuple[tuple[int, str], ...]:
    """Every project module named by an import in ``source`` (absolute and relative).  A pure
    function of its arguments, kept per source text: the checks below read every file of the
    project several times, and a file is parsed once per text (a patched text is parsed anew)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # ``from mcp_inflight import probe`` names the submodule
            out += [
                (node.lineno, f"{target}.{a.name}")
                for a in node.names
                if target in ("mcp_inflight",)
            ]
    return tuple(out)


def violations(path: pathlib.Path, source: str | None = None) -> list[str]:
    module = module_of(path)
    own = "bench" if module.startswith("bench.") else layer_of(module)
    text = path.read_text() if source is None else source
    bad = []
    for line, target in imports(text, module, path.name == "__init__.py"):
        theirs = layer_of(target)
        if theirs is None or target == "mcp_inflight":
            continue
        if theirs not in ALLOWED[own]:
            rel = path.relative_to(ROOT)
            bad.append(f"{rel}:{line}: {own} module {module} imports {target} ({theirs})")
    return bad


def project_files() -> list[pathlib.Path]:
    files = []
    for top in (*PACKAGES, "bench"):
        files += sorted((ROOT / top).rglob("*.py"))
    return [f for f in files if "node_modules" not in f.parts]


def test_every_import_keeps_the_layers():
    files = project_files()
    assert any(f.parent.name == "model" for f in files) and len(files) > 30
    bad = [v for f in files for v in violations(f)]
    assert not bad, "imports across the layers:\n" + "\n".join(bad)


def test_the_check_sees_a_runtime_module_importing_a_checker():
    core = ROOT / "impl" / "core.py"
    for source in (
        "from mcp_inflight.proofs.explorer import explore\n",
        "def f():\n    from ..proofs import prove\n",
        "import mcp_inflight.proofs.explorer\n",
    ):
        assert violations(core, source), source
    assert violations(ROOT / "model" / "session.py", "from mcp_inflight.impl import core\n")
    assert violations(ROOT / "proofs" / "explorer.py", "from mcp_inflight import cli\n")
    assert violations(ROOT / "impl" / "core.py", "from mcp_inflight import probe\n")
    assert not violations(core, "from mcp_inflight.model import ATOMIC\nfrom .sse import Decoder\n")


# --- no import cycle ----------------------------------------------------------------------------


def import_graph(files: list[pathlib.Path], sources: dict[str, str] | None = None):
    """module -> the project modules it imports (lazy imports too; a package's ``__init__`` is
    left out as a target, since importing a name through its package is not a dependency on the
    package's other modules)."""
    mods = {module_of(f): f for f in files if not module_of(f).startswith("bench.")}
    graph: dict[str, set[str]] = {}
    for m, f in mods.items():
        text = (sources or {}).get(m) or f.read_text()
        out = set()
        for _, t in imports(text, m, f.name == "__init__.py"):
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != m and mods[t].name != "__init__.py":
                out.add(t)
        graph[m] = out
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def test_no_import_cycle():
    assert cycles(import_graph(project_files())) == []


def test_the_cycle_check_sees_a_cycle():
    files = project_files()
    guard_stdio = ROOT / "impl" / "guard_stdio.py"
    guard = ROOT / "impl" / "guard.py"
    patched = {module_of(guard): guard.read_text() + "\nfrom .guard_stdio import guard_stdio\n"}
    found = cycles(import_graph(files, patched))
    assert {module_of(guard), module_of(guard_stdio)} in found


def test_the_session_store_seam_has_no_back_edge():
    """The app imports its Redis store lazily; the store reads the app only through
    ``impl/stores.py``'s ``Host``: an import of the app back would be a cycle, and is seen."""
    files = project_files()
    redis_http = ROOT / "impl" / "redis_http.py"
    http = ROOT / "impl" / "http.py"
    assert module_of(redis_http) in import_graph(files)[module_of(http)]
    patched = {module_of(redis_http): redis_http.read_text() + "\nfrom .http import App\n"}
    assert {module_of(http), module_of(redis_http)} in cycles(import_graph(files, patched))
