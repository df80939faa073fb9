"""The import layers of the package: what may import what, and that nothing imports itself back.

    errors, utils, progress, outputs (transactional output files and folders), version
    <  ir, arith, data, memory, analysis, models, cc (the run-time
    host C compiler)  <  frontends, passes, export, oracles, svm (the SVM layer's solver and C
    sources), the tuning records (tune.database, .claims, .codec, .errors, .space,
    .workload), prepared (the layer records the reference and Cortex-M kernels share)
    <  backends (ref, cortexm, host, vta)  <  quantize (calibration runs the
    reference runtime), tune, fusion, skipping, train, evaluate, validate, inspection  <  api
    <  cli

The fuzzing harness drives the CLI: it is a tool above the package (``tools/fuzzing/``), not a
module of it.

Two checks, both over every ``edgenn`` import of every module, at module level or inside a
function alike (a function-local import does not make a dependency go away); imports under
``if TYPE_CHECKING:`` are annotations only and do not count:

- :func:`upward`: a module imports only from its own layer or below;
- :func:`cycles`: the module graph has no cycle (Tarjan's strongly connected components), so
  a registry never imports what registers into it and a package's ``__init__`` never imports
  a child that imports the package back.

The edges of the module graph: ``import edgenn.a.b`` is an edge to ``edgenn.a.b``; ``from
edgenn.a import b`` is an edge to ``edgenn.a.b`` when ``b`` is a module, otherwise to the
package module ``edgenn.a`` (its ``__init__``, whose names are read). ``importlib.import_module``
(or ``__import__``) of a literal name is an edge to it; of ``f"{__name__}.{...}"`` or
``f"edgenn.a.{...}"`` (the "import every module of this package" loops of the registries), an
edge to every direct child of that package. Names computed from data (``tune.database``
decoding a class name) are not edges. The ``__init__`` of the parents that Python runs first
(``import edgenn.a.b.c`` runs ``edgenn.a`` and ``edgenn.a.b``) is not an edge: the importer
reads none of their names, and Python initialises them before the child whatever they import.
Counted, they would put every package whose ``__init__`` re-exports its children in one cycle
with them (most of them here) and, through ``edgenn/__init__.py`` re-exporting the API, every
module in one. So a package's ``__init__`` may be a facade above its children as long as no
child imports the package's own names (that is an edge): the shared piece then lives in a
child module that both import (``edgenn.train.torch_dep``).

``tests/test_lint.py`` runs both checks: 0 upward imports and 0 cycles, with no allow-list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "utils", "progress", "outputs", "version", "phases"),
    ("ir", "arith", "data", "datasets", "memory", "analysis", "models", "cc"),
    ("frontends", "passes", "export", "oracles", "svm", "tune_records", "prepared"),
    ("backends",),
    ("quantize", "tune", "fusion", "skipping", "train", "evaluate", "validate", "inspection"),
    ("api", "edgenn"),
    ("cli",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


@dataclass(frozen=True)
class Import:
    path: str  # of the importing file, relative to the package's parent folder
    line: int
    importer: str  # dotted module name of the importing module
    imported: str  # dotted module name of the imported module
    local: bool  # inside a function

    @property
    def source(self) -> str:
        """The layer unit of the importing module."""
        return unit_of(self.importer)

    @property
    def target(self) -> str:
        """The layer unit of the imported module."""
        return unit_of(self.imported)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} -> {self.imported}"


# why a unit of their own: the record store (what the host backend reads to pick a tuned
# kernel) sits below the backends; the search that fills it (tune.session, ...) above them
TUNE_RECORDS = frozenset({"database", "claims", "codec", "errors", "space", "workload"})


def unit_of(module: str) -> str:
    """The layer unit of a dotted module name: ``edgenn.backends.ref.x`` -> ``backends``."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "tune" and parts[2] in TUNE_RECORDS:
        return "tune_records"
    return parts[1] if len(parts) > 1 else "edgenn"


def _type_checking_ids(tree: ast.Module) -> set[int]:
    """The nodes under the body of an ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            ids |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return ids


def _module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under ``root`` (a package's is its ``__init__``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        names[".".join(p for p in rel.parts if p != "__init__")] = path
    return names


def _children(modules: Iterable[str], package: str) -> list[str]:
    depth = package.count(".") + 1
    return [m for m in modules if m.startswith(package + ".") and m.count(".") == depth]


def _dynamic(call: ast.Call, module: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The modules an ``importlib.import_module(...)`` call may import (see the docstring)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__"):
        return []
    if not call.args:
        return []
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if not isinstance(arg, ast.JoinedStr) or not arg.values:
        return []
    first = arg.values[0]
    if (isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name)
            and first.value.id == "__name__" and len(arg.values) > 1
            and isinstance(arg.values[1], ast.Constant) and arg.values[1].value == "."):
        package = module if is_package else module.rpartition(".")[0]
        return _children(modules, package)
    if isinstance(first, ast.Constant) and isinstance(first.value, str) \
            and first.value.endswith("."):
        return _children(modules, first.value[:-1])
    return []


def _relative_base(module: str, is_package: bool, level: int) -> str:
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return package


def imports(root: Path) -> list[Import]:
    """Every ``edgenn`` import of every module under ``root`` (the package folder)."""
    modules = _module_names(root)
    found = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_ids(tree)
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
        local_ids = {id(n) for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(p for p in (_relative_base(module, is_package, node.level),
                                                node.module) if p)
                # ``from edgenn.tune import database`` imports the module edgenn.tune.database
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                         for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Call):
                names = _dynamic(node, module, is_package, modules)
            for name in dict.fromkeys(names):
                if name == "edgenn" or name.startswith("edgenn."):
                    found.append(Import(str(path.relative_to(root.parent)), node.lineno,
                                        module, name, id(node) in local_ids))
    return sorted(found, key=lambda i: (i.path, i.line, i.imported))


def upward(root: Path) -> list[Import]:
    """Imports whose target sits in a higher layer than their source."""
    out = []
    for imp in imports(root):
        if imp.source not in RANK or imp.target not in RANK:
            raise ValueError(f"{imp.path}:{imp.line}: unit {imp.source!r} or {imp.target!r} "
                             "has no layer in tests/import_layers.py")
        if RANK[imp.target] > RANK[imp.source]:
            out.append(imp)
    return out


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of a directed graph (iterative: no recursion
    limit), each a sorted list; components are in reverse topological order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
    return out


def cycles(root: Path) -> list[list[Import]]:
    """The import cycles: per strongly connected component of more than one module (or a
    module importing itself), the imports between its members, each with its file:line."""
    found = imports(root)
    edges: dict[str, set[str]] = {}
    for imp in found:
        edges.setdefault(imp.importer, set()).add(imp.imported)
        edges.setdefault(imp.imported, set())
    out = []
    for component in strongly_connected(edges):
        members = set(component)
        inside = [i for i in found if i.importer in members and i.imported in members]
        if len(component) > 1 or inside:
            out.append(sorted(inside, key=lambda i: (i.importer, i.line, i.imported)))
    return out


def shortest_cycle(cycle: list[Import]) -> list[Import]:
    """The shortest closed path of imports in a component (what to read first)."""
    out: dict[str, list[Import]] = {}
    for imp in cycle:
        out.setdefault(imp.importer, []).append(imp)
    best: list[Import] = []
    for start in sorted(out):
        paths: dict[str, list[Import]] = {start: []}
        frontier = [start]
        while frontier and not (best and len(paths[frontier[0]]) >= len(best)):
            nxt = []
            for node in frontier:
                for imp in out.get(node, ()):
                    path = [*paths[node], imp]
                    if imp.imported == start:
                        if not best or len(path) < len(best):
                            best = path
                    elif imp.imported not in paths:
                        paths[imp.imported] = path
                        nxt.append(imp.imported)
            frontier = nxt
    return best


def describe(cycle: list[Import]) -> str:
    """One component as text: its modules, its shortest cycle, then every import inside it."""
    members = sorted({i.importer for i in cycle} | {i.imported for i in cycle})
    local = lambda i: " (in a function)" if i.local else ""  # noqa: E731
    return (f"cycle of {len(members)} modules ({', '.join(members)}); shortest:\n"
            + "\n".join(f"  {i}{local(i)}" for i in shortest_cycle(cycle))
            + f"\n  all {len(cycle)} imports inside it:\n"
            + "\n".join(f"    {i}{local(i)}" for i in cycle))
