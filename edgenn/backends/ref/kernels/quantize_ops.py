"""Quantize (float32 -> int8 / int16, requantization between int8, int16 and int32) and
Dequantize (int8 / int16 -> float32), as TFLite Micro's QUANTIZE and DEQUANTIZE.

* float -> int is ``AffineQuantize``: ``round(x / scale) + zp`` with the division in float32
  and ``round`` half away from zero, clamped to the output type;
* int -> int (int8 -> int8, int8 -> int16, int16 -> int8, int16 -> int16, int8 -> uint8,
  and with int32: int32 -> int8, int32 -> int16, int8 -> int32, int16 -> int32; the pairs
  TFLite Micro's prepare accepts) is ``Requantize``:
  ``MultiplyByQuantizedMultiplier(x - zp_in)`` with the multiplier of ``in_scale /
  out_scale`` (double), ``+ zp_out``, clamped to the output type;
* Dequantize is ``float(double(scale) * (x - zp))``.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import type_range
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.quantize import prepare_dequantize, prepare_quantize


def round_half_away_array(v: np.ndarray) -> np.ndarray:
    """Elementwise C ``round`` (numpy's ``round`` goes to even); exact for float32/float64."""
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0)


def affine_quantize(x: np.ndarray, scale: float, zero_point: int,
                    dtype: DType = DType.INT8) -> np.ndarray:
    """TFLM's float -> int8 (or int16) quantization of an array."""
    q = x.astype(np.float32, copy=False) / np.float32(scale)  # float32 division, as the C++
    r = round_half_away_array(q.astype(np.float64))
    r = np.clip(np.nan_to_num(r), -(2.0**31), 2.0**31 - 1).astype(np.int64) + zero_point
    return np.clip(r, *type_range(dtype)).astype(dtype.numpy)


@register("Quantize", DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32)
class Quantize(Layer):
    def build(self) -> None:
        self.p = prepare_quantize(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        if p.from_float:
            return [affine_quantize(x, p.out_scale, p.out_zp, p.out_dtype)]
        return [x.copy() if p.requant is None else p.requant(x)]


@register("Dequantize", DType.INT8, DType.INT16)
class Dequantize(Layer):
    def build(self) -> None:
        self.p = prepare_dequantize(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        v = xs[0].astype(np.float64) - self.p.in_zp
        return [(v * self.p.in_scale).astype(np.float32)]
