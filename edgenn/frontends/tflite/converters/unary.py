"""Converters of TFLite's element-wise unary math operators (one input, one output).

RELU_N1_TO_1 becomes the IR's ``Clip`` to [-1, 1] (TFLite Micro has no kernel for it; the
int8 and int16 arithmetic is then the Clip's: requantize to the output, clamp).
"""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import Node
from edgenn.ir.tflite_enums import OP

# builtin operator -> IR operator, for the operators without options
_PLAIN = {"HARD_SWISH": "HardSwish", "ABS": "Abs", "NEG": "Neg", "SQRT": "Sqrt",
          "RSQRT": "Rsqrt", "EXP": "Exp", "LOG": "Log"}
_BY_CODE = {int(getattr(OP, name)): kind for name, kind in _PLAIN.items()}


def _emit(b: Builder, op: RawOperator, kind: str, attrs: dict[str, object]) -> None:
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        raise b.fail(op, f"{kind} takes one input and one output, got {len(op.inputs)} and "
                         f"{len(op.outputs)}")
    x = b.input(op, 0)
    b.emit(Node(b.op_name(op), kind, (x.name,), (output_name(b, op),), attrs))


@converter(*_PLAIN)
def plain_unary(b: Builder, op: RawOperator) -> None:
    _emit(b, op, _BY_CODE[op.opcode], {})


@converter("LEAKY_RELU")
def leaky_relu(b: Builder, op: RawOperator) -> None:
    # why 0.0: the flatbuffer default of LeakyReluOptions.alpha, also when the table is absent
    alpha = float(op.options.get("alpha", 0.0))  # a NaN fails in the IR's attribute check
    _emit(b, op, "LeakyRelu", {"alpha": alpha})


@converter("RELU_N1_TO_1")
def relu_n1_to_1(b: Builder, op: RawOperator) -> None:
    _emit(b, op, "Clip", {"min": -1.0, "max": 1.0})
