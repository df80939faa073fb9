"""The records of Softmax over the last axis as TFLite Micro's prepare computes them: int8 input
(``PreprocessSoftmaxScaling`` and the tabulated gemmlowp exps) and int16 input (``gen_lut``).

int8: the difference to the row maximum is scaled by ``beta * in_scale`` as a Q5.26 value
(multiplier and left shift with 5 integer bits); differences below ``diff_min`` give the
lowest output; because int8 differences take only 256 values, the record tabulates the exp
of each one (``exp_lut`` Q0.31, ``acc_lut`` in the Q12.19 of the sum, indexed by ``-diff``).
The output is int8 (scale 1/256, zero point -128) or int16 (1/65536, -32768).

int16 (``SoftmaxInt16``): two 513-entry int16 tables with linear interpolation, ``exp`` on
[-10, 0] and ``1 / (1 + x)`` on [0, 1] (TFLM's ``gen_lut``: float32 arithmetic, ``roundf``,
the midpoint-error bias; they do not depend on any scale), and the input rescale so that
[-65535, 0] covers [-10, 0]. The output must have scale 1/32768 and zero point 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    exp_on_negative_values,
    multiply_by_quantized_multiplier_gt_one,
    quantize_multiplier,
    rescale,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12
# output type -> (zero point, scale) TFLM requires of an int8-input softmax
OUTPUT_PARAMS = {DType.INT8: (-128, 1.0 / 256), DType.INT16: (-32768, 1.0 / 65536)}


def softmax_input_scaling(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, diff_min) as TFLM's softmax prepare computes them."""
    real = min(beta * input_scale * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    mult, left_shift = quantize_multiplier(real)
    if left_shift < 0:
        raise UnsupportedOperatorError(
            f"softmax beta * input scale = {beta * input_scale!r} is too small for int8"
        )
    radius = (
        1.0
        * ((1 << SCALED_DIFF_INTEGER_BITS) - 1)
        * (1 << (31 - SCALED_DIFF_INTEGER_BITS))
        / (1 << left_shift)
    )
    diff_min = -math.floor(radius)
    return mult, left_shift, diff_min


@dataclass(frozen=True)
class SoftmaxParams:
    """An int8-input Softmax: ``out_dtype`` int8 or int16 (``out_bits``, its range
    ``act_min`` / ``act_max``), the input scaling and the per-difference tables."""

    beta: float
    out_dtype: DType
    out_bits: int
    act_min: int
    act_max: int
    mult: int
    left_shift: int
    diff_min: int
    exp_lut: np.ndarray
    acc_lut: np.ndarray
    valid_lut: np.ndarray


def softmax_beta(node: Node) -> float:
    return float(node.attr("beta", 1.0))


def prepare_softmax(node: Node, graph: Graph) -> SoftmaxParams:
    """The record of a Softmax node with int8 input."""
    beta = softmax_beta(node)
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    qi = per_tensor(node, x, "input")
    if y.dtype not in OUTPUT_PARAMS:
        raise UnsupportedOperatorError(
            f"{node}: int8 softmax gives int8 or int16, not {y.dtype.value}")
    qo = per_tensor(node, y, "output")
    zp, scale = OUTPUT_PARAMS[y.dtype]
    if qo.zp != zp or abs(qo.s - scale) > 0.001 * scale:  # TFLM's tolerance
        raise UnsupportedOperatorError(
            f"{node}: an int8 softmax's {y.dtype.value} output must have scale "
            f"1/{round(1 / scale)} and zero point {zp}, got {qo!r}")
    mult, left_shift, diff_min = softmax_input_scaling(beta, qi.s)
    diffs = -np.arange(256, dtype=np.int64)  # diff = x - max, in [-255, 0]
    scaled = multiply_by_quantized_multiplier_gt_one(diffs, mult, left_shift)
    exps = exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
    valid = diffs >= diff_min
    return SoftmaxParams(beta, y.dtype, 8 * y.dtype.itemsize, zp, -zp - 1, mult, left_shift,
                         diff_min, np.where(valid, exps, 0),
                         np.where(valid, rescale(exps, 0, ACCUMULATION_INTEGER_BITS), 0), valid)


# -- int16 input -----------------------------------------------------------------------------
LUT_SIZE = 513  # 512 entries indexed by the top 9 bits, one more for the last slope
OUTPUT_SCALE = 1.0 / 32768
_F = np.float32


def _roundf(v: np.float32) -> np.float32:
    """C's ``roundf``: halves away from zero (``v - trunc(v)`` is exact in float32)."""
    t = _F(math.trunc(float(v)))
    if abs(float(v) - float(t)) >= 0.5:
        t = _F(t + _F(math.copysign(1.0, float(v))))
    return t


def gen_lut(func: Callable[[np.float32], np.float32], input_min: float, input_max: float,
            output_min: float, output_max: float) -> npt.NDArray[np.int16]:
    """TFLM's ``gen_lut<float, int16_t, int16_t>``: a 513-entry table of ``func``.

    Entry ``i`` is ``func`` at the i-th of 512 steps, scaled to int16 and lowered by half the
    error the linear interpolation would make at the step's midpoint; every operation is in
    float32, in the C++ order.
    """
    lo, hi = _F(input_min), _F(input_max)
    step = (hi - lo) / _F(512)
    half_step = step / _F(2)
    scaling = _F(65536) / (_F(output_max) - _F(output_min))
    t_min, t_max = _F(-32768), _F(32767)
    lut = np.empty(LUT_SIZE, np.int16)
    for i in range(512):
        val = func(lo + _F(i) * step)
        val_mid = func(lo + _F(i) * step + half_step)
        val_next = func(lo + _F(i + 1) * step)
        sample = _roundf(val * scaling)
        interp_mid = _roundf((val_next * scaling + _roundf(val * scaling)) / _F(2))
        bias = _roundf((interp_mid - _roundf(val_mid * scaling)) / _F(2))
        lut[i] = int(min(max(sample - bias, t_min), t_max))
    lut[512] = int(min(max(_roundf(func(hi) * scaling), t_min), t_max))
    return lut


def _expf(v: np.float32) -> np.float32:
    # why: exp in double rounded once to float32 gives the same table as glibc's expf here
    # (numpy's float32 exp is less accurate and can differ in the last bit)
    return _F(math.exp(float(v)))


def _one_over_one_plus(v: np.float32) -> np.float32:
    return _F(1.0) / (_F(1.0) + v)


@lru_cache(maxsize=1)
def softmax_luts() -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """(exp on [-10, 0], 1 / (1 + x) on [0, 1]), both scaled to [-1, 1] -> int16."""
    exp_lut = gen_lut(_expf, -10.0, 0.0, -1.0, 1.0)
    recip_lut = gen_lut(_one_over_one_plus, 0.0, 1.0, -1.0, 1.0)
    exp_lut.flags.writeable = False
    recip_lut.flags.writeable = False
    return exp_lut, recip_lut


def softmax_s16_scaling(beta: float, input_scale: float) -> tuple[int, int]:
    """(input_multiplier, input_shift) so that an input difference of -65535 means -10."""
    return quantize_multiplier(float(input_scale) * float(beta) / (10.0 / 65535.0))


@dataclass(frozen=True)
class SoftmaxS16Params:
    """An int16 Softmax: the input rescale (``mult`` / ``shift``) and TFLM's two tables."""

    beta: float
    mult: int
    shift: int
    exp_lut: npt.NDArray[np.int16]
    recip_lut: npt.NDArray[np.int16]


def prepare_softmax_s16(node: Node, graph: Graph) -> SoftmaxS16Params:
    """The record of a Softmax node with int16 input."""
    beta = softmax_beta(node)
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    if y.dtype is not DType.INT16:
        raise UnsupportedOperatorError(f"{node}: int16 softmax gives int16, not {y.dtype.value}")
    qi = per_tensor(node, x, "input")
    qo = per_tensor(node, y, "output")
    # why: TFLM's check (TF_LITE_ENSURE_NEAR on the float32 scale)
    if qo.zp != 0 or abs(qo.s - OUTPUT_SCALE) > 0.001 * OUTPUT_SCALE:
        raise UnsupportedOperatorError(
            f"{node}: int16 softmax output must have scale 1/32768 and zero point 0, got {qo!r}")
    depth = x.shape[-1] if x.shape else 1
    if depth * 32767 > 2**31 - 1:  # the Q16.15 sum of exps is an int32
        raise UnsupportedOperatorError(f"{node}: {depth} classes overflow the sum")
    mult, shift = softmax_s16_scaling(beta, qi.s)
    exp_lut, recip_lut = softmax_luts()
    return SoftmaxS16Params(beta, mult, shift, exp_lut, recip_lut)
