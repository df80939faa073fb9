"""Operators edgenn had before the conformance suite, int8 and float32: convolution, dense,
pooling, element-wise, activations, reductions, layout."""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, like, omitted

A = i8((1, 4, 5, 6), 0.05, -3)

CASES: list[Case] = [
    Case("ADD", "int8_same_shape", (A, i8((1, 4, 5, 6), 0.07, 5)), (i8((1, 4, 5, 6), 0.09, 2),),
         ("AddOptions", {"fused_activation_function": 0})),
    Case("ADD", "int8_broadcast_channel_relu", (A, i8((1, 1, 1, 6), 0.02, 0)),
         (i8((1, 4, 5, 6), 0.06, -128),), ("AddOptions", {"fused_activation_function": 1})),
    Case("ADD", "float_broadcast",
         (f32((1, 3, 4)), const([0.5, -1.0, 2.0, 3.5], DType.FLOAT32)), (f32((1, 3, 4)),),
         ("AddOptions", {})),
    Case("MUL", "int8_broadcast_scalar_const",
         (A, const([[[[7]]]], quant=A.quant, dtype=A.dtype)), (like(A, scale=0.2, zero_point=1),),
         ("MulOptions", {})),
    Case("LOGISTIC", "int8", (A,), (i8(A.shape, 1 / 256, -128),)),
    Case("TANH", "int8", (A,), (i8(A.shape, 1 / 128, 0),)),
    Case("SOFTMAX", "int8_rank2", (i8((1, 10), 0.1, 3),), (i8((1, 10), 1 / 256, -128),),
         ("SoftmaxOptions", {"beta": 1.0})),
]


def _w(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def _per_channel(co: int, axis: int, seed: int) -> QuantParams:
    scales = np.random.default_rng(seed).uniform(0.002, 0.02, co).astype(np.float32)
    return QuantParams(scales, np.zeros(co, np.int64), axis)


def _bias(co: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-2000, 2000, co).astype(np.int32)


def _conv(name: str, x: Spec, co: int, k: tuple[int, int], out_hw: tuple[int, int],
          padding: int, stride: tuple[int, int], dilation: tuple[int, int] = (1, 1),
          act: int = 0, seed: int = 0) -> Case:
    ci = x.shape[3]
    w = const(_w((co, *k, ci), seed), quant=_per_channel(co, 0, seed))
    b = const(_bias(co, seed), DType.INT32)
    out = i8((1, *out_hw, co), 0.3, -7)
    return Case("CONV_2D", name, (x, w, b), (out,),
                ("Conv2DOptions", {"padding": padding, "stride_w": stride[1],
                                   "stride_h": stride[0], "dilation_w_factor": dilation[1],
                                   "dilation_h_factor": dilation[0],
                                   "fused_activation_function": act}))


def _dw(name: str, x: Spec, mult: int, k: tuple[int, int], out_hw: tuple[int, int],
        padding: int, stride: tuple[int, int], seed: int = 0) -> Case:
    co = x.shape[3] * mult
    w = const(_w((1, *k, co), seed), quant=_per_channel(co, 3, seed))
    b = const(_bias(co, seed), DType.INT32)
    return Case("DEPTHWISE_CONV_2D", name, (x, w, b), (i8((1, *out_hw, co), 0.2, 3),),
                ("DepthwiseConv2DOptions", {"padding": padding, "stride_w": stride[1],
                                            "stride_h": stride[0], "depth_multiplier": mult,
                                            "dilation_w_factor": 1, "dilation_h_factor": 1,
                                            "fused_activation_function": 0}))


X7 = i8((1, 7, 9, 5), 0.04, 11)
SAME, VALID = 0, 1
POOL = {"padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 3, "filter_height": 3,
        "fused_activation_function": 0}

CASES += [
    _conv("int8_3x3_same_stride1", X7, 6, (3, 3), (7, 9), SAME, (1, 1), seed=1),
    _conv("int8_5x3_valid_stride2_relu", X7, 4, (5, 3), (2, 4), VALID, (2, 2), act=1, seed=2),
    _conv("int8_3x3_dilated2_same", X7, 3, (3, 3), (7, 9), SAME, (1, 1), (2, 2), seed=3),
    _conv("int8_1x1_stride2", X7, 7, (1, 1), (4, 5), VALID, (2, 2), seed=4),
    _dw("int8_mult1_3x3_same", X7, 1, (3, 3), (7, 9), SAME, (1, 1), seed=5),
    _dw("int8_mult2_3x3_valid_stride2", X7, 2, (3, 3), (3, 4), VALID, (2, 2), seed=6),
    Case("FULLY_CONNECTED", "int8_bias",
         (i8((1, 20), 0.05, -4), const(_w((7, 20), 7), quant=QuantParams.per_tensor(0.01)),
          const(_bias(7, 7), DType.INT32)), (i8((1, 7), 0.4, 2),),
         ("FullyConnectedOptions", {"fused_activation_function": 0})),
    Case("FULLY_CONNECTED", "int8_no_bias_flatten",
         (i8((1, 2, 3, 4), 0.05, 0), const(_w((5, 24), 8), quant=QuantParams.per_tensor(0.02)),
          omitted()), (i8((1, 5), 0.5, -1),),
         ("FullyConnectedOptions", {"fused_activation_function": 1})),
    Case("MAX_POOL_2D", "int8_3x3_s2_same", (X7,), (like(X7, shape=(1, 4, 5, 5)),),
         ("Pool2DOptions", POOL)),
    Case("AVERAGE_POOL_2D", "int8_3x3_s2_same", (X7,), (like(X7, shape=(1, 4, 5, 5)),),
         ("Pool2DOptions", POOL)),
    Case("MEAN", "int8_hw_keepdims", (X7, const([1, 2], DType.INT32)),
         (i8((1, 1, 1, 5), 0.03, -2),), ("ReducerOptions", {"keep_dims": True})),
    Case("PAD", "int8", (X7, const([[0, 0], [1, 2], [0, 1], [0, 0]], DType.INT32)),
         (like(X7, shape=(1, 10, 10, 5)),)),
    Case("RESHAPE", "int8", (X7, const([1, 63, 5], DType.INT32)), (like(X7, shape=(1, 63, 5)),),
         ("ReshapeOptions", {"new_shape": [1, 63, 5]})),
    Case("TRANSPOSE", "int8_nhwc_to_nchw", (X7, const([0, 3, 1, 2], DType.INT32)),
         (like(X7, shape=(1, 5, 7, 9)),)),
    Case("CONCATENATION", "int8_channels",
         (X7, i8((1, 7, 9, 2), 0.04, 11)), (like(X7, shape=(1, 7, 9, 7)),),
         ("ConcatenationOptions", {"axis": 3, "fused_activation_function": 0})),
    Case("RELU", "int8_requant", (X7,), (i8(X7.shape, 0.02, -128),)),
    Case("RELU6", "int8", (X7,), (X7,)),
    Case("QUANTIZE", "float_to_int8", (f32((1, 3, 5)),), (i8((1, 3, 5), 0.03, 4),)),
    Case("QUANTIZE", "int8_requant", (X7,), (i8(X7.shape, 0.09, -20),)),
    # int8 -> uint8, as streaming wake-word models end (TFLite Micro's Requantize)
    Case("QUANTIZE", "int8_to_uint8", (X7,),
         (Spec(X7.shape, DType.UINT8, QuantParams.per_tensor(0.05, 120)),)),
    Case("DEQUANTIZE", "int8_to_float", (X7,), (f32(X7.shape),)),
    Case("SOFTMAX", "int8_rank4_beta", (X7,), (i8(X7.shape, 1 / 256, -128),),
         ("SoftmaxOptions", {"beta": 0.7})),
]
