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

import math
from dataclasses import dataclass

import numpy as np

from edgenn.backends.ref.kernels.fixed_point import round_half_away
from edgenn.backends.ref.kernels.quantized_types import moved_output_requant
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

F = np.float32


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return F(in_size - 1) / F(out_size - 1)
    return F(in_size) / F(out_size)


def nearest_indices(in_size: int, out_size: int, align_corners: bool,
                    half_pixel_centers: bool) -> np.ndarray:
    """Source index of every output index (TFLM ``GetNearestNeighbor``, float32)."""
    scale = _scale(in_size, out_size, align_corners)
    offset = F(0.5) if half_pixel_centers else F(0.0)
    out = []
    for i in range(out_size):
        v = float((F(i) + offset) * scale)
        idx = int(round_half_away(v)) if align_corners else math.floor(v)
        idx = min(idx, in_size - 1)
        out.append(max(0, idx) if half_pixel_centers else idx)
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class Taps:
    """Bilinear taps of one axis: lower / upper source index, and the weights."""

    lo: np.ndarray
    hi: np.ndarray
    w_lo: np.ndarray  # float32 (1 - frac) or int64 (1024 - frac_10)
    w_hi: np.ndarray


def float_taps(in_size: int, out_size: int, align_corners: bool,
               half_pixel_centers: bool) -> Taps:
    """TFLM ``ComputeInterpolationValues`` in float32."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size).astype(F)
    v = (i + F(0.5)) * scale - F(0.5) if half_pixel_centers else i * scale
    lo = np.maximum(np.floor(v).astype(np.int64), 0)
    hi = np.minimum(np.ceil(v).astype(np.int64), in_size - 1)
    frac = (v - lo.astype(F)).astype(F)
    return Taps(lo, hi, (F(1) - frac).astype(F), frac)


def _c_div(a: np.ndarray, b: int) -> np.ndarray:
    """C's integer division (truncates toward zero)."""
    return np.where(a >= 0, a // b, -((-a) // b))


def integer_taps(in_size: int, out_size: int, align_corners: bool,
                 half_pixel_centers: bool) -> Taps:
    """TFLM ``ComputeInterpolationValuesInteger``: positions with 10 fractional bits."""
    if align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = ((1 << 10) * in_size + out_size // 2) // out_size
    i = np.arange(out_size, dtype=np.int64)
    v = i * scale + scale // 2 - (1 << 9) if half_pixel_centers else i * scale
    lo = np.maximum(_c_div(v, 1 << 10), 0)
    hi = np.minimum(_c_div(v + (1 << 10) - 1, 1 << 10), in_size - 1)
    frac = v - (1 << 10) * lo
    return Taps(lo, hi, (1 << 10) - frac, frac)


@register("Resize", DType.FLOAT32, DType.INT8, DType.INT16)
class Resize(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        _, h, w, _ = x.shape
        oh, ow = (int(s) for s in self.node.attr("size"))
        self.mode = self.node.attr("mode")
        self.dtype = x.dtype
        args = (bool(self.node.attr("align_corners", False)),
                bool(self.node.attr("half_pixel_centers", False)))
        self.requant = moved_output_requant(self)
        if self.mode == "nearest":
            self.rows, self.cols = nearest_indices(h, oh, *args), nearest_indices(w, ow, *args)
            return
        if x.dtype is DType.INT16:
            raise UnsupportedOperatorError(f"{self.node}: bilinear Resize of int16 is not "
                                           "supported (TFLite Micro has no such kernel)")
        taps = float_taps if x.dtype is DType.FLOAT32 else integer_taps
        self.ty, self.tx = taps(h, oh, *args), taps(w, ow, *args)

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
        wy0, wy1 = ty.w_lo[:, None, None], ty.w_hi[:, None, None]
        wx0, wx1 = tx.w_lo[None, :, None], tx.w_hi[None, :, None]
        top, bottom = x[:, ty.lo], x[:, ty.hi]
        # why this association: TFLM's left-to-right float32 expression
        y = (top[:, :, tx.lo] * wy0 * wx0 + bottom[:, :, tx.lo] * wy1 * wx0
             + top[:, :, tx.hi] * wy0 * wx1 + bottom[:, :, tx.hi] * wy1 * wx1)
        return y.astype(np.float32)

    def _bilinear_int(self, x: np.ndarray) -> np.ndarray:
        ty, tx = self.ty, self.tx
        wy0, wy1 = ty.w_lo[:, None, None], ty.w_hi[:, None, None]
        wx0, wx1 = tx.w_lo[None, :, None], tx.w_hi[None, :, None]
        top, bottom = x[:, ty.lo].astype(np.int64), x[:, ty.hi].astype(np.int64)
        acc = (top[:, :, tx.lo] * wy0 * wx0 + bottom[:, :, tx.lo] * wy1 * wx0
               + top[:, :, tx.hi] * wy0 * wx1 + bottom[:, :, tx.hi] * wy1 * wx1)
        # why: the double-rounding build adds +-2**19 and divides truncating toward zero
        rounded = _c_div(acc + np.where(acc > 0, 1 << 19, -(1 << 19)), 1 << 20)
        return rounded.astype(self.dtype.numpy)
