"""The build / run / train layer interface of the reference runtime.

As in TFLite Micro's prepare/eval split and NNoM's layer struct: ``build`` runs once when the
model is compiled and computes everything that does not depend on the input values
(quantized multipliers and shifts, padding, lookup tables, scratch sizes); ``run`` is only the
arithmetic; ``train`` exists only for layers that learn on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar

import numpy as np

from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node, Tensor


class Layer:
    """Base class. Subclasses set ``op`` and ``dtypes`` and are registered with ``@register``.

    ``self.inputs`` / ``self.outputs`` hold the IR tensors (shapes with batch 1, quantization,
    constant data); ``run`` receives only the *non-constant* inputs' arrays, batch first (any
    batch size), and returns one array per output.
    """

    op: ClassVar[str]
    trainable: ClassVar[bool] = False  # True for layers whose ``train`` learns on the device
    scratch_bytes: int = 0

    def __init__(self, node: Node, graph: Graph) -> None:
        self.node = node
        self.graph = graph  # the records of edgenn.prepared are computed from it
        self.inputs: list[Tensor | None] = graph.node_inputs(node)
        self.outputs: list[Tensor] = graph.node_outputs(node)
        # TFLite's float layers clamp to +-FLT_MAX without an activation (``float_range``)
        self.finite_float_clamp = graph.finite_float_clamp
        self.build()

    def build(self) -> None:
        """Compute shapes, constants and scratch sizes once (override)."""

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:  # pragma: no cover - interface
        raise NotImplementedError

    def train(self, *xs: np.ndarray, labels: np.ndarray) -> Any:
        """Learn from the non-constant inputs ``xs`` and their ``labels`` (trainable layers)."""
        raise UnsupportedOperatorError(f"{self.node}: this layer does not learn on the device")

    # helpers for subclasses ----------------------------------------------------------------
    def const(self, index: int) -> np.ndarray | None:
        """Constant data of input ``index`` or None when the input is omitted."""
        if index >= len(self.inputs) or self.inputs[index] is None:
            return None
        t = self.inputs[index]
        assert t is not None
        if t.data is None:
            raise UnsupportedOperatorError(
                f"{self.node}: input {t.name!r} must be a constant for this operator"
            )
        return t.data


def ieee_arithmetic(outputs: Sequence[Tensor]) -> AbstractContextManager[object]:
    """Around ``layer.run`` (given the layer's ``outputs``): for a float layer, numpy quiet
    about overflow, invalid operations and division by zero.

    why: float layers follow IEEE arithmetic, as TFLite Micro and onnxruntime do: a sum beyond
    float32's range is inf, ``x * inf`` with x = 0 is NaN, and a model's +-inf constants take
    part in the sums; that is the output, not a warning on the user's terminal. Integer
    layers keep numpy's checks.
    """
    if any(t.dtype is DType.FLOAT32 for t in outputs):
        return np.errstate(over="ignore", invalid="ignore", divide="ignore")
    return nullcontext()


_REGISTRY: dict[tuple[str, DType], type[Layer]] = {}


def register(op: str, *dtypes: DType) -> Callable[[type[Layer]], type[Layer]]:
    """Register a Layer class for ``op`` when the node's first input has one of ``dtypes``."""

    def deco(cls: type[Layer]) -> type[Layer]:
        cls.op = op
        for dt in dtypes:
            _REGISTRY[(op, dt)] = cls
        return cls

    return deco


def layer_class(node: Node, graph: Graph) -> type[Layer]:
    first = graph.tensor(node.inputs[0]) if node.inputs and node.inputs[0] else None
    dtype = first.dtype if first is not None else DType.FLOAT32
    cls = _REGISTRY.get((node.op, dtype))
    if cls is None:
        raise UnsupportedOperatorError(
            f"node {node.name!r}: operator {node.op!r} is not supported for {dtype.value} "
            "by the reference runtime"
        )
    return cls


def registered() -> list[tuple[str, DType]]:
    return sorted(_REGISTRY, key=lambda k: (k[0], k[1].value))
