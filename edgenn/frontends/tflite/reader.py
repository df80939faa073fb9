"""Read a TFLite flatbuffer into plain Python records, with sanity checks.

All access to the generated flatbuffer readers (the ``tflite`` package) happens here. Those
readers do no verification: on corrupt bytes they raise assorted exceptions or return
garbage. ``read_tflite`` turns the exceptions into one ``ModelFormatError`` and bounds every
length it iterates over by the file size, so a corrupt file ends in a clear error and never in
a hang or a huge allocation.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgenn.errors import ModelFormatError

IDENTIFIER = b"TFL3"
MAX_RANK = 8
MAX_ELEMENTS = 1 << 31

# The exceptions flatbuffers' Python readers raise on corrupt input.
_FLATBUFFER_ERRORS = (
    IndexError,
    struct.error,
    UnicodeDecodeError,
    ValueError,
    RecursionError,
    OverflowError,
    TypeError,  # flatbuffers' enforce_number on an offset that wraps negative
)


@dataclass
class RawTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    type: int  # tflite.TensorType
    buffer: int
    scale: np.ndarray | None = None  # float32, empty -> None
    zero_point: np.ndarray | None = None  # int64
    quantized_dimension: int = 0
    is_variable: bool = False


@dataclass
class RawOperator:
    index: int
    opcode: int  # builtin operator code
    custom_code: str
    inputs: tuple[int, ...]  # tensor indices, -1 for an omitted optional input
    outputs: tuple[int, ...]
    options_type: int  # tflite.BuiltinOptions
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RawSubgraph:
    """A subgraph other than the first (e.g. the initialisation a CALL_ONCE runs)."""

    name: str
    tensors: list[RawTensor]
    operators: list[RawOperator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class RawModel:
    version: int
    description: str
    tensors: list[RawTensor]
    operators: list[RawOperator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    buffers: list[bytes | None]  # None: no data (a non-constant tensor)
    # every subgraph, the first (the fields above) included, in the file's order
    subgraphs: list[RawSubgraph] = field(default_factory=list)


def read_model(data: bytes, name: str) -> Any:
    """The ``tflite.Model`` root table after checking the identifier and root offset."""
    import tflite

    if len(data) < 8:
        raise ModelFormatError(f"{name}: truncated TFLite file ({len(data)} bytes)")
    if data[4:8] != IDENTIFIER:
        raise ModelFormatError(f"{name}: not a TFLite flatbuffer (missing 'TFL3' identifier)")
    root = int.from_bytes(data[0:4], "little")
    if root < 8 or root + 4 > len(data):
        raise ModelFormatError(f"{name}: corrupt TFLite file (root table offset {root} is outside)")
    return tflite.Model.GetRootAs(data, 0)


def read_tflite(data: bytes, name: str) -> RawModel:
    """Parse a TFLite model into ``RawModel`` (the first subgraph, and every subgraph in
    ``subgraphs``)."""
    try:
        return _Reader(data, name).read()
    except _FLATBUFFER_ERRORS as err:
        raise ModelFormatError(
            f"{name}: corrupt or truncated TFLite file ({type(err).__name__})"
        ) from None


class _Reader:
    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.name = name

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.name}: corrupt TFLite file: {msg}")

    def count(self, n: int, what: str, item_bytes: int = 4) -> int:
        # why: a corrupt vector length would otherwise make us loop for minutes
        if n < 0 or n * item_bytes > len(self.data):
            raise self.fail(f"{what} count {n} does not fit in the file")
        return n

    def read(self) -> RawModel:
        model = read_model(self.data, self.name)
        n_subgraphs = self.count(model.SubgraphsLength(), "subgraph")
        if n_subgraphs < 1:
            raise self.fail("no subgraph")
        n_buffers = self.count(model.BuffersLength(), "buffer")
        buffers = [self._buffer(model.Buffers(i), i) for i in range(n_buffers)]
        codes = [
            self._opcode(model.OperatorCodes(i))
            for i in range(self.count(model.OperatorCodesLength(), "operator code"))
        ]
        subs = [self._subgraph(model.Subgraphs(k), k, codes, n_buffers)
                for k in range(n_subgraphs)]
        main = subs[0]
        desc = model.Description()
        return RawModel(
            version=int(model.Version()),
            description=desc.decode("utf-8") if desc else "",
            tensors=main.tensors,
            operators=main.operators,
            inputs=main.inputs,
            outputs=main.outputs,
            buffers=buffers,
            subgraphs=subs,
        )

    def _subgraph(self, sub: Any, k: int, codes: list[tuple[int, str]],
                  n_buffers: int) -> RawSubgraph:
        where = "" if k == 0 else f"subgraph {k} "
        n_tensors = self.count(sub.TensorsLength(), f"{where}tensor")
        tensors = [self._tensor(sub.Tensors(i), i, n_buffers) for i in range(n_tensors)]
        ops = [
            self._operator(sub.Operators(i), i, codes, n_tensors)
            for i in range(self.count(sub.OperatorsLength(), f"{where}operator"))
        ]
        raw_name = sub.Name()
        return RawSubgraph(
            name=raw_name.decode("utf-8") if raw_name else f"subgraph_{k}",
            tensors=tensors, operators=ops,
            inputs=self._indices(sub.InputsAsNumpy(), n_tensors, f"{where}subgraph input"),
            outputs=self._indices(sub.OutputsAsNumpy(), n_tensors, f"{where}subgraph output"),
        )

    def _indices(self, arr: Any, n: int, what: str, optional: bool = False) -> tuple[int, ...]:
        if isinstance(arr, int):  # the generated readers return 0 for an absent vector
            return ()
        out = tuple(int(i) for i in np.asarray(arr, dtype=np.int64))
        low = -1 if optional else 0
        for i in out:
            if not low <= i < n:
                raise self.fail(f"{what} refers to tensor {i} of {n}")
        return out

    def _buffer(self, buf: Any, index: int) -> bytes | None:
        offset, size = int(buf.Offset()), int(buf.Size())
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB)
            if offset + size > len(self.data):
                raise self.fail(f"buffer {index} [{offset}, +{size}) is outside the file")
            return bytes(self.data[offset : offset + size])
        length = buf.DataLength()
        if length == 0:
            return None
        self.count(length, f"buffer {index} byte", 1)
        arr = buf.DataAsNumpy()
        return bytes(np.asarray(arr, dtype=np.uint8).tobytes())

    def _tensor(self, t: Any, index: int, n_buffers: int) -> RawTensor:
        rank = t.ShapeLength()
        if not 0 <= rank <= MAX_RANK:
            raise self.fail(f"tensor {index} has rank {rank}")
        shape = tuple(int(d) for d in np.asarray(t.ShapeAsNumpy() if rank else [], np.int64))
        # why 0 is allowed: TFLite writes omitted optional operands (an LSTM's peephole or
        # projection weights) as tensors of shape [0]; only negative sizes are corrupt. An
        # operator that cannot take an empty tensor says so when it is converted.
        if any(d < 0 for d in shape):
            raise self.fail(f"tensor {index} has shape {list(shape)}")
        if int(np.prod(shape, dtype=object)) > MAX_ELEMENTS:
            raise self.fail(f"tensor {index} shape {list(shape)} is implausibly large")
        buffer = int(t.Buffer())
        if not 0 <= buffer < max(n_buffers, 1):
            raise self.fail(f"tensor {index} refers to buffer {buffer} of {n_buffers}")
        raw_name = t.Name()
        name = raw_name.decode("utf-8") if raw_name else ""
        raw = RawTensor(index, name, shape, int(t.Type()), buffer, is_variable=bool(t.IsVariable()))
        q = t.Quantization()
        if q is not None and q.ScaleLength() > 0:
            n = self.count(q.ScaleLength(), f"tensor {index} scale")
            raw.scale = np.asarray(q.ScaleAsNumpy(), np.float32).copy()
            zp = q.ZeroPointAsNumpy()
            zp_len = q.ZeroPointLength()
            raw.zero_point = (
                np.asarray(zp, np.int64).copy() if zp_len else np.zeros(n, np.int64)
            )
            if raw.zero_point.size not in (1, n):
                raise self.fail(f"tensor {index} has {n} scales but {zp_len} zero points")
            raw.quantized_dimension = int(q.QuantizedDimension())
        return raw

    def _opcode(self, code: Any) -> tuple[int, str]:
        # why: codes above 127 live in BuiltinCode; old files only set DeprecatedBuiltinCode
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        custom = code.CustomCode()
        return builtin, custom.decode("utf-8") if custom else ""

    def _operator(
        self, op: Any, index: int, codes: list[tuple[int, str]], n_tensors: int
    ) -> RawOperator:
        code_index = int(op.OpcodeIndex())
        if not 0 <= code_index < len(codes):
            raise self.fail(f"operator {index} has operator code index {code_index}")
        builtin, custom = codes[code_index]
        raw = RawOperator(
            index=index,
            opcode=builtin,
            custom_code=custom,
            inputs=self._indices(op.InputsAsNumpy(), n_tensors, f"operator {index}", True),
            outputs=self._indices(op.OutputsAsNumpy(), n_tensors, f"operator {index}"),
            options_type=int(op.BuiltinOptionsType()),
        )
        reader = _OPTIONS.get(raw.options_type) or _generic_reader(raw.options_type)
        table = op.BuiltinOptions()
        if reader is not None and table is not None:
            cls, fields = reader
            opts = cls()
            opts.Init(table.Bytes, table.Pos)
            raw.options = {key: _value(opts, getter) for key, getter in fields.items()}
        return raw


def _option_readers() -> dict[int, tuple[Callable[[], Any], dict[str, str]]]:
    import tflite

    bo = tflite.BuiltinOptions
    act = {"activation": "FusedActivationFunction"}
    stride = {"padding": "Padding", "stride_w": "StrideW", "stride_h": "StrideH"}
    return {
        bo.Conv2DOptions: (
            tflite.Conv2DOptions,
            {**stride, **act, "dilation_w": "DilationWFactor", "dilation_h": "DilationHFactor"},
        ),
        bo.DepthwiseConv2DOptions: (
            tflite.DepthwiseConv2DOptions,
            {
                **stride,
                **act,
                "depth_multiplier": "DepthMultiplier",
                "dilation_w": "DilationWFactor",
                "dilation_h": "DilationHFactor",
            },
        ),
        bo.Pool2DOptions: (
            tflite.Pool2DOptions,
            {**stride, **act, "filter_w": "FilterWidth", "filter_h": "FilterHeight"},
        ),
        bo.FullyConnectedOptions: (
            tflite.FullyConnectedOptions,
            {**act, "weights_format": "WeightsFormat", "keep_num_dims": "KeepNumDims"},
        ),
        bo.AddOptions: (tflite.AddOptions, act),
        bo.MulOptions: (tflite.MulOptions, act),
        bo.ConcatenationOptions: (tflite.ConcatenationOptions, {**act, "axis": "Axis"}),
        bo.SoftmaxOptions: (tflite.SoftmaxOptions, {"beta": "Beta"}),
        bo.ReducerOptions: (tflite.ReducerOptions, {"keep_dims": "KeepDims"}),
        bo.LocalResponseNormalizationOptions: (
            tflite.LocalResponseNormalizationOptions,
            {"radius": "Radius", "bias": "Bias", "alpha": "Alpha", "beta": "Beta"},
        ),
    }


_OPTIONS = _option_readers()
_NOT_FIELDS = ("GetRootAs", "Offset")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _generic_reader(options_type: int) -> tuple[Callable[[], Any], dict[str, str]] | None:
    """Every field of an options table without a hand-written entry, by reflection over the
    generated ``tflite`` class: ``{"snake_case": "Getter"}``; vector fields read as lists.

    why: new operators need no reader code; the field names are TFLite's own.
    """
    import tflite

    names = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
    cls = getattr(tflite, names.get(options_type, ""), None)
    if cls is None:
        return None
    fields: dict[str, str] = {}
    for attr in dir(cls):
        # why "Init" exactly: CallOnceOptions' field InitSubgraphIndex starts with it
        if attr.startswith("_") or attr == "Init" or attr.startswith(_NOT_FIELDS) or attr.endswith(
                ("BufferHasIdentifier", "Length", "AsNumpy", "IsNone")):
            continue
        fields[_snake(attr)] = attr
    if "fused_activation_function" in fields:
        fields["activation"] = fields["fused_activation_function"]
    return cls, fields


def _value(opts: Any, getter: str) -> Any:
    """A scalar field, or a vector field (one with ``<getter>Length``) as a list."""
    length = getattr(opts, f"{getter}Length", None)
    if length is not None:
        fn = getattr(opts, getter)
        return [fn(j) for j in range(int(length()))]
    return getattr(opts, getter)()
