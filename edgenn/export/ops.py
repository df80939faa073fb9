"""One lowering function per IR operator, registered by op name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import tflite

from edgenn.arith.fixed_point import quantize_scalar, type_range
from edgenn.export.lowering import BO, OP, Lowering, empty_options, fused, op_version
from edgenn.export.padding import PadMode, pad_mode, trim_pads
from edgenn.ir import DType, QuantParams
from edgenn.ir.conv import is_depthwise_conv
from edgenn.ir.tflite_enums import padding_code

LowerFn = Callable[[Lowering], None]
LOWER: dict[str, LowerFn] = {}
_QUANTIZED = (DType.INT8, DType.INT16)

B: TypeAlias = Any  # flatbuffers.Builder (the package has no type hints)


def lowers(*ops: str) -> Callable[[LowerFn], LowerFn]:
    def deco(fn: LowerFn) -> LowerFn:
        for op in ops:
            LOWER[op] = fn
        return fn

    return deco


def _pair(value: object) -> tuple[int, int]:
    a, b = (int(v) for v in value)  # type: ignore[attr-defined]
    return a, b


def _pads(value: object) -> tuple[int, int, int, int]:
    top, left, bottom, right = (int(v) for v in value)  # type: ignore[attr-defined]
    return top, left, bottom, right


def _padding_enum(mode: PadMode) -> int:
    return padding_code(mode == PadMode.SAME)


def _spatial_padding(
    lw: Lowering,
    x: int,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    pad_value: float | int | None,
) -> tuple[int, int]:
    """Resolve the node's pads to SAME/VALID, inserting a PAD op when neither fits.

    Returns (the input tensor to use, the TFLite padding enum).
    """
    assert lw.node is not None
    src = lw.model.tensors[x]
    spatial = (src.shape[1], src.shape[2])
    pads = _pads(lw.node.attr("pads", (0, 0, 0, 0)))
    mode = pad_mode(pads, spatial, kernel, strides, dilations)
    if mode != PadMode.EXPLICIT:
        return x, _padding_enum(mode)
    pt, pl, pb, pr = trim_pads(pads, spatial, kernel, strides, dilations)
    x = lw.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], pad_value)
    return x, tflite.Padding.VALID


def bias_or_zeros(lw: Lowering, co: int) -> int:
    """The bias input, or an explicit zero bias when the node has none.

    why: TFLM's float DEPTHWISE_CONV_2D dereferences a missing bias (segfault), and the
    converter always writes one; zeros change nothing.
    """
    if lw.has_input(2):
        return lw.input(2)
    x, w = lw.ir(0), lw.ir(1)
    assert lw.node is not None
    name = f"{lw.node.name}_zero_bias"
    if x.dtype == DType.FLOAT32:
        return lw.new_tensor(name, (co,), DType.FLOAT32, data=np.zeros(co, np.float32))
    if x.quant is None or w.quant is None:
        raise lw.unsupported("quantized input and weights need quantization parameters")
    scale = (np.float64(x.quant.s) * np.broadcast_to(w.quant.scale, (co,))).astype(np.float32)
    quant = QuantParams(scale, np.zeros(co, np.int64), 0 if co > 1 else None)
    # why: 16x8 layers (int16 input) take int64 biases, int8 layers int32
    dtype = DType.INT64 if x.dtype == DType.INT16 else DType.INT32
    return lw.new_tensor(name, (co,), dtype, quant, np.zeros(co, dtype.numpy))


# -- convolutions ---------------------------------------------------------------------------
@lowers("Conv2D")
def _conv2d(lw: Lowering) -> None:
    assert lw.node is not None
    node = lw.node
    x_ir, w_ir, y_ir = lw.ir(0), lw.ir(1), lw.out()
    ci = x_ir.shape[3]
    co, kh, kw, _ = w_ir.shape
    groups = int(node.attr("groups", 1))
    strides = _pair(node.attr("strides", (1, 1)))
    dilations = _pair(node.attr("dilations", (1, 1)))
    if w_ir.data is None:
        raise lw.unsupported("weights must be constant")
    depthwise = is_depthwise_conv(groups, ci, w_ir.shape)
    if groups != 1 and not depthwise:
        raise lw.unsupported(f"grouped convolution (groups={groups}, {ci} input channels)")
    x, padding = _spatial_padding(lw, lw.input(0), (kh, kw), strides, dilations, None)
    b = bias_or_zeros(lw, co) if depthwise else lw.optional_input(2)
    y = lw.tensor(y_ir)
    act = fused(lw)
    sh, sw = strides
    dh, dw = dilations
    dilated = (dh, dw) != (1, 1)
    version = op_version(OP.DEPTHWISE_CONV_2D if depthwise else OP.CONV_2D, x_ir.dtype, dilated)
    if not depthwise:
        w = lw.input(1)

        def conv_options(bld: B) -> int:
            tflite.Conv2DOptionsStart(bld)
            tflite.Conv2DOptionsAddPadding(bld, padding)
            tflite.Conv2DOptionsAddStrideW(bld, sw)
            tflite.Conv2DOptionsAddStrideH(bld, sh)
            tflite.Conv2DOptionsAddFusedActivationFunction(bld, act)
            tflite.Conv2DOptionsAddDilationWFactor(bld, dw)
            tflite.Conv2DOptionsAddDilationHFactor(bld, dh)
            return int(tflite.Conv2DOptionsEnd(bld))

        lw.emit(OP.CONV_2D, [x, w, b], [y], BO.Conv2DOptions, conv_options, version=version)
        return

    # Depthwise: IR [Co,KH,KW,1] (per-channel axis 0) -> TFLite [1,KH,KW,Co] (axis 3).
    data = np.ascontiguousarray(w_ir.data.transpose(3, 1, 2, 0))
    w = lw.new_tensor(w_ir.name, tuple(data.shape), w_ir.dtype, w_ir.quant, data, quant_axis=3)
    multiplier = co // ci

    def dw_options(bld: B) -> int:
        tflite.DepthwiseConv2DOptionsStart(bld)
        tflite.DepthwiseConv2DOptionsAddPadding(bld, padding)
        tflite.DepthwiseConv2DOptionsAddStrideW(bld, sw)
        tflite.DepthwiseConv2DOptionsAddStrideH(bld, sh)
        tflite.DepthwiseConv2DOptionsAddDepthMultiplier(bld, multiplier)
        tflite.DepthwiseConv2DOptionsAddFusedActivationFunction(bld, act)
        tflite.DepthwiseConv2DOptionsAddDilationWFactor(bld, dw)
        tflite.DepthwiseConv2DOptionsAddDilationHFactor(bld, dh)
        return int(tflite.DepthwiseConv2DOptionsEnd(bld))

    lw.emit(
        OP.DEPTHWISE_CONV_2D,
        [x, w, b],
        [y],
        BO.DepthwiseConv2DOptions,
        dw_options,
        version=version,
    )


@lowers("FullyConnected")
def _fully_connected(lw: Lowering) -> None:
    if lw.ir(1).data is None:
        raise lw.unsupported("weights must be constant")
    x, w, b, y = lw.input(0), lw.input(1), lw.optional_input(2), lw.output()
    act = fused(lw)

    def options(bld: B) -> int:
        tflite.FullyConnectedOptionsStart(bld)
        tflite.FullyConnectedOptionsAddFusedActivationFunction(bld, act)
        tflite.FullyConnectedOptionsAddKeepNumDims(bld, False)
        return int(tflite.FullyConnectedOptionsEnd(bld))

    lw.emit(OP.FULLY_CONNECTED, [x, w, b], [y], BO.FullyConnectedOptions, options)


# -- pooling --------------------------------------------------------------------------------
@lowers("MaxPool2D", "AvgPool2D")
def _pool(lw: Lowering) -> None:
    assert lw.node is not None
    node = lw.node
    x_ir = lw.ir(0)
    kh, kw = _pair(node.attr("kernel"))
    sh, sw = _pair(node.attr("strides", (1, 1)))
    pads = _pads(node.attr("pads", (0, 0, 0, 0)))
    spatial = (x_ir.shape[1], x_ir.shape[2])
    mode = pad_mode(pads, spatial, (kh, kw), (sh, sw))
    x = lw.input(0)
    if node.op == "MaxPool2D":
        if mode == PadMode.EXPLICIT:
            # why: TFLite's pooling skips padded cells; the smallest representable value
            # can never win a max, so padding with it is the same as skipping.
            low: float | int = (int(np.iinfo(x_ir.dtype.numpy).min) if x_ir.dtype in _QUANTIZED
                                else float(np.finfo(np.float32).min))
            x, padding = _spatial_padding(lw, x, (kh, kw), (sh, sw), (1, 1), low)
        else:
            padding = _padding_enum(mode)
        builtin = OP.MAX_POOL_2D
    else:
        include_pad = bool(node.attr("count_include_pad", False))
        if mode == PadMode.VALID or (mode == PadMode.SAME and not include_pad):
            padding = _padding_enum(mode)
        elif include_pad:
            # why: padding with real 0 (the zero point) and averaging the whole window is
            # exactly what count_include_pad means; TFLite's SAME would divide by fewer cells.
            x, padding = _spatial_padding(lw, x, (kh, kw), (sh, sw), (1, 1), None)
            if padding != tflite.Padding.VALID:  # SAME-equal pads: force the explicit PAD
                pt, pl, pb, pr = trim_pads(pads, spatial, (kh, kw), (sh, sw))
                x = lw.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], None)
                padding = tflite.Padding.VALID
        else:
            raise lw.unsupported(
                f"average pooling pads {list(pads)} excluded from the count are neither "
                "SAME nor VALID in TFLite"
            )
        builtin = OP.AVERAGE_POOL_2D
    y, finish = lw.output_as_input()
    act = fused(lw)

    def options(bld: B) -> int:
        tflite.Pool2DOptionsStart(bld)
        tflite.Pool2DOptionsAddPadding(bld, padding)
        tflite.Pool2DOptionsAddStrideW(bld, sw)
        tflite.Pool2DOptionsAddStrideH(bld, sh)
        tflite.Pool2DOptionsAddFilterWidth(bld, kw)
        tflite.Pool2DOptionsAddFilterHeight(bld, kh)
        tflite.Pool2DOptionsAddFusedActivationFunction(bld, act)
        return int(tflite.Pool2DOptionsEnd(bld))

    lw.emit(builtin, [x], [y], BO.Pool2DOptions, options)
    finish()


# -- elementwise ----------------------------------------------------------------------------
@lowers("Add")
def _add(lw: Lowering) -> None:
    a, b, y = lw.input(0), lw.input(1), lw.output()
    act = fused(lw)
    int16 = lw.ir(0).dtype is DType.INT16

    def options(bld: B) -> int:
        tflite.AddOptionsStart(bld)
        tflite.AddOptionsAddFusedActivationFunction(bld, act)
        if int16:
            # why: the field defaults to true (power-of-two scales only) for TFLite's int16
            # kernel; edgenn's int16 scales are general
            tflite.AddOptionsAddPotScaleInt16(bld, False)
        return int(tflite.AddOptionsEnd(bld))

    lw.emit(OP.ADD, [a, b], [y], BO.AddOptions, options)


@lowers("Mul")
def _mul(lw: Lowering) -> None:
    a, b, y = lw.input(0), lw.input(1), lw.output()
    act = fused(lw)

    def options(bld: B) -> int:
        tflite.MulOptionsStart(bld)
        tflite.MulOptionsAddFusedActivationFunction(bld, act)
        return int(tflite.MulOptionsEnd(bld))

    lw.emit(OP.MUL, [a, b], [y], BO.MulOptions, options)


_UNARY = {"Relu": OP.RELU, "Relu6": OP.RELU6, "Sigmoid": OP.LOGISTIC, "Tanh": OP.TANH}


@lowers(*_UNARY)
def _unary(lw: Lowering) -> None:
    assert lw.node is not None
    if lw.node.op == "Relu6":
        _relu6(lw)
        return
    lw.emit(_UNARY[lw.node.op], [lw.input(0)], [lw.output()])


def _relu6(lw: Lowering) -> None:
    """RELU6 as the IR defines it for each type.

    TFLM's RELU6 clamps the stored values to [q(0), q(6)] in its input's parameters and
    never rescales. The IR's int8 Relu6 rescales to the output's parameters and clamps there,
    so a differently quantized int8 output is a QUANTIZE first, then the RELU6 (clamping
    after the rescale, not before, is what keeps ``q(6)`` exact); the IR's int16 Relu6 clamps
    in the input's parameters like TFLM, so it is the RELU6 alone.
    """
    x_ir, y_ir = lw.ir(0), lw.out()
    x, y = lw.input(0), lw.output()
    if y_ir.dtype is DType.INT8 and x_ir.quant != y_ir.quant:
        rescaled = lw.new_tensor(f"{y_ir.name}_rescaled", x_ir.shape, DType.INT8, y_ir.quant)
        lw.emit(OP.QUANTIZE, [x], [rescaled], BO.QuantizeOptions,
                empty_options(tflite.QuantizeOptionsStart, tflite.QuantizeOptionsEnd),
                version=2)
        x = rescaled
    lw.emit(OP.RELU6, [x], [y])


@lowers("Clip")
def _clip(lw: Lowering) -> None:
    """Float32: RELU / RELU6 when the bounds match, else MAXIMUM then MINIMUM with constants.
    int8 / int16 (output parameters equal to the input's, as the quantizer gives them):
    MAXIMUM then MINIMUM with the bounds quantized in those parameters, which compare stored
    integers exactly as the IR's Clip clamps them.

    why: TFLM has no RELU_N1_TO_1 kernel, so only RELU and RELU6 are used as builtins.
    """
    assert lw.node is not None
    lo, hi = float(lw.node.attr("min", -np.inf)), float(lw.node.attr("max", np.inf))
    x_ir, y_ir = lw.ir(0), lw.out()
    quantized = x_ir.dtype in (DType.INT8, DType.INT16)
    if not quantized and x_ir.dtype != DType.FLOAT32:
        raise lw.unsupported(f"clip on {x_ir.dtype.value} (float32, int8 and int16 are exported)")
    if quantized and (x_ir.quant is None or x_ir.quant != y_ir.quant):
        raise lw.unsupported(f"{x_ir.dtype.value} clip whose output parameters differ from its "
                             "input's (TFLM's MAXIMUM / MINIMUM do not rescale)")
    table = {(0.0, 6.0): OP.RELU6, (0.0, float("inf")): OP.RELU}
    builtin = None if quantized else table.get((lo, hi))
    if builtin is not None:
        lw.emit(builtin, [lw.input(0)], [lw.output()])
        return
    x, y = lw.input(0), lw.output()
    steps = [(OP.MAXIMUM, lo), (OP.MINIMUM, hi)]
    steps = [(op, bound) for op, bound in steps if np.isfinite(bound)]
    options = empty_options(tflite.MaximumMinimumOptionsStart, tflite.MaximumMinimumOptionsEnd)
    for k, (op, bound) in enumerate(steps):
        c = lw.new_tensor(f"{lw.node.name}_bound", (1,), x_ir.dtype, x_ir.quant,
                          data=_clip_bound(bound, x_ir.dtype, x_ir.quant))
        out = (
            y
            if k == len(steps) - 1
            else lw.new_tensor(f"{lw.node.name}_max", x_ir.shape, x_ir.dtype, x_ir.quant)
        )
        lw.emit(op, [x, c], [out], BO.MaximumMinimumOptions, options)
        x = out
    if not steps:  # no bound at all: a copy
        shape_t = lw.int32_const(f"{lw.node.name}_shape", list(x_ir.shape))
        lw.emit(OP.RESHAPE, [x, shape_t], [y], BO.ReshapeOptions, _prebuilt(list(x_ir.shape)))


def _clip_bound(bound: float, dtype: DType, quant: QuantParams | None) -> np.ndarray:
    """A Clip bound as a one-element constant of ``dtype``: float32 as it is, or quantized
    like the IR's integer Clip quantizes it (TFLite's Quantize, clamped to the type)."""
    if quant is None:
        return np.array([bound], np.float32)
    lo, hi = type_range(dtype)
    q = min(max(quantize_scalar(bound, quant.s, quant.zp), lo), hi)
    return np.array([q], dtype.numpy)


@lowers("Softmax")
def _softmax(lw: Lowering) -> None:
    assert lw.node is not None
    beta = float(lw.node.attr("beta", 1.0))

    def options(bld: B) -> int:
        tflite.SoftmaxOptionsStart(bld)
        tflite.SoftmaxOptionsAddBeta(bld, beta)
        return int(tflite.SoftmaxOptionsEnd(bld))

    lw.emit(OP.SOFTMAX, [lw.input(0)], [lw.output()], BO.SoftmaxOptions, options)


@lowers("LRN")
def _lrn(lw: Lowering) -> None:
    assert lw.node is not None
    node = lw.node
    if lw.ir(0).dtype != DType.FLOAT32:
        raise lw.unsupported("TFLite has only a float32 LOCAL_RESPONSE_NORMALIZATION")
    radius = int(node.attr("radius"))
    bias, alpha, beta = (float(node.attr(k)) for k in ("bias", "alpha", "beta"))

    def options(bld: B) -> int:
        tflite.LocalResponseNormalizationOptionsStart(bld)
        tflite.LocalResponseNormalizationOptionsAddRadius(bld, radius)
        tflite.LocalResponseNormalizationOptionsAddBias(bld, bias)
        tflite.LocalResponseNormalizationOptionsAddAlpha(bld, alpha)
        tflite.LocalResponseNormalizationOptionsAddBeta(bld, beta)
        return int(tflite.LocalResponseNormalizationOptionsEnd(bld))

    lw.emit(
        OP.LOCAL_RESPONSE_NORMALIZATION,
        [lw.input(0)],
        [lw.output()],
        BO.LocalResponseNormalizationOptions,
        options,
    )


@lowers("Quantize")
def _quantize(lw: Lowering) -> None:
    src, dst = lw.ir(0).dtype, lw.out().dtype
    if src not in (DType.FLOAT32, DType.INT32, *_QUANTIZED):
        raise lw.unsupported(f"quantize from {src.value}")
    # float -> int8 is version 1; requantization and int16 outputs are version 2
    version = 1 if (src, dst) == (DType.FLOAT32, DType.INT8) else 2
    lw.emit(
        OP.QUANTIZE,
        [lw.input(0)],
        [lw.output()],
        BO.QuantizeOptions,
        empty_options(tflite.QuantizeOptionsStart, tflite.QuantizeOptionsEnd),
        version=version,
    )


@lowers("Dequantize")
def _dequantize(lw: Lowering) -> None:
    lw.emit(
        OP.DEQUANTIZE,
        [lw.input(0)],
        [lw.output()],
        BO.DequantizeOptions,
        empty_options(tflite.DequantizeOptionsStart, tflite.DequantizeOptionsEnd),
    )


# -- shape and layout -----------------------------------------------------------------------
@lowers("Mean")
def _mean(lw: Lowering) -> None:
    assert lw.node is not None
    rank = len(lw.ir(0).shape)
    axes = sorted({int(a) % rank for a in lw.node.attr("axes")})
    keep = bool(lw.node.attr("keepdims", True))
    x = lw.input(0)
    axes_t = lw.int32_const(f"{lw.node.name}_axes", axes)

    def options(bld: B) -> int:
        tflite.ReducerOptionsStart(bld)
        tflite.ReducerOptionsAddKeepDims(bld, keep)
        return int(tflite.ReducerOptionsEnd(bld))

    lw.emit(OP.MEAN, [x, axes_t], [lw.output()], BO.ReducerOptions, options)


@lowers("Reshape")
def _reshape(lw: Lowering) -> None:
    assert lw.node is not None
    shape = [int(d) for d in lw.out().shape]
    x = lw.input(0)
    shape_t = lw.int32_const(f"{lw.node.name}_shape", shape)

    y, finish = lw.output_as_input()
    lw.emit(OP.RESHAPE, [x, shape_t], [y], BO.ReshapeOptions, _prebuilt(shape))
    finish()


def reshape_to(lw: Lowering, x: int, y: int, shape: list[int]) -> None:
    """A RESHAPE of TFLite tensor ``x`` into ``y`` (of ``shape``)."""
    shape_t = lw.int32_const(f"{lw.model.tensors[y].name}_shape", shape)
    lw.emit(OP.RESHAPE, [x, shape_t], [y], BO.ReshapeOptions, _prebuilt(shape))


def _ints(bld: B, values: list[int], start: Callable[..., None]) -> int:
    start(bld, len(values))
    for v in reversed(values):
        bld.PrependInt32(v)
    return int(bld.EndVector())


def _prebuilt(shape: list[int]) -> Callable[[B], int]:
    def build(bld: B) -> int:
        # why: flatbuffers forbids building a vector inside an open table, so it comes first
        vec = _ints(bld, shape, tflite.ReshapeOptionsStartNewShapeVector)
        tflite.ReshapeOptionsStart(bld)
        tflite.ReshapeOptionsAddNewShape(bld, vec)
        return int(tflite.ReshapeOptionsEnd(bld))

    return build


@lowers("Transpose")
def _transpose(lw: Lowering) -> None:
    assert lw.node is not None
    perm = [int(p) for p in lw.node.attr("perm")]
    x = lw.input(0)
    y, finish = lw.output_as_input()
    lw.transpose(x, y, perm, f"{lw.node.name}_perm")
    finish()


@lowers("Concat")
def _concat(lw: Lowering) -> None:
    assert lw.node is not None
    out = lw.out()
    axis = int(lw.node.attr("axis")) % len(out.shape)
    xs = [lw.input(i) for i in range(len(lw.node.inputs))]
    # why: the IR's int8 Concat rescales its inputs to the output's parameters, unless the
    # node is a TFLite PACK (``requantize=False``) or int16: those copy the stored values,
    # which TFLM's int8 CONCATENATION only does for inputs with the output's parameters
    if out.dtype is DType.INT8 and lw.node.attr("requantize", True):
        xs = [_requantized(lw, x, out.quant) for x in xs]
    elif out.dtype is DType.INT8:
        xs = [_relabeled(lw, x, out.quant) for x in xs]
    act = fused(lw)

    def options(bld: B) -> int:
        tflite.ConcatenationOptionsStart(bld)
        tflite.ConcatenationOptionsAddAxis(bld, axis)
        tflite.ConcatenationOptionsAddFusedActivationFunction(bld, act)
        return int(tflite.ConcatenationOptionsEnd(bld))

    lw.emit(OP.CONCATENATION, xs, [lw.output()], BO.ConcatenationOptions, options)


def _requantized(lw: Lowering, x: int, quant: QuantParams | None) -> int:
    """``x`` itself when it already has ``quant``; else a QUANTIZE (int8 -> int8 or int16 ->
    int16) copy.

    why: TFLM's quantized CONCATENATION copies bytes and never rescales its inputs.
    """
    src = lw.model.tensors[x]
    if src.quant == quant:
        return x
    y = lw.new_tensor(f"{src.name}_requantized", src.shape, src.dtype, quant)
    lw.emit(
        OP.QUANTIZE,
        [x],
        [y],
        BO.QuantizeOptions,
        empty_options(tflite.QuantizeOptionsStart, tflite.QuantizeOptionsEnd),
        version=2,
    )
    return y


def _relabeled(lw: Lowering, x: int, quant: QuantParams | None) -> int:
    """``x``'s stored values under the parameters ``quant``: a RESHAPE to the same shape
    (TFLM copies the bytes and reads no parameters), or ``x`` when they already match."""
    src = lw.model.tensors[x]
    if src.quant == quant:
        return x
    y = lw.new_tensor(f"{src.name}_relabeled", src.shape, src.dtype, quant)
    reshape_to(lw, x, y, list(src.shape))
    return y


@lowers("Pad")
def _pad(lw: Lowering) -> None:
    assert lw.node is not None
    x_ir = lw.ir(0)
    pads = [(int(a), int(b)) for a, b in lw.node.attr("pads")]
    value = float(lw.node.attr("value", 0.0) or 0.0)
    x = lw.input(0)
    y, finish = lw.output_as_input()
    paddings = lw.int32_const(f"{lw.node.name}_paddings", [list(p) for p in pads])
    if value == 0.0:
        # why: PAD fills with real zero: 0.0, or the zero point for int8 (as TFLM's PAD does)
        lw.emit(
            OP.PAD,
            [x, paddings],
            [y],
            BO.PadOptions,
            empty_options(tflite.PadOptionsStart, tflite.PadOptionsEnd),
        )
        finish()
        return
    if x_ir.dtype in _QUANTIZED:
        assert x_ir.quant is not None
        const = np.array([_quantize_scalar(value, x_ir.quant, x_ir.dtype)], x_ir.dtype.numpy)
    else:
        const = np.array([value], x_ir.dtype.numpy)
    c = lw.new_tensor(f"{lw.node.name}_value", (1,), x_ir.dtype, x_ir.quant, const)
    lw.emit(
        OP.PADV2,
        [x, paddings, c],
        [y],
        BO.PadV2Options,
        empty_options(tflite.PadV2OptionsStart, tflite.PadV2OptionsEnd),
    )
    finish()


def _quantize_scalar(value: float, quant: QuantParams, dtype: DType = DType.INT8) -> int:
    """``zp + round(value / scale)`` as TFLite does it: float32 division, ties away from 0,
    clamped to ``dtype``."""
    q = float(np.float32(value) / np.float32(quant.s))
    rounded = int(np.sign(q) * np.floor(abs(q) + 0.5))
    info = np.iinfo(dtype.numpy)
    return int(np.clip(rounded + quant.zp, info.min, info.max))
