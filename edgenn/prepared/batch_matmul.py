"""The record of BatchMatMul (TFLite BATCH_MATMUL, ONNX MatMul), as TFLite Micro prepares it:
``adj_x`` / ``adj_y`` and, quantized, the multiplier of ``a_scale * b_scale / out_scale`` (in
double), the zero points and the output type's range. The int16 kernel scales its int64 sums
with TFLite's 64-bit ``MultiplyByQuantizedMultiplier`` (``edgenn.arith.fixed_point_s16``)."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.arith.fixed_point import quantize_multiplier, type_range
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor


@dataclass(frozen=True)
class BatchMatMulParams:
    """The operands' transposes and the quantized constants (zeros for float32)."""

    adj_x: bool
    adj_y: bool
    dtype: DType
    a_zp: int = 0
    b_zp: int = 0
    out_zp: int = 0
    mult: int = 0
    shift: int = 0
    act_min: int = 0
    act_max: int = 0


def prepare_batch_matmul(node: Node, graph: Graph) -> BatchMatMulParams:
    """The record of a BatchMatMul node."""
    a, b = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    if a.is_const and b.is_const:
        raise UnsupportedOperatorError(f"{node}: both operands are constants "
                                       "(fold the product before running)")
    adj = (bool(node.attr("adj_x", False)), bool(node.attr("adj_y", False)))
    if a.dtype is DType.FLOAT32:
        return BatchMatMulParams(*adj, a.dtype)
    qa, qb = per_tensor(node, a, "lhs"), per_tensor(node, b, "rhs")
    qo = per_tensor(node, graph.tensor(node.outputs[0]), "output")
    mult, shift = quantize_multiplier(qa.s * qb.s / qo.s)
    return BatchMatMulParams(*adj, a.dtype, qa.zp, qb.zp, qo.zp, mult, shift,
                             *type_range(a.dtype))
