"""Element-wise unary operators: LEAKY_RELU, HARD_SWISH, ABS, NEG, SQRT, RSQRT, EXP, LOG, and the
int16 kernels of RELU, RELU6, LOGISTIC and TANH.

Types follow TFLite Micro's kernels: NEG, SQRT, EXP and LOG are float32 only, HARD_SWISH has no
int16 kernel, int16 tensors are symmetric (zero point 0). RSQRT inputs stay at or above the
zero point (TFLite Micro stops with an error below it). RELU_N1_TO_1 has no TFLite Micro kernel
and so no case here.
"""

from __future__ import annotations

from edgenn.ir import DType
from tests.conformance.spec import Case, Spec, f32, i8, i16, like

Q15 = 1 / 32768  # the int16 LOGISTIC / TANH output scale
LEAKY = "LeakyReluOptions"


def _leaky(name: str, x: Spec, y: Spec, alpha: float) -> Case:
    return Case("LEAKY_RELU", name, (x,), (y,), (LEAKY, {"alpha": alpha}))


def _plain(op: str, name: str, x: Spec, y: Spec) -> Case:
    return Case(op, name, (x,), (y,))


X8 = i8((1, 4, 5, 6), 0.05, -3)
X16 = i16((1, 3, 7, 5), 1 / 4096)

LEAKY_RELU = [
    _leaky("int8_requant", X8, i8(X8.shape, 0.04, -10), 0.2),
    _leaky("int8_same_quant", X8, X8, 0.1),
    _leaky("int8_negative_alpha", X8, i8(X8.shape, 0.06, -40), -0.5),
    _leaky("int8_alpha_above_one", i8((1, 13), 0.02, 20), i8((1, 13), 0.05, 0), 1.5),
    _leaky("int8_alpha_zero", i8((1, 2, 3, 2, 5), 0.1, 0), i8((1, 2, 3, 2, 5), 0.05, -128), 0.0),
    _leaky("int8_saturating", i8((1, 9), 0.2, 0), i8((1, 9), 0.01, 0), 0.3),
    _leaky("int16_requant", X16, i16(X16.shape, 1 / 2048), 0.2),
    _leaky("int16_same_quant", X16, X16, 0.01),
    _leaky("int16_negative_alpha", i16((1, 31), 0.001), i16((1, 31), 0.002), -0.7),
    _leaky("float", f32((1, 3, 7)), f32((1, 3, 7)), 0.2),
    _leaky("float_negative_alpha", f32((1, 11)), f32((1, 11)), -1.5),
]

HARD_SWISH = [
    # reluish exponent > 0 (saturating left shifts), = 0 and < 0 (rounding right shift)
    _plain("HARD_SWISH", "int8_wide", i8((1, 4, 5, 6), 0.1, 0), i8((1, 4, 5, 6), 0.05, -100)),
    _plain("HARD_SWISH", "int8_mid", i8((1, 6, 7), 0.04, 5), i8((1, 6, 7), 0.03, -60)),
    _plain("HARD_SWISH", "int8_fine", i8((1, 33), 0.01, -20), i8((1, 33), 0.008, -40)),
    _plain("HARD_SWISH", "int8_tiny_scale", i8((1, 17), 0.002, 3), i8((1, 17), 0.002, -3)),
    _plain("HARD_SWISH", "float", f32((1, 5, 9), (-7.0, 7.0)), f32((1, 5, 9))),
]

ABS = [
    _plain("ABS", "int8_same_quant", X8, X8),
    _plain("ABS", "int8_requant", X8, i8(X8.shape, 0.03, -128)),
    _plain("ABS", "int8_saturating", i8((1, 19), 0.1, 60), i8((1, 19), 0.05, 0)),
    _plain("ABS", "int16_same_quant", X16, X16),
    _plain("ABS", "int16_requant", i16((1, 23), 0.001), i16((1, 23), 0.0004)),
    _plain("ABS", "int16_unquantized", Spec((1, 4, 6), DType.INT16), Spec((1, 4, 6), DType.INT16)),
    _plain("ABS", "float", f32((1, 2, 3, 4)), f32((1, 2, 3, 4))),
]

FLOAT_ONLY = [
    _plain("NEG", "float", f32((1, 4, 5, 6)), f32((1, 4, 5, 6))),
    _plain("NEG", "float_rank1", f32((1,)), f32((1,))),
    _plain("SQRT", "float", f32((1, 3, 8), (0.0, 50.0)), f32((1, 3, 8))),
    _plain("SQRT", "float_negative_is_nan", f32((1, 10), (-1.0, 1.0)), f32((1, 10))),
    _plain("EXP", "float", f32((1, 4, 9), (-10.0, 10.0)), f32((1, 4, 9))),
    _plain("LOG", "float", f32((1, 2, 13), (0.001, 100.0)), f32((1, 2, 13))),
    _plain("LOG", "float_nonpositive", f32((1, 7), (-1.0, 1.0)), f32((1, 7))),
]

RSQRT = [
    _plain("RSQRT", "int8", i8((1, 4, 5, 6), 0.05, -128), i8((1, 4, 5, 6), 0.05, -128)),
    _plain("RSQRT", "int8_offset_zero_point", i8((1, 21), 0.02, 10, (10, 127)),
           i8((1, 21), 0.1, -100)),
    _plain("RSQRT", "int8_fine_output", i8((1, 3, 11), 0.5, -128), i8((1, 3, 11), 0.01, -128)),
    _plain("RSQRT", "int16", i16((1, 6, 7), 1 / 1024, values=(0, 32767)), i16((1, 6, 7), 1 / 256)),
    _plain("RSQRT", "int16_fine", i16((1, 29), 0.0001, values=(0, 32767)), i16((1, 29), 0.002)),
    _plain("RSQRT", "float", f32((1, 5, 7), (0.001, 20.0)), f32((1, 5, 7))),
]

INT16_ACTIVATIONS = [
    _plain("LOGISTIC", "int16_pot_input", i16((1, 4, 5, 6), 1 / 4096), i16((1, 4, 5, 6), Q15)),
    _plain("LOGISTIC", "int16_scaled_input", i16((1, 37), 0.001), i16((1, 37), Q15)),
    _plain("LOGISTIC", "int16_fine_input", i16((1, 3, 9), 0.00007), i16((1, 3, 9), Q15)),
    _plain("LOGISTIC", "int16_pot_coarse", i16((1, 15), 1 / 1024), i16((1, 15), Q15)),
    _plain("TANH", "int16_pot_input", i16((1, 4, 5, 6), 1 / 4096), i16((1, 4, 5, 6), Q15)),
    _plain("TANH", "int16_pot_shift_one", i16((1, 25), 1 / 2048), i16((1, 25), Q15)),
    _plain("TANH", "int16_scaled_input", i16((1, 2, 17), 0.0003), i16((1, 2, 17), Q15)),
    _plain("RELU", "int16_same_quant", X16, X16),
    _plain("RELU", "int16_requant", i16((1, 27), 0.001), i16((1, 27), 0.0015)),
    _plain("RELU6", "int16", X16, X16),
    _plain("RELU6", "int16_six_saturates", i16((1, 3, 8), 1 / 8192), i16((1, 3, 8), 1 / 8192)),
    # TFLite Micro clamps in the input's quantization and ignores the output's
    _plain("RELU6", "int16_other_output_scale", X16, like(X16, scale=1 / 2048)),
]

CASES: list[Case] = [*LEAKY_RELU, *HARD_SWISH, *ABS, *FLOAT_ONLY, *RSQRT, *INT16_ACTIVATIONS]
