"""Resize of H and W (NHWC), nearest neighbour or bilinear, bit-exact with TFLite Micro.

Nearest (``GetNearestNeighbor``): the source index of output ``i`` is ``floor((i + offset) *
scale)`` (``round`` with ``align_corners``), ``offset`` 0.5 with ``half_pixel_centers``, in
float32 as TFLM computes it, clamped to the input. Bilinear float32 (``ResizeBilinear``)
interpolates in float32; bilinear int8 (``ResizeBilinearInteger``) uses scales with 10
fractional bits and rounds the 20-bit weighted sum half away from zero.

Both modes move or blend values in the input's quantization; a differently quantized output
is a requantization after the op (as the exporter writes it).
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.resize import c_div
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.resize import prepare_resize

F = np.float32


@register("Resize", DType.FLOAT32, DType.INT8, DType.INT16)
class Resize(Layer):
    def build(self) -> None:
        p = self.p = prepare_resize(self.node, self.graph)
        self.mode, self.dtype, self.requant = p.mode, p.dtype, p.requant
        self.rows, self.cols, self.ty, self.tx = p.rows, p.cols, p.y_taps, p.x_taps

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.mode == "nearest":
            y = x[:, self.rows][:, :, self.cols]
        elif self.dtype is DType.FLOAT32:
            y = self._bilinear_float(x)
        else:
            y = self._bilinear_int(x)
        return [y if self.requant is None else self.requant(y)]

    def _bilinear_float(self, x: np.ndarray) -> np.ndarray:
        ty, tx = self.ty, self.tx
        assert ty is not None and tx is not None
        wy0, wy1 = ty.w_lo[:, None, None], ty.w_hi[:, None, None]
        wx0, wx1 = tx.w_lo[None, :, None], tx.w_hi[None, :, None]
        top, bottom = x[:, ty.lo], x[:, ty.hi]
        # why this association: TFLM's left-to-right float32 expression
        y = (top[:, :, tx.lo] * wy0 * wx0 + bottom[:, :, tx.lo] * wy1 * wx0
             + top[:, :, tx.hi] * wy0 * wx1 + bottom[:, :, tx.hi] * wy1 * wx1)
        return y.astype(np.float32)

    def _bilinear_int(self, x: np.ndarray) -> np.ndarray:
        ty, tx = self.ty, self.tx
        assert ty is not None and tx is not None
        wy0, wy1 = ty.w_lo[:, None, None], ty.w_hi[:, None, None]
        wx0, wx1 = tx.w_lo[None, :, None], tx.w_hi[None, :, None]
        top, bottom = x[:, ty.lo].astype(np.int64), x[:, ty.hi].astype(np.int64)
        acc = (top[:, :, tx.lo] * wy0 * wx0 + bottom[:, :, tx.lo] * wy1 * wx0
               + top[:, :, tx.hi] * wy0 * wx1 + bottom[:, :, tx.hi] * wy1 * wx1)
        # why: the double-rounding build adds +-2**19 and divides truncating toward zero
        rounded = c_div(acc + np.where(acc > 0, 1 << 19, -(1 << 19)), 1 << 20)
        return rounded.astype(self.dtype.numpy)
