"""L2Norm over the last axis, bit-exact with TFLite Micro's L2_NORMALIZATION.

float32: ``x / max(sqrt(sum(x * x)), epsilon)``. int8 (``reference_integer_ops::
L2Normalization``): the int32 sum of squares of ``x - input_zp``, its inverse square root as
a quantized multiplier (``GetInvSqrtQuantizedMultiplierExp``, a gemmlowp Newton-Raphson
iteration), then ``MultiplyByQuantizedMultiplier(x - input_zp, inv, shift + 7)`` clamped to
int8. The output is in units of 1/128 with zero point 0 whatever the output tensor declares,
so edgenn requires exactly that quantization of the output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    INT32_MAX,
    count_leading_zeros32,
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap_int32,
)
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.l2norm import prepare_l2norm

OUTPUT_SCALE_BITS = 7  # the int8 output is in units of 2**-7
REVERSE_SHIFT = -1  # TFLite's kReverseShift
_HALF_THREE = (1 << 28) + (1 << 27)  # 1.5 with 3 integer bits
_HALF_SQRT_2 = 1518500250  # sqrt(2) / 2 with 0 integer bits


def inv_sqrt_multiplier(acc: Any) -> tuple[Any, Any]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp(acc, kReverseShift)`` on an int64 array of
    non-negative int32 values: (multiplier, left shift) of ``1 / sqrt(acc)``."""
    x = np.asarray(acc, dtype=np.int64)
    shift = np.full(x.shape, 11, dtype=np.int64)
    for _ in range(2):  # why twice: int32 input / 4 twice is below 2**29
        big = x >= (1 << 29)
        x = np.where(big, x // 4, x)
        shift += big
    # the input is normalised to [2**27, 2**29) by an even left shift
    pairs = (count_leading_zeros32(np.maximum(x, 2)) - 1) // 2 - 1
    shift -= pairs
    x = x << (2 * pairs)
    half_input = rounding_divide_by_pot(x >> 1, 1)
    y = np.full(x.shape, 1 << 28, dtype=np.int64)  # 1.0 with 3 integer bits
    srdhm = saturating_rounding_doubling_high_mul
    for _ in range(5):  # Newton-Raphson for 1 / sqrt, as gemmlowp's fixed-point code
        y3 = saturating_rounding_multiply_by_pot(srdhm(srdhm(y, y), y), 6)
        diff = wrap_int32(srdhm(_HALF_THREE, y) - srdhm(half_input, y3))
        y = saturating_rounding_multiply_by_pot(diff, 3)
    inv = srdhm(y, _HALF_SQRT_2)
    negative = shift < 0
    inv = np.where(negative, wrap_int32(inv << np.maximum(-shift, 0)), inv)
    shift = np.where(negative, 0, shift)
    small = np.asarray(acc) <= 1  # TFLM's special case for 0 and 1
    return np.where(small, INT32_MAX, inv), np.where(small, 0, shift * REVERSE_SHIFT)


@register("L2Norm", DType.FLOAT32, DType.INT8)
class L2Norm(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.float = x.dtype is DType.FLOAT32
        self.eps = np.float32(self.node.attr("epsilon", 1e-6))
        if self.float:
            return
        self.in_zp = prepare_l2norm(self.node, self.graph).in_zp

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.float:
            norm = np.sqrt(np.sum(x * x, axis=-1, keepdims=True, dtype=np.float32))
            return [(x / np.maximum(norm, self.eps)).astype(np.float32)]
        v = x.astype(np.int64) - self.in_zp
        acc = wrap_int32(np.sum(v * v, axis=-1, keepdims=True))
        inv, shift = inv_sqrt_multiplier(acc)
        y = multiply_by_quantized_multiplier(v, inv, shift + OUTPUT_SCALE_BITS)
        return [np.clip(y, -128, 127).astype(np.int8)]
