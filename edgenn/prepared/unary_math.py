"""The record of the element-wise unary math operators and their integer arithmetic, exactly
as TFLite Micro's prepare and eval:

* LeakyRelu (``leaky_relu.cc``): two requantizations of ``x - in_zp``, by ``s_in / s_out``
  (``identity_*``) for x >= 0 and by ``s_in * alpha / s_out`` (``alpha_*``) below (the float32
  scales widened to double, as the installed TFLite Micro prepares them); a negative alpha
  scales by ``|multiplier|`` and negates, as the current reference does.
* HardSwish int8 (``hard_swish.h``): 16-bit fixed point; the input on a "hires" scale
  ``s_in / 128``, a "reluish" factor in [0, 1] from ``x / 3`` and the two int16 multipliers
  (``mult`` / ``out_exp``, ``relu_mult`` / ``relu_exp``) the prepare downscales.
* Abs int8 / int16 (``elementwise.cc``): ``|x - in_zp|``, requantized only when the scales
  differ (``needs_rescale``); an int16 tensor without quantization takes the plain integer
  ``abs`` (``plain``).
* Rsqrt int8 / int16 (``elementwise.cc``): gemmlowp's Newton-Raphson inverse square root of
  ``x - in_zp`` applied to 1 << 20, then rescaled by ``1 / (sqrt(s_in) * s_out)``; 0 gives
  the type's maximum. TFLite Micro stops with an error on inputs below the zero point; here
  they give the maximum as 0 does.
* Neg, Sqrt, Exp, Log, HardSigmoid (``alpha``, ``beta``): float32 only.

An int8 operator takes only 256 input values: ``table`` holds its output for -128..127, which
the reference layer looks up and the Cortex-M kernel stores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    type_range,
    wrap_int32,
)
from edgenn.arith.int16_ops import (
    downscale_multiplier_int16,
    inv_sqrt_multiplier_exp,
    rounding_divide_by_pot_int16,
    saturating_left_shift_int16,
    sdhm_int16,
    srdhm_int16,
    wrap_int16,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor

INT8_VALUES = np.arange(-128, 128, dtype=np.int64)
RSQRT_SHIFT = 20  # elementwise.cc's kShift: 1 << 20 keeps the inverse square root integer
QUANTIZED_OPS = ("LeakyRelu", "HardSwish", "Abs", "Rsqrt")


@dataclass(frozen=True)
class UnaryMathParams:
    """One unary math operator's constants (unused fields 0; see the module docstring)."""

    op: str
    dtype: DType
    alpha: float = 0.0
    beta: float = 0.0
    in_zp: int = 0
    out_zp: int = 0
    act_min: int = 0  # the element type's range (quantized types)
    act_max: int = 0
    mult: int = 0
    shift: int = 0
    identity_mult: int = 0
    identity_shift: int = 0
    alpha_mult: int = 0
    alpha_shift: int = 0
    alpha_negative: bool = False
    out_exp: int = 0
    relu_mult: int = 0
    relu_exp: int = 0
    needs_rescale: bool = False
    plain: bool = False
    table: npt.NDArray[np.int8] | None = None


def _zero_points(node: Node, *zps: int) -> None:
    """int16 kernels of TFLite Micro take symmetric tensors only."""
    if any(zp != 0 for zp in zps):
        raise UnsupportedOperatorError(
            f"{node}: int16 {node.op} needs zero points 0, got {list(zps)}")


def _quantized(node: Node, graph: Graph, base: UnaryMathParams) -> UnaryMathParams:
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    op, dtype = node.op, x.dtype
    if op not in QUANTIZED_OPS or (op == "HardSwish" and dtype is DType.INT16):
        raise UnsupportedOperatorError(f"{node}: {op} is float32 only")
    if op == "Abs" and dtype is DType.INT16 and x.quant is None:
        return replace(base, plain=True)  # a plain integer (TFLM's AbsHelper)
    qi, qo = per_tensor(node, x, "input"), per_tensor(node, y, "output")
    p = replace(base, in_zp=qi.zp, out_zp=qo.zp)
    if op == "LeakyRelu":
        # why double: TFLite Micro's prepare writes the products on float scales, but the
        # installed build evaluates them in double precision (a converter-made int16 model
        # differs by one step on ties with float32 arithmetic; the double form matches it)
        d_in, d_out = float(np.float32(qi.s)), float(np.float32(qo.s))
        d_alpha = float(np.float32(base.alpha))
        m_id, sh_id = quantize_multiplier(d_in / d_out)
        m_alpha, sh_alpha = quantize_multiplier(d_in * d_alpha / d_out)
        negative = m_alpha < 0
        return replace(p, identity_mult=m_id, identity_shift=sh_id, alpha_shift=sh_alpha,
                       alpha_negative=negative,
                       alpha_mult=int(wrap_int32(-m_alpha)) if negative else m_alpha)
    if op == "HardSwish":
        # why: the installed TFLM's prepare takes the hires scale in float32 (mulss) but
        # widens it before both divisions (divsd), although its source divides floats
        hires_scale = float(np.float32(1.0 / 128.0) * np.float32(qi.s))
        reluish_scale = 3.0 / 32768.0  # exact in float32 and double
        m_out, out_exp = quantize_multiplier(hires_scale / float(np.float32(qo.s)))
        m_relu, relu_exp = quantize_multiplier(hires_scale / reluish_scale)
        if out_exp > 0:  # TFLM's prepare refuses it too
            raise UnsupportedOperatorError(
                f"{node}: int8 HardSwish needs an output scale of at least input scale "
                f"/ 128 (got {qi.s:g} -> {qo.s:g})")
        return replace(p, mult=downscale_multiplier_int16(m_out), out_exp=out_exp,
                       relu_mult=downscale_multiplier_int16(m_relu), relu_exp=relu_exp)
    if dtype is DType.INT16:
        _zero_points(node, qi.zp, qo.zp)
    if op == "Abs":
        m, sh = quantize_multiplier(qi.s / qo.s)
        return replace(p, mult=m, shift=sh,
                       needs_rescale=bool(np.float32(qi.s) != np.float32(qo.s)))
    m, sh = quantize_multiplier(1.0 / (math.sqrt(qi.s) * qo.s))  # Rsqrt
    if sh - RSQRT_SHIFT < -31:
        raise UnsupportedOperatorError(
            f"{node}: Rsqrt scales {qi.s:g} -> {qo.s:g} need a right shift over 31")
    return replace(p, mult=m, shift=sh)


def prepare_unary_math(node: Node, graph: Graph) -> UnaryMathParams:
    """The record of a LeakyRelu, HardSwish, HardSigmoid, Abs, Rsqrt, Neg, Sqrt, Exp or Log
    node (one error for a type TFLite Micro has no kernel for)."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    alpha = float(node.attr("alpha", 0.0) or 0.0) if node.op in ("LeakyRelu",
                                                                 "HardSigmoid") else 0.0
    beta = float(node.attr("beta", 0.0) or 0.0) if node.op == "HardSigmoid" else 0.0
    base = UnaryMathParams(node.op, x.dtype, alpha, beta)
    if x.dtype is DType.FLOAT32:
        return base
    if y.dtype is not x.dtype:
        raise UnsupportedOperatorError(
            f"{node}: {node.op} from {x.dtype.value} to {y.dtype.value} is not "
            "supported (input and output types must match)")
    lo, hi = type_range(x.dtype)
    p = _quantized(node, graph, replace(base, act_min=lo, act_max=hi))
    if x.dtype is DType.INT8:
        p = replace(p, table=unary_int(p, INT8_VALUES).astype(np.int8))
    return p


def _hard_swish(p: UnaryMathParams, x: npt.NDArray[np.int64]) -> np.ndarray:
    hires = (x - p.in_zp) * 128  # int16: |x - zp| <= 255
    on_output_scale = srdhm_int16(hires, p.mult)
    # the "reluish" factor: x rescaled so that 3.0 is 32768, saturating
    reluish = hires
    if p.relu_exp > 0:
        # shift all but the last bit first, so that saturation there cannot matter
        reluish = saturating_left_shift_int16(reluish, p.relu_exp - 1)
    reluish = srdhm_int16(reluish, p.relu_mult)
    if p.relu_exp > 0:
        reluish = saturating_left_shift_int16(reluish, 1)
    if p.relu_exp < 0:
        reluish = rounding_divide_by_pot_int16(reluish, -p.relu_exp)
    reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1] in Q0.15
    y = sdhm_int16(reluish, on_output_scale)
    y = rounding_divide_by_pot_int16(y, -p.out_exp)
    return np.asarray(wrap_int16(y + p.out_zp))  # why wrap: the C++ adds in an int16_t


def unary_int(p: UnaryMathParams, x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The quantized arithmetic on int64 values, clamped to the element type."""
    if p.op == "LeakyRelu":
        v = x - p.in_zp
        identity = multiply_by_quantized_multiplier(v, p.identity_mult, p.identity_shift)
        scaled = multiply_by_quantized_multiplier(v, p.alpha_mult, p.alpha_shift)
        if p.alpha_negative:
            scaled = -scaled
        y = p.out_zp + np.where(v >= 0, identity, scaled)
    elif p.op == "HardSwish":
        y = _hard_swish(p, x)
    elif p.op == "Abs" and p.plain:
        y = wrap_int16(np.abs(x))  # why wrap: abs(-32768) stored in an int16_t
    elif p.op == "Abs":
        y = np.abs(x - p.in_zp)
        if p.needs_rescale:
            y = multiply_by_quantized_multiplier(y, p.mult, p.shift)
        y = y + p.out_zp
    elif p.op == "Rsqrt":
        v = x - p.in_zp
        m, sh = inv_sqrt_multiplier_exp(np.maximum(v, 0))
        data = multiply_by_quantized_multiplier(1, m, sh + RSQRT_SHIFT)
        y = multiply_by_quantized_multiplier(data, p.mult, p.shift - RSQRT_SHIFT) + p.out_zp
        y = np.where(v <= 0, p.act_max, y)
    else:
        raise ValueError(f"no integer arithmetic for {p.op}")
    return np.clip(np.asarray(y, dtype=np.int64), p.act_min, p.act_max)
