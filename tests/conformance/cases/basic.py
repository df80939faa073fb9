"""Operators edgenn had before the conformance suite: elementwise, activations, reductions."""

from __future__ import annotations

from edgenn.ir import DType
from tests.conformance.spec import Case, const, f32, i8, like

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
