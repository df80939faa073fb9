"""Fixed-point arithmetic of TFLite Micro and gemmlowp, vectorised with numpy.

Every function takes Python ints or int64 numpy arrays holding int32 values and returns int64
arrays (numpy scalars for scalar inputs), reproducing the C++ integer semantics bit for bit:
truncating division, arithmetic shifts, int32 wrap-around where the C++ code multiplies in
int32. The rounding is TFLite's default build (``TFLITE_SINGLE_ROUNDING`` off): a saturating
rounding doubling high multiply followed by a rounding divide by a power of two.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.ir import Activation, DType, QuantParams

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

IntLike = Any  # int | np.integer | npt.NDArray[np.int64]
IntArray = npt.NDArray[np.int64]


def _i64(x: IntLike) -> Any:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x: IntLike) -> Any:
    """Reduce to int32 two's complement (what an overflowing int32 multiply gives in C)."""
    x = _i64(x)
    return ((x + 2**31) & 0xFFFFFFFF) - 2**31


def int32_array(values: IntLike) -> npt.NDArray[np.int32]:
    """Integer values as an int32 array with C's wrap-around (bias sums folded at generation
    time, stored as int32 constants)."""
    return np.asarray(wrap_int32(values), dtype=np.int32)


def _trunc_div_pot(x: Any, bits: int) -> Any:
    """``x / 2**bits`` rounded toward zero, as C integer division."""
    return np.where(x >= 0, x >> bits, -((-x) >> bits))


# -- QuantizeMultiplier ----------------------------------------------------------------------
def round_half_away(x: float) -> float:
    """C's ``round``: halves go away from zero (Python's ``round`` goes to even)."""
    r = float(math.trunc(x))
    if abs(x - r) >= 0.5:  # x - trunc(x) is exact in binary floating point
        r += math.copysign(1.0, x)
    return r


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplier``: ``real ~= mult * 2**(shift - 31)``, mult in [2^30, 2^31).

    Uses ``frexp`` and round-half-away as the C++ does, including the edge case where the
    rounded mantissa reaches 2^31 (halved, shift + 1) and the flush to zero below 2^-31.
    """
    real = float(real)
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(round_half_away(q * (1 << 31)))
    if q_fixed > (1 << 31):
        raise ValueError(f"multiplier {real!r} cannot be quantized")
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return q_fixed, shift


def scale_ratio(num: tuple[float, ...], den: float) -> float:
    """``prod(num) / den`` of float32 scales, each widened to double first.

    Why double: the installed TFLite Micro (the oracle) evaluates every multiplier's scale
    product and quotient in double (``cvtss2sd`` before ``mulsd`` / ``divsd`` in
    ``GetQuantizedConvolutionMultipler``, ``PrepareSvdf``, ...), although the C++ source writes
    some of them on floats; a float32 product can round to a neighbouring 31-bit multiplier.
    """
    real = 1.0
    for s in num:
        real *= float(np.float32(s))
    return real / float(np.float32(den))


def quantize_multipliers(reals: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """``quantize_multiplier`` over an array (e.g. per-channel scales); int64 arrays back."""
    flat = np.asarray(reals, dtype=np.float64).ravel()
    pairs = [quantize_multiplier(float(r)) for r in flat]
    shape = np.shape(reals)
    mult = np.array([p[0] for p in pairs], dtype=np.int64).reshape(shape)
    shift = np.array([p[1] for p in pairs], dtype=np.int64).reshape(shape)
    return mult, shift


# -- the three primitives ----------------------------------------------------------------------
def saturating_rounding_doubling_high_mul(a: IntLike, b: IntLike) -> Any:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` (int32 x int32 -> high 32 of 2ab)."""
    a, b = _i64(a), _i64(b)
    # The C++ adds a nudge of 2^30 (ab >= 0) or 1 - 2^30 (ab < 0) and divides by 2^31
    # truncating toward zero; for ab < 0 that equals floor((ab + 2^30) / 2^31), so one
    # arithmetic shift serves both signs. |ab| <= 2^62 fits int64.
    high = (a * b + (1 << 30)) >> 31
    if np.any(b == INT32_MIN) and np.any(a == INT32_MIN):
        high = np.where((a == b) & (a == INT32_MIN), INT32_MAX, high)
    return high


def rounding_divide_by_pot(x: IntLike, exponent: IntLike) -> Any:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero."""
    x, exponent = _i64(x), _i64(exponent)
    # gemmlowp: (x >> e) + (remainder > (mask >> 1) + (x < 0)); equivalently add half of the
    # divisor (one less for negative x, so that ties go away from zero) and shift.
    half = (np.int64(1) << exponent) >> 1
    return (x + half - ((x < 0) & (exponent > 0))) >> exponent


def multiply_by_quantized_multiplier(x: IntLike, multiplier: IntLike, shift: IntLike) -> Any:
    """TFLite's double-rounding ``MultiplyByQuantizedMultiplier(int32 x, mult, shift)``."""
    x, shift = _i64(x), _i64(shift)
    if np.any(shift > 0):
        # why wrap: the C++ computes x * (1 << left_shift) in int32.
        x = wrap_int32(x << np.maximum(shift, 0))
    high = saturating_rounding_doubling_high_mul(x, multiplier)
    return rounding_divide_by_pot(high, np.maximum(-shift, 0))


def multiply_by_quantized_multiplier_inplace(
    v: npt.NDArray[np.int64], multiplier: IntLike, shift: IntLike
) -> npt.NDArray[np.int64]:
    """``multiply_by_quantized_multiplier`` overwriting ``v`` (the kernels' hot path).

    Same arithmetic, a third of the memory traffic; ``multiplier`` must be non-negative
    (as ``quantize_multiplier`` gives), so the SRDHM saturation case cannot occur.
    """
    multiplier, shift = _i64(multiplier), _i64(shift)
    if np.any(shift > 0):
        v = wrap_int32(v << np.maximum(shift, 0))
    right = np.maximum(-shift, 0)
    v *= multiplier
    v += 1 << 30
    v >>= 31
    if np.any(right > 0):
        negative = v < 0
        if not np.all(right > 0):
            negative &= right > 0
        v += (np.int64(1) << right) >> 1
        v -= negative
        v >>= right
    return v


def multiply_by_quantized_multiplier_gt_one(x: IntLike, multiplier: IntLike, left: int) -> Any:
    """``MultiplyByQuantizedMultiplierGreaterThanOne`` (double-rounding build)."""
    return saturating_rounding_doubling_high_mul(wrap_int32(_i64(x) << left), multiplier)


# -- gemmlowp FixedPoint helpers (raw int32 values; integer bits passed explicitly) ----------
def saturating_rounding_multiply_by_pot(x: IntLike, exponent: int) -> Any:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT<exponent>`` on int32 raw values."""
    x = _i64(x)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    shifted = wrap_int32(x << exponent)
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def rescale(x: IntLike, src_integer_bits: int, dst_integer_bits: int) -> Any:
    """gemmlowp's ``Rescale<dst>`` of a FixedPoint with ``src`` integer bits."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def rounding_half_sum(a: IntLike, b: IntLike) -> Any:
    """gemmlowp's int32 ``RoundingHalfSum``: (a + b) / 2 rounded half away from zero."""
    s = _i64(a) + _i64(b)
    sign = np.where(s >= 0, 1, -1)
    return _trunc_div_pot(s + sign, 1)


def _fx_mul(a: Any, b: Any) -> Any:
    return saturating_rounding_doubling_high_mul(a, b)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: IntLike) -> Any:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out (Taylor series around -1/8)."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = _i64(a) + (1 << 28)
    x2 = _fx_mul(x, x)
    x3 = _fx_mul(x2, x)
    x4 = _fx_mul(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    poly = saturating_rounding_multiply_by_pot(_fx_mul(x4_over_4 + x3, constant_1_over_3) + x2, -1)
    return constant_term + _fx_mul(constant_term, x + poly)


_EXP_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def exp_on_negative_values(a: IntLike, integer_bits: int) -> Any:
    """gemmlowp's ``exp_on_negative_values``: Q(integer_bits) input <= 0, Q0.31 output."""
    a = _i64(a)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    mask = one_quarter - 1
    a_mod = (a & mask) - one_quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod, integer_bits, 0)
    )
    remainder = a_mod - a
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder & (1 << (fractional_bits + exponent))) != 0
            result = np.where(bit, _fx_mul(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (fractional_bits + 5))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: IntLike) -> Any:
    """gemmlowp's Newton-Raphson 1 / (1 + a) for a in [0, 1), Q0.31 in and out."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = 1515870810 + _fx_mul(half_denominator, -1010580540)  # Q2.29: 48/17 - 32/17 * d
    one_q2 = 1 << 29
    for _ in range(3):
        half_denominator_times_x = _fx_mul(half_denominator, x)
        one_minus = one_q2 - half_denominator_times_x
        # why wrap: gemmlowp's FixedPoint addition wraps in int32 (reached only outside
        # [0, 1), e.g. TFLM's GetReciprocal(0) in an int8 DIV by zero)
        x = wrap_int32(x + rescale(_fx_mul(x, one_minus), 4, 2))
    # ExactMulByPot<-1> keeps the raw value and drops one integer bit (Q2 -> Q1).
    return rescale(x, 1, 0)


def count_leading_zeros32(x: IntLike) -> Any:
    """Leading zeros of a non-negative int32 seen as uint32 (exact via float64 frexp)."""
    x = _i64(x)
    _, exp = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - exp.astype(np.int64))


def get_reciprocal(x: IntLike, x_integer_digits: int) -> tuple[Any, Any]:
    """TFLite's ``GetReciprocal``: (Q0.31 raw of 1/x scaled, num_bits_over_unit) for x > 0."""
    x = _i64(x)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


# -- quantization helpers -----------------------------------------------------------------------
def quantize_scalar(value: float, scale: float, zero_point: int) -> int:
    """TFLite's kernel_util ``Quantize``: ``zp + round(value / scale)`` in float32 arithmetic."""
    q = np.float32(value) / np.float32(scale)
    return int(zero_point) + int(round_half_away(float(q)))


def type_range(dtype: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer element type."""
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def activation_range_quantized(act: Activation, quant: QuantParams) -> tuple[int, int]:
    """TFLite's ``CalculateActivationRangeQuantized`` for an int8 output."""
    return activation_range(act, quant, DType.INT8)


def activation_range(act: Activation, quant: QuantParams, dtype: DType) -> tuple[int, int]:
    """TFLite's ``CalculateActivationRangeQuantized`` for an int8 or int16 output."""
    qmin, qmax = type_range(dtype)
    s, zp = quant.s, quant.zp
    if act is Activation.RELU:
        return max(qmin, quantize_scalar(0.0, s, zp)), qmax
    if act is Activation.RELU6:
        return max(qmin, quantize_scalar(0.0, s, zp)), min(qmax, quantize_scalar(6.0, s, zp))
    if act is Activation.RELU_N1_TO_1:
        return max(qmin, quantize_scalar(-1.0, s, zp)), min(qmax, quantize_scalar(1.0, s, zp))
    return qmin, qmax


FLOAT32_MAX = float(np.finfo(np.float32).max)


def activation_range_float(act: Activation, finite: bool = False) -> tuple[float, float]:
    """The real clamp of a fused activation.

    ``finite``: TFLite's ``CalculateActivationRange``, whose open bounds are float's
    ``lowest()`` / ``max()``, so a float layer of a TFLite model gives +-FLT_MAX where the sum
    is +-inf (``x + inf`` is FLT_MAX in TFLite Micro); otherwise the bounds are +-inf
    (onnxruntime's layers do not clamp).
    """
    lo, hi = -math.inf, math.inf
    if act is Activation.RELU:
        lo = 0.0
    elif act is Activation.RELU6:
        lo, hi = 0.0, 6.0
    elif act is Activation.RELU_N1_TO_1:
        lo, hi = -1.0, 1.0
    if finite:
        lo, hi = max(lo, -FLOAT32_MAX), min(hi, FLOAT32_MAX)
    return lo, hi


# -- gemmlowp logistic and tanh (int32 raw values) ------------------------------------------------
def gemmlowp_logistic(a: IntLike, integer_bits: int) -> Any:
    """gemmlowp's ``logistic`` of a Q(integer_bits) value: Q0.31 raw of 1 / (1 + exp(-a))."""
    a = _i64(a)
    positive = a > 0
    # exp(-|a|), then 1 / (1 + exp(-|a|)) is the logistic of |a|; mirror for a < 0.
    on_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(np.where(positive, -a, a), integer_bits)
    )
    mirrored = INT32_MAX - on_positive  # ResultF::One() - r, a plain int32 subtraction
    return np.where(a == 0, 1 << 30, np.where(positive, on_positive, mirrored))


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: IntLike) -> Any:
    """gemmlowp's Newton-Raphson (1 - a) / (1 + a) for a in [0, 1), Q0.31 in and out."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = 1515870810 + _fx_mul(half_denominator, -1010580540)  # Q2.29: 48/17 - 32/17 * d
    one_q2 = 1 << 29
    for _ in range(3):
        one_minus = one_q2 - _fx_mul(half_denominator, x)
        x = x + rescale(_fx_mul(x, one_minus), 4, 2)
    return rescale(x - one_q2, 2, 0)


def gemmlowp_tanh(a: IntLike, integer_bits: int) -> Any:
    """gemmlowp's ``tanh`` of a Q(integer_bits) value: Q0.31 raw of tanh(a)."""
    a = _i64(a)
    negative = a < 0
    # tanh(|a|) = (1 - exp(-2|a|)) / (1 + exp(-2|a|)); doubling -|a| keeps the raw value
    # and gains one integer bit (ExactMulByPot<1>).
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(np.where(negative, a, -a), integer_bits + 1)
    )
    return np.where(a == 0, 0, np.where(negative, -t, t))


def requantize(
    acc: npt.NDArray[np.int64],
    multiplier: Any,
    shift: Any,
    zero_point: int,
    lo: int,
    hi: int,
) -> npt.NDArray[np.int8]:
    """int32 accumulator -> int8 output, as every TFLite int8 kernel ends (overwrites acc): the
    per-channel rescale, the output zero point, the activation clamp."""
    out = multiply_by_quantized_multiplier_inplace(acc, multiplier, shift)
    out += zero_point
    np.clip(out, lo, hi, out=out)
    return out.astype(np.int8)
