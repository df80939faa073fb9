"""Every compile target: a literal table target name -> the backend module that registers it
(in ``edgenn.backends.registry``), imported only when that target is asked for.

Why a module of its own: the registry stays below the backends that import it, so no import
runs in a circle; whoever needs a target by name (``edgenn.api``, the CLI) imports this.
Why a table and not an import of every backend: ``edgenn compile --target cortex-m4`` should
not pay for loading the host and VTA backends (and their dependencies) it never uses.
"""

from __future__ import annotations

import importlib

from edgenn.backends.registry import Backend, registered
from edgenn.errors import EdgennError

# the order of help texts and lists (each backend's ``Backend.order`` agrees with it;
# tests/test_lazy_targets.py checks that every module registers exactly its names)
_MODULES: dict[str, str] = {
    "ref": "edgenn.backends.ref.backend",
    "cortex-m4": "edgenn.backends.cortexm.backend",
    "cortex-m7": "edgenn.backends.cortexm.backend",
    "cortex-m0plus": "edgenn.backends.cortexm.backend",
    "vta": "edgenn.backends.vta.backend",
    "host": "edgenn.backends.host.backend",
}


def _load(module: str) -> None:
    # why one literal call per module: the import lint sees each as an edge of this module
    if module == "edgenn.backends.ref.backend":
        importlib.import_module("edgenn.backends.ref.backend")
    elif module == "edgenn.backends.cortexm.backend":
        importlib.import_module("edgenn.backends.cortexm.backend")
    elif module == "edgenn.backends.vta.backend":
        importlib.import_module("edgenn.backends.vta.backend")
    elif module == "edgenn.backends.host.backend":
        importlib.import_module("edgenn.backends.host.backend")
    else:  # pragma: no cover - the table above names only these
        raise AssertionError(module)


def get_backend(name: str) -> Backend:
    module = _MODULES.get(name)
    if module is None:
        raise EdgennError(f"unknown target {name!r} (available: "
                          f"{', '.join(backend_names())})")
    _load(module)
    return registered()[name]


def backend_names() -> tuple[str, ...]:
    """The target names, in the order of help texts and lists, without importing a backend."""
    return tuple(_MODULES)
