"""The integer arithmetic of the quantized binary operators on their records, bit-exact with
TFLite Micro's reference kernels: what the reference layers run and what the Cortex-M
generators tabulate (256-entry tables of an operator with a constant operand, the proofs of
the SIMD plans) -- one implementation for both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    count_leading_zeros32,
    get_reciprocal,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_gt_one,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from edgenn.prepared.binary import BinaryParams


def count_leading_sign_bits(x: Any) -> Any:
    """TFLite's ``CountLeadingSignBits`` of int32 values (31 for 0 and -1)."""
    x = np.asarray(x, dtype=np.int64)
    return count_leading_zeros32(np.where(x >= 0, x, ~x)) - 1


def rounding_divide_by_pot_wide(x: Any, exponent: Any) -> Any:
    """gemmlowp's ``RoundingDivideByPOT`` of int32 values for exponents up to 63, as TFLM's
    x86 build computes it (its int8 DIV reaches exponents above 31 for small dividends).

    why: the C++ is only defined up to 31. Beyond, its mask ``(1ll << e) - 1`` truncates to
    int32 -1 (the remainder is x itself, the threshold -1 for x >= 0 and 0 below, so 1 is
    added exactly for x >= 0) and x86 takes the arithmetic shift count modulo 32; TFLM (the
    oracle) computes exactly that.
    """
    x, exponent = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(exponent, np.int64))
    wide = exponent > 31
    if not wide.any():
        return rounding_divide_by_pot(x, exponent)
    narrow = rounding_divide_by_pot(x, np.where(wide, 0, exponent))
    beyond = (x >> (exponent & 31)) + (x >= 0)
    return np.where(wide, beyond, narrow)


def _rescaled(p: BinaryParams, a: Any, b: Any) -> tuple[Any, Any]:
    """Add / Sub / SquaredDifference: both inputs in the common scale."""
    sa = multiply_by_quantized_multiplier((a - p.a_zp) << p.left_shift, p.a_mult, p.a_shift)
    sb = multiply_by_quantized_multiplier((b - p.b_zp) << p.left_shift, p.b_mult, p.b_shift)
    return sa, sb


def _div(p: BinaryParams, a: Any, b: Any) -> Any:
    num, den = np.broadcast_arrays(a - p.a_zp, b - p.b_zp)
    # why: the reciprocal needs a positive divisor; the signs move to the dividend
    flip = den < 0
    num = np.where(flip, -num, num)
    den = np.where(flip, -den, den)
    inv, recip_shift = get_reciprocal(den, 31)
    headroom = count_leading_sign_bits(num)
    quotient = multiply_by_quantized_multiplier_gt_one(num, inv, headroom)
    total_shift = p.shift - recip_shift - headroom
    scaled = saturating_rounding_doubling_high_mul(quotient, p.mult)
    return rounding_divide_by_pot_wide(scaled, -total_shift) + p.out_zp


def binary_int(p: BinaryParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The output integers (clamped to ``act_min`` .. ``act_max``, int64) for the stored
    integers ``a`` and ``b`` (int64 arrays, broadcast against each other)."""
    if p.op in ("Add", "Sub"):
        sa, sb = _rescaled(p, a, b)
        raw = sa + sb if p.op == "Add" else sa - sb
        y = multiply_by_quantized_multiplier(raw, p.out_mult, p.out_shift) + p.out_zp
    elif p.op == "Mul":
        # int16: |a b| <= 2**30, the int32 product of the C++ cannot overflow
        y = multiply_by_quantized_multiplier((a - p.a_zp) * (b - p.b_zp), p.mult,
                                             p.shift) + p.out_zp
    elif p.op == "Div":
        y = _div(p, a, b)
    elif p.op == "Maximum":
        y = np.where(a > b, a, b)
    elif p.op == "Minimum":
        y = np.where(a < b, a, b)
    elif p.op == "SquaredDifference":
        sa, sb = _rescaled(p, a, b)
        d = sa - sb
        y = multiply_by_quantized_multiplier(d * d, p.out_mult, p.out_shift) + p.out_zp
    elif p.op == "PRelu":
        x, alpha = np.broadcast_arrays(a - p.a_zp, b - p.b_zp)
        pos = multiply_by_quantized_multiplier(x, p.a_mult, p.a_shift)
        neg = multiply_by_quantized_multiplier(x * alpha, p.mult, p.shift)
        y = np.where(x >= 0, pos, neg) + p.out_zp
    else:
        raise ValueError(f"no integer arithmetic for {p.op}")
    return np.clip(np.asarray(y, np.int64), p.act_min, p.act_max)
