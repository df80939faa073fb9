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

from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.kernels.quantized_types import QUANTIZED, Requant, type_range
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


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


# why these pairs: QUANTIZE's prepare in TFLite Micro (quantize_common.cc) refuses the others
_REQUANTIZED = {(DType.INT8, DType.INT8), (DType.INT8, DType.INT16), (DType.INT8, DType.INT32),
                (DType.INT16, DType.INT8), (DType.INT16, DType.INT16),
                (DType.INT16, DType.INT32), (DType.INT32, DType.INT8),
                (DType.INT32, DType.INT16), (DType.INT8, DType.UINT8)}


@register("Quantize", DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32)
class Quantize(Layer):
    def build(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        assert x is not None
        pair = (x.dtype, y.dtype)
        if (x.dtype is DType.FLOAT32 and y.dtype not in QUANTIZED) or (
                x.dtype is not DType.FLOAT32 and pair not in _REQUANTIZED):
            raise UnsupportedOperatorError(f"{self.node}: QUANTIZE from {x.dtype.value} to "
                                           f"{y.dtype.value} is not supported (TFLite Micro "
                                           "has no kernel for it)")
        qo = per_tensor(self, y, "output")
        self.out_dtype = y.dtype
        self.scale, self.zp_out = qo.s, qo.zp
        self.in_dtype = x.dtype
        self.from_float = x.dtype is DType.FLOAT32
        self.from_int8 = x.dtype is DType.INT8  # int8 -> int8 (the Cortex-M int8 kernel)
        self.requant: Requant | None = None
        if not self.from_float:
            self.requant = Requant.between(per_tensor(self, x, "input"), qo, x.dtype, y.dtype)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.from_float:
            return [affine_quantize(x, self.scale, self.zp_out, self.out_dtype)]
        return [x.copy() if self.requant is None else self.requant(x)]


@register("Dequantize", DType.INT8, DType.INT16)
class Dequantize(Layer):
    def build(self) -> None:
        q = per_tensor(self, self.inputs[0], "input")
        self.scale, self.zp = float(q.s), q.zp

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        v = xs[0].astype(np.float64) - self.zp
        return [(v * self.scale).astype(np.float32)]
