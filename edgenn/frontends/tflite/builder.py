"""Builds IR tensors and nodes from the raw TFLite records, checking each against the file."""

from __future__ import annotations

import numpy as np
import tflite

from edgenn.errors import EdgennError, ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.tflite.reader import RawModel, RawOperator, RawTensor
from edgenn.frontends.tflite.resources import ResourceVariables
from edgenn.ir import Activation, DType, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer
from edgenn.ir.state import StateVar
from edgenn.ir.tflite_enums import ACTIVATIONS, DTYPES, enum_name

# why: a scale outside this range overflows float32 when a value or an activation bound is
# quantized with it (6.0 / 1e-45 is inf) and makes requantization multipliers meaningless;
# real models stay many orders of magnitude inside it
_MIN_SCALE, _MAX_SCALE = 2.0**-64, 2.0**64


class Builder:
    """The graph under construction: one IR tensor per referenced TFLite tensor, nodes in order.

    ``file`` names the model in every error message.
    """

    def __init__(self, raw: RawModel, file: str) -> None:
        self.raw = raw
        self.file = file
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self._taken: set[str] = set()
        self.names = [self._unique(t.name or f"tensor_{t.index}") for t in raw.tensors]
        self.resources = ResourceVariables()
        # TFLite variable tensors (LSTM / SVDF state): IR name -> the value a reset gives it
        self.variable_init: dict[str, np.ndarray] = {}
        # state written by an operator (its new value is one of the node's outputs)
        self.variable_write: dict[str, str] = {}

    # -- names -----------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        # why: TFLite does not require unique tensor names; the IR does
        name, k = base, 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    def new_name(self, base: str) -> str:
        return self._unique(base)

    def op_name(self, op: RawOperator) -> str:
        """An operator is named after its first output tensor (TFLite ops have no names)."""
        return self.names[op.outputs[0]] if op.outputs else f"op_{op.index}"

    # -- errors ----------------------------------------------------------------------------
    def fail(self, op: RawOperator, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.file}: node {self.op_name(op)!r}: {msg}")

    def unsupported(self, op: RawOperator, msg: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"{self.file}: node {self.op_name(op)!r}: {msg}")

    # -- tensors ---------------------------------------------------------------------------
    def raw_tensor(self, op: RawOperator, slot: int, kind: str = "input") -> RawTensor | None:
        indices = op.inputs if kind == "input" else op.outputs
        if slot >= len(indices) or indices[slot] < 0:
            return None
        raw = self.raw.tensors[indices[slot]]
        if kind == "input" and 0 in raw.shape:
            # why: TFLite's converter writes omitted optional operands (LSTM peepholes,
            # projection) as empty tensors as well as index -1
            return None
        return raw

    def need(self, op: RawOperator, slot: int) -> RawTensor:
        t = self.raw_tensor(op, slot)
        if t is None:
            if slot < len(op.inputs) and op.inputs[slot] >= 0:
                index = op.inputs[slot]
                raise self.fail(op, f"operand {self.names[index]!r} has the empty shape "
                                    f"{list(self.raw.tensors[index].shape)}")
            raise self.fail(op, f"input {slot} is missing")
        return t

    def tensor(self, index: int) -> Tensor:
        """The IR tensor for TFLite tensor ``index`` (created on first use)."""
        name = self.names[index]
        if name not in self.tensors:
            self.tensors[name] = self._make_tensor(self.raw.tensors[index], name)
        return self.tensors[name]

    def tensor_spec(self, index: int) -> Tensor:
        """The IR tensor TFLite tensor ``index`` would become, without registering it."""
        return self._make_tensor(self.raw.tensors[index], self.names[index])

    def alias(self, index: int, name: str) -> None:
        """Make TFLite tensor ``index`` stand for the existing IR tensor ``name`` (a
        READ_VARIABLE's output is the variable's current value)."""
        self.names[index] = name

    def state(self) -> list[StateVar]:
        """The graph's state: the resource variables, then the variable tensors."""
        out = self.resources.state(self)
        for name, init in self.variable_init.items():
            if name in self.tensors:
                out.append(StateVar(name, name, self.variable_write.get(name, name), init))
        return out

    def input(self, op: RawOperator, slot: int) -> Tensor:
        return self.tensor(self.need(op, slot).index)

    def const_or_none(self, op: RawOperator, slot: int) -> np.ndarray | None:
        """The data of input ``slot`` if it is a constant (not registered as a graph tensor),
        None if it is computed."""
        raw = self.need(op, slot)
        return self._data(raw, self.names[raw.index])

    def const_array(self, op: RawOperator, slot: int, what: str) -> np.ndarray:
        """The data of constant input ``slot`` (not registered as a graph tensor)."""
        data = self.const_or_none(op, slot)
        if data is None:
            raw = self.need(op, slot)
            raise self.unsupported(op, f"{what} ({self.names[raw.index]!r}) must be a constant")
        return data

    def quant(self, raw: RawTensor, axis_map: dict[int, int] | None = None) -> QuantParams | None:
        if raw.scale is None or raw.zero_point is None:
            return None
        name = self.names[raw.index]
        if not np.all(np.isfinite(raw.scale)) or np.any(raw.scale <= 0):
            raise ModelFormatError(f"{self.file}: tensor {name!r} has a non-positive scale")
        if np.any(raw.scale < _MIN_SCALE) or np.any(raw.scale > _MAX_SCALE):
            bad = float(raw.scale[(raw.scale < _MIN_SCALE) | (raw.scale > _MAX_SCALE)][0])
            raise ModelFormatError(f"{self.file}: tensor {name!r} has the scale {bad:.6g}, "
                                   "outside [2^-64, 2^64]")
        if raw.scale.size == 1:
            return QuantParams(raw.scale[:1], raw.zero_point[:1], None)
        axis = raw.quantized_dimension
        if not 0 <= axis < len(raw.shape) or raw.shape[axis] != raw.scale.size:
            raise ModelFormatError(
                f"{self.file}: tensor {name!r} has {raw.scale.size} scales along axis {axis} "
                f"of shape {list(raw.shape)}"
            )
        return QuantParams(raw.scale, raw.zero_point, (axis_map or {}).get(axis, axis))

    def dtype(self, raw: RawTensor) -> DType:
        dt = DTYPES.get(raw.type)
        if dt is None:
            kind = enum_name(tflite.TensorType, raw.type)
            raise UnsupportedOperatorError(
                f"{self.file}: tensor {self.names[raw.index]!r} has unsupported type {kind}"
            )
        return dt

    def _data(self, raw: RawTensor, name: str) -> np.ndarray | None:
        buf = self.raw.buffers[raw.buffer] if raw.buffer < len(self.raw.buffers) else None
        if buf is None or raw.buffer == 0:
            return None
        dt = self.dtype(raw)
        count = int(np.prod(raw.shape, dtype=np.int64))
        if len(buf) != count * dt.itemsize:
            raise ModelFormatError(
                f"{self.file}: tensor {name!r} of shape {list(raw.shape)} ({dt.value}) needs "
                f"{count * dt.itemsize} bytes but its buffer {raw.buffer} has {len(buf)}"
            )
        data = np.frombuffer(buf, dtype=dt.numpy.newbyteorder("<")).astype(dt.numpy).reshape(
            raw.shape
        )
        # why no finiteness check: +-inf and NaN are float data TFLite and TFLite Micro run
        # (an unbounded MINIMUM clip, a -inf mask); the places where edgenn's own arithmetic
        # needs finite numbers (scales, quantizer ranges, folded weights) check there
        return data

    def _make_tensor(self, raw: RawTensor, name: str) -> Tensor:
        dtype = self.dtype(raw)
        data = self._data(raw, name)
        # why: float tensors may carry calibration ranges that mean nothing here
        quant = None if dtype == DType.FLOAT32 else self.quant(raw)
        if quant is not None and dtype in (DType.INT8, DType.UINT8, DType.INT16):
            # why before the state below: it fills an int8 state with the zero point
            info = np.iinfo(dtype.numpy)
            if np.any(quant.zero_point < info.min) or np.any(quant.zero_point > info.max):
                raise ModelFormatError(
                    f"{self.file}: tensor {name!r} has a zero point outside {dtype.value}"
                )
        if raw.is_variable:
            # A state tensor (LSTM, SVDF) is state of the graph (``Builder.state``), kept from
            # one invocation to the next. Its initial value: why not the buffer: TFLite Micro
            # never reads it; its Reset sets an int8 state to its zero point and any other
            # state to 0 (a real 0).
            zp = int(quant.zero_point[0]) if dtype == DType.INT8 and quant is not None else 0
            self.variable_init[name] = np.full(raw.shape, zp, dtype.numpy)
            return Tensor(name, raw.shape, dtype, quant)
        if dtype == DType.INT8 and data is None and quant is None:
            raise ModelFormatError(f"{self.file}: int8 tensor {name!r} has no quantization")
        return Tensor(name, raw.shape, dtype, quant, data)

    def add_const(self, base: str, data: np.ndarray, quant: QuantParams | None) -> str:
        """Register a constant made by a converter (e.g. transposed weights); returns its name."""
        name = base if base not in self.tensors else self.new_name(base)
        self._taken.add(name)
        self.tensors[name] = Tensor.const(name, data, quant)
        return name

    def add_intermediate(self, base: str, like: Tensor, shape: tuple[int, ...]) -> str:
        """Register a non-constant tensor that TFLite does not have (e.g. a Reshape output)."""
        name = self.new_name(base)
        self.tensors[name] = Tensor(name, shape, like.dtype, like.quant)
        return name

    # -- nodes -----------------------------------------------------------------------------
    def activation(self, op: RawOperator) -> Activation:
        code = int(op.options.get("activation", 0))
        act = ACTIVATIONS.get(code)
        if act is None:
            kind = enum_name(tflite.ActivationFunctionType, code)
            raise self.unsupported(op, f"unsupported fused activation {kind}")
        return act

    def emit(self, node: Node) -> None:
        """Append ``node`` after checking its inferred outputs against the declared tensors."""
        inputs = [self.tensors[n] if n else None for n in node.inputs]
        if all(t is None or t.is_const for t in inputs):
            # why: TFLite's converter folds such operators; the runtimes feed a layer its
            # non-constant operands only, so one without any has nothing to run on
            raise ModelFormatError(f"{self.file}: {node}: every input is a constant "
                                   "(an unfolded constant operator)")
        try:
            inferred = infer(node, inputs)
        except EdgennError as err:
            raise ModelFormatError(f"{self.file}: {err}") from None
        for name, (shape, dtype) in zip(node.outputs, inferred, strict=True):
            t = self.tensors[name]
            if t.shape != shape or t.dtype != dtype:
                raise ModelFormatError(
                    f"{self.file}: {node}: output {name!r} is declared {t.dtype.value}"
                    f"{list(t.shape)} but the operator gives {dtype.value}{list(shape)}"
                )
        self.nodes.append(node)
