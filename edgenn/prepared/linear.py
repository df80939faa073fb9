"""The int8 part every summing layer shares (Conv2D, depthwise, TransposeConv2D,
FullyConnected), as TFLite Micro prepares it: weights minus their zero points, the int32 bias,
the input zero point folded into it (``edgenn.arith.zero_point``: written once, here), the
per-channel requantization and the fused activation's clamp in the output's quantization."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from edgenn.arith.fixed_point import activation_range_quantized
from edgenn.arith.fixed_point import int32_array as i32
from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import activation_of, const_data, int_bias, per_tensor, quant_of


@dataclass(frozen=True)
class Int8Linear:
    """``w`` int8 [Cout, ...] with weight zero points removed; ``bias`` the int32 bias (zeros
    if absent); ``bias_folded = bias - in_zp * sum(w[c])`` (int32 wrap), valid where every
    input the sum reads lies in the tensor; ``mult`` / ``shift`` int32 per output channel."""

    in_zp: int
    out_zp: int
    act_min: int
    act_max: int
    w: np.ndarray
    bias: np.ndarray
    bias_folded: np.ndarray
    mult: np.ndarray
    shift: np.ndarray


def int8_weights(node: Node, graph: Graph, index: int = 1) -> np.ndarray:
    """Constant weights minus their zero points (along axis 0) as int8 (zero points are 0 for
    TFLite's int8 weights), or one error when they do not fit."""
    w = graph.tensor(node.inputs[index])
    data = const_data(node, w)
    assert data is not None
    if data.dtype != np.int8:
        raise UnsupportedOperatorError(f"{node}: int8 {node.op} needs int8 weights")
    wq = quant_of(node, w, "weight")
    v = data.astype(np.int64) - wq.zero_point.reshape((-1,) + (1,) * (data.ndim - 1))
    if v.min(initial=0) < -128 or v.max(initial=0) > 127:
        raise UnsupportedOperatorError(f"{node}: weight zero points push weights out of int8")
    return v.astype(np.int8)


def int8_linear(node: Node, graph: Graph, mult: Any, shift: Any) -> dict[str, Any]:
    """The fields of ``Int8Linear`` for ``node`` (int8 input, int8 weights in input 1) with
    its multipliers (one error for other element types)."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    if x.dtype is not DType.INT8:
        raise UnsupportedOperatorError(f"{node}: the int8 {node.op} record needs int8 input, "
                                       f"got {x.dtype.value}")
    w = int8_weights(node, graph)
    in_zp = per_tensor(node, x, "input").zp
    oq = per_tensor(node, y, "output")
    lo, hi = activation_range_quantized(activation_of(node), oq)
    bias_t = graph.tensor(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    co = (w.shape[0],)
    bias = int_bias(node, const_data(node, bias_t), co[0])
    return {"in_zp": in_zp, "out_zp": oq.zp, "act_min": lo, "act_max": hi, "w": w,
            "bias": i32(bias), "bias_folded": i32(fold_input_zero_point(bias, w, in_zp)),
            "mult": np.broadcast_to(np.asarray(mult, np.int64), co).astype(np.int32),
            "shift": np.broadcast_to(np.asarray(shift, np.int64), co).astype(np.int32)}
