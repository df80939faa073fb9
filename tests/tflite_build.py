"""A tiny TFLite flatbuffer writer for tests: hand-made models for ops and error cases the
TensorFlow-made fixtures do not reach."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite

INT8, INT32, FLOAT32 = 9, 2, 0


@dataclass
class T:
    name: str
    shape: tuple[int, ...]
    type: int = FLOAT32
    data: np.ndarray | None = None
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    quantized_dimension: int = 0


@dataclass
class Op:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options: tuple[int, Any] | None = None  # (BuiltinOptions type, fn(builder) -> offset)
    custom_code: str = ""
    extra: dict[str, int] = field(default_factory=dict)


def _vec_offsets(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


Graph = tuple[list[T], list[Op], list[int], list[int]]  # tensors, ops, inputs, outputs


def build(tensors: list[T], ops: list[Op], inputs: list[int], outputs: list[int],
          buffer_offsets: dict[int, tuple[int, int]] | None = None,
          subgraphs: list[Graph] | None = None) -> bytes:
    """Serialize a model: the main subgraph, then ``subgraphs`` (indices 1, 2, ...: an IF's
    branches). Constant tensors get their own buffer; ``buffer_offsets`` forces (offset,
    size) on buffer k (the large-model layout)."""
    graphs: list[Graph] = [(tensors, ops, inputs, outputs), *(subgraphs or [])]
    b = flatbuffers.Builder(1024)
    # buffers: 0 is the empty sentinel
    buffers: list[int] = []
    datas = [None] + [t.data for g in graphs for t in g[0] if t.data is not None]
    for k, data in enumerate(datas):
        vec = None
        if data is not None:
            vec = b.CreateNumpyVector(np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8))
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        if buffer_offsets and k in buffer_offsets:
            tflite.BufferAddOffset(b, buffer_offsets[k][0])
            tflite.BufferAddSize(b, buffer_offsets[k][1])
        buffers.append(tflite.BufferEnd(b))
    codes: list[tuple[int, str]] = []
    sub_offs = []
    k = 1
    for g_tensors, g_ops, g_inputs, g_outputs in graphs:
        buf_index = []
        for t in g_tensors:
            buf_index.append(k if t.data is not None else 0)
            k += t.data is not None
        sub_offs.append(_subgraph(b, g_tensors, buf_index, g_ops, g_inputs, g_outputs, codes))
    code_offs = []
    for code, custom in codes:
        cc = b.CreateString(custom) if custom else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        if cc is not None:
            tflite.OperatorCodeAddCustomCode(b, cc)
        code_offs.append(tflite.OperatorCodeEnd(b))
    subs = _vec_offsets(b, sub_offs)
    cvec = _vec_offsets(b, code_offs)
    bvec = _vec_offsets(b, buffers)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, cvec)
    tflite.ModelAddSubgraphs(b, subs)
    tflite.ModelAddBuffers(b, bvec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _subgraph(b: flatbuffers.Builder, tensors: list[T], buf_index: list[int], ops: list[Op],
              inputs: list[int], outputs: list[int], codes: list[tuple[int, str]]) -> int:
    tensor_offs = []
    for t, bi in zip(tensors, buf_index, strict=True):
        name = b.CreateString(t.name)
        shape = b.CreateNumpyVector(np.asarray(t.shape, np.int32))
        q = None
        if t.scale is not None:
            sc = b.CreateNumpyVector(np.asarray(t.scale, np.float32))
            zp = b.CreateNumpyVector(np.asarray(t.zero_point or [0] * len(t.scale), np.int64))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, sc)
            tflite.QuantizationParametersAddZeroPoint(b, zp)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.quantized_dimension)
            q = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, t.type)
        tflite.TensorAddBuffer(b, bi)
        tflite.TensorAddName(b, name)
        if q is not None:
            tflite.TensorAddQuantization(b, q)
        tensor_offs.append(tflite.TensorEnd(b))
    op_offs = []
    for op in ops:
        key = (op.opcode, op.custom_code)
        if key not in codes:
            codes.append(key)
        ins = b.CreateNumpyVector(np.asarray(op.inputs, np.int32))
        outs = b.CreateNumpyVector(np.asarray(op.outputs, np.int32))
        opt = op.options[1](b) if op.options else None
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(key))
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if op.options:
            tflite.OperatorAddBuiltinOptionsType(b, op.options[0])
            tflite.OperatorAddBuiltinOptions(b, opt)
        op_offs.append(tflite.OperatorEnd(b))
    t_vec = _vec_offsets(b, tensor_offs)
    o_vec = _vec_offsets(b, op_offs)
    in_vec = b.CreateNumpyVector(np.asarray(inputs, np.int32))
    out_vec = b.CreateNumpyVector(np.asarray(outputs, np.int32))
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, t_vec)
    tflite.SubGraphAddOperators(b, o_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    return tflite.SubGraphEnd(b)


def if_options(then_index: int, else_index: int) -> tuple[int, Any]:
    def make(b: flatbuffers.Builder) -> int:
        tflite.IfOptionsStart(b)
        tflite.IfOptionsAddThenSubgraphIndex(b, then_index)
        tflite.IfOptionsAddElseSubgraphIndex(b, else_index)
        return tflite.IfOptionsEnd(b)

    return tflite.BuiltinOptions.IfOptions, make


def softmax_options(beta: float) -> tuple[int, Any]:
    def make(b: flatbuffers.Builder) -> int:
        tflite.SoftmaxOptionsStart(b)
        tflite.SoftmaxOptionsAddBeta(b, beta)
        return tflite.SoftmaxOptionsEnd(b)

    return tflite.BuiltinOptions.SoftmaxOptions, make


def add_options(activation: int = 0) -> tuple[int, Any]:
    def make(b: flatbuffers.Builder) -> int:
        tflite.AddOptionsStart(b)
        tflite.AddOptionsAddFusedActivationFunction(b, activation)
        return tflite.AddOptionsEnd(b)

    return tflite.BuiltinOptions.AddOptions, make


def lrn_options(radius: int, bias: float, alpha: float, beta: float) -> tuple[int, Any]:
    def make(b: flatbuffers.Builder) -> int:
        tflite.LocalResponseNormalizationOptionsStart(b)
        tflite.LocalResponseNormalizationOptionsAddRadius(b, radius)
        tflite.LocalResponseNormalizationOptionsAddBias(b, bias)
        tflite.LocalResponseNormalizationOptionsAddAlpha(b, alpha)
        tflite.LocalResponseNormalizationOptionsAddBeta(b, beta)
        return tflite.LocalResponseNormalizationOptionsEnd(b)

    return tflite.BuiltinOptions.LocalResponseNormalizationOptions, make
