"""int16 activations (TFLite's 16x8 scheme, zero point 0): pooling, softmax, quantize,
dequantize.

Pooling outputs keep the input's parameters (TFLM requires it); int16 softmax outputs are
fixed at scale 1/32768 (1/65536 and zero point -32768 for int8 -> int16); QUANTIZE covers
float32 -> int16, every int8 / int16 requantization and those with an int32 side.
"""

from __future__ import annotations

from tests.conformance.spec import Case, Options, f32, i8, i16, i32, like

SAME, VALID = 0, 1
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


def _pool(filter_hw: tuple[int, int], stride_hw: tuple[int, int], padding: int,
          act: int = NONE) -> Options:
    return ("Pool2DOptions", {"padding": padding, "stride_h": stride_hw[0],
                              "stride_w": stride_hw[1], "filter_height": filter_hw[0],
                              "filter_width": filter_hw[1], "fused_activation_function": act})


def _softmax(beta: float) -> Options:
    return ("SoftmaxOptions", {"beta": beta})


# activations around +-8 (scale 8 / 32768) and a finer one that RELU6 clips
X = i16((1, 6, 6, 5), 8 / 32768)
FINE = i16((1, 7, 5, 3), 2.5e-4)
WIDE = i16((1, 9, 11, 4), 0.01)
PROB = i16((1, 10), 1 / 32768)


def _pools(op: str) -> list[Case]:
    return [
        Case(op, "s16_valid_2x2", (X,), (like(X, shape=(1, 3, 3, 5)),),
             _pool((2, 2), (2, 2), VALID)),
        Case(op, "s16_same_3x3_stride2_relu6", (FINE,), (like(FINE, shape=(1, 4, 3, 3)),),
             _pool((3, 3), (2, 2), SAME, RELU6)),
        Case(op, "s16_same_odd_window_relu", (WIDE,), (like(WIDE),),
             _pool((3, 2), (1, 1), SAME, RELU)),
        Case(op, "s16_valid_stride_hw_relu_n1", (WIDE,), (like(WIDE, shape=(1, 3, 4, 4)),),
             _pool((3, 5), (3, 2), VALID, RELU_N1_TO_1)),
        Case(op, "s16_global", (X,), (like(X, shape=(1, 1, 1, 5)),), _pool((6, 6), (1, 1), VALID)),
    ]


CASES: list[Case] = [
    *_pools("AVERAGE_POOL_2D"),
    *_pools("MAX_POOL_2D"),
    # softmax: several input scales (the LUT's [-10, 0] range clips differences), betas, ranks
    Case("SOFTMAX", "s16_rank2", (i16((1, 10), 8 / 32768),), (PROB,), _softmax(1.0)),
    Case("SOFTMAX", "s16_rank4_beta_half", (i16((1, 2, 3, 7), 6e-4),),
         (i16((1, 2, 3, 7), 1 / 32768),), _softmax(0.5)),
    Case("SOFTMAX", "s16_wide_input", (i16((1, 3, 16), 0.01),), (i16((1, 3, 16), 1 / 32768),),
         _softmax(1.0)),
    Case("SOFTMAX", "s16_narrow_input_beta2", (i16((1, 5, 9), 2e-5),),
         (i16((1, 5, 9), 1 / 32768),), _softmax(2.0)),
    Case("SOFTMAX", "s16_single_class", (i16((1, 4, 1), 1e-3),), (i16((1, 4, 1), 1 / 32768),),
         _softmax(1.0)),
    Case("SOFTMAX", "s16_many_classes", (i16((1, 257), 4e-4),),
         (i16((1, 257), 1 / 32768),), _softmax(1.0)),
    # int8 input, int16 output (scale 1/65536, zero point -32768)
    Case("SOFTMAX", "s8_to_s16", (i8((1, 10), 0.1, 3),), (i16((1, 10), 1 / 65536, -32768),),
         _softmax(1.0)),
    Case("SOFTMAX", "s8_to_s16_rank3_beta", (i8((1, 4, 12), 0.35, -20),),
         (i16((1, 4, 12), 1 / 65536, -32768),), _softmax(0.7)),
    # QUANTIZE: float32 -> int16 (with saturation), every requantization involving int16
    Case("QUANTIZE", "f32_to_s16", (f32((1, 4, 6), values=(-4.0, 4.0)),),
         (i16((1, 4, 6), 1e-4),)),
    Case("QUANTIZE", "f32_to_s16_coarse", (f32((1, 33), values=(-300.0, 300.0)),),
         (i16((1, 33), 0.0123),)),
    Case("QUANTIZE", "s16_to_s8", (i16((1, 3, 5, 4), 1e-3),), (i8((1, 3, 5, 4), 0.05, -3),)),
    Case("QUANTIZE", "s16_to_s8_saturating", (i16((1, 40), 3e-3),), (i8((1, 40), 0.02, 10),)),
    Case("QUANTIZE", "s8_to_s16", (i8((1, 2, 3, 8), 0.05, 5),), (i16((1, 2, 3, 8), 1e-3),)),
    Case("QUANTIZE", "s8_to_s16_saturating", (i8((1, 50), 0.1, -20),), (i16((1, 50), 1e-4),)),
    Case("QUANTIZE", "s16_to_s16_finer", (i16((1, 6, 7), 1e-3),), (i16((1, 6, 7), 3e-4),)),
    Case("QUANTIZE", "s16_to_s16_coarser", (i16((1, 6, 7), 1e-3),), (i16((1, 6, 7), 7.3e-3),)),
    # QUANTIZE with an int32 side (TFLite Micro's Requantize; the SEANet integration tests
    # rescale int32 accumulations to int16 and back): zero points and saturation included
    Case("QUANTIZE", "s32_to_s16", (i32((1, 2, 16, 2), 1.4901161e-07, values=(-2**30, 2**30)),),
         (i16((1, 2, 16, 2), 9.2197e-4),)),
    Case("QUANTIZE", "s32_to_s16_zero_points", (i32((1, 40), 3e-5, 1000, (-2**31, 2**31 - 1)),),
         (i16((1, 40), 2e-3, 0),)),
    Case("QUANTIZE", "s32_to_s8_saturating", (i32((1, 3, 11), 1e-3, -7, (-300000, 300000)),),
         (i8((1, 3, 11), 0.5, 4),)),
    Case("QUANTIZE", "s16_to_s32", (i16((1, 2, 16, 2), 4.9431e-4),),
         (i32((1, 2, 16, 2), 1.4901161e-07),)),
    Case("QUANTIZE", "s8_to_s32_zero_points", (i8((1, 3, 7), 0.05, -9),),
         (i32((1, 3, 7), 1e-4, 123),)),
    Case("DEQUANTIZE", "s16_to_f32", (i16((1, 5, 6), 3e-4),), (f32((1, 5, 6)),)),
    Case("DEQUANTIZE", "s16_to_f32_coarse", (i16((1, 17), 0.25),), (f32((1, 17)),)),
]
