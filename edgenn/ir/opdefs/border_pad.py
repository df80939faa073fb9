"""BorderPad: padding taken from the tensor's own border, ONNX Pad's ``reflect`` and ``edge``
modes (the constant mode is the IR's ``Pad``).

=========  =====  =====================================================================
op         input  attrs
=========  =====  =====================================================================
BorderPad  x      pads (one (before, after) pair per dimension, non-negative), mode:
                  ``reflect`` (mirrored about the edge element, which is not repeated;
                  each pad shorter than its dimension) or ``edge`` (the edge repeated)
=========  =====  =====================================================================

A separate operator, not a mode of ``Pad``: passes fold a constant ``Pad`` into the padding
of the convolution after it, which is wrong for these.
"""

from __future__ import annotations

from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, I32, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, register_shape
from edgenn.ir.tensor import Tensor

MODES = ("reflect", "edge")

define_op("BorderPad", "padding from the tensor's border (ONNX Pad reflect / edge)",
          (F32, I8, I16, I32), required=("pads", "mode"), onnx=("Pad",))


@register_shape("BorderPad")
def _border_pad(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    pads = [tuple(int(v) for v in p) for p in node.attr("pads")]
    mode = node.attr("mode")
    if mode not in MODES:
        raise fail(node, f"mode {mode!r} is not one of {', '.join(MODES)}")
    if len(pads) != len(x.shape) or any(len(p) != 2 or min(p) < 0 for p in pads):
        raise fail(node, f"pads {pads} do not fit shape {list(x.shape)}")
    if mode == "reflect" and any(max(p) >= d for p, d in zip(pads, x.shape, strict=True)
                                 if max(p) > 0):
        # why: ONNX's reflect mirrors once; a pad as long as its dimension has nothing left
        raise fail(node, f"reflect pads {pads} must be shorter than the dimensions "
                         f"{list(x.shape)}")
    return [(tuple(d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)), x.dtype)]
