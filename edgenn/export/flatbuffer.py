"""A plain description of a one-subgraph TFLite model and its flatbuffer serialization.

The exporter first lowers the IR into :class:`TflModel` (tensors, operators, options written
as small callbacks) and only then serializes, so the lowering never touches flatbuffer
offsets and the serializer never knows about edgenn operators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

from edgenn.ir import DType, QuantParams
from edgenn.ir.tflite_enums import TENSOR_TYPES

SCHEMA_VERSION = 3
FILE_IDENTIFIER = b"TFL3"
# why: TFLM reads constant data in place; 16-byte alignment keeps every element type aligned.
_DATA_ALIGNMENT = 16

OptionsFn = Callable[[flatbuffers.Builder], int]


@dataclass
class TflTensor:
    name: str
    shape: tuple[int, ...]
    dtype: DType
    quant: QuantParams | None = None
    data: np.ndarray | None = None
    # the TFLite axis of per-channel quantization (may differ from the IR's, e.g. depthwise)
    quant_axis: int = 0
    # a state tensor the interpreter keeps between invocations (LSTM and SVDF state)
    variable: bool = False


@dataclass
class TflOperator:
    builtin: int
    version: int
    inputs: list[int]
    outputs: list[int]
    options_type: int = 0  # tflite.BuiltinOptions.NONE
    options: OptionsFn | None = None


@dataclass
class TflModel:
    tensors: list[TflTensor] = field(default_factory=list)
    operators: list[TflOperator] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    description: str = "edgenn"
    _index: dict[str, int] = field(default_factory=dict)

    def add_tensor(self, tensor: TflTensor) -> int:
        if tensor.name in self._index:
            raise ValueError(f"tensor {tensor.name!r} added twice")
        self._index[tensor.name] = len(self.tensors)
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def rename(self, index: int, name: str) -> None:
        del self._index[self.tensors[index].name]
        self.tensors[index].name = name
        self._index[name] = index

    def index(self, name: str) -> int:
        return self._index[name]

    def has(self, name: str) -> bool:
        return name in self._index

    def unique_name(self, base: str) -> str:
        name, k = base, 1
        while name in self._index:
            name, k = f"{base}_{k}", k + 1
        return name


# -- serialization ----------------------------------------------------------------------------
def _int_vector(b: flatbuffers.Builder, values: list[int], start: Callable[..., None]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(int(v))
    return int(b.EndVector())


def _offset_vector(b: flatbuffers.Builder, offsets: list[int], start: Callable[..., None]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return int(b.EndVector())


def _aligned_bytes(b: flatbuffers.Builder, data: bytes) -> int:
    b.StartVector(1, len(data), _DATA_ALIGNMENT)
    b.head = b.head - len(data)
    b.Bytes[b.head : b.head + len(data)] = data
    return int(b.EndVector())


def _quantization(b: flatbuffers.Builder, t: TflTensor) -> int:
    q = t.quant
    assert q is not None
    scale = np.asarray(q.scale, np.float32)
    zp = np.asarray(q.zero_point, np.int64)
    scale_vec = b.CreateNumpyVector(scale)
    zp_vec = b.CreateNumpyVector(zp)
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scale_vec)
    tflite.QuantizationParametersAddZeroPoint(b, zp_vec)
    if q.per_channel:
        tflite.QuantizationParametersAddQuantizedDimension(b, t.quant_axis)
    return int(tflite.QuantizationParametersEnd(b))


def _tensor(b: flatbuffers.Builder, t: TflTensor, buffer: int) -> int:
    name = b.CreateString(t.name)
    shape = _int_vector(b, list(t.shape), tflite.TensorStartShapeVector)
    quant = _quantization(b, t) if t.quant is not None else None
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, TENSOR_TYPES[t.dtype])
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if t.variable:
        tflite.TensorAddIsVariable(b, True)
    return int(tflite.TensorEnd(b))


def _operator(b: flatbuffers.Builder, op: TflOperator, opcode_index: int) -> int:
    inputs = _int_vector(b, op.inputs, tflite.OperatorStartInputsVector)
    outputs = _int_vector(b, op.outputs, tflite.OperatorStartOutputsVector)
    options = op.options(b) if op.options is not None else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode_index)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, op.options_type)
        tflite.OperatorAddBuiltinOptions(b, options)
    return int(tflite.OperatorEnd(b))


def _operator_code(b: flatbuffers.Builder, builtin: int, version: int) -> int:
    tflite.OperatorCodeStart(b)
    # why: readers older than schema 2.4 only look at the deprecated int8 field (127 = extended)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
    tflite.OperatorCodeAddBuiltinCode(b, builtin)
    tflite.OperatorCodeAddVersion(b, version)
    return int(tflite.OperatorCodeEnd(b))


def serialize(model: TflModel) -> bytes:
    """The flatbuffer bytes of ``model`` (schema version 3, identifier ``TFL3``)."""
    b = flatbuffers.Builder(1024)

    # Buffers: 0 is the conventional empty buffer shared by every non-constant tensor.
    buffer_of: list[int] = []
    payloads: list[bytes] = []
    for t in model.tensors:
        if t.data is None:
            buffer_of.append(0)
        else:
            payloads.append(np.ascontiguousarray(t.data, t.dtype.numpy).tobytes())
            buffer_of.append(len(payloads))
    buffer_offsets: list[int] = []
    for payload in [b""] + payloads:
        data = _aligned_bytes(b, payload) if payload else None
        tflite.BufferStart(b)
        if data is not None:
            tflite.BufferAddData(b, data)
        buffer_offsets.append(int(tflite.BufferEnd(b)))

    tensors = [_tensor(b, t, buf) for t, buf in zip(model.tensors, buffer_of, strict=True)]

    codes: dict[tuple[int, int], int] = {}
    for op in model.operators:
        key = (op.builtin, op.version)
        codes.setdefault(key, len(codes))
    operators = [_operator(b, op, codes[(op.builtin, op.version)]) for op in model.operators]
    code_offsets = [_operator_code(b, bi, ver) for bi, ver in codes]

    tensors_vec = _offset_vector(b, tensors, tflite.SubGraphStartTensorsVector)
    inputs_vec = _int_vector(b, model.inputs, tflite.SubGraphStartInputsVector)
    outputs_vec = _int_vector(b, model.outputs, tflite.SubGraphStartOutputsVector)
    ops_vec = _offset_vector(b, operators, tflite.SubGraphStartOperatorsVector)
    sg_name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, inputs_vec)
    tflite.SubGraphAddOutputs(b, outputs_vec)
    tflite.SubGraphAddOperators(b, ops_vec)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)

    subgraphs_vec = _offset_vector(b, [subgraph], tflite.ModelStartSubgraphsVector)
    codes_vec = _offset_vector(b, code_offsets, tflite.ModelStartOperatorCodesVector)
    buffers_vec = _offset_vector(b, buffer_offsets, tflite.ModelStartBuffersVector)
    desc = b.CreateString(model.description)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, SCHEMA_VERSION)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    root = tflite.ModelEnd(b)
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())
