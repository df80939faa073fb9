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
    registered,
    registered_ops,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
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


# why: these kernels index their activations as one image ([1, H, W, C]); the graph is
# otherwise free to declare any first axis (edgenn.ir.batch), and the element-wise, dense,
# recurrent and data-movement kernels loop over it or treat it as just another axis
_BATCH_ONE_OPS = frozenset({"Conv2D", "MaxPool2D", "AvgPool2D", "TransposeConv2D",
                            "FusedConvChain", "Resize", "LRN"})


def _check_batch_one(node: Node, graph: Graph, core: Core) -> None:
    """One line instead of a silently wrong result for a declared batch above 1."""
    if node.op not in _BATCH_ONE_OPS or not node.inputs or not node.inputs[0]:
        return
    shape = graph.tensor(node.inputs[0]).shape
    if len(shape) >= 3 and shape[0] != 1:
        raise UnsupportedOperatorError(
            f"{node}: the Cortex-M kernels for {node.op} run one sample (batch 1), but the "
            f"input is declared {list(shape)} on {core.name}; export the model with batch 1 "
            "and give the samples as a batch of invocations")


def select_kernel(node: Node, graph: Graph, core: Core) -> Kernel:
    """The highest-priority kernel matching ``node`` on ``core``; one clear error if none."""
    _check_batch_one(node, graph, core)
    for kernel in kernels_for(node.op):
        if kernel.matches(node, graph, core):
            return kernel
    first = graph.tensor(node.inputs[0]) if node.inputs and node.inputs[0] else None
    dtype = first.dtype.value if first is not None else "?"
    raise UnsupportedOperatorError(
        f"{node}: no Cortex-M kernel for {node.op} with {dtype} input on {core.name}"
    )
