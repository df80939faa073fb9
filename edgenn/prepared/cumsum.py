"""The record of CumSum (running sum along an axis, exclusive / reverse), as TFLite Micro's
int8 CUMSUM prepares it (``reference_ops::CumSum``, built like its ADD): every input is
offset by ``-in_zp``, shifted left by 20 and halved by the multiplier of 0.5
(``QuantizeMultiplierSmallerThanOneExp``: ``in_mult`` / ``in_shift``), summed in int32 from
``start`` (the scaled input offset ``(-in_zp << 20) * 0.5``, where TFLM starts it), and each
running sum is scaled by ``2 * in_scale / (2**20 * out_scale)`` (``out_mult`` / ``out_shift``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    wrap_int32,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor

LEFT_SHIFT = 20  # TFLM's kCumSumIntegerShift


def smaller_than_one(node: Node, real: float, what: str) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplierSmallerThanOneExp`` (the shift is never positive)."""
    mult, shift = quantize_multiplier(real)
    if shift > 0:
        raise UnsupportedOperatorError(f"{node}: the {what} rescale {real:.6g} is not below 1 "
                                       "(TFLite Micro rejects it)")
    return mult, shift


def scale_in(v: npt.ArrayLike, mult: int, shift: int) -> np.ndarray:
    """An input's ``(v << 20)`` times the multiplier of 0.5, in int32 as TFLM computes it."""
    shifted = wrap_int32(np.asarray(v, np.int64) << LEFT_SHIFT)
    return np.asarray(multiply_by_quantized_multiplier(shifted, mult, shift))


@dataclass(frozen=True)
class CumSumParams:
    """``axis`` (non-negative, of the declared shape), the flags and the int8 constants (zero
    for float32)."""

    shape: tuple[int, ...]
    axis: int
    exclusive: bool
    reverse: bool
    dtype: DType
    in_zp: int = 0
    out_zp: int = 0
    in_mult: int = 0
    in_shift: int = 0
    out_mult: int = 0
    out_shift: int = 0
    start: int = 0

    def scale_in(self, v: npt.ArrayLike) -> np.ndarray:
        """``(v << 20) * 0.5`` as TFLM computes it in int32."""
        return scale_in(v, self.in_mult, self.in_shift)


def prepare_cumsum(node: Node, graph: Graph) -> CumSumParams:
    """The record of a CumSum node."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    shape = tuple(x.shape)
    base = CumSumParams(shape, int(node.attr("axis")) % len(shape),
                        bool(node.attr("exclusive", False)), bool(node.attr("reverse", False)),
                        x.dtype)
    if x.dtype is DType.FLOAT32:
        return base
    qi, qo = per_tensor(node, x, "input"), per_tensor(node, y, "output")
    twice_max = 2 * qi.s
    in_mult, in_shift = smaller_than_one(node, qi.s / twice_max, "input")
    out_mult, out_shift = smaller_than_one(node, twice_max / ((1 << LEFT_SHIFT) * qo.s),
                                           "output")
    start = int(scale_in(np.int64(-qi.zp), in_mult, in_shift))
    return CumSumParams(shape, base.axis, base.exclusive, base.reverse, x.dtype, qi.zp, qo.zp,
                        in_mult, in_shift, out_mult, out_shift, start)
