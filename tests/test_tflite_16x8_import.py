"""What the TFLite importer and the reference runtime refuse on the 16x8 scheme, in one line
naming the node: the operands TFLite Micro would misread or that break the symmetric scheme."""

from __future__ import annotations

import numpy as np
import pytest

from edgenn.backends.ref import compile_ref
from edgenn.errors import UnsupportedOperatorError
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, const, i16, model_bytes

W_Q = QuantParams(np.full(2, 0.01, np.float32), np.zeros(2, np.int64), 0)
CONV = ("Conv2DOptions", {"padding": 1, "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                          "dilation_w_factor": 1})


def _bias(dtype: DType) -> object:
    return const(np.array([5, -5], dtype.numpy), dtype, W_Q)


def test_depthwise_16x8_with_int32_bias_is_refused() -> None:
    w = const(np.ones((1, 3, 3, 2), np.int8), DType.INT8,
              QuantParams(np.full(2, 0.01, np.float32), np.zeros(2, np.int64), 3))
    case = Case("DEPTHWISE_CONV_2D", "i32", (i16((1, 5, 5, 2), 0.01), w, _bias(DType.INT32)),
                (i16((1, 3, 3, 2), 0.02),),
                ("DepthwiseConv2DOptions", {**CONV[1], "depth_multiplier": 1}))
    with pytest.raises(UnsupportedOperatorError, match="c0_out0.*needs an int64 bias"):
        load_tflite(model_bytes([case]), name="dw")


def test_transpose_conv_16x8_with_int32_bias_is_refused() -> None:
    shape = const(np.array([1, 7, 7, 2], np.int32), DType.INT32)
    w = const(np.ones((2, 3, 3, 2), np.int8), DType.INT8, W_Q)
    case = Case("TRANSPOSE_CONV", "i32", (shape, w, i16((1, 5, 5, 2), 0.01), _bias(DType.INT32)),
                (i16((1, 7, 7, 2), 0.02),),
                ("TransposeConvOptions", {"padding": 1, "stride_h": 1, "stride_w": 1}))
    with pytest.raises(UnsupportedOperatorError, match="c0_out0.*int32 bias"):
        load_tflite(model_bytes([case]), name="tconv")


def test_16x8_conv_with_a_zero_point_is_refused() -> None:
    w = const(np.ones((2, 3, 3, 2), np.int8), DType.INT8, W_Q)
    case = Case("CONV_2D", "zp", (i16((1, 5, 5, 2), 0.01, zero_point=3), w, _bias(DType.INT64)),
                (i16((1, 3, 3, 2), 0.02),), CONV)
    graph = load_tflite(model_bytes([case]), name="conv")
    with pytest.raises(UnsupportedOperatorError, match="c0_out0.*non-zero zero point"):
        compile_ref(graph)


def test_16x8_conv_rescale_beyond_the_64_bit_multiply_is_refused() -> None:
    w = const(np.ones((2, 3, 3, 2), np.int8), DType.INT8, W_Q)
    case = Case("CONV_2D", "big", (i16((1, 5, 5, 2), 1000.0), w, _bias(DType.INT64)),
                (i16((1, 3, 3, 2), 1e-4),), CONV)
    graph = load_tflite(model_bytes([case]), name="conv")
    with pytest.raises(UnsupportedOperatorError, match="c0_out0.*too large"):
        compile_ref(graph)
