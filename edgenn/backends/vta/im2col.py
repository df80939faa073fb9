"""im2col on the host: NHWC int8 activations -> the A matrix of a convolution's GEMM.

DarkNet's way of putting convolutions on a GEMM engine (and the ZCU102 GEMM
study's, docs/references.md): every output pixel
becomes one row of ``KH * KW * Cin`` input values, in the same (kh, kw, cin) order as a row of
the ``[Cout, KH, KW, Cin]`` weights, so ``conv = im2col(x) @ weights.reshape(Cout, -1).T``.
Out-of-image taps are filled with the input zero point, as TFLite's optimized kernels do:
``(zp - zp) * w = 0`` once the zero point is folded into the bias (see ``conv.py``), which is
exactly TFLite Micro's reference convolution skipping those taps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.backends.ref.arrays import pad_hw, windows


@dataclass(frozen=True)
class ConvGeometry:
    """Everything im2col needs to know about one Conv2D (NHWC input, batch any)."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    out_hw: tuple[int, int]
    groups: int = 1

    def rows(self, batch: int) -> int:
        """M of the GEMM: one row per output pixel of every image in the batch."""
        return batch * self.out_hw[0] * self.out_hw[1]


def im2col(
    x: npt.NDArray[np.int8], geo: ConvGeometry, pad_value: int, group: int = 0
) -> npt.NDArray[np.int8]:
    """``[N, H, W, C]`` int8 -> ``[N * OH * OW, KH * KW * C / groups]`` int8 (group ``group``).

    Padding is ``pad_value`` (the input zero point); the result is a fresh contiguous array,
    as the accelerator's DMA reads it row by row.
    """
    if geo.groups > 1:
        cig = x.shape[3] // geo.groups
        x = x[..., group * cig : (group + 1) * cig]
    xp = pad_hw(x, geo.pads, np.int8(pad_value))
    win = windows(xp, geo.kernel, geo.strides, geo.dilations, geo.out_hw)
    # why reshape after the copy: the strided window view is not contiguous, so reshape would
    # copy anyway; ascontiguousarray makes that one copy explicit.
    return np.ascontiguousarray(win).reshape(geo.rows(x.shape[0]), -1)
