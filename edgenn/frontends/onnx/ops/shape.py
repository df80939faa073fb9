"""Shape operators. Reshape-like ones work in ONNX axis order (an NHWC input is transposed
back first, so the element order is exactly ONNX's); Concat and Pad remap their axes instead
(Concat also keeps 1-D tensors stored [N, 1, L, C] in that layout).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.reshape import resolve_reshape
from edgenn.frontends.onnx.values import NCHW_TO_NHWC, NCL_AXIS_TO_IR, ConstVal, nchw_axis_to_nhwc


def _reshape_to(ctx: Context, x: str, shape: Sequence[int]) -> None:
    ctx.emit("Reshape", [ctx.onnx_order(x)], {"shape": tuple(int(d) for d in shape)},
             out=ctx.output())


def _axes(ctx: Context) -> list[int] | None:
    name = ctx.input(1)
    if name is not None:
        return [int(a) for a in ctx.const_array(name).reshape(-1)]
    axes = ctx.attr("axes")
    return None if axes is None else [int(a) for a in axes]


@converter("Reshape")
def convert_reshape(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    spec_name = ctx.input(1)
    spec = ctx.const_array(spec_name) if spec_name else np.asarray(ctx.attr("shape"))
    _reshape_to(ctx, x, resolve_reshape(ctx, ctx.onnx_shape(x), spec))


@converter("Flatten")
def convert_flatten(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    axis = int(ctx.attr("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    _reshape_to(ctx, x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


@converter("Squeeze")
def convert_squeeze(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    axes = _axes(ctx)
    drop = {i for i, d in enumerate(shape) if d == 1} if axes is None else \
        {a % len(shape) for a in axes}
    if any(shape[a] != 1 for a in drop):
        raise ctx.malformed(f"cannot squeeze axes {sorted(drop)} of shape {list(shape)}")
    _reshape_to(ctx, x, [d for i, d in enumerate(shape) if i not in drop])


@converter("Unsqueeze")
def convert_unsqueeze(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = list(ctx.onnx_shape(x))
    axes = _axes(ctx) or []
    rank = len(shape) + len(axes)
    for a in sorted(a % rank for a in axes):
        shape.insert(a, 1)
    _reshape_to(ctx, x, shape)


@converter("Transpose")
def convert_transpose(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    rank = ctx.rank(x)
    perm = tuple(int(p) for p in ctx.attr("perm", list(range(rank))[::-1]))
    ctx.emit("Transpose", [ctx.onnx_order(x)], {"perm": perm}, out=ctx.output())


@converter("Concat")
def convert_concat(ctx: Context, node: NodeProto) -> None:
    names = [n for n in node.input if n]
    rank = ctx.rank(names[0])
    axis = int(ctx.attr("axis")) % rank
    nhwc = rank == 4 and any(not ctx.is_const(n) and ctx.is_nhwc(n) for n in names)
    ncl = rank == 3 and ctx.elementwise_layout(names)[1]
    inputs = [ctx.operand(n, nhwc, ncl) for n in names]
    ir_axis = nchw_axis_to_nhwc(axis) if nhwc else NCL_AXIS_TO_IR[axis] if ncl else axis
    ctx.emit("Concat", inputs, {"axis": ir_axis}, out=ctx.output(), nhwc=nhwc, ncl=ncl)


@converter("Pad")
def convert_pad(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    mode = ctx.attr("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode("utf-8", "replace")
    if mode not in ("constant", "reflect", "edge"):
        raise ctx.fail(f"Pad mode {mode!r} is not supported (constant, reflect, edge)")
    rank = ctx.rank(x)
    if ctx.opset < 11:
        flat = [int(p) for p in ctx.attr("pads")]
        value = float(ctx.attr("value", 0.0))
    else:
        flat = [int(p) for p in ctx.const_array(ctx.need(1)).reshape(-1)]
        v_name = ctx.input(2)
        value = float(ctx.consts[v_name].dequantized().reshape(-1)[0]) if v_name else 0.0
    axes = list(range(rank))
    axes_name = ctx.input(3)
    if axes_name is not None:
        axes = [int(a) % rank for a in ctx.const_array(axes_name).reshape(-1)]
    if len(flat) != 2 * len(axes):
        raise ctx.malformed(f"pads {flat} do not fit axes {axes}")
    pairs = [(0, 0)] * rank
    for i, a in enumerate(axes):
        pairs[a] = (flat[i], flat[i + len(axes)])
    if any(b < 0 or e < 0 for b, e in pairs):
        raise ctx.fail("negative pads (cropping) are not supported")
    v = ctx.value(x)
    if v.nhwc:
        pairs = [pairs[p] for p in NCHW_TO_NHWC]
    elif v.ncl:  # (N, C, L) pads onto the [N, 1, L, C] array
        ir_pairs = [(0, 0)] * 4
        for a, pair in zip(NCL_AXIS_TO_IR, pairs, strict=True):
            ir_pairs[a] = pair
        pairs = ir_pairs
    if mode != "constant":  # the border modes have no fill value
        ctx.emit("BorderPad", [v.ir], {"pads": tuple(pairs), "mode": mode}, out=ctx.output(),
                 nhwc=v.nhwc, ncl=v.ncl)
        return
    ctx.emit("Pad", [v.ir], {"pads": tuple(pairs), "value": value}, out=ctx.output(),
             nhwc=v.nhwc, ncl=v.ncl)


@converter("Size")
def convert_size(ctx: Context, node: NodeProto) -> None:
    ctx.set_const(ctx.output(), ConstVal(np.asarray(int(np.prod(ctx.onnx_shape(ctx.need(0)))),
                                                    np.int64)))


@converter("Shape")
def convert_shape(ctx: Context, node: NodeProto) -> None:
    shape = np.asarray(ctx.onnx_shape(ctx.need(0)), np.int64)
    start, end = ctx.attr("start"), ctx.attr("end")
    ctx.set_const(ctx.output(), ConstVal(shape[slice(start, end)]))
