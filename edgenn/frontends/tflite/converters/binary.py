"""TFLite converters of the element-wise binary operators: SUB, DIV, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, PRELU and POW (ADD and MUL are in ``core.py``)."""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import Node
from edgenn.ir.tflite_enums import OP

# builtin operator -> (IR operator, whether TFLite fuses an activation into it)
_BINARY = {
    "SUB": ("Sub", True),
    "DIV": ("Div", True),
    "MAXIMUM": ("Maximum", False),
    "MINIMUM": ("Minimum", False),
    "SQUARED_DIFFERENCE": ("SquaredDifference", False),
    "PRELU": ("PRelu", False),
    "POW": ("Pow", False),
}
_BY_CODE = {int(getattr(OP, k)): v for k, v in _BINARY.items()}


@converter(*_BINARY)
def binary(b: Builder, op: RawOperator) -> None:
    kind, fused = _BY_CODE[op.opcode]
    a, c = b.input(op, 0), b.input(op, 1)
    attrs = {"activation": b.activation(op)} if fused else {}
    b.emit(Node(b.op_name(op), kind, (a.name, c.name), (output_name(b, op),), attrs))
