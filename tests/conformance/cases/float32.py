"""float32 cases of the operators a float CNN is made of: CONV_2D (groups, stride, dilation,
padding, fused activations), DEPTHWISE_CONV_2D, FULLY_CONNECTED, pooling, ADD / MUL with
broadcasting, the activations, SOFTMAX, MEAN and the reductions, PAD, RESHAPE, and the
float <-> int8 / int16 edges of a mixed model (QUANTIZE, DEQUANTIZE).

Outputs are compared within 1e-5 relative plus the case's absolute tolerance (1e-5 by
default, the scale of the rounding of sums of a few dozen products near zero).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType
from tests.conformance.spec import Case, Spec, const, f32, i8, i16, omitted

SAME, VALID = 0, 1
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


def _wf(shape: tuple[int, ...], seed: int, scale: float = 0.5) -> Spec:
    rng = np.random.default_rng(seed)
    return const(rng.uniform(-scale, scale, shape).astype(np.float32), DType.FLOAT32)


def _conv(name: str, x: Spec, co: int, k: tuple[int, int], out_hw: tuple[int, int],
          padding: int, stride: tuple[int, int], dilation: tuple[int, int] = (1, 1),
          act: int = NONE, seed: int = 0, bias: bool = True, groups: int = 1) -> Case:
    ci = x.shape[3] // groups
    b = _wf((co,), seed + 100) if bias else omitted()
    return Case("CONV_2D", name, (x, _wf((co, *k, ci), seed), b), (f32((1, *out_hw, co)),),
                ("Conv2DOptions", {"padding": padding, "stride_w": stride[1],
                                   "stride_h": stride[0], "dilation_w_factor": dilation[1],
                                   "dilation_h_factor": dilation[0],
                                   "fused_activation_function": act}))


def _dw(name: str, x: Spec, mult: int, k: tuple[int, int], out_hw: tuple[int, int],
        padding: int, stride: tuple[int, int], act: int = NONE, seed: int = 0,
        dilation: tuple[int, int] = (1, 1)) -> Case:
    co = x.shape[3] * mult
    return Case("DEPTHWISE_CONV_2D", name, (x, _wf((1, *k, co), seed), _wf((co,), seed + 1)),
                (f32((1, *out_hw, co)),),
                ("DepthwiseConv2DOptions", {"padding": padding, "stride_w": stride[1],
                                            "stride_h": stride[0], "depth_multiplier": mult,
                                            "dilation_w_factor": dilation[1],
                                            "dilation_h_factor": dilation[0],
                                            "fused_activation_function": act}))


def _pool(op: str, name: str, x: Spec, k: int, stride: int, padding: int,
          out_hw: tuple[int, int], act: int = NONE) -> Case:
    return Case(op, name, (x,), (f32((1, *out_hw, x.shape[3])),),
                ("Pool2DOptions", {"padding": padding, "stride_w": stride, "stride_h": stride,
                                   "filter_width": k, "filter_height": k,
                                   "fused_activation_function": act}))


X = f32((1, 7, 9, 5))
X8 = f32((1, 6, 6, 8), (-2.0, 2.0))

CONV = [
    _conv("float32_3x3_same", X, 6, (3, 3), (7, 9), SAME, (1, 1), seed=1),
    _conv("float32_5x3_valid_stride2_relu", X, 4, (5, 3), (2, 4), VALID, (2, 2), act=RELU,
          seed=2),
    _conv("float32_3x3_dilated2_same_relu6", X, 3, (3, 3), (7, 9), SAME, (1, 1), (2, 2),
          act=RELU6, seed=3),
    _conv("float32_1x1_stride2_no_bias", X, 7, (1, 1), (4, 5), VALID, (2, 2), seed=4,
          bias=False),
    _conv("float32_3x3_same_stride2_relu_n1_to_1", X8, 9, (3, 3), (3, 3), SAME, (2, 2),
          act=RELU_N1_TO_1, seed=5),
    _conv("float32_grouped2_3x3_same", X8, 6, (3, 3), (6, 6), SAME, (1, 1), seed=6, groups=2),
]
DEPTHWISE = [
    _dw("float32_mult1_3x3_same", X, 1, (3, 3), (7, 9), SAME, (1, 1), seed=7),
    _dw("float32_mult2_3x3_valid_stride2_relu6", X, 2, (3, 3), (3, 4), VALID, (2, 2),
        act=RELU6, seed=8),
    _dw("float32_mult1_5x5_same_stride2_relu", X8, 1, (5, 5), (3, 3), SAME, (2, 2), act=RELU,
        seed=9),
    _dw("float32_mult1_3x3_dilated2_same", X8, 1, (3, 3), (6, 6), SAME, (1, 1), seed=10,
        dilation=(2, 2)),
]
DENSE = [
    Case("FULLY_CONNECTED", "float32_bias", (f32((1, 20)), _wf((7, 20), 11), _wf((7,), 12)),
         (f32((1, 7)),), ("FullyConnectedOptions", {"fused_activation_function": NONE})),
    Case("FULLY_CONNECTED", "float32_no_bias_relu",
         (f32((1, 33)), _wf((10, 33), 13), omitted()), (f32((1, 10)),),
         ("FullyConnectedOptions", {"fused_activation_function": RELU})),
    Case("FULLY_CONNECTED", "float32_rank4_flatten_relu6",
         (f32((1, 2, 3, 4)), _wf((5, 24), 14), _wf((5,), 15)), (f32((1, 5)),),
         ("FullyConnectedOptions", {"fused_activation_function": RELU6})),
]
POOLING = [
    _pool("MAX_POOL_2D", "float32_3x3_s2_same", X, 3, 2, SAME, (4, 5)),
    _pool("MAX_POOL_2D", "float32_2x2_s2_valid_relu", X8, 2, 2, VALID, (3, 3), act=RELU),
    _pool("AVERAGE_POOL_2D", "float32_3x3_s2_same", X, 3, 2, SAME, (4, 5)),
    _pool("AVERAGE_POOL_2D", "float32_2x2_s1_valid_relu6", X8, 2, 1, VALID, (5, 5), act=RELU6),
]
ELEMENTWISE = [
    Case("ADD", "float32_same_shape_relu", (f32((1, 3, 4, 5)), f32((1, 3, 4, 5))),
         (f32((1, 3, 4, 5)),),
         ("AddOptions", {"fused_activation_function": RELU})),
    Case("ADD", "float32_broadcast_both", (f32((1, 3, 1, 4)), f32((1, 1, 5, 1))),
         (f32((1, 3, 5, 4)),), ("AddOptions", {"fused_activation_function": NONE})),
    Case("MUL", "float32_broadcast_channel_relu6", (X, _wf((1, 1, 1, 5), 16, 2.0)),
         (f32(X.shape),), ("MulOptions", {"fused_activation_function": RELU6})),
    Case("MUL", "float32_same_shape", (f32((1, 11)), f32((1, 11))), (f32((1, 11)),),
         ("MulOptions", {"fused_activation_function": NONE})),
    Case("RELU", "float32", (X,), (f32(X.shape),)),
    Case("RELU6", "float32", (f32((1, 40), (-9.0, 9.0)),), (f32((1, 40)),)),
    Case("LOGISTIC", "float32", (f32((1, 64), (-20.0, 20.0)),), (f32((1, 64)),)),
    Case("TANH", "float32", (f32((1, 64), (-6.0, 6.0)),), (f32((1, 64)),)),
    Case("HARD_SWISH", "float32_wide", (f32((1, 4, 5, 6), (-8.0, 8.0)),),
         (f32((1, 4, 5, 6)),)),
]
SOFTMAX = [
    Case("SOFTMAX", "float32_rank2", (f32((1, 10)),), (f32((1, 10)),),
         ("SoftmaxOptions", {"beta": 1.0})),
    Case("SOFTMAX", "float32_rank4_beta", (X,), (f32(X.shape),),
         ("SoftmaxOptions", {"beta": 0.7})),
]
REDUCE = [
    Case("MEAN", "float32_hw_keepdims", (X, const([1, 2], DType.INT32)), (f32((1, 1, 1, 5)),),
         ("ReducerOptions", {"keep_dims": True})),
    Case("MEAN", "float32_w_drop", (X, const([2], DType.INT32)), (f32((1, 7, 5)),),
         ("ReducerOptions", {"keep_dims": False})),
    Case("SUM", "float32_channels_keep", (X, const([3], DType.INT32)), (f32((1, 7, 9, 1)),),
         ("ReducerOptions", {"keep_dims": True})),
    Case("REDUCE_MAX", "float32_h", (X, const([1], DType.INT32)), (f32((1, 9, 5)),),
         ("ReducerOptions", {"keep_dims": False})),
]
MOVEMENT = [
    Case("PAD", "float32", (X, const([[0, 0], [1, 2], [0, 1], [0, 0]], DType.INT32)),
         (f32((1, 10, 10, 5)),)),
    Case("RESHAPE", "float32", (X, const([1, 63, 5], DType.INT32)), (f32((1, 63, 5)),),
         ("ReshapeOptions", {"new_shape": [1, 63, 5]})),
]
EDGES = [
    Case("QUANTIZE", "float32_to_int8_saturating", (f32((1, 4, 6), (-10.0, 10.0)),),
         (i8((1, 4, 6), 0.05, -3),)),
    Case("DEQUANTIZE", "int16_to_float32", (i16((1, 3, 8), 1 / 4096),), (f32((1, 3, 8)),)),
]

CASES: list[Case] = [*CONV, *DEPTHWISE, *DENSE, *POOLING, *ELEMENTWISE, *SOFTMAX, *REDUCE,
                     *MOVEMENT, *EDGES]
