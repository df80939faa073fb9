"""1-D (rank-3, N x C x L) convolution, pooling and BatchNorm as their 2-D forms with H = 1.

A 1-D tensor is stored [N, 1, L, C] (``Value.ncl``), which is exactly the NHWC array of the
NCHW view [N, C, 1, L]. So a 1-D node converts as a 2-D copy of itself whose data input is
that view, whose weights gain a unit H axis ([Co, Ci, K] -> [Co, Ci, 1, K]) and whose spatial
attributes gain the H entry (kernel (1, k), strides (1, s), dilations (1, d), pads
(0, l, 0, r), output_padding (0, p), output_shape (1, L)). The 2-D converters then emit the
same IR operators (Conv2D, TransposeConv2D, MaxPool2D, AvgPool2D, Mean, BatchNorm) that every
backend, the quantizer and the exporter already support; no data moves between 1-D layers.
"""

from __future__ import annotations

from collections.abc import Mapping

from onnx import NodeProto, helper

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import Converter
from edgenn.frontends.onnx.values import ConstVal, Value

# ONNX operators with a 1-D form, and the input index of their weight (None: no weight)
_LIFTABLE: dict[str, int | None] = {
    "Conv": 1,
    "ConvTranspose": 1,
    "MaxPool": None,
    "AveragePool": None,
    "GlobalAveragePool": None,
    "GlobalMaxPool": None,
    "BatchNormalization": None,
}

# spatial attribute -> what its H entry is, for the lengths a 1-D node gives it
_PER_AXIS = ("kernel_shape", "strides", "dilations", "output_padding", "output_shape")
_H_VALUE = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 0,
            "output_shape": 1}


def feeds_channels_last(consumers: Mapping[str, list[NodeProto]], name: str) -> bool:
    """Whether tensor ``name`` feeds an operator that computes on channels-last data, directly
    or through QuantizeLinear / DequantizeLinear (so a rank-3 graph input is best taken as
    [N, 1, L, C] right away)."""
    for node in consumers.get(name, []):
        if node.op_type in _LIFTABLE:
            return True
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.output and \
                feeds_channels_last(consumers, node.output[0]):
            return True
    return False


def convert(ctx: Context, node: NodeProto, fn: Converter) -> None:
    """Run converter ``fn`` on ``node``, through its 2-D form when ``node`` is 1-D."""
    x = node.input[0] if node.input else ""
    if node.op_type not in _LIFTABLE or not x or ctx.is_const(x) or ctx.rank(x) != 3:
        fn(ctx, node)
        return
    lifted = _lift(ctx, node)
    ctx.begin(lifted, quantized=ctx.quantized)
    try:
        fn(ctx, lifted)
    finally:
        ctx.begin(node, quantized=ctx.quantized)
    ctx.bind(node.output[0], Value(ctx.values[lifted.output[0]].ir, ncl=True))


def _lift(ctx: Context, node: NodeProto) -> NodeProto:
    """The 2-D copy of 1-D ``node`` over private names (only output 0 is renamed: the
    others, e.g. BatchNorm's training outputs, keep their names for the converter's checks)."""
    x, out = node.input[0], node.output[0]
    x2d, out2d = f"{x}:2d", f"{out}:2d"
    ctx.bind(x2d, Value(ctx.channels_last(x).ir, nhwc=True))
    if out in ctx.quant_out:  # why: the int8 output's quantization is looked up by name
        ctx.quant_out[out2d] = ctx.quant_out[out]
    inputs = [x2d, *node.input[1:]]
    w_index = _LIFTABLE[node.op_type]
    if w_index is not None and w_index < len(node.input) and node.input[w_index]:
        inputs[w_index] = _lift_weight(ctx, node.input[w_index])
    lifted = helper.make_node(node.op_type, inputs, [out2d, *node.output[1:]],
                              name=node.name or out, domain=node.domain)
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        lifted.attribute.append(helper.make_attribute(a.name, _lift_attr(a.name, value)))
    return lifted


def _lift_weight(ctx: Context, name: str) -> str:
    """A constant [A, B, K] weight as [A, B, 1, K] (quantized data and axis 0 / 1 kept)."""
    lifted = f"{name}:2d"
    if lifted not in ctx.consts:
        c = ctx.consts.get(name)
        if c is None:
            raise ctx.fail(f"input {name!r} must be a constant")
        if c.data.ndim != 3:
            raise ctx.malformed(f"weight {name!r} of a 1-D operator has shape "
                                f"{list(c.data.shape)}")
        ctx.set_const(lifted, ConstVal(c.data.reshape(c.data.shape[:2] + (1,) + c.data.shape[2:]),
                                       c.quant))
    return lifted


def _lift_attr(key: str, value: object) -> object:
    """A spatial attribute of a 1-D node in its 2-D form; others unchanged. Lengths that do
    not fit 1-D are passed on as they are, so the 2-D converter reports them."""
    if not isinstance(value, list):
        return value
    if key in _PER_AXIS and len(value) == 1:
        return [_H_VALUE[key], value[0]]
    if key == "pads" and len(value) == 2:
        return [0, value[0], 0, value[1]]
    return value
