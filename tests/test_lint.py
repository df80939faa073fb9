"""The codebase stays ruff and mypy clean (the house style is part of the product)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed (make test installs it)")
    return found


def test_ruff_clean() -> None:
    proc = subprocess.run([_tool("ruff"), "check", "edgenn", "tests", "benchmarks", "tools"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean() -> None:
    # the fuzzing harness left the package (a tool above the CLI) but stays type-checked
    proc = subprocess.run([_tool("mypy"), "--explicit-package-bases", "edgenn", "tools/fuzzing"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_imports_follow_the_layers() -> None:
    """No module imports from a higher layer (tests/import_layers.py), at module level or in a
    function; there is no allow-list."""
    from tests.import_layers import upward

    found = [str(i) for i in upward(ROOT / "edgenn")]
    assert not found, "upward imports:\n" + "\n".join(found)


def test_no_import_cycles() -> None:
    """The module graph of the package has no cycle, registrations and function-local imports
    included (tests/import_layers.py says what an edge is); there is no allow-list."""
    from tests.import_layers import cycles, describe

    found = cycles(ROOT / "edgenn")
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(map(describe, found))


def _package(root: Path, files: dict[str, str]) -> Path:
    """A synthetic ``edgenn`` package under ``root`` (every folder gets an ``__init__``)."""
    for name, text in files.items():
        path = root / "edgenn" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for folder in [root / "edgenn", *(root / "edgenn").rglob("*")]:
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("")
    return root / "edgenn"


def test_cycle_check_finds_registration_and_dynamic_cycles(tmp_path: Path) -> None:
    """The checker itself, on a package it must flag: a registry importing its registrant in
    a function, a "load every module here" loop, a child importing its package's names.
    Annotation-only imports and the implicit run of a parent's ``__init__`` are no edges."""
    from tests.import_layers import cycles, describe

    root = _package(tmp_path, {
        "ir/registry.py": """
            def load():
                import edgenn.ir.plugin
            """,
        "ir/plugin.py": """
            from edgenn.ir import typed
            from edgenn.ir.registry import load
            """,
        "ir/typed.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from edgenn.ir.plugin import load
            """,
        "ir/table.py": """
            def full():
                from edgenn.ir import ops
            """,
        "ir/ops/__init__.py": """
            import importlib, pkgutil
            for _mod in pkgutil.iter_modules(__path__):
                importlib.import_module(f"{__name__}.{_mod.name}")
            """,
        "ir/ops/add.py": "from edgenn.ir.table import full\n",
        "ir/ops/leaf.py": "X = 1\n",
        "data/__init__.py": "from edgenn.data.reader import read\n",
        "data/reader.py": """
            from edgenn.data.format import FORMAT
            def read():
                from edgenn.data import facade_name
            """,
        "data/format.py": "FORMAT = 1\n",  # its parent's __init__ runs first: no edge
    })
    found = cycles(root)
    members = sorted(sorted({i.importer for i in c} | {i.imported for i in c}) for c in found)
    assert members == [
        ["edgenn.data", "edgenn.data.reader"],
        ["edgenn.ir.ops", "edgenn.ir.ops.add", "edgenn.ir.table"],
        ["edgenn.ir.plugin", "edgenn.ir.registry"],
    ], "\n".join(map(describe, found))
    registry = next(c for c in found if any(i.importer == "edgenn.ir.registry" for i in c))
    assert [(i.path, i.line, i.local) for i in registry] == [
        ("edgenn/ir/plugin.py", 3, False), ("edgenn/ir/registry.py", 3, True)]
    assert "edgenn/ir/registry.py:3: edgenn.ir.registry -> edgenn.ir.plugin" in describe(registry)


def test_upward_check_counts_function_local_imports(tmp_path: Path) -> None:
    """The checker itself: an import from a higher layer inside a function (or by
    ``__import__``) is reported, one under ``if TYPE_CHECKING:`` is not."""
    from tests.import_layers import upward

    root = _package(tmp_path, {
        "errors.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from edgenn.api import compile_model
            def hint():
                from edgenn.cli.main import main
            if not TYPE_CHECKING:
                __import__("edgenn.api")
            """,
        "api.py": "compile_model = None\n",
        "cli/main.py": "from edgenn.api import compile_model\n",
    })
    assert [str(i) for i in upward(root)] == [
        "edgenn/errors.py:6: edgenn.errors -> edgenn.cli.main",
        "edgenn/errors.py:8: edgenn.errors -> edgenn.api"]


# the reference runtime's layer modules: a backend outside ``backends/ref`` takes a layer's
# constants from its record (``edgenn.prepared``), never from these modules or their objects
REF_LAYERS = "edgenn.backends.ref.kernels"


def _reference_layer_uses(package: Path) -> list[str]:
    """``path:line: what`` for each place under ``package/backends`` (but ``backends/ref``)
    that imports a reference layer module (statement, function-local or by a literal module
    name) or names ``ref_layer``."""
    found: list[tuple[str, int, str]] = []
    for path in sorted((package / "backends").rglob("*.py")):
        if (package / "backends" / "ref") in path.parents:
            continue
        rel = path.relative_to(package.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = None
            if isinstance(node, ast.Import):
                hits = [a.name for a in node.names if a.name.startswith(REF_LAYERS)]
                what = f"imports {hits[0]}" if hits else None
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                names = [a.name for a in node.names]
                if module.startswith(REF_LAYERS) or (module == "edgenn.backends.ref"
                                                     and "kernels" in names):
                    what = f"imports from {module}"
                elif "ref_layer" in names:
                    what = "imports ref_layer"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith(REF_LAYERS):
                what = f"names the module {node.value}"
            elif isinstance(node, ast.Name) and node.id == "ref_layer" \
                    or isinstance(node, ast.Attribute) and node.attr == "ref_layer" \
                    or isinstance(node, ast.FunctionDef) and node.name == "ref_layer":
                what = "uses ref_layer"
            if what:
                found.append((str(rel), node.lineno, what))
    return [f"{path}:{line}: {what}" for path, line, what in sorted(found)]


def test_no_backend_reads_a_reference_layer() -> None:
    """Kernel generators (Cortex-M, host, VTA) take a layer's constants from its typed record
    (``edgenn/prepared/``, which the reference layers take too), not from reference layer
    objects: no import of ``edgenn.backends.ref.kernels`` outside ``backends/ref`` and no
    ``ref_layer``; there is no allow-list."""
    found = _reference_layer_uses(ROOT / "edgenn")
    assert not found, "reference layer uses:\n" + "\n".join(found)


def test_reference_layer_check_finds_every_form(tmp_path: Path) -> None:
    """The checker itself: module and function-local imports, a literal module name and a
    ``ref_layer`` call are reported; the reference runtime's own modules, its ``layer`` base
    module and the records are not."""
    root = _package(tmp_path, {
        "backends/cortexm/kernels/a.py": """
            from edgenn.backends.ref.kernels.conv import Conv2D
            from edgenn.prepared.conv import prepare_conv
            """,
        "backends/cortexm/kernels/b.py": """
            import importlib
            def f(node, graph):
                import edgenn.backends.ref.kernels.pooling
                importlib.import_module("edgenn.backends.ref.kernels.softmax")
                return ref_layer(node, graph)
            """,
        "backends/vta/c.py": """
            from edgenn.backends.ref import kernels
            from edgenn.backends.ref.layer import Layer
            """,
        "backends/ref/kernels/conv.py": "from edgenn.backends.ref.kernels.common import X\n",
    })
    assert _reference_layer_uses(root) == [
        "edgenn/backends/cortexm/kernels/a.py:2: imports from edgenn.backends.ref.kernels.conv",
        "edgenn/backends/cortexm/kernels/b.py:4: imports edgenn.backends.ref.kernels.pooling",
        "edgenn/backends/cortexm/kernels/b.py:5: names the module "
        "edgenn.backends.ref.kernels.softmax",
        "edgenn/backends/cortexm/kernels/b.py:6: uses ref_layer",
        "edgenn/backends/vta/c.py:2: imports from edgenn.backends.ref"]
