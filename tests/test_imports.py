"""Imports run one way: no cycles, strategies and oracles side by side, no module importing a layer above.

The graph is read from the source by AST (nothing is imported).  ``from P import m`` counts as an
import of the submodule ``P.m`` where that is a module (else of ``P``): a package's ``__init__`` runs
before any of its submodules anyway, so only what a module names is an edge.
"""
from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
# Source folder -> installed package name (setuptools package-dir).
SOURCES = {"fuzzptx": "fuzzptx", "strategies": "fuzzptx.strategies", "oracles": "fuzzptx.oracles"}

# Layers, bottom to top, by module-name prefix (a prefix matches the module and its submodules).
# A module may import its own layer or lower ones, never a higher one.  Anything unlisted is layer 5.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("fuzzptx.errors", "fuzzptx.perf", "fuzzptx.isa", "fuzzptx.ptx", "fuzzptx.data", "fuzzptx.program",
     "fuzzptx.kernels", "fuzzptx.builders", "fuzzptx.warp_builders", "fuzzptx.neighbours", "fuzzptx.inputs",
     "fuzzptx.helptext"),
    ("fuzzptx.strategies", "fuzzptx.oracles"),
    ("fuzzptx.judges", "fuzzptx.launch"),
    ("fuzzptx.reduce",),
    ("fuzzptx.engine",),
    ("fuzzptx.triage",),
)
TOP = len(LAYERS)  # fuzzptx.cli, fuzzptx.commands, fuzzptx.pytest_plugin, fuzzptx.conformance*, fuzzptx.neighbours, fuzzptx.corpus...
SIDE_BY_SIDE = ("fuzzptx.strategies", "fuzzptx.oracles")  # one layer, never importing each other

# Violations being worked off, each with why; empty: every rule holds everywhere.
# Entries are ("cycle", sorted modules) or ("upward" / "sideways", importer, imported).
KNOWN_UNTIL_MERGE: set[tuple] = set()

# Function-level imports of internal modules: allowed only where the imported module pulls in an
# optional heavy dependency (CuPy, cuda bindings, MMA-Sim/torch), so that importing the caller stays cheap.
LAZY_ALLOWED: dict[str, str] = {
    "fuzzptx.oracles.hardware": "CuPy / cuda bindings",
    "fuzzptx.oracles.hw_worker": "CuPy / cuda bindings",
    "fuzzptx.oracles.mmasim_judge": "MMA-Sim and torch",
}
# Modules that may import fuzzptx inside functions, and why.
LAZY_IMPORTERS: dict[str, str] = {
    "fuzzptx.pytest_plugin": "pytest loads the plugin in every session of the environment: fuzzptx "
                             "(numpy, the judges) is imported only when a fuzz run asks for it",
}


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for folder, pkg in SOURCES.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            if folder == "fuzzptx" and parts[0] in ("strategies", "oracles"):
                continue  # the symlinks to ../strategies and ../oracles
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = path
    return mods


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The longest known module that ``name`` is or lies inside."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if path.name != "__init__.py":
                parts = parts[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return {t for t in map(_owner, names) if t and t != module}


def _graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[int, str]]]]:
    """Internal import edges per module, and the function-level ones (line, target)."""
    edges: dict[str, set[str]] = defaultdict(set)
    lazy: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in _targets(module, path, child):
                        edges[module].add(t)
                        if in_function:
                            lazy[module].append((child.lineno, t))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return edges, lazy


@functools.lru_cache(maxsize=1)
def _read() -> tuple[dict[str, set[str]], dict[str, list[tuple[int, str]]]]:
    """``_graph()`` once per process, when a test asks (not at collection: every xdist worker
    collects this file, one runs its tests)."""
    return _graph()


def _edges() -> dict[str, set[str]]:
    return _read()[0]


def _cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[tuple[str, ...]] = []
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
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
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(tuple(sorted(comp)))
    return out


PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py" and m != "fuzzptx"}


def package_of(module: str, depth: int) -> str:
    """The package of at most ``depth`` name parts that holds ``module`` (a module of fuzzptx itself,
    such as ``fuzzptx.program``, is its own)."""
    parts = module.split(".")
    for d in range(min(depth, len(parts)), 0, -1):
        if ".".join(parts[:d]) in PACKAGES:
            return ".".join(parts[:d])
    return module


def package_edges(edges: dict[str, set[str]], depth: int) -> dict[str, set[str]]:
    """The import graph between packages: an edge where a module of one imports a module of another
    (a package and the packages inside it are not told apart: ``fuzzptx.reduce`` and its ``passes``)."""
    out: dict[str, set[str]] = defaultdict(set)
    for src, targets in edges.items():
        a = package_of(src, depth)
        for dst in targets:
            b = package_of(dst, depth)
            if a != b and not _matches(a, b) and not _matches(b, a) and "fuzzptx" not in (a, b):
                out[a].add(b)
    return out


def package_cycles(edges: dict[str, set[str]], depth: int) -> list[tuple[str, ...]]:
    """Cycles between packages (``fuzzptx.isa`` <-> ``fuzzptx.ptx``) though no module cycle exists."""
    global MODULES
    graph = package_edges(edges, depth)
    saved = MODULES
    MODULES = {n: Path(n) for n in set(graph) | {t for ts in graph.values() for t in ts}}
    try:
        return _cycles(graph)
    finally:
        MODULES = saved


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(_matches(module, p) for p in prefixes):
            return i
    return TOP


@functools.lru_cache(maxsize=1)
def _violations() -> frozenset[tuple]:
    found: set[tuple] = {("cycle", c) for c in _cycles(_edges())}
    # packages too, at the top level (fuzzptx.isa, fuzzptx.oracles) and one below (fuzzptx.oracles.checker)
    found |= {("package cycle", c) for depth in (2, 3) for c in package_cycles(_edges(), depth)}
    for src, targets in _edges().items():
        for dst in targets:
            if src == "fuzzptx" or dst == "fuzzptx":
                continue  # the top package's __init__ holds only the version
            if layer_of(dst) > layer_of(src):
                found.add(("upward", src, dst))
            a = next((p for p in SIDE_BY_SIDE if _matches(src, p)), None)
            b = next((p for p in SIDE_BY_SIDE if _matches(dst, p)), None)
            if a and b and a != b:
                found.add(("sideways", src, dst))
    return frozenset(found)




def _show(v: tuple) -> str:
    if v[0] == "package cycle":
        return "package import cycle: " + " <-> ".join(v[1])
    if v[0] == "cycle":
        return "import cycle: " + " -> ".join(_cycle_path(v[1]))
    return f"{v[0]} import: {v[1]} (layer {layer_of(v[1])}) imports {v[2]} (layer {layer_of(v[2])})"


def _cycle_path(comp: tuple[str, ...]) -> list[str]:
    """One concrete loop through a strongly connected component, for the message."""
    inside = set(comp)
    path, seen = [comp[0]], {comp[0]: 0}
    while True:
        nxt = sorted(t for t in _edges()[path[-1]] if t in inside)
        step = next((t for t in nxt if t in seen), None) or nxt[0]
        if step in seen:
            return path[seen[step]:] + [step]
        seen[step] = len(path)
        path.append(step)


def test_graph_is_read() -> None:
    assert "fuzzptx.program" in MODULES and "fuzzptx.oracles.reference" in MODULES
    assert "fuzzptx.strategies.descriptors" in MODULES
    assert "fuzzptx.isa.layouts" in _edges()["fuzzptx.strategies.descriptors"]


def test_no_new_violations() -> None:
    new = sorted(_violations() - KNOWN_UNTIL_MERGE)
    assert not new, "\n".join(map(_show, new))


def test_known_violations_still_occur() -> None:
    """A fixed violation leaves KNOWN_UNTIL_MERGE, so the set only shrinks."""
    gone = sorted(KNOWN_UNTIL_MERGE - _violations())
    assert not gone, "no longer occurs, remove from KNOWN_UNTIL_MERGE:\n" + "\n".join(map(repr, gone))


def test_detects_a_cycle_and_an_upward_import() -> None:
    """The checks themselves can fail: a made-up graph with a loop and an upward edge."""
    edges = {"fuzzptx.isa.a": {"fuzzptx.isa.b"}, "fuzzptx.isa.b": {"fuzzptx.isa.a"}}
    global MODULES
    saved = MODULES
    MODULES = {**saved, "fuzzptx.isa.a": Path("a.py"), "fuzzptx.isa.b": Path("b.py")}
    try:
        assert _cycles(edges) == [("fuzzptx.isa.a", "fuzzptx.isa.b")]
    finally:
        MODULES = saved
    assert layer_of("fuzzptx.program") < layer_of("fuzzptx.oracles.reference.interp") < layer_of("fuzzptx.cli")
    assert layer_of("fuzzptx.strategies.programs") == layer_of("fuzzptx.oracles.checker")


def test_function_level_imports() -> None:
    """No module imports fuzzptx inside a function, but for optional heavy dependencies
    (``LAZY_ALLOWED``) and the modules that say why (``LAZY_IMPORTERS``)."""
    found = [f"{MODULES[module].relative_to(ROOT)}:{line}: {module} imports {target} in a function"
             for module, hits in sorted(_read()[1].items()) if module not in LAZY_IMPORTERS
             for line, target in hits if target not in LAZY_ALLOWED]
    assert not found, "\n".join(found)


def test_detects_a_package_cycle() -> None:
    """No module imports itself round, but the packages do: ``fuzzptx.isa`` imported a type of
    ``fuzzptx.ptx.ir``, and ``fuzzptx.ptx.dataflow`` imports ``fuzzptx.isa`` (fixed; this graph
    is the one before)."""
    edges = {"fuzzptx.isa": {"fuzzptx.ptx.ir"}, "fuzzptx.ptx.dataflow": {"fuzzptx.isa"},
             "fuzzptx.engine.run": {"fuzzptx.triage.known"}, "fuzzptx.triage.buckets": {"fuzzptx.engine.matrix"},
             "fuzzptx.reduce": {"fuzzptx.reduce.passes"}, "fuzzptx.reduce.passes.values": {"fuzzptx.reduce.edit"}}
    assert not _cycles(edges)
    assert sorted(package_cycles(edges, 2)) == [("fuzzptx.engine", "fuzzptx.triage"), ("fuzzptx.isa", "fuzzptx.ptx")]


def test_names_in_known_are_modules() -> None:
    for entry in KNOWN_UNTIL_MERGE:
        names = entry[1] if entry[0] in ("cycle", "package cycle") else entry[1:]
        assert all(re.fullmatch(r"[\w.]+", n) for n in names), entry
