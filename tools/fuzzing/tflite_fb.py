"""A TFLite flatbuffer as plain, mutable Python records, and back to bytes.

The structure-aware TFLite mutators (``tflite_mutators.py``) unpack a seed model into these
records, break one thing in them and pack them again. Unlike the exporter's ``TflModel`` the
records keep every raw code as the file has it (tensor type, opcode index, builtin code,
options tag, buffer index, several subgraphs), so a hostile value can be anything the
schema's field type can hold, while the bytes stay a well-formed flatbuffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite

from edgenn.export.flatbuffer import _aligned_bytes, _int_vector, _offset_vector

_INT32 = (-(1 << 31), (1 << 31) - 1)


@dataclass
class FbQuant:
    scale: list[float]
    zero_point: list[int]
    axis: int = 0


@dataclass
class FbTensor:
    name: str
    shape: list[int]
    type: int  # tflite.TensorType code
    buffer: int
    quant: FbQuant | None = None
    is_variable: bool = False


@dataclass
class FbOperator:
    opcode_index: int
    inputs: list[int]
    outputs: list[int]
    options_type: int = 0  # the union tag written to the file
    options_class: str | None = None  # the table actually written (may differ from the tag)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class FbSubgraph:
    tensors: list[FbTensor] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    operators: list[FbOperator] = field(default_factory=list)
    name: str = "main"


@dataclass
class FbOpcode:
    builtin: int
    custom: str = ""
    version: int = 1


@dataclass
class FbModel:
    version: int = 3
    description: str = ""
    opcodes: list[FbOpcode] = field(default_factory=list)
    subgraphs: list[FbSubgraph] = field(default_factory=list)
    buffers: list[bytes] = field(default_factory=lambda: [b""])


# -- options tables by reflection -----------------------------------------------------------
_OPTION_NAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


def option_class(options_type: int) -> str | None:
    """The generated class name of options tag ``options_type`` (None: no such table)."""
    name = _OPTION_NAMES.get(options_type)
    return name if name and hasattr(tflite, f"{name}Start") else None


def option_fields(cls_name: str) -> list[str]:
    """The field names (``StrideW``) of options table ``cls_name``, from its ``Add`` writers."""
    prefix = f"{cls_name}Add"
    return [n[len(prefix):] for n in dir(tflite) if n.startswith(prefix)]


def _read_options(op: Any, cls_name: str) -> dict[str, Any]:
    table = op.BuiltinOptions()
    if table is None:
        return {}
    opts = getattr(tflite, cls_name)()
    opts.Init(table.Bytes, table.Pos)
    out: dict[str, Any] = {}
    for name in option_fields(cls_name):
        length = getattr(opts, f"{name}Length", None)
        if length is not None:
            out[name] = [getattr(opts, name)(j) for j in range(int(length()))]
            continue
        value = getattr(opts, name)()
        # why bytes too: VAR_HANDLE names its variable with strings; nested tables are dropped
        if isinstance(value, (int, float, bool, bytes)):
            out[name] = value
    return out


def _write_options(b: flatbuffers.Builder, cls_name: str, values: dict[str, Any]) -> int:
    vectors: dict[str, int] = {}
    for name, value in values.items():
        start = getattr(tflite, f"{cls_name}Start{name}Vector", None)
        if isinstance(value, list) and start is not None:
            # why int32: every vector field of a builtin options table holds int32
            vectors[name] = _int_vector(b, [_clip32(v) for v in value], start)
        elif isinstance(value, bytes):  # strings, like vectors, precede the table
            vectors[name] = b.CreateString(value)
    getattr(tflite, f"{cls_name}Start")(b)
    for name, value in values.items():
        add = getattr(tflite, f"{cls_name}Add{name}", None)
        if add is None:
            continue
        if name in vectors:
            add(b, vectors[name])
        elif not isinstance(value, list):
            _add_scalar(b, add, value)
    return int(getattr(tflite, f"{cls_name}End")(b))


def _add_scalar(b: flatbuffers.Builder, add: Any, value: Any) -> None:
    """``add(b, value)``, the value clamped to the field's width when it does not fit.

    why retry: the generated writers do not say a field's width; flatbuffers checks the range
    before it writes anything, so a refused value leaves the builder as it was.
    """
    if isinstance(value, (float, bool)):
        add(b, value)
        return
    for lo, hi in ((-(1 << 63), (1 << 63) - 1), _INT32, (-(1 << 15), (1 << 15) - 1),
                   (0, 255), (-128, 127), (0, 1)):
        try:
            add(b, min(max(int(value), lo), hi))
            return
        except (TypeError, ValueError, OverflowError):
            continue
        except flatbuffers.builder.OffsetArithmeticError:
            # why: a mutated string field (an offset) holds an int that points nowhere; the
            # field is left out, and nothing was written
            return


def _clip32(v: Any) -> int:
    return int(min(max(int(v), _INT32[0]), _INT32[1]))


# -- unpack -------------------------------------------------------------------------------------
def _ints(arr: Any) -> list[int]:
    return [] if isinstance(arr, int) else [int(v) for v in np.asarray(arr).reshape(-1)]


def _tensor(t: Any) -> FbTensor:
    name = t.Name()
    out = FbTensor(name.decode("utf-8", "replace") if name else "", _ints(t.ShapeAsNumpy()),
                   int(t.Type()), int(t.Buffer()), is_variable=bool(t.IsVariable()))
    q = t.Quantization()
    if q is not None and q.ScaleLength() > 0:
        out.quant = FbQuant([float(s) for s in np.asarray(q.ScaleAsNumpy()).reshape(-1)],
                            _ints(q.ZeroPointAsNumpy()), int(q.QuantizedDimension()))
    return out


def _operator(op: Any) -> FbOperator:
    tag = int(op.BuiltinOptionsType())
    cls_name = option_class(tag)
    return FbOperator(int(op.OpcodeIndex()), _ints(op.InputsAsNumpy()),
                      _ints(op.OutputsAsNumpy()), tag, cls_name,
                      _read_options(op, cls_name) if cls_name else {})


def _buffer(data: bytes, buf: Any) -> bytes:
    offset, size = int(buf.Offset()), int(buf.Size())
    if offset > 1:
        return bytes(data[offset:offset + size])
    return b"" if buf.DataLength() == 0 else np.asarray(buf.DataAsNumpy(), np.uint8).tobytes()


def unpack(data: bytes) -> FbModel:
    """The records of a well-formed TFLite file (flatbuffers' exceptions on a corrupt one)."""
    m = tflite.Model.GetRootAs(data, 0)
    opcodes = []
    for i in range(m.OperatorCodesLength()):
        c = m.OperatorCodes(i)
        custom = c.CustomCode()
        opcodes.append(FbOpcode(max(int(c.BuiltinCode()), int(c.DeprecatedBuiltinCode())),
                                custom.decode("utf-8", "replace") if custom else "",
                                int(c.Version())))
    subgraphs = []
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        name = sg.Name()
        subgraphs.append(FbSubgraph(
            [_tensor(sg.Tensors(i)) for i in range(sg.TensorsLength())],
            _ints(sg.InputsAsNumpy()), _ints(sg.OutputsAsNumpy()),
            [_operator(sg.Operators(i)) for i in range(sg.OperatorsLength())],
            name.decode("utf-8", "replace") if name else ""))
    desc = m.Description()
    return FbModel(int(m.Version()), desc.decode("utf-8", "replace") if desc else "", opcodes,
                   subgraphs, [_buffer(data, m.Buffers(i)) for i in range(m.BuffersLength())])


# -- pack -----------------------------------------------------------------------------------------
def _pack_tensor(b: flatbuffers.Builder, t: FbTensor) -> int:
    name = b.CreateString(t.name)
    shape = _int_vector(b, [_clip32(d) for d in t.shape], tflite.TensorStartShapeVector)
    quant = None
    if t.quant is not None:
        scale = b.CreateNumpyVector(np.asarray(t.quant.scale, np.float32))
        zp = b.CreateNumpyVector(np.asarray(t.quant.zero_point, np.int64))
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scale)
        tflite.QuantizationParametersAddZeroPoint(b, zp)
        tflite.QuantizationParametersAddQuantizedDimension(b, _clip32(t.quant.axis))
        quant = tflite.QuantizationParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, t.type & 0x7F)  # why: the field is an int8 enum
    tflite.TensorAddBuffer(b, t.buffer & 0xFFFFFFFF)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if t.is_variable:
        tflite.TensorAddIsVariable(b, True)
    return int(tflite.TensorEnd(b))


def _pack_operator(b: flatbuffers.Builder, op: FbOperator) -> int:
    inputs = _int_vector(b, [_clip32(i) for i in op.inputs], tflite.OperatorStartInputsVector)
    outputs = _int_vector(b, [_clip32(i) for i in op.outputs], tflite.OperatorStartOutputsVector)
    options = _write_options(b, op.options_class, op.options) if op.options_class else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, op.opcode_index & 0xFFFFFFFF)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if op.options_type:
        tflite.OperatorAddBuiltinOptionsType(b, op.options_type & 0xFF)
    if options is not None:
        tflite.OperatorAddBuiltinOptions(b, options)
    return int(tflite.OperatorEnd(b))


def _pack_subgraph(b: flatbuffers.Builder, sg: FbSubgraph) -> int:
    tensors = _offset_vector(b, [_pack_tensor(b, t) for t in sg.tensors],
                             tflite.SubGraphStartTensorsVector)
    ops = _offset_vector(b, [_pack_operator(b, op) for op in sg.operators],
                         tflite.SubGraphStartOperatorsVector)
    inputs = _int_vector(b, [_clip32(i) for i in sg.inputs], tflite.SubGraphStartInputsVector)
    outputs = _int_vector(b, [_clip32(i) for i in sg.outputs], tflite.SubGraphStartOutputsVector)
    name = b.CreateString(sg.name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    tflite.SubGraphAddInputs(b, inputs)
    tflite.SubGraphAddOutputs(b, outputs)
    tflite.SubGraphAddOperators(b, ops)
    tflite.SubGraphAddName(b, name)
    return int(tflite.SubGraphEnd(b))


def _pack_opcode(b: flatbuffers.Builder, c: FbOpcode) -> int:
    custom = b.CreateString(c.custom) if c.custom else None
    tflite.OperatorCodeStart(b)
    code = c.builtin & 0x7FFFFFFF
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, _clip32(c.version))
    if custom is not None:
        tflite.OperatorCodeAddCustomCode(b, custom)
    return int(tflite.OperatorCodeEnd(b))


def pack(model: FbModel) -> bytes:
    """The flatbuffer bytes of ``model`` (identifier ``TFL3``); any value is written as is,
    truncated only to the width of its schema field."""
    b = flatbuffers.Builder(1024)
    buffers = []
    for payload in model.buffers:
        data = _aligned_bytes(b, payload) if payload else None
        tflite.BufferStart(b)
        if data is not None:
            tflite.BufferAddData(b, data)
        buffers.append(int(tflite.BufferEnd(b)))
    subgraphs = [_pack_subgraph(b, sg) for sg in model.subgraphs]
    codes = [_pack_opcode(b, c) for c in model.opcodes]
    subgraphs_vec = _offset_vector(b, subgraphs, tflite.ModelStartSubgraphsVector)
    codes_vec = _offset_vector(b, codes, tflite.ModelStartOperatorCodesVector)
    buffers_vec = _offset_vector(b, buffers, tflite.ModelStartBuffersVector)
    desc = b.CreateString(model.description)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, model.version & 0xFFFFFFFF)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
