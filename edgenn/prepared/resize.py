"""The record of Resize (nearest or bilinear over H and W), TFLite Micro's source tables.

Nearest: the source row and column of each output pixel. Bilinear: the two taps and their
weights per output row and column (float32, or 10 fractional bits for int8). A differently
quantized output is a requantization after the op (``requant``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.resize import Taps, float_taps, integer_taps, nearest_indices
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.requant import Requant, output_requant


@dataclass(frozen=True)
class ResizeParams:
    """``rows`` / ``cols`` for nearest, ``y_taps`` / ``x_taps`` for bilinear (else None)."""

    mode: str
    dtype: DType
    rows: np.ndarray | None
    cols: np.ndarray | None
    y_taps: Taps | None
    x_taps: Taps | None
    requant: Requant | None


def prepare_resize(node: Node, graph: Graph) -> ResizeParams:
    """The record of a Resize node (one error for int16 bilinear, which TFLM lacks)."""
    x = graph.tensor(node.inputs[0])
    _, h, w, _ = x.shape
    oh, ow = (int(s) for s in node.attr("size"))
    mode = node.attr("mode")
    flags = (bool(node.attr("align_corners", False)),
             bool(node.attr("half_pixel_centers", False)))
    requant = output_requant(node, graph)
    if mode == "nearest":
        return ResizeParams(mode, x.dtype, nearest_indices(h, oh, *flags),
                            nearest_indices(w, ow, *flags), None, None, requant)
    if x.dtype is DType.INT16:
        raise UnsupportedOperatorError(f"{node}: bilinear Resize of int16 is not "
                                       "supported (TFLite Micro has no such kernel)")
    taps = float_taps if x.dtype is DType.FLOAT32 else integer_taps
    return ResizeParams(mode, x.dtype, None, None, taps(h, oh, *flags), taps(w, ow, *flags),
                        requant)
