"""ONNX converters of the element-wise binary operators Max, Min and PRelu, and the helper
that ``elementwise.py`` uses for Sub and Div of two computed tensors.

Layout as in ``elementwise.py``: the operation runs NHWC when a computed operand is a rank-4
NHWC tensor (constants are broadcast-aligned the ONNX way, then permuted), else in ONNX order.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import ConstVal, Value


def emit_binary(ctx: Context, op: str, a: str, b: str, out: str | None,
                attrs: dict[str, object] | None = None, commutative: bool = False) -> Value:
    """Emit IR ``op(a, b)`` on ONNX operands ``a`` and ``b`` (either may be a constant)."""
    if commutative and ctx.is_const(a) and not ctx.is_const(b):
        a, b = b, a  # why: the kernels take the computed operand first where they can
    if ctx.is_const(a) and ctx.is_const(b):
        raise ctx.fail(f"{op} of two constants was not folded")
    nhwc, ncl = ctx.elementwise_layout((a, b))
    inputs = [ctx.operand(a, nhwc, ncl), ctx.operand(b, nhwc, ncl)]
    ir = ctx.emit(op, inputs, attrs, out=out, nhwc=nhwc, ncl=ncl, hint=f"{ctx.node_name}/{op}")
    return Value(ir, nhwc, ncl)


@converter("Max", "Min")
def convert_max_min(ctx: Context, node: NodeProto) -> None:
    op = "Maximum" if node.op_type == "Max" else "Minimum"
    # computed operands first, so that two constants never meet (Max / Min commute)
    names = sorted((n for n in node.input if n), key=ctx.is_const)
    if not names:
        raise ctx.malformed(f"{node.op_type} has no inputs")
    if len(names) == 1:
        ctx.alias(ctx.output(), names[0])
        return
    acc = names[0]
    for i, name in enumerate(names[1:], start=1):
        last = i == len(names) - 1
        value = emit_binary(ctx, op, acc, name, ctx.output() if last else None,
                            commutative=True)
        if not last:
            # why: the running result is an IR tensor without an ONNX name; bind one
            acc = f"{value.ir}:partial"
            ctx.bind(acc, value)


@converter("Pow")
def convert_pow(ctx: Context, node: NodeProto) -> None:
    """``x ** y``: a constant exponent of 1 is the identity and 2 is ``x * x`` (which every
    target runs, and is what onnxruntime computes for it); others are the IR's Pow."""
    x, y = ctx.need(0), ctx.need(1)
    # why the rank test: a scalar-like exponent of higher rank would broadcast x up
    if ctx.is_const(y) and ctx.const_array(y).size == 1 and ctx.rank(y) <= ctx.rank(x):
        e = float(ctx.const_array(y).reshape(()))
        if e == 1.0:
            ctx.alias(ctx.output(), x)
            return
        if e == 2.0:
            emit_binary(ctx, "Mul", x, x, ctx.output())
            return
    if ctx.is_const(y):
        y_ir = ctx.const_array(y)
        if y_ir.dtype != np.float32:  # why: ONNX allows an integer exponent on a float base
            ctx.set_const(y, ConstVal(y_ir.astype(np.float32)))
    elif ctx.ir_tensor(y).dtype != ctx.ir_tensor(x).dtype:
        raise ctx.fail(f"Pow with a {ctx.ir_tensor(y).dtype.value} exponent tensor on "
                       f"{ctx.ir_tensor(x).dtype.value}")
    emit_binary(ctx, "Pow", x, y, ctx.output())


@converter("PRelu")
def convert_prelu(ctx: Context, node: NodeProto) -> None:
    emit_binary(ctx, "PRelu", ctx.need(0), ctx.need(1), ctx.output())
