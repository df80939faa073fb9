"""Element-wise binary operators: SUB, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU, and
int16 ADD / MUL.

Covered per operator where TFLM takes the type: int8, int16 (zero points 0, as TFLM's 16x8
scheme), float32; same shapes, broadcasting of one or both inputs (trailing-aligned lower
ranks, rank 5), constant operands on either side, every fused activation of the operators
that have one, scales whose float32 and double derivations differ.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, i16

NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
S4 = (1, 4, 5, 6)


def _act(table: str, act: int) -> tuple[str, dict[str, int]]:
    return table, {"fused_activation_function": act}


def _i8_const(data: list | np.ndarray, scale: float, zero_point: int = 0) -> Spec:
    return const(data, DType.INT8, QuantParams.per_tensor(scale, zero_point))


def _i16_const(data: list | np.ndarray, scale: float) -> Spec:
    return const(data, DType.INT16, QuantParams.per_tensor(scale, 0))


_RNG = np.random.default_rng(7)
# per-channel PReLU slopes (quantized 0.02 * q) and a 2-D slope map
_ALPHA_C = _RNG.integers(-40, 60, (1, 1, 6)).astype(np.int8)
_ALPHA_WC = _RNG.integers(-128, 127, (5, 6)).astype(np.int8)


def _sub_cases() -> list[Case]:
    sub = "SubOptions"
    return [
        Case("SUB", "int8_same_shape", (i8(S4, 0.05, -3), i8(S4, 0.07, 5)),
             (i8(S4, 0.09, 2),), _act(sub, NONE)),
        # scales whose float32 quotient differs from the double one
        Case("SUB", "int8_odd_scales", (i8((1, 7, 3), 0.0371, 11), i8((1, 7, 3), 0.0533, -20)),
             (i8((1, 7, 3), 0.0917, -7),), _act(sub, NONE)),
        Case("SUB", "int8_broadcast_channel_relu6", (i8(S4, 0.05, -3), i8((1, 1, 1, 6), 0.02)),
             (i8(S4, 0.03, -128),), _act(sub, RELU6)),
        Case("SUB", "int8_rank2_variable_relu", (i8(S4, 0.05, -3), i8((1, 6), 0.04, 9)),
             (i8(S4, 0.06, -128),), _act(sub, RELU)),
        Case("SUB", "int8_both_broadcast_relu_n1_to_1",
             (i8((1, 4, 1, 6), 0.01, 4), i8((1, 1, 5, 1), 0.012, -2)),
             (i8(S4, 0.009, 0),), _act(sub, RELU_N1_TO_1)),
        Case("SUB", "int8_const_minuend",
             (_i8_const(np.arange(-9, 12, dtype=np.int8).reshape(1, 3, 7), 0.1, 1),
              i8((1, 3, 7), 0.08, -1)), (i8((1, 3, 7), 0.15, 0),), _act(sub, NONE)),
        Case("SUB", "int8_scalar_const", (i8((1, 9), 0.05, 0), _i8_const([[17]], 0.05, 0)),
             (i8((1, 9), 0.05, 0),), _act(sub, NONE)),
        Case("SUB", "int8_rank5_broadcast",
             (i8((1, 2, 3, 4, 5), 0.04, 3), i8((1, 1, 3, 1, 5), 0.05, -4)),
             (i8((1, 2, 3, 4, 5), 0.07, 1),), _act(sub, NONE)),
        Case("SUB", "int16_same_shape", (i16(S4, 0.001), i16(S4, 0.0007)), (i16(S4, 0.0015),),
             _act(sub, NONE)),
        Case("SUB", "int16_broadcast_relu", (i16((1, 3, 8), 0.0004), i16((1, 1, 8), 0.0011)),
             (i16((1, 3, 8), 0.0009),), _act(sub, RELU)),
        Case("SUB", "int16_relu_n1_to_1_const",
             (i16((1, 2, 5), 1 / 4096), _i16_const(np.arange(-5, 5, dtype=np.int16)
                                                    .reshape(1, 2, 5) * 900, 1 / 3000)),
             (i16((1, 2, 5), 1 / 8192),), _act(sub, RELU_N1_TO_1)),
        Case("SUB", "float_same_shape", (f32((1, 3, 4)), f32((1, 3, 4))), (f32((1, 3, 4)),),
             _act(sub, NONE)),
        Case("SUB", "float_broadcast_relu6",
             (f32((1, 2, 3, 4)), const(np.linspace(-2, 2, 4).astype(np.float32))),
             (f32((1, 2, 3, 4)),), _act(sub, RELU6)),
        Case("SUB", "float_rank5_relu", (f32((1, 2, 1, 3, 2)), f32((1, 1, 4, 1, 2))),
             (f32((1, 2, 4, 3, 2)),), _act(sub, RELU)),
    ]


def _div_cases() -> list[Case]:
    div = "DivOptions"
    return [
        Case("DIV", "int8_same_shape", (i8(S4, 0.05, -3), i8(S4, 0.04, 10)),
             (i8(S4, 0.2, 1),), _act(div, NONE)),
        # the divisor's range excludes its zero point (no division by zero)
        Case("DIV", "int8_positive_divisor_relu",
             (i8((1, 3, 7), 0.03, 5), i8((1, 3, 7), 0.02, -128, values=(-120, 127))),
             (i8((1, 3, 7), 0.05, -128),), _act(div, RELU)),
        Case("DIV", "int8_broadcast_const_divisor",
             (i8(S4, 0.05, -3), _i8_const([[[[-100, -31, -7, 9, 50, 127]]]], 0.01, 2)),
             (i8(S4, 0.08, 0),), _act(div, NONE)),
        Case("DIV", "int8_rank2_variable_relu6",
             (i8((1, 2, 3, 6), 0.1, 0), i8((1, 6), 0.1, -128, values=(-100, 127))),
             (i8((1, 2, 3, 6), 0.03, -128),), _act(div, RELU6)),
        Case("DIV", "int8_scalar_const_divisor", (i8((1, 5, 6), 0.05, -3), _i8_const(-37, 0.02, 4)),
             (i8((1, 5, 6), 0.1, 0),), _act(div, RELU6)),
        Case("DIV", "int8_odd_scales", (i8((1, 11), 0.0371, 11), i8((1, 11), 0.0533, -20)),
             (i8((1, 11), 0.0917, -7),), _act(div, NONE)),
        Case("DIV", "float_same_shape",
             (f32((1, 3, 4)), f32((1, 3, 4), values=(0.25, 4.0))), (f32((1, 3, 4)),),
             _act(div, NONE)),
        Case("DIV", "float_broadcast_relu_n1_to_1",
             (f32((1, 2, 3, 4)), const(np.array([-3.0, -0.5, 0.75, 2.0], np.float32))),
             (f32((1, 2, 3, 4)),), _act(div, RELU_N1_TO_1)),
    ]


def _max_min_cases() -> list[Case]:
    cases = []
    for op in ("MAXIMUM", "MINIMUM"):
        q8 = i8(S4, 0.05, -3)
        cases += [
            Case(op, "int8_same_shape", (q8, q8), (q8,)),
            Case(op, "int8_broadcast_const",
                 (q8, _i8_const([[[[-128, -40, -3, 0, 50, 127]]]], 0.05, -3)), (q8,)),
            Case(op, "int8_scalar_const", (q8, _i8_const([[[[-3]]]], 0.05, -3)), (q8,)),
            Case(op, "int8_rank5_both_broadcast",
                 (i8((1, 2, 1, 4, 1), 0.1, 7), i8((1, 1, 3, 1, 5), 0.1, 7)),
                 (i8((1, 2, 3, 4, 5), 0.1, 7),)),
            Case(op, "int16_same_shape", (i16((1, 7, 3), 0.001), i16((1, 7, 3), 0.001)),
                 (i16((1, 7, 3), 0.001),)),
            Case(op, "int16_rank2_variable", (i16(S4, 0.002), i16((1, 6), 0.002)),
                 (i16(S4, 0.002),)),
            Case(op, "float_same_shape", (f32((1, 3, 4)), f32((1, 3, 4))), (f32((1, 3, 4)),)),
            Case(op, "float_scalar_const", (f32((1, 2, 5)), const(np.float32(0.5).reshape(()))),
                 (f32((1, 2, 5)),)),
        ]
    return cases


def _squared_difference_cases() -> list[Case]:
    op = "SQUARED_DIFFERENCE"
    return [
        Case(op, "int8_same_shape", (i8(S4, 0.05, -3), i8(S4, 0.07, 5)), (i8(S4, 0.2, -128),)),
        Case(op, "int8_broadcast", (i8((1, 3, 4, 5), 0.03, 10), i8((1, 1, 1, 5), 0.02, -7)),
             (i8((1, 3, 4, 5), 0.01, -128),)),
        Case(op, "int8_scalar_const_first", (_i8_const([25], 0.04, 1), i8((1, 2, 9), 0.03, -5)),
             (i8((1, 2, 9), 0.02, -128),)),
        Case(op, "int8_small_output_scale", (i8((1, 13), 0.01, 0), i8((1, 13), 0.01, 0)),
             (i8((1, 13), 0.0005, -100),)),
        Case(op, "int16_same_shape", (i16((1, 4, 6), 0.001), i16((1, 4, 6), 0.0012)),
             (i16((1, 4, 6), 0.0001),)),
        Case(op, "int16_broadcast_const",
             (i16((1, 3, 4), 0.002), _i16_const([[[-20000, 0, 7, 31000]]], 0.0015)),
             (i16((1, 3, 4), 0.005),)),
        Case(op, "float_same_shape", (f32((1, 3, 4)), f32((1, 3, 4))), (f32((1, 3, 4)),)),
        Case(op, "float_broadcast", (f32((1, 2, 3, 4)), f32((1, 1, 3, 1))),
             (f32((1, 2, 3, 4)),)),
    ]


def _prelu_cases() -> list[Case]:
    return [
        Case("PRELU", "int8_channel_alpha",
             (i8(S4, 0.05, -3), _i8_const(_ALPHA_C, 0.02, 0)), (i8(S4, 0.04, -20),)),
        Case("PRELU", "int8_alpha_map_zero_point",
             (i8((1, 3, 5, 6), 0.1, 10), _i8_const(_ALPHA_WC, 0.005, -30)),
             (i8((1, 3, 5, 6), 0.08, 5),)),
        Case("PRELU", "int8_scalar_alpha", (i8((1, 4, 4, 3), 0.02, 7), _i8_const([60], 0.005, 0)),
             (i8((1, 4, 4, 3), 0.02, 7),)),
        Case("PRELU", "int8_variable_alpha", (i8((1, 2, 7), 0.05, 0), i8((1, 2, 7), 0.01, 3)),
             (i8((1, 2, 7), 0.05, 0),)),
        Case("PRELU", "int16_channel_alpha",
             (i16(S4, 0.001), _i8_const(_ALPHA_C, 0.02, 0)), (i16(S4, 0.0008),)),
        Case("PRELU", "int16_variable_alpha", (i16((1, 3, 4), 0.0005), i8((1, 3, 4), 0.01, -5)),
             (i16((1, 3, 4), 0.0006),)),
        Case("PRELU", "float_channel_alpha",
             (f32(S4), const(np.array([[[0.1, -0.2, 0.0, 0.25, 1.5, 0.01]]], np.float32))),
             (f32(S4),)),
        Case("PRELU", "float_variable_alpha", (f32((1, 3, 4)), f32((1, 3, 4), values=(0, 1))),
             (f32((1, 3, 4)),)),
    ]


def _int16_add_mul_cases() -> list[Case]:
    add, mul = "AddOptions", "MulOptions"
    return [
        Case("ADD", "int16_same_shape", (i16(S4, 0.001), i16(S4, 0.0007)), (i16(S4, 0.0015),),
             _act(add, NONE)),
        Case("ADD", "int16_broadcast_relu", (i16((1, 3, 8), 0.0004), i16((1, 1, 8), 0.0011)),
             (i16((1, 3, 8), 0.0009),), _act(add, RELU)),
        Case("ADD", "int16_rank5_relu6_const",
             (i16((1, 2, 3, 2, 2), 1 / 2048),
              _i16_const(np.arange(-6, 6, dtype=np.int16).reshape(1, 1, 3, 2, 2) * 2000, 1 / 1024)),
             (i16((1, 2, 3, 2, 2), 1 / 4096),), _act(add, RELU6)),
        Case("ADD", "int16_odd_scales", (i16((1, 17), 0.000371), i16((1, 17), 0.000533)),
             (i16((1, 17), 0.000917),), _act(add, NONE)),
        Case("MUL", "int16_same_shape", (i16(S4, 0.001), i16(S4, 0.002)), (i16(S4, 0.05),),
             _act(mul, NONE)),
        Case("MUL", "int16_broadcast_relu_n1_to_1",
             (i16((1, 3, 8), 0.0001), i16((1, 1, 8), 0.0002)), (i16((1, 3, 8), 0.00004),),
             _act(mul, RELU_N1_TO_1)),
        Case("MUL", "int16_const_relu6",
             (i16((1, 2, 5), 0.0003), _i16_const([[[-32768, -1, 0, 1, 32767]]], 0.0001)),
             (i16((1, 2, 5), 0.0002),), _act(mul, RELU6)),
    ]


CASES: list[Case] = [
    *_sub_cases(),
    *_div_cases(),
    *_max_min_cases(),
    *_squared_difference_cases(),
    *_prelu_cases(),
    *_int16_add_mul_cases(),
]
