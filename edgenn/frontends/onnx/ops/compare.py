"""ONNX comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), logical operators
(Not, And, Or, Xor) and Where on computed tensors; on constants they are folded while
importing (shape arithmetic). Layout as the element-wise operators: NHWC when a computed
operand is stored so, else ONNX order."""

from __future__ import annotations

from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.ops.binary import emit_binary
from edgenn.frontends.onnx.registry import converter
from edgenn.ir.opdefs.compare import COMPARISONS, LOGICAL


# why the filter: NotEqual is TFLite's (NOT_EQUAL); ONNX has no such operator
@converter(*(op for op in COMPARISONS if op != "NotEqual"), *LOGICAL)
def convert_binary(ctx: Context, node: NodeProto) -> None:
    if ctx.quantized:
        raise ctx.fail(f"{node.op_type} in a quantized (QDQ) graph is not supported")
    emit_binary(ctx, node.op_type, ctx.need(0), ctx.need(1), ctx.output())


@converter("Not")
def convert_not(ctx: Context, node: NodeProto) -> None:
    v = ctx.value(ctx.need(0))
    ctx.emit("Not", [v.ir], out=ctx.output(), nhwc=v.nhwc, ncl=v.ncl)


@converter("Where")
def convert_where(ctx: Context, node: NodeProto) -> None:
    if ctx.quantized:
        raise ctx.fail("Where in a quantized (QDQ) graph is not supported")
    names = [ctx.need(i) for i in range(3)]
    if all(ctx.is_const(n) for n in names):
        raise ctx.fail("Where of three constants was not folded")
    nhwc, ncl = ctx.elementwise_layout(names)
    inputs = [ctx.operand(n, nhwc, ncl) for n in names]
    ctx.emit("Where", inputs, out=ctx.output(), nhwc=nhwc, ncl=ncl,
             hint=f"{ctx.node_name}/Where")
