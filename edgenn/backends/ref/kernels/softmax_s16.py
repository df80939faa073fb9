"""int16 Softmax over the last axis, exactly as TFLite Micro's ``SoftmaxInt16``.

TFLM does not use gemmlowp here but two 513-entry int16 lookup tables with linear
interpolation (``LUTLookup``: the high 9 bits of the int16 input pick an entry, the low 7
interpolate towards the next one):

* ``exp`` on [-10, 0]: the difference to the row maximum is rescaled so that
  [-65535, 0] covers [-10, 0] (multiplier and shift of ``in_scale * beta / (10 / 65535)``),
  recentred to [-32768, 32767] and looked up, giving exp as Q0.15;
* ``1 / (1 + x)`` on [0, 1]: the Q16.15 sum of the exps is normalised by its leading zeros
  to [1, 2), recentred and looked up, giving the reciprocal as Q0.15;
* each exp times the reciprocal, shifted back by the normalisation with rounding, clamped to
  [0, 32767]. The output must have scale 1/32768 and zero point 0.

The tables are TFLM's ``gen_lut`` (float32 arithmetic, ``roundf``, the midpoint-error bias)
and do not depend on any scale: the record of ``edgenn.prepared.softmax`` builds them once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import count_leading_zeros32, multiply_by_quantized_multiplier
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.softmax import prepare_softmax_s16


def lut_lookup(value: npt.NDArray[np.int64], lut: npt.NDArray[np.int16]) -> npt.NDArray[np.int64]:
    """TFLM's int16 ``LUTLookup`` with interpolation; ``value`` holds int16 values."""
    table = lut.astype(np.int64)
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = table[index]
    slope = table[index + 1] - base
    return base + ((slope * offset + 64) >> 7)


@register("Softmax", DType.INT16)
class SoftmaxS16(Layer):
    def build(self) -> None:
        p = prepare_softmax_s16(self.node, self.graph)
        self.beta, self.multiplier, self.shift = p.beta, p.mult, p.shift
        self.exp_lut, self.recip_lut = p.exp_lut, p.recip_lut

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0].astype(np.int64)
        diff = x - x.max(axis=-1, keepdims=True)
        scaled = multiply_by_quantized_multiplier(diff, self.multiplier, self.shift)
        exps = lut_lookup(np.clip(scaled + 32767, -32768, 32767), self.exp_lut)  # Q0.15
        sum_of_exps = exps.sum(axis=-1, keepdims=True)  # Q16.15
        headroom_plus_one = count_leading_zeros32(sum_of_exps)
        # normalise the sum to [1, 2) in Q1.16 (rounded), then x = sum - 1 recentred
        shifted_sum = ((sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        sym = np.clip(shifted_sum - ((1 << 15) + (1 << 16)), -32768, 32767)
        reciprocal = lut_lookup(sym, self.recip_lut)  # Q0.15
        right_shift = 31 - headroom_plus_one
        rounding = np.int64(1) << (right_shift - 1)
        out = (exps * reciprocal + rounding) >> right_shift
        return [np.clip(out, 0, 32767).astype(np.int16)]
