"""The record of Relu, Relu6 and Clip on float32, int8 and int16, as TFLite Micro's prepare.

int8 (``ReluQuantized`` / ``Relu6Quantized``): requantize ``x - in_zp`` by ``s_in / s_out``
and clamp to the bounds quantized in the output, or, when input and output share their
quantization, only clamp (``requant`` False). int16: Relu requantizes and clamps at q(0);
Relu6 clamps in the input's quantization (TFLM copies the values, the output's parameters are
not read); Clip (no TFLM kernel) requantizes and clamps to its quantized bounds. float32:
``act_min`` / ``act_max`` are the real bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from edgenn.arith.fixed_point import (
    activation_range_float,
    quantize_multiplier,
    quantize_scalar,
    type_range,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Activation, DType, Graph, Node
from edgenn.prepared.quant import per_tensor


@dataclass(frozen=True)
class ClampParams:
    """``act_min`` / ``act_max``: integers in the output's quantization (floats for float32);
    ``requant``: whether ``x - in_zp`` is first rescaled by ``mult`` / ``shift``."""

    dtype: DType
    act_min: int | float
    act_max: int | float
    requant: bool = False
    in_zp: int = 0
    out_zp: int = 0
    mult: int = 0
    shift: int = 0


def real_bounds(node: Node) -> tuple[float, float]:
    """The real interval a Relu, Relu6 or Clip node clamps to (+-inf where open)."""
    if node.op == "Relu":
        return activation_range_float(Activation.RELU)
    if node.op == "Relu6":
        return activation_range_float(Activation.RELU6)
    lo, hi = node.attr("min"), node.attr("max")
    return (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))


def prepare_clamp(node: Node, graph: Graph) -> ClampParams:
    """The record of a Relu, Relu6 or Clip node."""
    lo, hi = real_bounds(node)
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    if y.dtype is DType.FLOAT32:
        return ClampParams(y.dtype, lo, hi)
    qmin, qmax = type_range(y.dtype)
    qi = per_tensor(node, x, "input")
    if y.dtype is DType.INT16 and node.op == "Relu6":
        # why the input's parameters only: TFLM's Relu6 clamps the raw values to [q(0), q(6)]
        # in the input's quantization and copies them (the output's are not read)
        return ClampParams(y.dtype, qi.zp, min(qmax, max(qmin, quantize_scalar(6.0, qi.s,
                                                                                qi.zp))))
    qo = per_tensor(node, y, "output")
    if y.dtype is DType.INT16 and node.op == "Relu" and (qi.zp != 0 or qo.zp != 0):
        raise UnsupportedOperatorError(
            f"{node}: int16 {node.op} needs zero points 0, got {[qi.zp, qo.zp]}")
    m, sh = quantize_multiplier(qi.s / qo.s)
    q_lo = qmin if lo == -math.inf else max(qmin, quantize_scalar(lo, qo.s, qo.zp))
    q_hi = qmax if hi == math.inf else min(qmax, quantize_scalar(hi, qo.s, qo.zp))
    same = y.dtype is DType.INT8 and qi == qo
    return ClampParams(y.dtype, q_lo, q_hi, not same, qi.zp, qo.zp, m, sh)
