"""Map explicit (top, left, bottom, right) pads onto TFLite's two padding modes.

The arithmetic of a mode is ``edgenn.ir.padding``'s (the importer's too); this module only
recognises which mode, if any, a node's pads are.
"""

from __future__ import annotations

from enum import Enum

from edgenn.ir.padding import SAME, pad_1d
from edgenn.ir.shapes import conv_out_dim

Pads = tuple[int, int, int, int]


class PadMode(Enum):
    VALID = "valid"
    SAME = "same"
    EXPLICIT = "explicit"  # neither: the exporter must insert a PAD op in front


def _trim(size: int, k: int, stride: int, dilation: int, before: int, after: int) -> int:
    eff = (k - 1) * dilation + 1
    out = conv_out_dim(size, k, stride, dilation, before, after)
    needed = (out - 1) * stride + eff - size - before
    return min(after, max(needed, 0))


def trim_pads(
    pads: Pads,
    spatial: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int] = (1, 1),
) -> Pads:
    """Drop trailing padding that no window reaches (e.g. from ONNX ceil_mode or a stride).

    The output shape and every window stay the same, so the result is equivalent.
    """
    pt, pl, pb, pr = (int(p) for p in pads)
    pb = _trim(spatial[0], kernel[0], strides[0], dilations[0], pt, pb)
    pr = _trim(spatial[1], kernel[1], strides[1], dilations[1], pl, pr)
    return pt, pl, pb, pr


def pad_mode(
    pads: Pads,
    spatial: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int] = (1, 1),
) -> PadMode:
    """VALID when all pads are zero, SAME when they equal TFLite's SAME, else EXPLICIT."""
    pt, pl, pb, pr = trim_pads(pads, spatial, kernel, strides, dilations)
    if (pt, pl, pb, pr) == (0, 0, 0, 0):
        return PadMode.VALID
    h = pad_1d(SAME, spatial[0], kernel[0], strides[0], dilations[0])
    w = pad_1d(SAME, spatial[1], kernel[1], strides[1], dilations[1])
    if (pt, pb) == h and (pl, pr) == w:
        return PadMode.SAME
    return PadMode.EXPLICIT
