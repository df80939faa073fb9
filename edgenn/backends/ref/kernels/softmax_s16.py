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
and do not depend on any scale, so they are built once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    count_leading_zeros32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

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


def lut_lookup(value: npt.NDArray[np.int64], lut: npt.NDArray[np.int16]) -> npt.NDArray[np.int64]:
    """TFLM's int16 ``LUTLookup`` with interpolation; ``value`` holds int16 values."""
    table = lut.astype(np.int64)
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = table[index]
    slope = table[index + 1] - base
    return base + ((slope * offset + 64) >> 7)


def softmax_s16_scaling(beta: float, input_scale: float) -> tuple[int, int]:
    """(input_multiplier, input_shift) so that an input difference of -65535 means -10."""
    return quantize_multiplier(float(input_scale) * float(beta) / (10.0 / 65535.0))


@register("Softmax", DType.INT16)
class SoftmaxS16(Layer):
    def build(self) -> None:
        self.beta = float(self.node.attr("beta", 1.0))
        x, y = self.inputs[0], self.outputs[0]
        assert x is not None
        if y.dtype is not DType.INT16:
            raise UnsupportedOperatorError(
                f"{self.node}: int16 softmax gives int16, not {y.dtype.value}")
        qi = per_tensor(self, x, "input")
        qo = per_tensor(self, y, "output")
        # why: TFLM's check (TF_LITE_ENSURE_NEAR on the float32 scale)
        if qo.zp != 0 or abs(qo.s - OUTPUT_SCALE) > 0.001 * OUTPUT_SCALE:
            raise UnsupportedOperatorError(
                f"{self.node}: int16 softmax output must have scale 1/32768 and zero point 0, "
                f"got {qo!r}")
        depth = x.shape[-1] if x.shape else 1
        if depth * 32767 > 2**31 - 1:  # the Q16.15 sum of exps is an int32
            raise UnsupportedOperatorError(f"{self.node}: {depth} classes overflow the sum")
        self.multiplier, self.shift = softmax_s16_scaling(self.beta, qi.s)
        self.exp_lut, self.recip_lut = softmax_luts()

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
