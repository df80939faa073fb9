"""Softmax, normalisation, reductions and the operators that vanish (Identity, Dropout, a
Cast to the type a tensor has)."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, helper

from edgenn.frontends.onnx.constfold import fold
from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import NCHW_TO_NHWC, NHWC_TO_NCHW, nchw_axis_to_nhwc
from edgenn.ir import DType


@converter("Constant")
def convert_constant(ctx: Context, node: NodeProto) -> None:
    fold(ctx, node)


@converter("Identity", "Dropout")
def convert_identity(ctx: Context, node: NodeProto) -> None:
    if len(node.output) > 1 and node.output[1] and ctx.consumers.get(node.output[1]):
        raise ctx.fail("Dropout mask output is not supported")
    ctx.alias(ctx.output(), ctx.need(0))


@converter("Cast")
def convert_cast(ctx: Context, node: NodeProto) -> None:
    """A Cast to the type the tensor already has is the identity (exporters write such
    casts, e.g. a float32 -> float32 Cast in an STFT front end); others are refused."""
    x = ctx.need(0)
    have = ctx.ir_tensor(x).dtype
    try:
        want = DType.from_numpy(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to", 0))))
    except (KeyError, ValueError, TypeError):
        want = None
    if want is not have:
        target = want.value if want is not None else f"ONNX type {ctx.attr('to', 0)}"
        raise ctx.fail(f"Cast from {have.value} to {target} is not supported")
    ctx.alias(ctx.output(), x)


@converter("Softmax")
def convert_softmax(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    rank = len(shape)
    axis = int(ctx.attr("axis", 1 if ctx.opset < 13 else -1)) % rank
    out = ctx.output()
    if ctx.opset < 13 and any(d != 1 for d in shape[axis + 1:]):
        # opset < 13: softmax over all axes from ``axis`` on, as a 2-D [outer, inner] array
        flat = (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
        r = ctx.emit("Reshape", [ctx.onnx_order(x)], {"shape": flat}, hint=x + ":2d")
        s = ctx.emit("Softmax", [r], {"beta": 1.0}, hint=out + ":2d")
        ctx.emit("Reshape", [s], {"shape": shape}, out=out)
        return
    v = ctx.value(x)
    if v.channels_last and axis == 1:  # the channel axis is the IR's last one
        ctx.emit("Softmax", [v.ir], {"beta": 1.0}, out=out, nhwc=v.nhwc, ncl=v.ncl)
        return
    xo = ctx.onnx_order(x)
    if axis == rank - 1:
        ctx.emit("Softmax", [xo], {"beta": 1.0}, out=out)
        return
    perm = tuple(i for i in range(rank) if i != axis) + (axis,)
    t = ctx.emit("Transpose", [xo], {"perm": perm}, hint=x + ":axis_last")
    s = ctx.emit("Softmax", [t], {"beta": 1.0}, hint=out + ":axis_last")
    ctx.emit("Transpose", [s], {"perm": tuple(int(i) for i in np.argsort(perm))}, out=out)


@converter("BatchNormalization")
def convert_batchnorm(ctx: Context, node: NodeProto) -> None:
    if ctx.quantized:
        raise ctx.fail("int8 BatchNormalization is not supported (fold it before quantizing)")
    if any(o and ctx.consumers.get(o) for o in node.output[1:]):
        raise ctx.fail("BatchNormalization in training mode is not supported")
    x = ctx.need(0)
    rank = ctx.rank(x)
    if rank == 4:
        x_ir, nhwc = ctx.nhwc(x), True
    elif rank == 2:
        x_ir, nhwc = ctx.onnx_order(x), False
    else:
        raise ctx.fail(f"BatchNormalization of a rank-{rank} tensor is not supported")
    params = [ctx.new_const(ctx.need(i), ctx.const_array(ctx.need(i)).reshape(-1))
              for i in range(1, 5)]
    eps = float(ctx.attr("epsilon", 1e-5))
    ctx.emit("BatchNorm", [x_ir, *params], {"epsilon": eps}, out=ctx.output(), nhwc=nhwc)


@converter("LRN")
def convert_lrn(ctx: Context, node: NodeProto) -> None:
    size = int(ctx.attr("size"))
    if size % 2 == 0:
        raise ctx.fail(f"LRN with an even size ({size}) is not supported")
    # ONNX divides alpha by size and sums over size channels; TFLite sums over
    # 2 * radius + 1 channels with alpha applied as is
    attrs = {
        "radius": (size - 1) // 2,
        "bias": float(ctx.attr("bias", 1.0)),
        "alpha": float(ctx.attr("alpha", 1e-4)) / size,
        "beta": float(ctx.attr("beta", 0.75)),
    }
    ctx.emit("LRN", [ctx.nhwc(ctx.need(0))], attrs, out=ctx.output(), nhwc=True)


@converter("ReduceMean")
def convert_reduce_mean(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    rank = len(shape)
    if ctx.opset >= 18 and ctx.input(1) is not None:
        axes = [int(a) for a in ctx.const_array(ctx.need(1)).reshape(-1)]
    else:
        axes = [int(a) for a in ctx.attr("axes", [])]
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            ctx.alias(ctx.output(), x)
            return
        axes = list(range(rank))
    axes = sorted({a % rank for a in axes})
    keep = bool(ctx.attr("keepdims", 1))
    out = ctx.output()
    v = ctx.act(x)
    if not v.nhwc:
        ctx.emit("Mean", [v.ir], {"axes": tuple(axes), "keepdims": keep}, out=out)
        return
    ir_axes = tuple(sorted(nchw_axis_to_nhwc(a) for a in axes))
    kept_nhwc = [p for p in NCHW_TO_NHWC if p not in axes]
    kept_onnx = [a for a in range(4) if a not in axes]
    if keep or kept_nhwc == kept_onnx:
        ctx.emit("Mean", [v.ir], {"axes": ir_axes, "keepdims": keep}, out=out, nhwc=keep)
        return
    # the kept axes come out in a different order: reduce with keepdims, go back to ONNX
    # order, then drop the reduced axes
    m = ctx.emit("Mean", [v.ir], {"axes": ir_axes, "keepdims": True}, hint=out + ":keep")
    t = ctx.emit("Transpose", [m], {"perm": NHWC_TO_NCHW}, hint=out + ":nchw")
    ctx.emit("Reshape", [t], {"shape": tuple(shape[a] for a in kept_onnx)}, out=out)
