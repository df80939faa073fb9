"""``load_tflite``: raw records -> Builder -> converters -> a validated Graph."""

from __future__ import annotations

import tflite

from edgenn.errors import GraphValidationError, ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.float16 import fold_float16
from edgenn.frontends.tflite.reader import RawModel, RawOperator, read_tflite
from edgenn.frontends.tflite.registry import converters
from edgenn.ir import Graph
from edgenn.ir.tflite_enums import OP, enum_name


def _op_type_name(code: int, custom: str) -> str:
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
    convert = converters().get(op.opcode)
    if convert is None:
        raise UnsupportedOperatorError(
            f"{b.file}: node {b.op_name(op)!r}: unsupported operator "
            f"{_op_type_name(op.opcode, op.custom_code)!r}{_type_note(b.raw, op.inputs)}"
        )
    for index in op.outputs:
        if index >= 0 and 0 in b.raw.tensors[index].shape:
            raise ModelFormatError(
                f"{b.file}: node {b.op_name(op)!r}: output {b.names[index]!r} of "
                f"{_op_type_name(op.opcode, op.custom_code)} has the empty shape "
                f"{list(b.raw.tensors[index].shape)}")
    convert(b, op)


def load_tflite(data: bytes, name: str = "<bytes>") -> Graph:
    """Import a TFLite model (its bytes; ``name`` is used in error messages and as graph name).

    Reads the first subgraph (and the initialisation subgraph a CALL_ONCE runs). Supported:
    int8 fully quantized models as TensorFlow's converter writes them (per-channel weights,
    int32 biases), 16x8 models, float32 models, and float32 models with float16 weights
    (folded to float32 constants: ``float16.py``); resource variables and variable tensors
    become the graph's ``state`` (``edgenn.ir.state``).
    """
    raw = fold_float16(read_tflite(bytes(data), name), name)
    b = Builder(raw, name)
    for op in raw.operators:
        convert_operator(b, op)
    if not raw.inputs or not raw.outputs:
        raise ModelFormatError(f"{name}: the subgraph declares no inputs or no outputs")
    inputs = tuple(b.tensor(i).name for i in raw.inputs)
    outputs = tuple(b.tensor(i).name for i in raw.outputs)
    for io in (*inputs, *outputs):
        if 0 in b.tensors[io].shape:  # empty tensors are omitted optional operands only
            raise ModelFormatError(f"{name}: graph input/output {io!r} has the empty shape "
                                   f"{list(b.tensors[io].shape)}")
        if b.tensors[io].is_const:
            # why: a runtime computes outputs from inputs; a constant is neither fed nor made
            raise ModelFormatError(f"{name}: graph input/output {io!r} is a constant")
    meta = {"format": "tflite", "version": str(raw.version)}
    if raw.description:
        meta["description"] = raw.description
    graph = Graph(name, b.tensors, tuple(b.nodes), inputs, outputs, {}, meta, tuple(b.state()))
    try:
        return graph.validate()
    except GraphValidationError as err:
        raise ModelFormatError(f"{name}: {err}") from None
