"""Transposed 2-D convolution (group "conv_transpose").

================  ====================================  =========================================
op                inputs                                attrs
================  ====================================  =========================================
TransposeConv2D   x[N,H,W,Ci], w[Co,KH,KW,Ci/g], b[Co]?  strides, dilations, pads (t,l,b,r),
                                                        output_padding (h,w), groups, activation
================  ====================================  =========================================

Input pixel ``(iy, ix)`` scatters ``x * w[:, ky, kx, :]`` to the output pixel
``(iy * sh + ky * dh - t, ix * sw + kx * dw - l)``; contributions that land outside the
output are dropped. The output is the full scatter cropped by ``pads`` and extended at the
bottom / right by ``output_padding`` rows and columns (which receive only the bias):
``OH = (H - 1) * sh + (KH - 1) * dh + 1 - t - b + output_padding[0]``, likewise ``OW``.
This covers TFLite's TRANSPOSE_CONV (its output shape operand becomes ``pads`` and
``output_padding``) and ONNX's ConvTranspose (NCHW, weights [Ci, Co/g, KH, KW]).

The output has x's type: float32, int8 (per-channel int8 weights, int32 bias) or int16
(TFLite's 16x8 scheme: int8 weights, int64 bias).
"""

from __future__ import annotations

from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, need_rank, register_shape
from edgenn.ir.tensor import Tensor

define_op("TransposeConv2D", "transposed 2-D convolution (NHWC), cropped and extended",
          (F32, I8, I16),
          optional=("strides", "dilations", "pads", "output_padding", "groups", "activation"),
          tflite=("TRANSPOSE_CONV",), onnx=("ConvTranspose",))


def transpose_conv_out_dim(size: int, k: int, stride: int, dilation: int, pad0: int, pad1: int,
                           extra: int) -> int:
    """Output length along one axis (see the module docstring)."""
    return (size - 1) * stride + (k - 1) * dilation + 1 - pad0 - pad1 + extra


def _ints(node: Node, key: str, default: tuple[int, ...], low: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in node.attr(key, default))
    if len(values) != len(default) or min(values) < low:
        raise fail(node, f"{key} {list(values)} must be {len(default)} integers >= {low}")
    return values


@register_shape("TransposeConv2D")
def _transpose_conv2d(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, w = need(node, inputs, 0), need(node, inputs, 1)
    need_rank(node, x, 4)
    need_rank(node, w, 4)
    n, h, wd, ci = x.shape
    co, kh, kw, cig = w.shape
    groups = int(node.attr("groups", 1))
    if groups < 1 or cig * groups != ci or co % groups:
        raise fail(node, f"input channels {ci}, weight {list(w.shape)} and groups {groups} "
                         "do not agree")
    sh, sw = _ints(node, "strides", (1, 1), 1)
    dh, dw = _ints(node, "dilations", (1, 1), 1)
    pt, pl, pb, pr = _ints(node, "pads", (0, 0, 0, 0), 0)
    eh, ew = _ints(node, "output_padding", (0, 0), 0)
    oh = transpose_conv_out_dim(h, kh, sh, dh, pt, pb, eh)
    ow = transpose_conv_out_dim(wd, kw, sw, dw, pl, pr, ew)
    if oh <= 0 or ow <= 0:
        raise fail(node, f"pads {[pt, pl, pb, pr]} crop away the whole output of input "
                         f"{list(x.shape)} and kernel {kh}x{kw}")
    if len(inputs) > 2 and inputs[2] is not None and inputs[2].shape != (co,):
        raise fail(node, f"bias shape {list(inputs[2].shape)} != [{co}]")
    return [((n, oh, ow, co), x.dtype)]
