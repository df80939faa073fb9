"""Softmax over the last axis, float32 and int8 -> int8 (or int16) exactly as TFLite Micro.

int8 (``reference_ops::Softmax`` with gemmlowp fixed point): the difference to the row
maximum is scaled by ``beta * in_scale`` as a Q5.26 value (multiplier and left shift from
``PreprocessSoftmaxScaling`` with 5 integer bits), differences below ``diff_min`` give the
lowest output, ``exp`` runs in fixed point, the sum accumulates in Q12.19, and its
reciprocal scales each exp to the output: int8 with scale 1/256 and zero point -128, or
int16 with scale 1/65536 and zero point -32768 (TFLM's int8 -> int16 softmax). Because int8
differences take only 256 values, ``build`` tabulates the exp of each one. int16 input is
``softmax_s16.py``.
"""

from __future__ import annotations

import math

import numpy as np

from edgenn.arith.fixed_point import (
    exp_on_negative_values,
    get_reciprocal,
    multiply_by_quantized_multiplier_gt_one,
    quantize_multiplier,
    rescale,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

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


@register("Softmax", DType.FLOAT32, DType.INT8)
class Softmax(Layer):
    def build(self) -> None:
        self.beta = float(self.node.attr("beta", 1.0))
        x = self.inputs[0]
        assert x is not None
        self.int8 = x.dtype is DType.INT8
        if not self.int8:
            return
        qi = per_tensor(self, x, "input")
        y = self.outputs[0]
        if y.dtype not in OUTPUT_PARAMS:
            raise UnsupportedOperatorError(
                f"{self.node}: int8 softmax gives int8 or int16, not {y.dtype.value}")
        qo = per_tensor(self, y, "output")
        zp, scale = OUTPUT_PARAMS[y.dtype]
        if qo.zp != zp or abs(qo.s - scale) > 0.001 * scale:  # TFLM's tolerance
            raise UnsupportedOperatorError(
                f"{self.node}: an int8 softmax's {y.dtype.value} output must have scale "
                f"1/{round(1 / scale)} and zero point {zp}, got {qo!r}"
            )
        self.out_dtype = y.dtype
        self.out_bits = 8 * y.dtype.itemsize
        self.out_min, self.out_max = zp, -zp - 1  # the type's limits
        mult, left_shift, diff_min = softmax_input_scaling(self.beta, qi.s)
        diffs = -np.arange(256, dtype=np.int64)  # diff = x - max, in [-255, 0]
        scaled = multiply_by_quantized_multiplier_gt_one(diffs, mult, left_shift)
        exps = exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
        valid = diffs >= diff_min
        self.exp_lut = np.where(valid, exps, 0)  # Q0.31, indexed by -diff
        self.acc_lut = np.where(valid, rescale(exps, 0, ACCUMULATION_INTEGER_BITS), 0)
        self.valid_lut = valid

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if not self.int8:
            z = (x - x.max(axis=-1, keepdims=True)) * np.float32(self.beta)
            e = np.exp(z.astype(np.float32))
            return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]
        xi = x.astype(np.int64)
        idx = xi.max(axis=-1, keepdims=True) - xi
        sum_of_exps = self.acc_lut[idx].sum(axis=-1, keepdims=True)
        shifted_scale, num_bits_over_unit = get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS)
        prod = saturating_rounding_doubling_high_mul(shifted_scale, self.exp_lut[idx])
        out = rounding_divide_by_pot(prod, num_bits_over_unit + 31 - self.out_bits) + self.out_min
        out = np.where(self.valid_lut[idx], np.clip(out, self.out_min, self.out_max), self.out_min)
        return [out.astype(self.out_dtype.numpy)]
