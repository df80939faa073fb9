"""Conv and pooling: layout-sensitive operators, always computed on NHWC tensors."""

from __future__ import annotations

from collections.abc import Sequence

from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.ir import Activation
from edgenn.ir.padding import SAME, pad_1d

Pads = tuple[int, int, int, int]


def spatial_pads(ctx: Context, in_hw: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> Pads:
    """(top, left, bottom, right) from ``pads`` / ``auto_pad``."""
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        p = [int(v) for v in ctx.attr("pads", [0, 0, 0, 0])]
        if len(p) != 4 or min(p) < 0:
            raise ctx.malformed(f"pads {p} do not describe a 2-D window")
        return p[0], p[1], p[2], p[3]
    if auto == "VALID":
        return 0, 0, 0, 0
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(f"auto_pad {auto!r} is not supported")
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations, strict=True):
        small, big = pad_1d(SAME, size, k, s, d)
        # SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the beginning
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin[0], begin[1], end[0], end[1]


def _spatial_input(ctx: Context, name: str, what: str) -> tuple[int, int]:
    shape = ctx.onnx_shape(name)
    if len(shape) != 4:
        raise ctx.fail(f"only 2-D {what} is supported (input {name!r} has rank {len(shape)})")
    return shape[2], shape[3]


@converter("Conv")
def convert_conv(ctx: Context, node: NodeProto) -> None:
    x, w_name = ctx.need(0), ctx.need(1)
    in_hw = _spatial_input(ctx, x, "convolution")
    w = ctx.const(w_name)  # ONNX weights [Co, Ci/group, KH, KW]
    if w.data.ndim != 4:
        raise ctx.malformed(f"weight {w_name!r} has shape {list(w.data.shape)}")
    kernel = w.data.shape[2:]
    strides = tuple(ctx.attr("strides", (1, 1)))
    dilations = tuple(ctx.attr("dilations", (1, 1)))
    pads = spatial_pads(ctx, in_hw, kernel, strides, dilations)
    wt = w.transpose((0, 2, 3, 1))  # -> [Co, KH, KW, Ci/group]; per-channel axis stays 0
    inputs = [ctx.nhwc(x), ctx.new_const(w_name, wt.data, wt.quant)]
    b_name = ctx.input(2)
    if b_name is not None:
        b = ctx.const(b_name)
        inputs.append(ctx.new_const(b_name, b.data.reshape(-1), b.quant))
    attrs = {
        "strides": strides,
        "dilations": dilations,
        "pads": pads,
        "groups": int(ctx.attr("group", 1)),
        "activation": Activation.NONE,
    }
    ctx.emit("Conv2D", inputs, attrs, out=ctx.output(), nhwc=True)


def _pool_pads(ctx: Context, in_hw: tuple[int, int], kernel: Sequence[int],
               strides: Sequence[int]) -> Pads:
    pads = spatial_pads(ctx, in_hw, kernel, strides, (1, 1))
    if not ctx.attr("ceil_mode", 0):
        return pads
    # ceil_mode: extend the end padding so the last partial window exists, but never start
    # a window in the end padding (onnxruntime and PyTorch drop such a window)
    extra = []
    for i in range(2):
        size, k, s = in_hw[i], kernel[i], strides[i]
        span = size + pads[i] + pads[i + 2] - k
        out = -(-span // s) + 1
        if (out - 1) * s >= size + pads[i]:
            out -= 1
        extra.append(max((out - 1) * s + k - (size + pads[i] + pads[i + 2]), 0))
    return pads[0], pads[1], pads[2] + extra[0], pads[3] + extra[1]


def _pool_attrs(ctx: Context, x: str) -> dict[str, object]:
    in_hw = _spatial_input(ctx, x, "pooling")
    kernel = tuple(int(k) for k in ctx.attr("kernel_shape"))
    strides = tuple(int(s) for s in ctx.attr("strides", (1, 1)))
    if any(d != 1 for d in ctx.attr("dilations", (1, 1))):
        raise ctx.fail("dilated pooling is not supported")
    return {
        "kernel": kernel,
        "strides": strides,
        "pads": _pool_pads(ctx, in_hw, kernel, strides),
        "activation": Activation.NONE,
    }


@converter("MaxPool")
def convert_maxpool(ctx: Context, node: NodeProto) -> None:
    if len(node.output) > 1 and node.output[1] and ctx.consumers.get(node.output[1]):
        raise ctx.fail("MaxPool indices output is not supported")
    x = ctx.need(0)
    ctx.emit("MaxPool2D", [ctx.nhwc(x)], _pool_attrs(ctx, x), out=ctx.output(), nhwc=True)


@converter("AveragePool")
def convert_avgpool(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    attrs = _pool_attrs(ctx, x)
    include = bool(ctx.attr("count_include_pad", 0))
    if include and ctx.attr("ceil_mode", 0):
        raise ctx.fail("AveragePool with ceil_mode and count_include_pad is not supported")
    attrs["count_include_pad"] = include
    ctx.emit("AvgPool2D", [ctx.nhwc(x)], attrs, out=ctx.output(), nhwc=True)


@converter("GlobalAveragePool")
def convert_gap(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    _spatial_input(ctx, x, "global pooling")
    ctx.emit("Mean", [ctx.nhwc(x)], {"axes": (1, 2), "keepdims": True},
             out=ctx.output(), nhwc=True)


@converter("GlobalMaxPool")
def convert_gmp(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    h, w = _spatial_input(ctx, x, "global pooling")
    attrs = {"kernel": (h, w), "strides": (1, 1), "pads": (0, 0, 0, 0),
             "activation": Activation.NONE}
    ctx.emit("MaxPool2D", [ctx.nhwc(x)], attrs, out=ctx.output(), nhwc=True)
