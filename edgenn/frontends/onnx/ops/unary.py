"""Element-wise unary math: LeakyRelu, HardSwish, HardSigmoid, Abs, Neg, Sqrt, Exp, Log.

They keep the layout of their input (NHWC stays NHWC). ONNX has no reciprocal square root
operator (TFLite's RSQRT is imported from .tflite only). In a QDQ model the quantized ones
(LeakyRelu, HardSwish, Abs) convert to int8 nodes; the float-only ones fail there with the
schema's one-line error.
"""

from __future__ import annotations

from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter

_PLAIN = ("HardSwish", "Abs", "Neg", "Sqrt", "Exp", "Log")


def _float_attr(ctx: Context, key: str, default: float) -> float:
    # why no finiteness check here: the loader checks every float attribute of every node
    return float(ctx.attr(key, default))


def _emit(ctx: Context, op: str, attrs: dict[str, object]) -> None:
    v = ctx.value(ctx.need(0))
    ctx.emit(op, [v.ir], attrs, out=ctx.output(), nhwc=v.nhwc, ncl=v.ncl)


@converter(*_PLAIN)
def convert_plain(ctx: Context, node: NodeProto) -> None:
    _emit(ctx, node.op_type, {})


@converter("LeakyRelu")
def convert_leaky_relu(ctx: Context, node: NodeProto) -> None:
    _emit(ctx, "LeakyRelu", {"alpha": _float_attr(ctx, "alpha", 0.01)})


@converter("HardSigmoid")
def convert_hard_sigmoid(ctx: Context, node: NodeProto) -> None:
    _emit(ctx, "HardSigmoid", {"alpha": _float_attr(ctx, "alpha", 0.2),
                               "beta": _float_attr(ctx, "beta", 0.5)})
