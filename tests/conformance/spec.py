"""Conformance cases as data, and the TFLite files made from them.

A ``Case`` is one TFLite builtin operator with its options, its operand tensors (variable
inputs with a value range, or constants) and its declared outputs. ``model_bytes`` writes
one or many cases into a single-subgraph model (the cases side by side, each with its own
inputs and outputs), so one Cortex-M build can check every case of an operator at once.

Options are given by the flatbuffer table name and its fields (``("LeakyReluOptions",
{"alpha": 0.2})``) and written through the ``tflite`` package's generated functions, so a new
operator needs no serializer code. Cases live in ``cases/<group>.py`` as ``CASES`` lists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from edgenn.export.flatbuffer import TflModel, TflOperator, TflTensor, serialize
from edgenn.ir import DType, QuantParams

Options = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Spec:
    """One operand: its shape, type and quantization; ``data`` for a constant; ``values`` the
    (low, high) range random inputs are drawn from (integers for quantized types)."""

    shape: tuple[int, ...]
    dtype: DType
    quant: QuantParams | None = None
    data: np.ndarray | None = None
    values: tuple[float, float] | None = None
    variable: bool = False  # a state tensor (LSTM, SVDF)
    omitted: bool = False  # an omitted optional operand (index -1)

    @property
    def is_input(self) -> bool:
        return self.data is None and not self.variable and not self.omitted


def i8(shape: Sequence[int], scale: float, zero_point: int = 0,
       values: tuple[float, float] | None = None) -> Spec:
    return Spec(tuple(shape), DType.INT8, QuantParams.per_tensor(scale, zero_point),
                values=values)


def i16(shape: Sequence[int], scale: float, zero_point: int = 0,
        values: tuple[float, float] | None = None) -> Spec:
    return Spec(tuple(shape), DType.INT16, QuantParams.per_tensor(scale, zero_point),
                values=values)


def i32(shape: Sequence[int], scale: float, zero_point: int = 0,
        values: tuple[float, float] | None = None) -> Spec:
    """A quantized int32 tensor (QUANTIZE's int32 side)."""
    return Spec(tuple(shape), DType.INT32, QuantParams.per_tensor(scale, zero_point),
                values=values)


def f32(shape: Sequence[int], values: tuple[float, float] | None = None) -> Spec:
    return Spec(tuple(shape), DType.FLOAT32, values=values)


def const(data: Any, dtype: DType | None = None, quant: QuantParams | None = None) -> Spec:
    arr = np.asarray(data) if dtype is None else np.asarray(data, dtype.numpy)
    dt = DType.from_numpy(arr.dtype) if dtype is None else dtype
    return Spec(tuple(arr.shape), dt, quant, np.ascontiguousarray(arr))


def omitted() -> Spec:
    return Spec((0,), DType.FLOAT32, omitted=True)


def like(spec: Spec, *, shape: Sequence[int] | None = None, scale: float | None = None,
         zero_point: int | None = None) -> Spec:
    """``spec`` with another shape or quantization (an output declared like its input)."""
    quant = spec.quant
    if quant is not None and (scale is not None or zero_point is not None):
        quant = QuantParams.per_tensor(quant.s if scale is None else scale,
                                       quant.zp if zero_point is None else zero_point)
    return Spec(tuple(shape) if shape is not None else spec.shape, spec.dtype, quant)


@dataclass(frozen=True)
class Case:
    """One operator instance; ``name`` is unique within its operator."""

    op: str  # tflite.BuiltinOperator name, e.g. "LEAKY_RELU"
    name: str
    inputs: tuple[Spec, ...]
    outputs: tuple[Spec, ...]
    options: Options | None = None
    # absolute tolerance for float32 outputs (quantized outputs are compared exactly)
    atol: float = 1e-5
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for s in self.inputs:
            if s.is_input and (not s.shape or s.shape[0] != 1):
                # why: samples are stacked on that axis and fed one by one, as a batch of 1
                raise ValueError(f"{self.op}:{self.name}: variable inputs need a leading "
                                 f"batch dimension of 1, got {list(s.shape)}")

    @property
    def id(self) -> str:
        return f"{self.op}:{self.name}"

    @property
    def dtypes(self) -> str:
        """The element type the case is filed under: its first variable input's (a constant
        operand such as SPLIT's axis or TRANSPOSE_CONV's output shape does not count)."""
        first = next((s for s in self.inputs if s.is_input), None)
        first = first or next((s for s in self.inputs if not s.omitted), self.outputs[0])
        return first.dtype.value

    def sample(self, n: int) -> list[np.ndarray]:
        """``n`` random values for each variable input (seeded by the case id)."""
        seed = int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:4], "little")
        rng = np.random.default_rng(seed)
        return [_draw(rng, s, n) for s in self.inputs if s.is_input]


def _draw(rng: np.random.Generator, s: Spec, n: int) -> np.ndarray:
    shape = (n, *s.shape[1:])
    if s.dtype is DType.BOOL:
        return rng.integers(0, 1, shape, endpoint=True).astype(np.bool_)
    if s.dtype is DType.FLOAT32:
        lo, hi = s.values or (-4.0, 4.0)
        return rng.uniform(lo, hi, shape).astype(np.float32)
    info = np.iinfo(s.dtype.numpy)
    lo, hi = s.values or (info.min, info.max)
    return rng.integers(int(lo), int(hi), shape, endpoint=True).astype(s.dtype.numpy)


# -- serialization ---------------------------------------------------------------------------
def _options_fn(options: Options) -> tuple[int, Any]:
    table, fields = options
    kind = getattr(tflite.BuiltinOptions, table)

    def build(b: Any) -> int:
        vectors: dict[str, int] = {}
        for key, value in fields.items():
            if isinstance(value, list | tuple):
                camel = _camel(key)
                getattr(tflite, f"{table}Start{camel}Vector")(b, len(value))
                for v in reversed(value):
                    b.PrependInt32(int(v))
                vectors[key] = int(b.EndVector())
        getattr(tflite, f"{table}Start")(b)
        for key, value in fields.items():
            add = getattr(tflite, f"{table}Add{_camel(key)}")
            add(b, vectors.get(key, value))
        return int(getattr(tflite, f"{table}End")(b))

    return kind, build


def _camel(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def model_bytes(cases: Sequence[Case]) -> bytes:
    """A TFLite model holding ``cases`` side by side (inputs and outputs in case order)."""
    model = TflModel(description="edgenn conformance")
    for k, case in enumerate(cases):
        def add(spec: Spec, role: str, j: int, k: int = k) -> int:
            if spec.omitted:
                return -1
            name = f"c{k}_{role}{j}"
            axis = spec.quant.axis if spec.quant is not None and spec.quant.axis else 0
            return model.add_tensor(TflTensor(name, spec.shape, spec.dtype, spec.quant,
                                              spec.data, axis, spec.variable))

        ins = [add(s, "in", j) for j, s in enumerate(case.inputs)]
        outs = [add(s, "out", j) for j, s in enumerate(case.outputs)]
        model.inputs += [i for i, s in zip(ins, case.inputs, strict=True) if s.is_input]
        model.outputs += outs
        builtin = getattr(tflite.BuiltinOperator, case.op)
        kind, fn = _options_fn(case.options) if case.options else (0, None)
        model.operators.append(TflOperator(builtin, 1, ins, outs, kind, fn))
    return serialize(model)
