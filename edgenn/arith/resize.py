"""Resize index and weight arithmetic as TFLite Micro computes it (``GetNearestNeighbor``,
``ComputeInterpolationValues`` in float32, ``ComputeInterpolationValuesInteger`` with 10
fractional bits): shared by the reference kernel, the Cortex-M kernel and the ONNX importer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import round_half_away

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


def c_div(a: np.ndarray, b: int) -> np.ndarray:
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
    lo = np.maximum(c_div(v, 1 << 10), 0)
    hi = np.minimum(c_div(v + (1 << 10) - 1, 1 << 10), in_size - 1)
    frac = v - (1 << 10) * lo
    return Taps(lo, hi, (1 << 10) - frac, frac)
