"""Every compile target: imports each backend (which registers itself in
``edgenn.backends.registry``) and looks targets up by name.

Why a module of its own: the registry stays below the backends that import it, so no import
runs in a circle; whoever needs a target by name (``edgenn.api``, the CLI) imports this.
"""

from __future__ import annotations

import edgenn.backends.cortexm.backend  # noqa: F401
import edgenn.backends.host.backend  # noqa: F401
import edgenn.backends.ref.backend  # noqa: F401
import edgenn.backends.vta.backend  # noqa: F401
from edgenn.backends.registry import Backend, registered
from edgenn.errors import EdgennError


def get_backend(name: str) -> Backend:
    backends = registered()
    try:
        return backends[name]
    except KeyError:
        raise EdgennError(f"unknown target {name!r} (available: "
                          f"{', '.join(backend_names())})") from None


def backend_names() -> tuple[str, ...]:
    """The target names, in the order of help texts and lists (``Backend.order``)."""
    backends = registered()
    return tuple(sorted(backends, key=lambda n: (backends[n].order, n)))
