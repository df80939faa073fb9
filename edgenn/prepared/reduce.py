"""The records of the reductions: Mean, ReduceSum, ReduceMax / ReduceMin, ArgMax / ArgMin.

Quantized Mean folds ``1 / count`` into its multiplier as TFLite Micro's
``QuantizedMeanOrSum`` does; ReduceSum rescales the int32 sum by ``s_in / s_out``;
ReduceMax / ReduceMin compare the stored integers and requantize a differently declared
output (``requant``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    type_range,
    wrap_int32,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor
from edgenn.prepared.requant import QUANTIZED, Requant, output_requant


@dataclass(frozen=True)
class ReduceParams:
    """A reduction over ``axes`` (sorted, non-negative) of ``count`` elements each. For a
    quantized Mean / ReduceSum, the sum minus ``in_zp * count`` times ``mult`` / ``shift``
    plus ``out_zp``, clamped to [``act_min``, ``act_max``] (zeros for float32)."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    axes: tuple[int, ...]
    count: int
    dtype: DType
    in_zp: int = 0
    out_zp: int = 0
    mult: int = 0
    shift: int = 0
    act_min: int = 0
    act_max: int = 0
    largest: bool = True  # ReduceMax (False: ReduceMin)
    requant: Requant | None = None

    @property
    def quantized(self) -> bool:
        return self.dtype in QUANTIZED


def requantize_sum(p: ReduceParams, sums: np.ndarray) -> np.ndarray:
    """A quantized Mean's / ReduceSum's output integers from the int64 sums of the stored
    values: ``MultiplyByQuantizedMultiplier(sum - in_zp * count) + out_zp``, clamped (the sum
    wraps in int32 as TFLM's accumulator does)."""
    total = wrap_int32(sums - p.in_zp * p.count)
    y = multiply_by_quantized_multiplier(total, p.mult, p.shift) + p.out_zp
    return np.clip(y, p.act_min, p.act_max)


def prepare_reduce(node: Node, graph: Graph) -> ReduceParams:
    """The record of a Mean, ReduceSum, ReduceMax or ReduceMin node."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    rank = len(x.shape)
    axes = tuple(sorted({int(a) % rank for a in node.attr("axes")}))
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    base = ReduceParams(tuple(x.shape), tuple(y.shape), axes, count, x.dtype)
    if node.op in ("ReduceMax", "ReduceMin"):
        return ReduceParams(base.in_shape, base.out_shape, axes, count, x.dtype,
                            largest=node.op == "ReduceMax", requant=output_requant(node, graph))
    if x.dtype not in QUANTIZED:
        return base
    qi, qo = per_tensor(node, x, "input"), per_tensor(node, y, "output")
    mult, shift = quantize_multiplier(qi.s / qo.s)
    if node.op == "Mean":
        # Fold 1/count into the multiplier as TFLM's QuantizedMeanOrSum does.
        s = min(count.bit_length() - 1, 32, 31 + shift)
        mult, shift = (mult << s) // count, shift - s
        lo, hi = type_range(x.dtype)
    else:
        lo, hi = type_range(y.dtype)
    return ReduceParams(base.in_shape, base.out_shape, axes, count, x.dtype, qi.zp, qo.zp,
                        mult, shift, lo, hi)


@dataclass(frozen=True)
class ArgParams:
    """ArgMax / ArgMin over one axis; ``last`` picks the last extreme index."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    axis: int
    last: bool
    largest: bool


def prepare_arg(node: Node, graph: Graph) -> ArgParams:
    """The record of an ArgMax or ArgMin node."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    return ArgParams(tuple(x.shape), tuple(y.shape), int(node.attr("axis")) % len(x.shape),
                     bool(node.attr("select_last_index", False)), node.op == "ArgMax")
