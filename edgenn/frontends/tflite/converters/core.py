"""Converters of the TFLite operators edgenn had before the operator contract."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.converters.window import ZERO, Axis, tflm_out_fails, window_axis
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import (
    converter,
    need_options,
    optional_input_name,
    output_name,
    same_padding,
)
from edgenn.ir import Activation, DType, Node
from edgenn.ir.tflite_enums import OP

_out = output_name
_opt_in = optional_input_name
_need_options = need_options


def _positive(b: Builder, op: RawOperator, **values: int) -> None:
    for key, v in values.items():
        if v < 1:
            raise b.fail(op, f"{key} is {v}")


def _window(b: Builder, op: RawOperator, hw: tuple[int, ...], kernel: tuple[int, int],
            strides: tuple[int, int], dilations: tuple[int, int],
            weighted: bool) -> tuple[Axis, Axis]:
    same = same_padding(b, op)
    out = b.tensors[_out(b, op)].shape
    declared = (out[1], out[2]) if len(out) == 4 else (0, 0)
    failed = any(tflm_out_fails(same, hw[i], kernel[i], strides[i], dilations[i])
                 for i in range(2))
    return tuple(window_axis(same, hw[i], kernel[i], strides[i], dilations[i], weighted,
                             declared[i], failed) for i in range(2))  # type: ignore[return-value]


def _cut_weights(w: np.ndarray, rows: Axis, cols: Axis) -> np.ndarray:
    """[Co, KH, KW, Ci] weights for the cut window: each tap's weights, zeros for ZERO."""
    def take(a: np.ndarray, taps: Sequence[int], axis: int) -> np.ndarray:
        padded = np.concatenate([a, np.zeros_like(a.take([0], axis=axis))], axis=axis)
        return padded.take([t if t != ZERO else a.shape[axis] for t in taps], axis=axis)
    return np.ascontiguousarray(take(take(w, rows.taps, 1), cols.taps, 2))


# -- convolutions and dense ----------------------------------------------------------------
def _conv_like(
    b: Builder, op: RawOperator, weights: str, groups: int, kernel: tuple[int, int]
) -> None:
    x = b.input(op, 0)
    if len(x.shape) != 4:
        raise b.fail(op, f"expects an NHWC input, got shape {list(x.shape)}")
    strides = (int(op.options["stride_h"]), int(op.options["stride_w"]))
    dilations = (int(op.options["dilation_h"]), int(op.options["dilation_w"]))
    _positive(b, op, stride=min(strides), dilation=min(dilations))
    rows, cols = _window(b, op, x.shape[1:3], kernel, strides, dilations, True)
    if rows.cut or cols.cut:
        w = b.tensors[weights]
        assert w.data is not None
        weights = b.add_const(f"{weights}/taps", _cut_weights(w.data, rows, cols), w.quant)
        dilations = (rows.dilation, cols.dilation)
    pads = (rows.pads[0], cols.pads[0], rows.pads[1], cols.pads[1])
    b.emit(Node(
        b.op_name(op), "Conv2D", (x.name, weights, _opt_in(b, op, 2)), (_out(b, op),),
        {"strides": strides, "dilations": dilations, "pads": pads, "groups": groups,
         "activation": b.activation(op)},
    ))


@converter(OP.CONV_2D)
def conv_2d(b: Builder, op: RawOperator) -> None:
    _need_options(b, op, "padding", "stride_h", "stride_w", "dilation_h", "dilation_w")
    x, w = b.input(op, 0), b.input(op, 1)
    if not w.is_const or len(w.shape) != 4 or len(x.shape) != 4:
        raise b.unsupported(op, "CONV_2D needs constant [Co,KH,KW,Ci] weights and NHWC input")
    if w.shape[3] < 1 or x.shape[3] % w.shape[3]:
        raise b.fail(op, f"input {list(x.shape)} does not fit weights {list(w.shape)}")
    _conv_like(b, op, w.name, x.shape[3] // w.shape[3], (w.shape[1], w.shape[2]))


@converter(OP.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(b: Builder, op: RawOperator) -> None:
    _need_options(b, op, "padding", "stride_h", "stride_w", "dilation_h", "dilation_w")
    x, w_raw = b.input(op, 0), b.need(op, 1)
    data = b.const_array(op, 1, "depthwise weights")
    if data.ndim != 4 or data.shape[0] != 1 or len(x.shape) != 4:
        raise b.fail(op, f"depthwise weights {list(data.shape)} are not [1,KH,KW,Co]")
    cin, cout = x.shape[3], data.shape[3]
    bias = b.raw_tensor(op, 2)
    if x.dtype is DType.INT16 and bias is not None and b.dtype(bias) is not DType.INT64:
        # why: TFLite Micro reads a 16x8 depthwise bias as int64 whatever its declared type
        raise b.unsupported(op, "16x8 DEPTHWISE_CONV_2D needs an int64 bias")
    if cout % cin:
        raise b.fail(op, f"{cout} output channels are not a multiple of {cin} input channels")
    # why: TFLite keeps depthwise weights as [1,KH,KW,Co] quantized along axis 3; the IR's
    # grouped Conv2D wants [Co,KH,KW,1] (group g = input channel g makes outputs g*M..g*M+M-1,
    # the same channel order as TFLite's depth multiplier), so the quantization axis becomes 0.
    weights = np.ascontiguousarray(data.transpose(3, 1, 2, 0))
    quant = b.quant(w_raw, axis_map={3: 0})
    name = b.add_const(b.names[w_raw.index], weights, quant)
    _conv_like(b, op, name, cin, (data.shape[1], data.shape[2]))


@converter(OP.FULLY_CONNECTED)
def fully_connected(b: Builder, op: RawOperator) -> None:
    if int(op.options.get("weights_format", 0)) != 0:
        raise b.unsupported(op, "FULLY_CONNECTED with shuffled weights is unsupported")
    x, w = b.input(op, 0), b.input(op, 1)
    if not w.is_const or len(w.shape) != 2:
        raise b.unsupported(op, "FULLY_CONNECTED needs constant [Co,K] weights")
    k = w.shape[1]
    if x.size % k:
        raise b.fail(op, f"input {list(x.shape)} does not fit weights {list(w.shape)}")
    name = b.op_name(op)
    x_name = x.name
    if len(x.shape) != 2 or x.shape[1] != k:
        # why: TFLite flattens the input to [size / K, K]; the IR's FullyConnected is 2-D
        x_name = b.add_intermediate(f"{name}/flat", x, (x.size // k, k))
        b.emit(Node(f"{name}/reshape_in", "Reshape", (x.name,), (x_name,),
                    {"shape": (x.size // k, k)}))
    out = _out(b, op)
    declared = b.tensors[out]
    fc_out = out
    if declared.shape != (x.size // k, w.shape[0]):  # keep_num_dims: [..., Co]
        fc_out = b.add_intermediate(f"{name}/2d", declared, (x.size // k, w.shape[0]))
    b.emit(Node(name, "FullyConnected", (x_name, w.name, _opt_in(b, op, 2)), (fc_out,),
                {"activation": b.activation(op)}))
    if fc_out != out:
        b.emit(Node(f"{name}/reshape_out", "Reshape", (fc_out,), (out,),
                    {"shape": declared.shape}))


# -- elementwise ---------------------------------------------------------------------------
@converter(OP.ADD, OP.MUL)
def add_mul(b: Builder, op: RawOperator) -> None:
    kind = "Add" if op.opcode == OP.ADD else "Mul"
    a, c = b.input(op, 0), b.input(op, 1)
    b.emit(Node(b.op_name(op), kind, (a.name, c.name), (_out(b, op),),
                {"activation": b.activation(op)}))


_UNARY = {OP.RELU: "Relu", OP.RELU6: "Relu6", OP.LOGISTIC: "Sigmoid", OP.TANH: "Tanh",
          OP.QUANTIZE: "Quantize", OP.DEQUANTIZE: "Dequantize"}


@converter(*_UNARY)
def unary(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    out = _out(b, op)
    attrs: dict[str, object] = {}
    if op.opcode == OP.QUANTIZE:
        dtype = b.tensors[out].dtype
        # uint8: TFLite Micro requantizes int8 to a uint8 output
        if dtype not in (DType.INT8, DType.INT16, DType.INT32, DType.UINT8) or (
                dtype is DType.UINT8 and x.dtype is not DType.INT8):
            raise b.unsupported(op, f"QUANTIZE to {dtype.value} is unsupported")
        if dtype != DType.INT8:  # why: the IR's Quantize gives int8 unless told otherwise
            attrs["dtype"] = dtype.value
    b.emit(Node(b.op_name(op), _UNARY[op.opcode], (x.name,), (out,), attrs))


@converter(OP.SOFTMAX)
def softmax(b: Builder, op: RawOperator) -> None:
    beta = float(op.options.get("beta", 1.0))  # a NaN fails in the IR's attribute check
    x, out = b.input(op, 0), _out(b, op)
    attrs: dict[str, object] = {"beta": beta}
    if b.tensors[out].dtype != x.dtype:  # int8 -> int16, as TFLM allows
        attrs["dtype"] = b.tensors[out].dtype.value
    b.emit(Node(b.op_name(op), "Softmax", (x.name,), (out,), attrs))


@converter(OP.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(b: Builder, op: RawOperator) -> None:
    _need_options(b, op, "radius", "bias", "alpha", "beta")
    attrs = {k: float(op.options[k]) for k in ("bias", "alpha", "beta")}
    b.emit(Node(b.op_name(op), "LRN", (b.input(op, 0).name,), (_out(b, op),),
                {"radius": int(op.options["radius"]), **attrs}))


# -- pooling and reductions ----------------------------------------------------------------
@converter(OP.MAX_POOL_2D, OP.AVERAGE_POOL_2D)
def pool_2d(b: Builder, op: RawOperator) -> None:
    _need_options(b, op, "padding", "stride_h", "stride_w", "filter_h", "filter_w")
    x = b.input(op, 0)
    if len(x.shape) != 4:
        raise b.fail(op, f"expects an NHWC input, got shape {list(x.shape)}")
    kernel = (int(op.options["filter_h"]), int(op.options["filter_w"]))
    strides = (int(op.options["stride_h"]), int(op.options["stride_w"]))
    _positive(b, op, filter=min(kernel), stride=min(strides))
    rows, cols = _window(b, op, x.shape[1:3], kernel, strides, (1, 1), False)
    kernel = (len(rows.taps), len(cols.taps))
    pads = (rows.pads[0], cols.pads[0], rows.pads[1], cols.pads[1])
    attrs: dict[str, object] = {"kernel": kernel, "strides": strides, "pads": pads,
                                "activation": b.activation(op)}
    kind = "MaxPool2D"
    if op.opcode == OP.AVERAGE_POOL_2D:
        kind = "AvgPool2D"
        attrs["count_include_pad"] = False  # TFLite divides by the in-bounds count
    b.emit(Node(b.op_name(op), kind, (x.name,), (_out(b, op),), attrs))


@converter(OP.MEAN)
def mean(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    axes_data = b.const_array(op, 1, "MEAN axes").reshape(-1)
    rank = len(x.shape)
    if any(not -rank <= int(a) < rank for a in axes_data):
        raise b.fail(op, f"axes {axes_data.tolist()} do not fit rank {rank}")
    axes = tuple(sorted({int(a) % rank for a in axes_data}))
    b.emit(Node(b.op_name(op), "Mean", (x.name,), (_out(b, op),),
                {"axes": axes, "keepdims": bool(op.options.get("keep_dims", False))}))


# -- shape and layout ----------------------------------------------------------------------
@converter(OP.RESHAPE, OP.SQUEEZE)
def reshape(b: Builder, op: RawOperator) -> None:
    # why: the declared output shape is static and complete; the shape operand may hold -1
    x = b.input(op, 0)
    out = _out(b, op)
    b.emit(Node(b.op_name(op), "Reshape", (x.name,), (out,), {"shape": b.tensors[out].shape}))


@converter(OP.TRANSPOSE)
def transpose(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    perm = tuple(int(p) for p in b.const_array(op, 1, "TRANSPOSE permutation").reshape(-1))
    b.emit(Node(b.op_name(op), "Transpose", (x.name,), (_out(b, op),), {"perm": perm}))


@converter(OP.CONCATENATION)
def concatenation(b: Builder, op: RawOperator) -> None:
    _need_options(b, op, "axis")
    if b.activation(op) != Activation.NONE:
        raise b.unsupported(op, "CONCATENATION with a fused activation is unsupported")
    xs = [b.input(op, i).name for i in range(len(op.inputs))]
    if not xs:
        raise b.fail(op, "no inputs")
    rank = len(b.tensors[xs[0]].shape)
    axis = int(op.options["axis"])
    if not -rank <= axis < rank:
        raise b.fail(op, f"axis {axis} does not fit rank {rank}")
    b.emit(Node(b.op_name(op), "Concat", tuple(xs), (_out(b, op),), {"axis": axis % rank}))


@converter(OP.PAD, OP.PADV2)
def pad(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    paddings = b.const_array(op, 1, "paddings")
    if paddings.shape != (len(x.shape), 2):
        raise b.fail(op, f"paddings of shape {list(paddings.shape)} do not fit {list(x.shape)}")
    pads = tuple((int(lo), int(hi)) for lo, hi in paddings)
    # ``value`` is the real value padded in; TFLite's PAD pads real 0 (the zero point)
    value = 0.0
    if op.opcode == OP.PADV2 and b.raw_tensor(op, 2) is not None:
        const = b.const_array(op, 2, "pad value").reshape(-1)
        if const.size != 1:
            raise b.fail(op, f"pad value has {const.size} elements")
        value = float(const[0])
        if x.quant is not None:
            value = x.quant.s * (value - x.quant.zp)
    b.emit(Node(b.op_name(op), "Pad", (x.name,), (_out(b, op),), {"pads": pads, "value": value}))
