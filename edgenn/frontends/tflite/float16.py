"""Float16 weights: TFLite's float16 quantization, folded to float32 constants at import.

TensorFlow's converter with ``optimizations=[Optimize.DEFAULT]`` and
``target_spec.supported_types=[tf.float16]`` stores every weight as a FLOAT16 constant and
inserts a DEQUANTIZE to float32 in front of its consumer; activations stay float32. LiteRT
runs that DEQUANTIZE once (its output is a constant). edgenn does the same at import: each
DEQUANTIZE of a FLOAT16 constant is dropped and its output becomes the float32 constant
holding the widened values. float16 -> float32 is exact, so the imported graph computes what
LiteRT computes, and the rest of edgenn (passes, quantizer, every backend) sees a plain
float32 model.

This runs on the raw records, before any converter, so no converter needs to know float16.
Any other use of a float16 tensor (a float16 activation, a FLOAT16 constant read directly by
an operator) is one clear error: no TFLite Micro kernel and no edgenn backend computes in
float16.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tflite

from edgenn.errors import ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.tflite.reader import RawModel, RawOperator, RawTensor
from edgenn.ir.tflite_enums import OP

FLOAT16 = int(tflite.TensorType.FLOAT16)
FLOAT32 = int(tflite.TensorType.FLOAT32)


def _constant_data(raw: RawModel, t: RawTensor) -> bytes | None:
    # why buffer 0: TFLite's buffer 0 is the empty sentinel of every non-constant tensor
    if t.buffer == 0 or t.buffer >= len(raw.buffers):
        return None
    return raw.buffers[t.buffer]


def _op_name(raw: RawModel, op: RawOperator) -> str:
    # the name the Builder gives the node (its first output), for error messages
    return raw.tensors[op.outputs[0]].name if op.outputs else f"op_{op.index}"


def _widened(raw: RawModel, op: RawOperator, file: str) -> tuple[int, bytes] | None:
    """For a DEQUANTIZE of a FLOAT16 constant: (its output tensor, the float32 bytes)."""
    if op.opcode != OP.DEQUANTIZE or len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    if op.inputs[0] < 0 or op.outputs[0] < 0:
        return None
    src, dst = raw.tensors[op.inputs[0]], raw.tensors[op.outputs[0]]
    data = _constant_data(raw, src)
    if src.type != FLOAT16 or data is None:
        return None
    node = _op_name(raw, op)
    if dst.type != FLOAT32 or dst.shape != src.shape:
        raise ModelFormatError(
            f"{file}: node {node!r}: DEQUANTIZE of the float16 constant {src.name!r} "
            f"{list(src.shape)} must give float32 of the same shape, not tensor type "
            f"{dst.type} {list(dst.shape)}")
    count = int(np.prod(src.shape, dtype=np.int64))
    if len(data) != 2 * count:
        raise ModelFormatError(
            f"{file}: tensor {src.name!r} of shape {list(src.shape)} (float16) needs "
            f"{2 * count} bytes but its buffer {src.buffer} has {len(data)}")
    values = np.frombuffer(data, dtype="<f2").astype("<f4")
    return dst.index, values.tobytes()


def fold_float16(raw: RawModel, file: str) -> RawModel:
    """``raw`` with every DEQUANTIZE of a FLOAT16 constant folded into a float32 constant.

    Raises ``UnsupportedOperatorError`` naming the tensor and the operator for any float16
    tensor left in use after folding.
    """
    tensors = list(raw.tensors)
    buffers = list(raw.buffers)
    operators = []
    for op in raw.operators:
        folded = _widened(raw, op, file)
        if folded is None:
            operators.append(op)
            continue
        index, data = folded
        buffers.append(data)
        tensors[index] = replace(tensors[index], buffer=len(buffers) - 1)
    for op in operators:
        for index in (*op.inputs, *op.outputs):
            if index >= 0 and tensors[index].type == FLOAT16:
                raise UnsupportedOperatorError(
                    f"{file}: node {_op_name(raw, op)!r}: tensor {tensors[index].name!r} is "
                    "float16; edgenn reads float16 only as constants dequantized to float32 "
                    "(TFLite's float16 weights), not float16 activations")
    for index in (*raw.inputs, *raw.outputs):
        if tensors[index].type == FLOAT16:
            raise UnsupportedOperatorError(
                f"{file}: graph input/output {tensors[index].name!r} is float16; edgenn "
                "reads float16 only as constant weights (give the model float32 I/O)")
    if len(operators) == len(raw.operators):
        return raw
    return replace(raw, tensors=tensors, operators=operators, buffers=buffers)
