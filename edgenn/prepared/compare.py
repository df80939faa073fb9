"""The record of the comparisons (Equal, NotEqual, Less, ...), TFLite Micro's
``ComparisonWithScaling``: quantized int8 operands are compared as ``(q - zp) * 256`` rescaled
by the multiplier of each one's own scale; other types compare the stored values."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.arith.fixed_point import quantize_multiplier
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor


@dataclass(frozen=True)
class OperandScale:
    """One compared operand's rescale: ``mbqm((q - zp) * 256, mult, shift)``."""

    zp: int
    mult: int
    shift: int


@dataclass(frozen=True)
class CompareParams:
    """``scaled``: the two operands' rescales for quantized int8, else empty."""

    scaled: tuple[OperandScale, ...]


def prepare_compare(node: Node, graph: Graph) -> CompareParams:
    """The record of a comparison node."""
    a, b = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    if a.dtype is not DType.INT8 or a.quant is None or b.quant is None:
        return CompareParams(())
    scaled = []
    for t, what in ((a, "first input"), (b, "second input")):
        q = per_tensor(node, t, what)
        scaled.append(OperandScale(q.zp, *quantize_multiplier(q.s)))
    return CompareParams(tuple(scaled))
