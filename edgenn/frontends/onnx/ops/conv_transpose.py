"""ONNX ConvTranspose (2-D, float) to the IR's TransposeConv2D, computed on NHWC tensors.

ONNX weights are [Ci, Co/group, KH, KW]; the IR wants [Co, KH, KW, Ci/group] with group
``g`` mapping input channels ``g*Ci/group ...`` to output channels ``g*Co/group ...``.
The output size is ``stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads``;
with ``output_shape`` (or ``auto_pad`` SAME_*, output ``in * stride``) the pads are derived
from the total as the ONNX specification says: SAME_UPPER puts the odd pixel at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.ir import Activation

Pads = tuple[int, int, int, int]


def _pairs(ctx: Context, key: str, default: int) -> tuple[int, int]:
    values = tuple(int(v) for v in ctx.attr(key, (default, default)))
    if len(values) != 2:
        raise ctx.fail(f"{key} {list(values)}: only 2-D ConvTranspose is supported")
    return values[0], values[1]


def _pads(ctx: Context, in_hw: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
          dilations: Sequence[int], extra: Sequence[int]) -> Pads:
    """(top, left, bottom, right) crops of the full transposed-convolution output."""
    auto = ctx.attr("auto_pad", "NOTSET")
    shape = ctx.attr("output_shape")
    if auto == "VALID":
        return 0, 0, 0, 0
    if auto == "NOTSET" and shape is None:
        p = [int(v) for v in ctx.attr("pads", [0, 0, 0, 0])]
        if len(p) != 4 or min(p) < 0:
            raise ctx.malformed(f"pads {p} do not describe a 2-D window")
        return p[0], p[1], p[2], p[3]
    if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(f"auto_pad {auto!r} is not supported")
    if shape is not None:
        out_hw = [int(v) for v in shape][-2:]
    else:
        out_hw = [size * s for size, s in zip(in_hw, strides, strict=True)]
    begin, end = [], []
    for size, k, s, d, e, out in zip(in_hw, kernel, strides, dilations, extra, out_hw,
                                     strict=True):
        total = s * (size - 1) + e + (k - 1) * d + 1 - out
        if total < 0:
            raise ctx.fail(f"output_shape {out_hw} is larger than the full output")
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin[0], begin[1], end[0], end[1]


@converter("ConvTranspose")
def convert_conv_transpose(ctx: Context, node: NodeProto) -> None:
    if ctx.quantized:
        raise ctx.fail("int8 (QDQ) ConvTranspose is not supported; leave it float")
    x, w_name = ctx.need(0), ctx.need(1)
    shape = ctx.onnx_shape(x)
    if len(shape) != 4:
        raise ctx.fail(f"only 2-D ConvTranspose is supported (input {x!r} has rank "
                       f"{len(shape)})")
    w = ctx.const_array(w_name)
    if w.ndim != 4:
        raise ctx.malformed(f"weight {w_name!r} has shape {list(w.shape)}")
    groups = int(ctx.attr("group", 1))
    ci, cog, kh, kw = w.shape
    if groups < 1 or ci != shape[1] or ci % groups:
        raise ctx.malformed(f"weight {list(w.shape)} does not fit input {list(shape)} with "
                            f"group {groups}")
    strides = _pairs(ctx, "strides", 1)
    dilations = _pairs(ctx, "dilations", 1)
    extra = _pairs(ctx, "output_padding", 0)
    pads = _pads(ctx, shape[2:], (kh, kw), strides, dilations, extra)
    cig = ci // groups
    # [g, Ci/g, Co/g, KH, KW] -> [g, Co/g, KH, KW, Ci/g] -> [Co, KH, KW, Ci/g]
    wt = w.reshape(groups, cig, cog, kh, kw).transpose(0, 2, 3, 4, 1)
    wt = np.ascontiguousarray(wt.reshape(groups * cog, kh, kw, cig).astype(np.float32))
    inputs = [ctx.nhwc(x), ctx.new_const(w_name, wt)]
    b_name = ctx.input(2)
    if b_name is not None:
        b = ctx.const_array(b_name).reshape(-1).astype(np.float32)
        inputs.append(ctx.new_const(b_name, b))
    attrs = {"strides": strides, "dilations": dilations, "pads": pads,
             "output_padding": extra, "groups": groups, "activation": Activation.NONE}
    ctx.emit("TransposeConv2D", inputs, attrs, out=ctx.output(), nhwc=True)
