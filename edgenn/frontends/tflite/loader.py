"""``load_tflite``: raw records -> Builder -> converters -> a validated Graph."""

from __future__ import annotations

from edgenn.errors import GraphValidationError, ModelFormatError
from edgenn.frontends.tflite import converters  # noqa: F401  (fills the converter table)
from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.dispatch import convert_operator
from edgenn.frontends.tflite.float16 import fold_float16
from edgenn.frontends.tflite.reader import read_tflite
from edgenn.ir import Graph


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
