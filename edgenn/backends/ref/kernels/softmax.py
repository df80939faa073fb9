"""Softmax over the last axis, float32 and int8 -> int8 (or int16) exactly as TFLite Micro.

int8 (``reference_ops::Softmax`` with gemmlowp fixed point): the difference to the row
maximum is scaled by ``beta * in_scale`` as a Q5.26 value (multiplier and left shift from
``PreprocessSoftmaxScaling`` with 5 integer bits), differences below ``diff_min`` give the
lowest output, ``exp`` runs in fixed point, the sum accumulates in Q12.19, and its
reciprocal scales each exp to the output: int8 with scale 1/256 and zero point -128, or
int16 with scale 1/65536 and zero point -32768 (TFLM's int8 -> int16 softmax). Because int8
differences take only 256 values, the record (``edgenn.prepared.softmax``) tabulates the exp
of each one. int16 input is ``softmax_s16.py``.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import (
    get_reciprocal,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.softmax import ACCUMULATION_INTEGER_BITS, prepare_softmax, softmax_beta


@register("Softmax", DType.FLOAT32, DType.INT8)
class Softmax(Layer):
    def build(self) -> None:
        self.beta = softmax_beta(self.node)
        x = self.inputs[0]
        assert x is not None
        self.int8 = x.dtype is DType.INT8
        if self.int8:
            p = self.p = prepare_softmax(self.node, self.graph)
            self.out_dtype, self.out_bits = p.out_dtype, p.out_bits
            self.out_min, self.out_max = p.act_min, p.act_max
            self.exp_lut, self.acc_lut, self.valid_lut = p.exp_lut, p.acc_lut, p.valid_lut

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
