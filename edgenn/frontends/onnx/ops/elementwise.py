"""Elementwise operators: they keep the layout of their inputs.

If any computed operand is a rank-4 NHWC tensor the operation is done in NHWC (constants are
broadcast-aligned the ONNX way, then permuted); if one is a 1-D tensor stored [N, 1, L, C] and
nothing has a rank above 3, in that layout; otherwise in ONNX order.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.ops.binary import emit_binary
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import ConstVal, Value
from edgenn.ir import Activation


def _binary(ctx: Context, op: str, a: str, b: str, out: str | None) -> Value:
    if ctx.is_const(a) and not ctx.is_const(b):
        a, b = b, a  # Add and Mul commute; kernels expect the computed operand first
    nhwc, ncl = ctx.elementwise_layout([a, b])
    inputs = [ctx.operand(a, nhwc, ncl), ctx.operand(b, nhwc, ncl)]
    hint = f"{ctx.node_name}/{op}"
    ir = ctx.emit(op, inputs, {"activation": Activation.NONE}, out=out, nhwc=nhwc, ncl=ncl,
                  hint=hint)
    return Value(ir, nhwc, ncl)


def _derived_const(ctx: Context, name: str, data: np.ndarray) -> str:
    """Register a constant computed from the model's constants (e.g. -b, 1/b)."""
    derived = f"{name}:{ctx.node_name}"
    ctx.set_const(derived, ConstVal(np.asarray(data, np.float32)))
    return derived


def _bind_partial(ctx: Context, value: Value) -> str:
    """Bind an intermediate IR tensor to a private ONNX-side name so it can be an operand."""
    name = f"{value.ir}:partial"
    ctx.bind(name, value)
    return name


@converter("Add", "Mul")
def convert_add_mul(ctx: Context, node: NodeProto) -> None:
    _binary(ctx, node.op_type, ctx.need(0), ctx.need(1), ctx.output())


@converter("Sum")
def convert_sum(ctx: Context, node: NodeProto) -> None:
    names = [n for n in node.input if n]
    if len(names) == 1:
        ctx.alias(ctx.output(), names[0])
        return
    acc = names[0]
    for i, name in enumerate(names[1:], start=1):
        last = i == len(names) - 1
        value = _binary(ctx, "Add", acc, name, ctx.output() if last else None)
        if not last:
            acc = _bind_partial(ctx, value)


@converter("Sub")
def convert_sub(ctx: Context, node: NodeProto) -> None:
    a, b = ctx.need(0), ctx.need(1)
    if ctx.quantized:
        raise ctx.fail("int8 Sub is not supported")
    if ctx.is_const(b):
        _binary(ctx, "Add", a, _derived_const(ctx, b, -ctx.const_array(b)), ctx.output())
        return
    emit_binary(ctx, "Sub", a, b, ctx.output(), {"activation": Activation.NONE})


@converter("Div")
def convert_div(ctx: Context, node: NodeProto) -> None:
    a, b = ctx.need(0), ctx.need(1)
    if ctx.quantized:
        raise ctx.fail("int8 Div is not supported")
    if not ctx.is_const(b):
        emit_binary(ctx, "Div", a, b, ctx.output(), {"activation": Activation.NONE})
        return
    inv = (np.float32(1.0) / ctx.const_array(b).astype(np.float32)).astype(np.float32)
    _binary(ctx, "Mul", a, _derived_const(ctx, b, inv), ctx.output())


@converter("Relu", "Sigmoid", "Tanh")
def convert_unary(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    v = ctx.value(x)
    ctx.emit(node.op_type, [v.ir], out=ctx.output(), nhwc=v.nhwc, ncl=v.ncl)


def _clip_bound(ctx: Context, index: int, attr: str, default: float) -> float:
    if ctx.opset < 11:
        return float(ctx.attr(attr, default))
    name = ctx.input(index)
    if name is None:
        return default
    if not ctx.is_const(name):
        raise ctx.fail("Clip with computed bounds is not supported")
    c = ctx.consts[name]
    return float(c.dequantized().reshape(-1)[0])


@converter("Clip")
def convert_clip(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    lo = _clip_bound(ctx, 1, "min", -math.inf)
    hi = _clip_bound(ctx, 2, "max", math.inf)
    v = ctx.value(x)
    if lo == 0.0 and hi == 6.0:
        ctx.emit("Relu6", [v.ir], out=ctx.output(), nhwc=v.nhwc, ncl=v.ncl)
    elif lo == 0.0 and hi == math.inf:
        ctx.emit("Relu", [v.ir], out=ctx.output(), nhwc=v.nhwc, ncl=v.ncl)
    else:
        ctx.emit("Clip", [v.ir], {"min": lo, "max": hi}, out=ctx.output(), nhwc=v.nhwc,
                 ncl=v.ncl)
