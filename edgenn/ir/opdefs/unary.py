"""Element-wise unary math: LeakyRelu, HardSwish, HardSigmoid, Abs, Neg, Sqrt, Rsqrt, Exp, Log.

Each keeps its input's shape and element type. The quantized types listed are the ones
TFLite Micro has kernels for (``types`` of the first input): int8 LeakyRelu / HardSwish / Abs
/ Rsqrt, int16 LeakyRelu / Abs / Rsqrt (zero point 0 for Abs and Rsqrt); the rest are float32.
"""

from __future__ import annotations

from numbers import Real

from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, register_shape
from edgenn.ir.tensor import Tensor

define_op("LeakyRelu", "x if x > 0 else alpha * x", (F32, I8, I16), required=("alpha",),
          tflite=("LEAKY_RELU",), onnx=("LeakyRelu",))
define_op("HardSwish", "x * relu6(x + 3) / 6", (F32, I8), tflite=("HARD_SWISH",),
          onnx=("HardSwish",))
define_op("HardSigmoid", "max(0, min(1, alpha * x + beta))", (F32,),
          required=("alpha", "beta"), onnx=("HardSigmoid",))
define_op("Abs", "|x|", (F32, I8, I16), tflite=("ABS",), onnx=("Abs",))
define_op("Neg", "-x", (F32,), tflite=("NEG",), onnx=("Neg",))
define_op("Sqrt", "square root", (F32,), tflite=("SQRT",), onnx=("Sqrt",))
define_op("Rsqrt", "1 / sqrt(x)", (F32, I8, I16), tflite=("RSQRT",))
define_op("Exp", "e ** x", (F32,), tflite=("EXP",), onnx=("Exp",))
define_op("Log", "natural logarithm", (F32,), tflite=("LOG",), onnx=("Log",))

_FLOAT_ATTRS = {"LeakyRelu": ("alpha",), "HardSigmoid": ("alpha", "beta")}


@register_shape("LeakyRelu", "HardSwish", "HardSigmoid", "Abs", "Neg", "Sqrt", "Rsqrt", "Exp",
                "Log")
def _elementwise(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    for key in _FLOAT_ATTRS.get(node.op, ()):
        value = node.attrs[key]
        # why: a bool is an int in Python, and a non-number here would only fail at build time
        if isinstance(value, bool) or not isinstance(value, Real):
            raise fail(node, f"attribute {key} must be a number, got {value!r}")
    return [(x.shape, x.dtype)]
