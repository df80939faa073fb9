"""Element-wise binary operators, bit-exact with TFLite Micro's reference kernels.

Sub, Div, Maximum, Minimum, SquaredDifference and PRelu on float32 / int8 / int16 (where
TFLM has the type), and the int16 Add and Mul of the existing IR operators (their float32
and int8 layers are in ``elementwise.py``). Broadcasting is numpy's (TFLM's
``BroadcastBinaryOpSimple`` indexes the same way).

Quantized arithmetic, as TFLM's Prepare / Eval:

* Add, Sub: each input ``(q - zp) << left_shift`` (20 for int8, 15 for int16) is scaled by
  ``s_i / (2 max(s_a, s_b))``, the two are added or subtracted, the result is scaled by
  ``2 max(s_a, s_b) / (2**left_shift s_out)`` (multipliers derived in double);
* Mul: ``(a - zp_a)(b - zp_b)`` scaled by ``s_a s_b / s_out`` (int16: zero points 0);
* Div (int8): the divisor's fixed-point reciprocal (``GetReciprocal``), the dividend shifted
  to its headroom, then one rescale by ``s_a / (s_b s_out)`` and the combined shift;
* SquaredDifference: the inputs rescaled as for Sub with left shift 7 (int8) or 0 (int16),
  the difference squared in int32, scaled by ``(2 max)^2 / (2**(2 left_shift) s_out)``;
* PRelu: ``x - zp`` scaled by ``s_x / s_out`` where non-negative, else ``(x - zp)(alpha -
  zp_alpha)`` scaled by ``s_x s_alpha / s_out`` (int16 inputs take int8 alpha);
* Maximum, Minimum compare the stored integers, which needs one quantization for both inputs
  and the output (TFLite's operator spec; TFLM does not rescale).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range,
    activation_range_float,
    count_leading_zeros32,
    get_reciprocal,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_gt_one,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from edgenn.backends.ref.kernels.common import Operands, activation_of, per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, QuantParams

F32, I8, I16 = DType.FLOAT32, DType.INT8, DType.INT16


def count_leading_sign_bits(x: Any) -> Any:
    """TFLite's ``CountLeadingSignBits`` of int32 values (31 for 0 and -1)."""
    x = np.asarray(x, dtype=np.int64)
    return count_leading_zeros32(np.where(x >= 0, x, ~x)) - 1


def to_output_rank(x: np.ndarray, ir_shape: tuple[int, ...], rank: int) -> np.ndarray:
    """A batch-first runtime array of a lower-rank input, with its missing broadcast axes
    inserted after the batch axis.

    why: numpy aligns trailing axes, so an input of IR shape [1, C] broadcasts against
    [1, H, W, C] as [1, 1, 1, C]; with a batch of N samples it arrives as [N, C] and must
    become [N, 1, 1, C], not be aligned with the output's W axis.
    """
    missing = rank - len(ir_shape)
    if missing <= 0 or not ir_shape or ir_shape[0] != 1:
        return x
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])


class BinaryLayer(Layer):
    """Shared build / run: operands, the output clamp, float32 or integer arithmetic.

    Subclasses set ``types`` (the element types TFLM takes) and implement ``float_op`` and,
    for quantized types, ``prepare`` (multipliers from the scales) and ``int_op`` (int64
    arrays of the stored integers in, unclamped output integers back).
    """

    types: ClassVar[tuple[DType, ...]] = (F32, I8, I16)
    # whether TFLite fuses an activation into the operator: then its float output is clamped
    # to the activation's range, +-FLT_MAX without one (Maximum, Minimum, SquaredDifference,
    # PRelu pass +-inf)
    fuses: ClassVar[bool] = False

    def build(self) -> None:
        self.operands = Operands(self.inputs)
        out = self.outputs[0]
        self.dtype = out.dtype
        first = self.inputs[0]
        if first is None or first.dtype not in self.types or out.dtype != first.dtype:
            got = first.dtype.value if first is not None else "?"
            raise UnsupportedOperatorError(
                f"{self.node}: {self.node.op} does not take {got} input with "
                f"{out.dtype.value} output")
        self.rank = len(out.shape)
        self.shapes = [t.shape if t is not None and not t.is_const else None
                       for t in self.inputs]
        act = activation_of(self)
        if out.dtype is F32:
            self.flo, self.fhi = activation_range_float(
                act, self.finite_float_clamp and self.fuses)
            return
        qa = per_tensor(self, self.inputs[0], "first input")
        qb = per_tensor(self, self.inputs[1], "second input")
        qo = per_tensor(self, out, "output")
        self.lo, self.hi = activation_range(act, qo, out.dtype)
        self.prepare(qa, qb, qo)

    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        raise NotImplementedError

    def need_zero_points_zero(self, *quants: QuantParams) -> None:
        """TFLM's int16 kernels of this operator refuse non-zero zero points."""
        if self.dtype is I16 and any(q.zp != 0 for q in quants):
            raise UnsupportedOperatorError(
                f"{self.node}: int16 {self.node.op} needs zero points of 0 "
                f"(got {[q.zp for q in quants]})")

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        a, b = (x if shape is None else to_output_rank(x, shape, self.rank)
                for x, shape in zip(self.operands.gather(xs), self.shapes, strict=True))
        if self.dtype is F32:
            with np.errstate(all="ignore"):  # inf / nan as the C float arithmetic gives them
                y = self.float_op(a.astype(np.float32, copy=False),
                                  b.astype(np.float32, copy=False))
            return [np.clip(y, self.flo, self.fhi).astype(np.float32, copy=False)]
        raw = self.int_op(a.astype(np.int64), b.astype(np.int64))
        return [np.clip(raw, self.lo, self.hi).astype(self.dtype.numpy)]

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        raise NotImplementedError


class _AddSub(BinaryLayer):
    """TFLM's quantized ADD / SUB: both inputs rescaled to a common scale, then combined."""

    sign: ClassVar[int] = 1
    fuses = True

    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        self.left_shift = 15 if self.dtype is I16 else 20
        self.zp_a, self.zp_b, self.zp_out = qa.zp, qb.zp, qo.zp
        twice_max = 2.0 * max(qa.s, qb.s)
        self.m_a, self.sh_a = quantize_multiplier(qa.s / twice_max)
        self.m_b, self.sh_b = quantize_multiplier(qb.s / twice_max)
        self.m_out, self.sh_out = quantize_multiplier(
            twice_max / ((1 << self.left_shift) * qo.s))

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        sa = multiply_by_quantized_multiplier((a - self.zp_a) << self.left_shift,
                                              self.m_a, self.sh_a)
        sb = multiply_by_quantized_multiplier((b - self.zp_b) << self.left_shift,
                                              self.m_b, self.sh_b)
        raw = sa + sb if self.sign > 0 else sa - sb
        return multiply_by_quantized_multiplier(raw, self.m_out, self.sh_out) + self.zp_out


@register("Add", I16)
class AddInt16(_AddSub):
    """int16 ADD (float32 and int8 are ``elementwise.Add``): TFLM's general path, left
    shift 15 (TFLM Micro does not take TFLite's power-of-two-scale int16 path)."""

    types = (I16,)


@register("Sub", F32, I8, I16)
class Sub(_AddSub):
    sign = -1

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b


@register("Mul", I16)
class MulInt16(BinaryLayer):
    """int16 MUL (float32 and int8 are ``elementwise.Mul``); TFLM needs zero points of 0."""

    types = (I16,)

    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        self.need_zero_points_zero(qa, qb, qo)
        self.m, self.sh = quantize_multiplier(qa.s * qb.s / qo.s)

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        # |a b| <= 2**30: the int32 product of the C++ cannot overflow
        return multiply_by_quantized_multiplier(a * b, self.m, self.sh)


# the multiplier shifts TFLM's int8 DIV keeps within defined C++ (see Div.prepare)
_DIV_SHIFTS = (-25, 22)


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


@register("Div", F32, I8)
class Div(BinaryLayer):
    """TFLM's DIV: float32 and int8 (TFLM has no int16 DIV).

    TFLM computes the quotient from a 31-bit reciprocal of the divisor with shifts its C++
    leaves undefined in two corners, where this layer gives what TFLM's x86 build computes
    (see ``rounding_divide_by_pot_wide``): dividends so small that the final shift exceeds
    31 bits, and a divisor equal to its zero point (a division by zero, which TFLM does not
    reject: ``GetReciprocal(0)`` shifts by 32, taken as 0).
    """

    types = (F32, I8)
    fuses = True

    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        self.m, self.sh = quantize_multiplier(qa.s / (qb.s * qo.s))
        # why: the final right shift is headroom + recip_shift - sh, with an int8 dividend's
        # headroom in [23, 31] and recip_shift in [-1, 7]: below -25 it would pass 63 bits,
        # above 22 turn into a left shift, both undefined in TFLM's C++
        low, high = _DIV_SHIFTS
        if not low <= self.sh <= high:
            raise UnsupportedOperatorError(
                f"{self.node}: int8 DIV rescale s_a / (s_b s_out) = "
                f"{qa.s / (qb.s * qo.s):.3g} is outside TFLM's fixed-point division "
                f"(2^{low - 1} to 2^{high})")
        self.zp_a, self.zp_b, self.zp_out = qa.zp, qb.zp, qo.zp

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a / b

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        num, den = np.broadcast_arrays(a - self.zp_a, b - self.zp_b)
        # why: the reciprocal needs a positive divisor; the signs move to the dividend
        flip = den < 0
        num = np.where(flip, -num, num)
        den = np.where(flip, -den, den)
        inv, recip_shift = get_reciprocal(den, 31)
        headroom = count_leading_sign_bits(num)
        quotient = multiply_by_quantized_multiplier_gt_one(num, inv, headroom)
        total_shift = self.sh - recip_shift - headroom
        scaled = saturating_rounding_doubling_high_mul(quotient, self.m)
        return rounding_divide_by_pot_wide(scaled, -total_shift) + self.zp_out


class _Select(BinaryLayer):
    """Maximum / Minimum: a comparison of the stored values (no rescaling)."""

    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        if not qa == qb == qo:
            raise UnsupportedOperatorError(
                f"{self.node}: quantized {self.node.op} needs one quantization for both "
                f"inputs and the output (got {qa!r}, {qb!r}, {qo!r})")

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        return self.float_op(a, b)


@register("Maximum", F32, I8, I16)
class Maximum(_Select):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a > b, a, b)  # TFLM's el1 > el2 ? el1 : el2 (NaN handling too)


@register("Minimum", F32, I8, I16)
class Minimum(_Select):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a < b, a, b)


@register("Pow", F32)
class Pow(BinaryLayer):
    """float32 only (TFLite's POW and ONNX's Pow on float); C's powf is what both call."""

    types: ClassVar[tuple[DType, ...]] = (F32,)

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):  # why: a negative base with a fractional exponent is NaN
            return np.power(a, b)


@register("SquaredDifference", F32, I8, I16)
class SquaredDifference(BinaryLayer):
    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        self.need_zero_points_zero(qa, qb, qo)
        # why: TFLM's shifts keep the square of the rescaled difference (each rescaled input
        # at most half its shifted value) inside int32: 7 for int8, 0 for int16
        self.left_shift = 0 if self.dtype is I16 else 7
        self.zp_a, self.zp_b, self.zp_out = qa.zp, qb.zp, qo.zp
        twice_max = 2.0 * max(qa.s, qb.s)
        self.m_a, self.sh_a = quantize_multiplier(qa.s / twice_max)
        self.m_b, self.sh_b = quantize_multiplier(qb.s / twice_max)
        self.m_out, self.sh_out = quantize_multiplier(
            twice_max * twice_max / ((1 << 2 * self.left_shift) * qo.s))

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = a - b
        return d * d

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        sa = multiply_by_quantized_multiplier((a - self.zp_a) << self.left_shift,
                                              self.m_a, self.sh_a)
        sb = multiply_by_quantized_multiplier((b - self.zp_b) << self.left_shift,
                                              self.m_b, self.sh_b)
        d = sa - sb
        return multiply_by_quantized_multiplier(d * d, self.m_out, self.sh_out) + self.zp_out


@register("PRelu", F32, I8, I16)
class PRelu(BinaryLayer):
    def prepare(self, qa: QuantParams, qb: QuantParams, qo: QuantParams) -> None:
        self.zp_in, self.zp_alpha, self.zp_out = qa.zp, qb.zp, qo.zp
        self.m_pos, self.sh_pos = quantize_multiplier(qa.s / qo.s)
        self.m_neg, self.sh_neg = quantize_multiplier(qa.s * qb.s / qo.s)

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a >= 0, a, a * b)

    def int_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        x, alpha = np.broadcast_arrays(a - self.zp_in, b - self.zp_alpha)
        pos = multiply_by_quantized_multiplier(x, self.m_pos, self.sh_pos)
        neg = multiply_by_quantized_multiplier(x * alpha, self.m_neg, self.sh_neg)
        return np.where(x >= 0, pos, neg) + self.zp_out
