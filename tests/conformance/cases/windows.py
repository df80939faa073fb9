"""Windows wider than their input, as real models have them and TFLite Micro runs them: a
SAME depthwise 9x1 over 2 rows (a temporal-conv keyword spotter), dilated SAME windows whose
taps mostly fall in the padding, SAME pooling windows wider than the input, and VALID
convolutions whose window exceeds the input (a dynamic-length input written with length 1,
as openWakeWord's melspectrogram) where TFLite Micro runs the declared output with the
padding TFLite's ComputePaddingHeightWidth leaves.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, like

SAME, VALID = 0, 1


def _per_channel(co: int, seed: int) -> QuantParams:
    scales = np.random.default_rng(seed).uniform(0.002, 0.02, co).astype(np.float32)
    return QuantParams(scales, np.zeros(co, np.int64), 3)


def _dw_int8(name: str, x: Spec, k: tuple[int, int], out_hw: tuple[int, int], padding: int,
             stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
             seed: int = 0) -> Case:
    co = x.shape[3]
    rng = np.random.default_rng(seed)
    w = const(rng.integers(-127, 128, (1, *k, co)).astype(np.int8),
              quant=_per_channel(co, seed))
    b = const(rng.integers(-2000, 2000, co).astype(np.int32), DType.INT32)
    return Case("DEPTHWISE_CONV_2D", name, (x, w, b), (i8((1, *out_hw, co), 0.2, 3),),
                ("DepthwiseConv2DOptions", {"padding": padding, "stride_w": stride[1],
                                            "stride_h": stride[0], "depth_multiplier": 1,
                                            "dilation_w_factor": dilation[1],
                                            "dilation_h_factor": dilation[0],
                                            "fused_activation_function": 0}))


def _conv(name: str, x: Spec, co: int, k: tuple[int, int], out: Spec, padding: int,
          stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
          seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    ci = x.shape[3]
    if x.dtype is DType.FLOAT32:
        w = const(rng.uniform(-1, 1, (co, *k, ci)).astype(np.float32))
        b = const(rng.uniform(-1, 1, co).astype(np.float32))
    else:
        w = const(rng.integers(-127, 128, (co, *k, ci)).astype(np.int8),
                  quant=QuantParams(rng.uniform(0.002, 0.02, co).astype(np.float32),
                                    np.zeros(co, np.int64), 0))
        b = const(rng.integers(-2000, 2000, co).astype(np.int32), DType.INT32)
    return Case("CONV_2D", name, (x, w, b), (out,),
                ("Conv2DOptions", {"padding": padding, "stride_w": stride[1],
                                   "stride_h": stride[0], "dilation_w_factor": dilation[1],
                                   "dilation_h_factor": dilation[0],
                                   "fused_activation_function": 0}))


def _pool(op: str, name: str, x: Spec, k: tuple[int, int], out_hw: tuple[int, int],
          stride: tuple[int, int] = (1, 1)) -> Case:
    return Case(op, name, (x,), (like(x, shape=(1, *out_hw, x.shape[3])),),
                ("Pool2DOptions", {"padding": SAME, "stride_h": stride[0],
                                   "stride_w": stride[1], "filter_height": k[0],
                                   "filter_width": k[1], "fused_activation_function": 0}))


X2 = i8((1, 2, 5, 6), 0.05, -4)  # 2 rows: a temporal axis shorter than the window
F1 = f32((1, 3, 1, 2))  # 1 column
I1 = i8((1, 3, 1, 4), 0.04, 7)

CASES = [
    _dw_int8("int8_9x1_same_2_rows", X2, (9, 1), (2, 5), SAME, seed=1),
    _dw_int8("int8_9x3_same_stride2_2_rows", X2, (9, 3), (1, 3), SAME, (2, 2), seed=2),
    _dw_int8("int8_3x3_same_dilation7", X2, (3, 3), (2, 5), SAME, dilation=(7, 3), seed=3),
    _dw_int8("int8_2x2_same_dilation9_no_tap_on_rows", X2, (2, 2), (2, 5), SAME,
             dilation=(9, 2), seed=4),
    _conv("float_1x12_same_wider_than_input", F1, 3, (1, 12), f32((1, 3, 1, 3)), SAME, seed=5),
    _conv("float_1x12_valid_stride4_declared_1", F1, 3, (1, 12), f32((1, 3, 1, 3)), VALID,
          (1, 4), seed=6),
    _conv("float_1x14_valid_stride8_count_0_declared_1", F1, 2, (1, 14), f32((1, 3, 1, 2)),
          VALID, (1, 8), seed=10),
    _conv("float_3x512_valid_stride160_declared_1", F1, 4, (3, 512), f32((1, 1, 1, 4)), VALID,
          (1, 160), seed=7),
    _conv("int8_5x9_same_wider_than_input", I1, 3, (5, 9), i8((1, 3, 1, 3), 0.3, -7), SAME,
          seed=8),
    _conv("int8_1x12_valid_stride4_declared_1", I1, 2, (1, 12), i8((1, 3, 1, 2), 0.3, -7),
          VALID, (1, 4), seed=9),
    _pool("MAX_POOL_2D", "int8_7x7_same_wider_than_input", X2, (7, 7), (2, 5)),
    _pool("AVERAGE_POOL_2D", "int8_7x7_same_stride2_wider_than_input", X2, (7, 7), (1, 3),
          (2, 2)),
]
