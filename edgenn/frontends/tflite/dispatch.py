"""One TFLite operator to IR through the converter table (``registry.CONVERTERS``).

Why below the converters: the IF converter inlines its branches through this same dispatch,
and the table is filled by the loader, which imports every converter module; this module
imports none of them.
"""

from __future__ import annotations

import tflite

from edgenn.errors import ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawModel, RawOperator
from edgenn.frontends.tflite.registry import CONVERTERS
from edgenn.ir.tflite_enums import OP, enum_name


def op_type_name(code: int, custom: str) -> str:
    """The TFLite operator type (``CONV_2D``; ``CUSTOM:name``) of an opcode."""
    if code == OP.CUSTOM:
        return f"CUSTOM:{custom}" if custom else "CUSTOM"
    name = enum_name(OP, code)
    return name if name != str(code) else f"BUILTIN_{code}"


def _type_note(raw: RawModel, inputs: tuple[int, ...]) -> str:
    """`` on int16`` (the first present input's element type), for error messages."""
    for index in inputs:
        if index >= 0:
            return f" on {enum_name(tflite.TensorType, raw.tensors[index].type).lower()}"
    return ""


def convert_operator(b: Builder, op: RawOperator) -> None:
    """Append the IR of one operator of the subgraph ``b`` is reading (the main one, or a
    branch an IF inlines)."""
    convert = CONVERTERS.get(op.opcode)
    if convert is None:
        raise UnsupportedOperatorError(
            f"{b.file}: node {b.op_name(op)!r}: unsupported operator "
            f"{op_type_name(op.opcode, op.custom_code)!r}{_type_note(b.raw, op.inputs)}"
        )
    for index in op.outputs:
        if index >= 0 and 0 in b.raw.tensors[index].shape:
            raise ModelFormatError(
                f"{b.file}: node {b.op_name(op)!r}: output {b.names[index]!r} of "
                f"{op_type_name(op.opcode, op.custom_code)} has the empty shape "
                f"{list(b.raw.tensors[index].shape)}")
    convert(b, op)
