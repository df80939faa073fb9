"""Element-wise unary math, float32 / int8 / int16, exactly as TFLite Micro.

* LeakyRelu (``leaky_relu.cc``): two requantizations of ``x - zp_in``, by ``s_in / s_out``
  for x >= 0 and by ``s_in * alpha / s_out`` below (the float32 scales widened to double, as
  the installed TFLite Micro prepares them); a negative alpha scales by ``|multiplier|`` and
  negates, as the current reference does.
* HardSwish int8 (``hard_swish.h``): 16-bit fixed point; the input on a "hires" scale
  ``s_in / 128``, a "reluish" factor in [0, 1] from ``x / 3`` and the two int16 multipliers
  the prepare downscales from ``QuantizeMultiplier``; see ``_HardSwishInt8``.
* Abs int8 / int16 (``elementwise.cc``): ``|x - zp_in|``, requantized only when the scales
  differ; an int16 tensor without quantization takes the plain integer ``abs``.
* Rsqrt int8 / int16 (``elementwise.cc``): gemmlowp's Newton-Raphson inverse square root
  (``GetInvSqrtQuantizedMultiplierExp``) of ``x - zp_in`` applied to 1 << 20, then rescaled by
  ``1 / (sqrt(s_in) * s_out)``; 0 gives the type's maximum. TFLite Micro stops with an error
  on inputs below the zero point; here they give the maximum as 0 does.
* Neg, Sqrt, Exp, Log, HardSigmoid: float32 only (TFLite Micro has no quantized kernels).
* int16 Relu / Relu6 / Clip: Relu requantizes and clamps at 0 (``ReluQuantized``), Relu6
  clamps in the input's quantization (``Relu6Quantized``: the output's parameters are not
  used), Clip (no TFLite Micro kernel) requantizes and clamps to its quantized bounds.

int8 layers tabulate their arithmetic over the 256 inputs in ``build``; ``run`` is a lookup.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    INT32_MAX,
    count_leading_zeros32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_scalar,
    rescale,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, QuantParams

F32, I8, I16 = DType.FLOAT32, DType.INT8, DType.INT16
INT8_VALUES = np.arange(-128, 128, dtype=np.int64)
RSQRT_SHIFT = 20  # elementwise.cc's kShift: 1 << 20 keeps the inverse square root integer


class UnaryLayer(Layer):
    """One input, one output of the same type. Subclasses give ``float_fn`` and, for quantized
    types, ``build_quantized`` (constants) and ``int_fn`` (int64 values in, int64 values out,
    clamped to the type here)."""

    def build(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        assert x is not None
        self.dtype = x.dtype
        self.table: npt.NDArray[np.int8] | None = None
        if x.dtype is F32:
            return
        if y.dtype is not x.dtype:
            raise UnsupportedOperatorError(
                f"{self.node}: {self.node.op} from {x.dtype.value} to {y.dtype.value} is not "
                "supported (input and output types must match)")
        info = np.iinfo(x.dtype.numpy)
        self.qmin, self.qmax = int(info.min), int(info.max)
        self.build_quantized()
        if x.dtype is I8:
            self.table = self.apply(INT8_VALUES).astype(np.int8)

    def build_quantized(self) -> None:
        """Compute the quantized constants (TFLite Micro's prepare)."""

    def quant_pair(self) -> tuple[QuantParams, QuantParams]:
        return (per_tensor(self, self.inputs[0], "input"),
                per_tensor(self, self.outputs[0], "output"))

    def need_zero_points(self, *zps: int) -> None:
        """int16 kernels of TFLite Micro take symmetric tensors only."""
        if any(zp != 0 for zp in zps):
            raise UnsupportedOperatorError(
                f"{self.node}: int16 {self.node.op} needs zero points 0, got {list(zps)}")

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        raise UnsupportedOperatorError(f"{self.node}: {self.node.op} is float32 only")

    def apply(self, x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The quantized arithmetic on int64 values, clamped to the element type."""
        return np.clip(np.asarray(self.int_fn(x), dtype=np.int64), self.qmin, self.qmax)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.dtype is F32:
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                y = self.float_fn(x.astype(np.float32, copy=False))
            return [np.asarray(y, dtype=np.float32)]
        if self.table is not None:
            # why the uint8 view: index = x + 128 without widening the batch
            return [self.table[x.view(np.uint8) ^ 0x80]]
        return [self.apply(x.astype(np.int64)).astype(self.dtype.numpy)]


def wrap_int16(x: Any) -> Any:
    """Reduce to int16 two's complement (a C assignment of an int to an int16_t)."""
    return ((np.asarray(x, dtype=np.int64) + 2**15) & 0xFFFF) - 2**15


def _trunc_div(x: Any, d: int) -> Any:
    """C integer division by a positive ``d`` (rounds toward zero)."""
    return np.where(x >= 0, x // d, -((-x) // d))


# -- LeakyRelu ---------------------------------------------------------------------------------
@register("LeakyRelu", F32, I8, I16)
class LeakyRelu(UnaryLayer):
    def build(self) -> None:
        self.alpha = float(self.node.attr("alpha"))
        super().build()

    def build_quantized(self) -> None:
        qi, qo = self.quant_pair()
        s_in, s_out, alpha = np.float32(qi.s), np.float32(qo.s), np.float32(self.alpha)
        self.zp_in, self.zp_out = qi.zp, qo.zp
        # why double: TFLite Micro's prepare writes the products on float scales, but the
        # installed build evaluates them in double precision (a converter-made int16 model
        # differs by one step on ties with float32 arithmetic; the double form matches it)
        d_in, d_out, d_alpha = float(s_in), float(s_out), float(alpha)
        self.m_identity, self.sh_identity = quantize_multiplier(d_in / d_out)
        m_alpha, self.sh_alpha = quantize_multiplier(d_in * d_alpha / d_out)
        self.alpha_negative = m_alpha < 0
        self.m_alpha = int(wrap_int32(-m_alpha)) if self.alpha_negative else m_alpha

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.where(x > 0, x, x * np.float32(self.alpha))

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        v = x - self.zp_in
        identity = multiply_by_quantized_multiplier(v, self.m_identity, self.sh_identity)
        scaled = multiply_by_quantized_multiplier(v, self.m_alpha, self.sh_alpha)
        if self.alpha_negative:
            scaled = -scaled
        return self.zp_out + np.where(v >= 0, identity, scaled)


# -- HardSwish ---------------------------------------------------------------------------------
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


@register("HardSwish", F32, I8)
class HardSwish(UnaryLayer):
    def build_quantized(self) -> None:
        qi, qo = self.quant_pair()
        self.zp_in, self.zp_out = qi.zp, qo.zp
        # why: the installed TFLM's prepare takes the hires scale in float32 (mulss) but
        # widens it before both divisions (divsd), although its source divides floats
        hires_scale = float(np.float32(1.0 / 128.0) * np.float32(qi.s))
        reluish_scale = 3.0 / 32768.0  # exact in float32 and double
        m_out, self.out_exp = quantize_multiplier(hires_scale / float(np.float32(qo.s)))
        m_relu, self.relu_exp = quantize_multiplier(hires_scale / reluish_scale)
        self.m_out = downscale_multiplier_int16(m_out)
        self.m_relu = downscale_multiplier_int16(m_relu)
        if self.out_exp > 0:  # TFLM's prepare refuses it too
            raise UnsupportedOperatorError(
                f"{self.node}: int8 HardSwish needs an output scale of at least input scale "
                f"/ 128 (got {qi.s:g} -> {qo.s:g})")

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return x * np.minimum(np.float32(6), np.maximum(np.float32(0), x + np.float32(3))) \
            / np.float32(6)

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        hires = (x - self.zp_in) * 128  # int16: |x - zp| <= 255
        on_output_scale = srdhm_int16(hires, self.m_out)
        # the "reluish" factor: x rescaled so that 3.0 is 32768, saturating
        reluish = hires
        if self.relu_exp > 0:
            # shift all but the last bit first, so that saturation there cannot matter
            reluish = saturating_left_shift_int16(reluish, self.relu_exp - 1)
        reluish = srdhm_int16(reluish, self.m_relu)
        if self.relu_exp > 0:
            reluish = saturating_left_shift_int16(reluish, 1)
        if self.relu_exp < 0:
            reluish = rounding_divide_by_pot_int16(reluish, -self.relu_exp)
        reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1] in Q0.15
        y = sdhm_int16(reluish, on_output_scale)
        y = rounding_divide_by_pot_int16(y, -self.out_exp)
        return wrap_int16(y + self.zp_out)  # why wrap: the C++ adds in an int16_t


# -- HardSigmoid (float) -------------------------------------------------------------------------
@register("HardSigmoid", F32)
class HardSigmoid(UnaryLayer):
    def build(self) -> None:
        self.alpha = np.float32(self.node.attr("alpha"))
        self.beta = np.float32(self.node.attr("beta"))
        super().build()

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self.alpha * x + self.beta, np.float32(0), np.float32(1))


# -- Abs ------------------------------------------------------------------------------------------
@register("Abs", F32, I8, I16)
class Abs(UnaryLayer):
    def build_quantized(self) -> None:
        x = self.inputs[0]
        assert x is not None
        # an int16 tensor without quantization is a plain integer (TFLM's AbsHelper)
        self.plain = x.dtype is I16 and x.quant is None
        if self.plain:
            return
        qi, qo = self.quant_pair()
        self.zp_in, self.zp_out = qi.zp, qo.zp
        if x.dtype is I16:
            self.need_zero_points(qi.zp, qo.zp)
        self.needs_rescale = bool(np.float32(qi.s) != np.float32(qo.s))
        self.m, self.sh = quantize_multiplier(qi.s / qo.s)

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        if self.plain:
            return wrap_int16(np.abs(x))  # why wrap: abs(-32768) stored in an int16_t
        v = np.abs(x - self.zp_in)
        if self.needs_rescale:
            v = multiply_by_quantized_multiplier(v, self.m, self.sh)
        return v + self.zp_out


# -- Rsqrt ----------------------------------------------------------------------------------------
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


@register("Rsqrt", F32, I8, I16)
class Rsqrt(UnaryLayer):
    def build_quantized(self) -> None:
        qi, qo = self.quant_pair()
        self.zp_in, self.zp_out = qi.zp, qo.zp
        if self.dtype is I16:
            self.need_zero_points(qi.zp, qo.zp)
        self.m, self.sh = quantize_multiplier(1.0 / (math.sqrt(qi.s) * qo.s))
        if self.sh - RSQRT_SHIFT < -31:
            raise UnsupportedOperatorError(
                f"{self.node}: Rsqrt scales {qi.s:g} -> {qo.s:g} need a right shift over 31")

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.float32(1) / np.sqrt(x)

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        v = x - self.zp_in
        m, sh = inv_sqrt_multiplier_exp(np.maximum(v, 0))
        data = multiply_by_quantized_multiplier(1, m, sh + RSQRT_SHIFT)
        y = multiply_by_quantized_multiplier(data, self.m, self.sh - RSQRT_SHIFT) + self.zp_out
        return np.where(v <= 0, self.qmax, y)


# -- float-only math -------------------------------------------------------------------------------
@register("Neg", F32)
class Neg(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return -x


@register("Sqrt", F32)
class Sqrt(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.sqrt(x)


@register("Exp", F32)
class Exp(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)


@register("Log", F32)
class Log(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.log(x)


# -- int16 clamps (float32 and int8 Relu / Relu6 / Clip are in elementwise.py) ---------------------
@register("Relu", I16)
class ReluInt16(UnaryLayer):
    def build_quantized(self) -> None:
        qi, qo = self.quant_pair()
        self.need_zero_points(qi.zp, qo.zp)
        self.zp_in, self.zp_out = qi.zp, qo.zp
        self.m, self.sh = quantize_multiplier(qi.s / qo.s)
        self.lo, self.hi = max(self.qmin, quantize_scalar(0.0, qo.s, qo.zp)), self.qmax

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        y = multiply_by_quantized_multiplier(x - self.zp_in, self.m, self.sh) + self.zp_out
        return np.clip(y, self.lo, self.hi)


@register("Relu6", I16)
class Relu6Int16(UnaryLayer):
    def build_quantized(self) -> None:
        qi = per_tensor(self, self.inputs[0], "input")
        # why the input's parameters only: TFLM's Relu6 clamps the raw values to [q(0), q(6)]
        # in the input's quantization and copies them (the output's are not read)
        self.lo = qi.zp
        self.hi = min(self.qmax, max(self.qmin, quantize_scalar(6.0, qi.s, qi.zp)))

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        return np.clip(x, self.lo, self.hi)


@register("Clip", I16)
class ClipInt16(UnaryLayer):
    def build_quantized(self) -> None:
        qi, qo = self.quant_pair()
        self.zp_in, self.zp_out = qi.zp, qo.zp
        self.m, self.sh = quantize_multiplier(qi.s / qo.s)
        lo, hi = self.node.attr("min"), self.node.attr("max")
        self.lo, self.hi = self.qmin, self.qmax
        if lo is not None and lo != -math.inf:
            self.lo = max(self.qmin, quantize_scalar(float(lo), qo.s, qo.zp))
        if hi is not None and hi != math.inf:
            self.hi = min(self.qmax, quantize_scalar(float(hi), qo.s, qo.zp))

    def int_fn(self, x: npt.NDArray[np.int64]) -> Any:
        y = multiply_by_quantized_multiplier(x - self.zp_in, self.m, self.sh) + self.zp_out
        return np.clip(y, self.lo, self.hi)
