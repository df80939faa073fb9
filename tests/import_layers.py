"""The import layers of the package: what may import what.

    errors, utils, progress, outputs (transactional output files and folders), version  <
    ir, arith, data, memory, analysis, models, cc (the run-time host C compiler)  <
    frontends, passes, export, oracles, svm (the SVM layer's solver and C sources), the tuning
    records (tune.database, .claims, .codec, .errors, .space, .workload)  <  backends (ref,
    cortexm, host, vta)  <  quantize (calibration runs the reference runtime), tune, fusion,
    skipping, train, evaluate, validate, inspection  <  api  <  cli  <  fuzz

A module imports only from its own layer or below, at module level or inside a function alike
(a function-local import does not make an upward dependency go away). Imports under
``if TYPE_CHECKING:`` are annotations only and do not count. ``tests/test_lint.py`` runs the
check; ``KNOWN_UPWARD`` lists the upward imports that remain to be removed (it may only shrink).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "utils", "progress", "outputs", "version"),
    ("ir", "arith", "data", "datasets", "memory", "analysis", "models", "cc"),
    ("frontends", "passes", "export", "oracles", "svm", "tune_records"),
    ("backends",),
    ("quantize", "tune", "fusion", "skipping", "train", "evaluate", "validate", "inspection"),
    ("api", "edgenn"),
    ("cli",),
    ("fuzz",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}

# (importing unit, imported unit): upward imports still to be removed (none left).
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Import:
    path: str
    line: int
    source: str  # unit of the importing module
    target: str  # unit of the imported module
    local: bool  # inside a function


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
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids |= {id(n) for n in ast.walk(node)}
    return ids


def _is_module(root: Path, dotted: str) -> bool:
    path = root.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(root: Path) -> list[Import]:
    """Every ``edgenn`` import of every module under ``root`` (the package folder)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        module = ".".join(p for p in rel.parts if p != "__init__")
        tree = ast.parse(path.read_text())
        skip = _type_checking_ids(tree)
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        local_ids = {id(n) for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # ``from edgenn.tune import database`` imports the module edgenn.tune.database
                names = [f"{node.module}.{a.name}" if _is_module(root, f"{node.module}.{a.name}")
                         else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name == "edgenn" or name.startswith("edgenn."):
                    found.append(Import(str(path.relative_to(root.parent)), node.lineno,
                                        unit_of(module), unit_of(name), id(node) in local_ids))
    return found


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
