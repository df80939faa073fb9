"""gemmlowp's int16 fixed point (TFLite's HardSwish) and TFLite's inverse square root
multiplier (Rsqrt), bit-exact with the C++ (used by ``edgenn.prepared.unary_math``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    INT32_MAX,
    count_leading_zeros32,
    rescale,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_int32,
)


def wrap_int16(x: Any) -> Any:
    """Reduce to int16 two's complement (a C assignment of an int to an int16_t)."""
    return ((np.asarray(x, dtype=np.int64) + 2**15) & 0xFFFF) - 2**15


def _trunc_div(x: Any, d: int) -> Any:
    """C integer division by a positive ``d`` (rounds toward zero)."""
    return np.where(x >= 0, x // d, -((-x) // d))


def downscale_multiplier_int16(m: int) -> int:
    """TFLite's ``DownScaleInt32ToInt16Multiplier``: a Q0.31 multiplier to Q0.15, rounded."""
    if m >= INT32_MAX - (1 << 15):
        return 2**15 - 1
    return (m + (1 << 15)) >> 16


def srdhm_int16(a: Any, b: Any) -> Any:
    """gemmlowp's int16 ``SaturatingRoundingDoublingHighMul`` (rounds half away from zero)."""
    ab = np.asarray(a, dtype=np.int64) * b
    high = _trunc_div(ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14)), 1 << 15)
    return np.where((a == b) & (a == -(2**15)), 2**15 - 1, wrap_int16(high))


def sdhm_int16(a: Any, b: Any) -> Any:
    """``SaturatingDoublingHighMul`` of hard_swish.h: the same, truncating toward zero."""
    ab = np.asarray(a, dtype=np.int64) * b
    return np.where((a == b) & (a == -(2**15)), 2**15 - 1, wrap_int16(_trunc_div(ab, 1 << 15)))


def rounding_divide_by_pot_int16(x: Any, exponent: int) -> Any:
    """gemmlowp's ``RoundingDivideByPOT`` on int16 values.

    From exponent 16 on its mask ``(1 << exponent) - 1`` truncated to int16 is -1, and the
    result degenerates to 1 for x >= 0 and -1 below; reproduced as such (extreme scales).
    """
    if exponent <= 15:
        return rounding_divide_by_pot(x, exponent)
    return np.where(np.asarray(x) >= 0, 1, -1)


def saturating_left_shift_int16(x: Any, amount: int) -> Any:
    return np.clip(np.asarray(x, dtype=np.int64) << amount, -(2**15), 2**15 - 1)


_HALF_THREE_Q3 = (1 << 28) + (1 << 27)  # 1.5 with 3 integer bits
_HALF_SQRT2_Q0 = 1518500250  # sqrt(2) / 2 in Q0.31


def inv_sqrt_multiplier_exp(v: Any) -> tuple[Any, Any]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp(v, kReverseShift)`` for v >= 0:
    ``(multiplier, shift)`` with ``1 / sqrt(v) ~= multiplier * 2**(shift - 31)``."""
    v = np.asarray(v, dtype=np.int64)
    small = v <= 1  # 0 and 1 are answered directly (the general path would overflow at 1)
    x_in = np.where(small, 4, v)
    shift = np.full(x_in.shape, 11, dtype=np.int64)
    while np.any(x_in >= 1 << 29):
        big = x_in >= 1 << 29
        x_in = np.where(big, x_in // 4, x_in)
        shift += big
    pairs = (count_leading_zeros32(x_in) - 1) // 2 - 1
    shift -= pairs
    x_in = x_in << (2 * pairs)
    half_input = rounding_divide_by_pot(x_in >> 1, 1)  # Q3.28 input, halved
    x = np.full(x_in.shape, 1 << 28, dtype=np.int64)  # 1.0 in Q3.28
    mul = saturating_rounding_doubling_high_mul
    for _ in range(5):  # Newton-Raphson: x <- 1.5 x - (v / 2) x^3
        x3 = rescale(mul(mul(x, x), x), 9, 3)
        x = rescale(wrap_int32(mul(_HALF_THREE_Q3, x) - mul(half_input, x3)), 6, 3)
    x = mul(x, _HALF_SQRT2_Q0)
    x = np.where(shift < 0, wrap_int32(x << np.maximum(-shift, 0)), x)
    shift = np.maximum(shift, 0)
    return np.where(small, INT32_MAX, x), np.where(small, 0, -shift)
