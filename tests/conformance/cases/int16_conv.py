"""Convolution and dense on TFLite's 16x8 scheme, and TRANSPOSE_CONV on int8 / int16 / float.

16x8: int16 activations with zero point 0, int8 weights (per channel, zero point 0), int64
bias (TFLite Micro sums in int64 and rescales with its 64-bit multiply) or int32 bias (a
wrapping int32 sum and the 32-bit multiply; CONV_2D and FULLY_CONNECTED only: TFLite Micro
reads a depthwise or transposed 16x8 bias as int64). Covered: strides, dilation, SAME /
VALID, odd shapes, groups, depth multipliers 1 and 2, every fused activation, output scales
below and above the input-times-weight scale, layers deep enough that an int32 sum of
products could overflow (the Cortex-M kernels then accumulate in int64), FULLY_CONNECTED with
and without bias and with keep_num_dims. TRANSPOSE_CONV: strides 1 and 2, SAME and VALID,
with and without bias, output shapes larger than the full scatter, fused activations.

TFLite Micro crashes on a 16x8 DEPTHWISE_CONV_2D without bias, so no case has one. The
keep_num_dims case has one row: the importer flattens [1, R, K] to [R, K], which the
reference runtime (batch-first) runs only at its declared batch of 1 when R > 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, i16, omitted

NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
SAME, VALID = 0, 1

_RNG = np.random.default_rng(1616)


def _scales(n: int, lo: float = 0.004, hi: float = 0.03) -> np.ndarray:
    return _RNG.uniform(lo, hi, n).astype(np.float32)


def _weights(shape: Sequence[int], axis: int, scales: np.ndarray | None = None,
             limit: int = 127) -> Spec:
    """Symmetric int8 weights quantized along ``axis`` (per tensor with one scale)."""
    w = _RNG.integers(-limit, limit + 1, tuple(shape)).astype(np.int8)
    s = _scales(shape[axis]) if scales is None else scales
    q = QuantParams(s, np.zeros(s.size, np.int64), axis if s.size > 1 else None)
    return const(w, DType.INT8, q)


def _out_scale(x_scale: float, w: Spec, depth: int, target: float) -> float:
    """An output scale that puts a sum of ``depth`` random products at about ``target``
    quantized units (std), so that outputs spread over the range and rounding matters."""
    assert w.quant is not None
    x_std = 18900.0 if x_scale < 0.01 else 74.0  # uniform int16 / int8 inputs
    real_std = x_std * 73.0 * np.sqrt(depth) * x_scale * float(np.mean(w.quant.scale))
    return float(real_std / target)


def _bias(w: Spec, x_scale: float, dtype: DType, axis: int, limit: int = 200_000) -> Spec:
    """A bias in ``x_scale * w_scale`` units (TFLite's bias quantization)."""
    assert w.quant is not None
    n = w.shape[axis]
    scale = np.broadcast_to(w.quant.scale * np.float32(x_scale), (n,)).astype(np.float32)
    q = QuantParams(scale, np.zeros(n, np.int64), 0) if n > 1 else None
    data = _RNG.integers(-limit, limit + 1, n).astype(dtype.numpy)
    return const(data, dtype, q)


# -- CONV_2D -------------------------------------------------------------------------------
def _conv(name: str, x_shape: Sequence[int], w_shape: Sequence[int], out_hw: Sequence[int],
          *, stride: Sequence[int] = (1, 1), dilation: Sequence[int] = (1, 1),
          padding: int = VALID, act: int = NONE, bias: DType | None = DType.INT64,
          x_scale: float = 0.002, out_scale: float | None = None, limit: int = 127,
          w_scales: np.ndarray | None = None) -> Case:
    w = _weights(w_shape, 0, w_scales, limit)
    b = omitted() if bias is None else _bias(w, x_scale, bias, 0)
    depth = int(np.prod(w_shape[1:]))
    out = i16((1, *out_hw, w_shape[0]), out_scale or _out_scale(x_scale, w, depth, 8000))
    opts = {"padding": padding, "stride_h": stride[0], "stride_w": stride[1],
            "dilation_h_factor": dilation[0], "dilation_w_factor": dilation[1],
            "fused_activation_function": act}
    return Case("CONV_2D", name, (i16(x_shape, x_scale), w, b), (out,),
                ("Conv2DOptions", opts))


CONV = [
    _conv("int16_valid_3x3_per_channel", (1, 7, 9, 5), (6, 3, 3, 5), (5, 7)),
    _conv("int16_same_stride2_relu", (1, 8, 7, 3), (4, 3, 3, 3), (4, 4), stride=(2, 2),
          padding=SAME, act=RELU),
    # small input scales: the real outputs mostly inside the activation's clamp
    _conv("int16_dilated_relu6", (1, 9, 10, 4), (3, 3, 2, 4), (5, 8), dilation=(2, 2),
          act=RELU6, x_scale=0.0001, out_scale=0.0003),
    _conv("int16_same_stride_2x1_5x5_relu_n1_to_1", (1, 6, 7, 2), (5, 5, 5, 2), (3, 7),
          stride=(2, 1), padding=SAME, act=RELU_N1_TO_1, x_scale=0.00002, out_scale=0.0001),
    _conv("int16_pointwise_odd_channels", (1, 5, 3, 7), (5, 1, 1, 7), (5, 3)),
    _conv("int16_grouped", (1, 6, 6, 8), (6, 3, 3, 4), (6, 6), padding=SAME),
    _conv("int16_int32_bias", (1, 6, 5, 6), (4, 3, 3, 6), (4, 3), bias=DType.INT32),
    _conv("int16_no_bias", (1, 5, 6, 3), (7, 2, 3, 3), (4, 4), bias=None),
    # scale ratio > 1: the rescale shifts left (small weights keep the sums in range)
    _conv("int16_upscale_per_tensor", (1, 5, 5, 2), (3, 3, 3, 2), (3, 3), x_scale=0.5,
          out_scale=0.05, w_scales=np.array([0.002], np.float32), limit=2),
    # 3x3x128 taps of full-range weights: an int32 sum of products could overflow
    _conv("int16_deep_full_range", (1, 5, 5, 128), (4, 3, 3, 128), (3, 3), x_scale=0.001,
          w_scales=np.full(4, 0.01, np.float32)),
]


# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------
def _dwconv(name: str, x_shape: Sequence[int], k: Sequence[int], mult: int,
            out_hw: Sequence[int], *, stride: Sequence[int] = (1, 1),
            dilation: Sequence[int] = (1, 1), padding: int = VALID, act: int = NONE,
            x_scale: float = 0.002, out_scale: float | None = None) -> Case:
    co = x_shape[3] * mult
    w = _weights((1, k[0], k[1], co), 3)
    b = _bias(w, x_scale, DType.INT64, 3)
    out = i16((1, *out_hw, co), out_scale or _out_scale(x_scale, w, k[0] * k[1], 8000))
    opts = {"padding": padding, "stride_h": stride[0], "stride_w": stride[1],
            "depth_multiplier": mult, "dilation_h_factor": dilation[0],
            "dilation_w_factor": dilation[1], "fused_activation_function": act}
    return Case("DEPTHWISE_CONV_2D", name, (i16(x_shape, x_scale), w, b), (out,),
                ("DepthwiseConv2DOptions", opts))


DEPTHWISE = [
    _dwconv("int16_mult1_same", (1, 7, 6, 8), (3, 3), 1, (7, 6), padding=SAME),
    _dwconv("int16_mult2_valid_stride2", (1, 9, 8, 3), (3, 3), 2, (4, 3), stride=(2, 2)),
    _dwconv("int16_mult1_dilated_odd_channels_relu", (1, 8, 9, 5), (3, 2), 1, (4, 7),
            dilation=(2, 2), act=RELU),
    _dwconv("int16_mult2_same_5x5_relu6", (1, 6, 5, 4), (5, 5), 2, (6, 5), padding=SAME,
            act=RELU6, x_scale=0.0003, out_scale=0.0003),
]


# -- FULLY_CONNECTED ------------------------------------------------------------------------
def _fc(name: str, x_shape: Sequence[int], co: int, *, out_shape: Sequence[int] | None = None,
        bias: DType | None = DType.INT64, per_channel: bool = True, act: int = NONE,
        keep_num_dims: bool = False, x_scale: float = 0.002, out_scale: float | None = None,
        limit: int = 127, w_scale: float | None = None) -> Case:
    depth = x_shape[-1] if keep_num_dims else int(np.prod(x_shape[1:]))
    if w_scale is not None:
        scales = np.full(co if per_channel else 1, w_scale, np.float32)
    else:
        scales = _scales(co) if per_channel else np.array([0.01], np.float32)
    w = _weights((co, depth), 0, scales, limit)
    b = omitted() if bias is None else _bias(w, x_scale, bias, 0)
    shape = tuple(out_shape) if out_shape is not None else (1, co)
    opts = {"fused_activation_function": act, "keep_num_dims": keep_num_dims}
    scale = out_scale or _out_scale(x_scale, w, depth, 8000)
    return Case("FULLY_CONNECTED", name, (i16(x_shape, x_scale), w, b),
                (i16(shape, scale),), ("FullyConnectedOptions", opts))


FC = [
    _fc("int16_per_channel", (1, 20), 7),
    _fc("int16_per_tensor_no_bias", (1, 13), 5, bias=None, per_channel=False),
    _fc("int16_per_channel_no_bias_relu", (1, 9), 6, bias=None, act=RELU),
    _fc("int16_int32_bias_relu6", (1, 16), 4, bias=DType.INT32, act=RELU6, x_scale=0.0002,
        out_scale=0.0003),
    _fc("int16_keep_num_dims", (1, 1, 10), 6, out_shape=(1, 1, 6), keep_num_dims=True),
    _fc("int16_flattened_rank4", (1, 2, 3, 5), 3),
    # 1200 full-range products: an int32 sum could overflow
    _fc("int16_deep_full_range", (1, 1200), 5, x_scale=0.001, w_scale=0.01),
]


# -- TRANSPOSE_CONV -------------------------------------------------------------------------
def _tconv(name: str, kind: str, x_hw: Sequence[int], k: Sequence[int], ci: int, co: int,
           stride: int, padding: int, *, bias: bool = True, act: int = NONE,
           out_hw: Sequence[int] | None = None, bias16: bool = False) -> Case:
    if out_hw is None:
        if padding == SAME:
            out_hw = (x_hw[0] * stride, x_hw[1] * stride)
        else:
            out_hw = ((x_hw[0] - 1) * stride + k[0], (x_hw[1] - 1) * stride + k[1])
    oshape = (1, *out_hw, co)
    depth = -(-k[0] // stride) * -(-k[1] // stride) * ci  # taps reaching one output
    if kind == "float32":
        w: Spec = const(_RNG.uniform(-1, 1, (co, *k, ci)).astype(np.float32), DType.FLOAT32)
        x, y = f32((1, *x_hw, ci)), f32(oshape)
        b: Spec = const(_RNG.uniform(-1, 1, co).astype(np.float32), DType.FLOAT32)
    elif kind == "int8":
        w = _weights((co, *k, ci), 0)
        x, y = i8((1, *x_hw, ci), 0.05, 3), i8(oshape, _out_scale(0.05, w, depth, 40), -5)
        b = _bias(w, 0.05, DType.INT32, 0, limit=3000)
    else:
        w = _weights((co, *k, ci), 0)
        x, y = i16((1, *x_hw, ci), 0.002), i16(oshape, _out_scale(0.002, w, depth, 8000))
        b = _bias(w, 0.002, DType.INT16 if bias16 else DType.INT64, 0,
                  limit=30000 if bias16 else 200_000)
    shape = const(np.array(oshape, np.int32), DType.INT32)
    opts = {"padding": padding, "stride_h": stride, "stride_w": stride,
            "fused_activation_function": act}
    return Case("TRANSPOSE_CONV", name, (shape, w, x, b if bias else omitted()), (y,),
                ("TransposeConvOptions", opts))


TRANSPOSE = [
    case
    for kind in ("int8", "int16", "float32")
    for case in (
        _tconv(f"{kind}_same_stride1", kind, (5, 4), (3, 3), 3, 4, 1, SAME),
        _tconv(f"{kind}_same_stride2_no_bias", kind, (4, 3), (3, 3), 2, 3, 2, SAME, bias=False),
        _tconv(f"{kind}_valid_stride2_relu", kind, (3, 4), (3, 2), 4, 2, 2, VALID, act=RELU),
        _tconv(f"{kind}_valid_stride1_no_bias", kind, (4, 4), (2, 2), 5, 3, 1, VALID,
               bias=False),
        # an output larger than the full scatter: the extra rows and columns get the bias
        _tconv(f"{kind}_valid_stride2_output_padding", kind, (3, 3), (3, 3), 2, 2, 2, VALID,
               out_hw=(9, 8)),
        _tconv(f"{kind}_same_stride2_odd_output_relu6", kind, (4, 4), (4, 4), 3, 2, 2, SAME,
               out_hw=(7, 8), act=RELU6),
    )
] + [
    _tconv("int16_int16_bias", "int16", (3, 5), (3, 3), 4, 3, 2, SAME, bias16=True),
]

CASES: list[Case] = [*CONV, *DEPTHWISE, *FC, *TRANSPOSE]
