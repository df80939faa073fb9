"""Comparisons, logical operators and Where, with numpy broadcasting (ONNX's Equal, Less,
Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, Where; TFLite's EQUAL, NOT_EQUAL,
LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, LOGICAL_NOT / AND / OR, SELECT, SELECT_V2).

===============================  ===========  =========================================
op                               inputs       output
===============================  ===========  =========================================
Equal, NotEqual, Less, Greater,  a, b         bool, the broadcast shape; a and b of one
LessOrEqual, GreaterOrEqual                   type (float32, int8, int32, int64; Equal
                                              and NotEqual: bool too)
Not                              x (bool)     bool
And, Or, Xor                     a, b (bool)  bool, the broadcast shape
Where                            cond, x, y   x's type, the broadcast shape of all three
===============================  ===========  =========================================

The comparisons take the raw values of their operands (no quantization: ONNX compares the
stored numbers), so integer tensors compare as integers and float32 as IEEE floats. Quantized
int8 operands (TFLite) compare their real values as TFLite Micro approximates them: each
``(q - zp) << 8`` scaled by its own scale in fixed point (``comparisons.cc``).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, I32, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, register_shape
from edgenn.ir.tensor import Tensor

I64, BOOL = DType.INT64, DType.BOOL
ORDERED = (F32, I8, I32, I64)
COMPARISONS = {"Equal": "a == b", "NotEqual": "a != b", "Less": "a < b", "Greater": "a > b",
               "LessOrEqual": "a <= b", "GreaterOrEqual": "a >= b"}
LOGICAL = {"And": "a and b", "Or": "a or b", "Xor": "a xor b"}
# the importers' operator names of each IR operator
_TFLITE = {"Equal": "EQUAL", "NotEqual": "NOT_EQUAL", "Less": "LESS", "Greater": "GREATER",
           "LessOrEqual": "LESS_EQUAL", "GreaterOrEqual": "GREATER_EQUAL", "And": "LOGICAL_AND",
           "Or": "LOGICAL_OR"}

for _op, _what in COMPARISONS.items():
    define_op(_op, f"element-wise {_what} with broadcasting (a bool tensor)",
              (*ORDERED, BOOL) if _op in ("Equal", "NotEqual") else ORDERED,
              tflite=(_TFLITE[_op],), onnx=() if _op == "NotEqual" else (_op,))
for _op, _what in LOGICAL.items():
    define_op(_op, f"element-wise {_what} of bool tensors with broadcasting", (BOOL,),
              tflite=(_TFLITE[_op],) if _op in _TFLITE else (), onnx=(_op,))
define_op("Not", "element-wise logical negation of a bool tensor", (BOOL,),
          tflite=("LOGICAL_NOT",), onnx=("Not",))
define_op("Where", "x where cond, else y, with broadcasting", (BOOL,),
          tflite=("SELECT", "SELECT_V2"), onnx=("Where",))


def broadcast(node: Node, *ts: Tensor) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(t.shape for t in ts)))
    except ValueError:
        shapes = " with ".join(str(list(t.shape)) for t in ts)
        raise fail(node, f"cannot broadcast {shapes}") from None


@register_shape(*COMPARISONS, *LOGICAL)
def _binary(node: Node, inputs: list[Tensor | None]) -> Inferred:
    a, b = need(node, inputs, 0), need(node, inputs, 1)
    if a.dtype != b.dtype:
        raise fail(node, f"inputs {a.name!r} ({a.dtype.value}) and {b.name!r} "
                         f"({b.dtype.value}) have different types")
    return [(broadcast(node, a, b), BOOL)]


@register_shape("Not")
def _not(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    return [(x.shape, BOOL)]


@register_shape("Where")
def _where(node: Node, inputs: list[Tensor | None]) -> Inferred:
    cond, x, y = (need(node, inputs, i) for i in range(3))
    if x.dtype != y.dtype or x.dtype not in (F32, I8, I16, I32, I64, BOOL):
        raise fail(node, f"x ({x.dtype.value}) and y ({y.dtype.value}) must have one type")
    if x.quant != y.quant:
        raise fail(node, "x and y must have the same quantization")
    return [(broadcast(node, cond, x, y), x.dtype)]
