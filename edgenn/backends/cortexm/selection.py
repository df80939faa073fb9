"""Which Cortex-M kernel runs a node: the highest-priority registered kernel that matches.

Imports every built-in kernel module (``kernels/``, each registers itself in ``kernel.py``),
so the table is full here; ``kernel.py`` imports none of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import edgenn.backends.cortexm.kernels  # noqa: F401  (each module registers its kernels)
from edgenn.backends.cortexm.kernel import (
    Kernel,
    kernel_types,
    matching_kernel,
    registered,
    registered_ops,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node


def kernels_for(op: str) -> Sequence[Kernel]:
    """Registered kernels of ``op``, highest priority first."""
    return registered(op)


def supported_types(op: str) -> set[DType]:
    """The first-input element types some Cortex-M kernel of ``op`` declares."""
    return {t for kernel in kernels_for(op) for t in kernel_types(kernel)}


def supported_ops() -> dict[str, set[DType]]:
    """Every operator with a Cortex-M kernel, and the element types those kernels take."""
    return {op: supported_types(op) for op in registered_ops()}


def select_kernel(node: Node, graph: Graph, core: Core) -> Kernel:
    """The highest-priority kernel matching ``node`` on ``core``; one clear error if none
    (``kernel.matching_kernel`` over the full table)."""
    return matching_kernel(node, graph, core)
