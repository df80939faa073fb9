"""Element-wise binary operators with numpy broadcasting (group "binary").

=================  ==========================  ==========  ================================
op                 inputs                      attrs       TFLite / ONNX
=================  ==========================  ==========  ================================
Sub                a, b                        activation  SUB / Sub
Div                a, b                        activation  DIV / Div
Maximum, Minimum   a, b                        -           MAXIMUM, MINIMUM / Max, Min
SquaredDifference  a, b                        -           SQUARED_DIFFERENCE
PRelu              x, alpha                    -           PRELU / PRelu
Pow                x, exponent                 -           POW / Pow
=================  ==========================  ==========  ================================

Both inputs have the same element type, except PRelu on int16 whose alpha is int8 (TFLite's
16x8 scheme); the output has the first input's type and the broadcast shape of both.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, register_shape
from edgenn.ir.tensor import Tensor

define_op("Sub", "element-wise difference a - b with broadcasting and a fused activation",
          (F32, I8, I16), optional=("activation",), tflite=("SUB",), onnx=("Sub",))
define_op("Div", "element-wise quotient a / b with broadcasting and a fused activation",
          (F32, I8), optional=("activation",), tflite=("DIV",), onnx=("Div",))
define_op("Maximum", "element-wise maximum with broadcasting", (F32, I8, I16),
          tflite=("MAXIMUM",), onnx=("Max",))
define_op("Minimum", "element-wise minimum with broadcasting", (F32, I8, I16),
          tflite=("MINIMUM",), onnx=("Min",))
define_op("SquaredDifference", "element-wise (a - b)^2 with broadcasting", (F32, I8, I16),
          tflite=("SQUARED_DIFFERENCE",))
define_op("Pow", "element-wise power x ** exponent with broadcasting (float32)", (F32,),
          tflite=("POW",), onnx=("Pow",))
define_op("PRelu", "x where x >= 0, else alpha * x, with broadcasting", (F32, I8, I16),
          tflite=("PRELU",), onnx=("PRelu",))


def _broadcast_shape(node: Node, a: Tensor, b: Tensor) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise fail(node, f"cannot broadcast {list(a.shape)} with {list(b.shape)}") from None


@register_shape("Sub", "Div", "Maximum", "Minimum", "SquaredDifference", "Pow")
def _binary(node: Node, inputs: list[Tensor | None]) -> Inferred:
    a, b = need(node, inputs, 0), need(node, inputs, 1)
    if a.dtype != b.dtype:
        raise fail(node, f"inputs {a.name!r} ({a.dtype.value}) and {b.name!r} "
                         f"({b.dtype.value}) have different types")
    return [(_broadcast_shape(node, a, b), a.dtype)]


@register_shape("PRelu")
def _prelu(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, alpha = need(node, inputs, 0), need(node, inputs, 1)
    # why: TFLite's 16x8 PRELU takes int16 activations with int8 alpha
    allowed = (DType.INT8,) if x.dtype is DType.INT16 else (x.dtype,)
    if alpha.dtype not in allowed:
        raise fail(node, f"alpha {alpha.name!r} is {alpha.dtype.value}, the input "
                         f"{x.dtype.value} needs {allowed[0].value}")
    return [(_broadcast_shape(node, x, alpha), x.dtype)]
