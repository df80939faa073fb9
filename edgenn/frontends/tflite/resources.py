"""TFLite resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) as IR state.

The TF converter writes a streaming model's state (ring buffers of past frames) as resource
variables: the main subgraph's CALL_ONCE runs an initialisation subgraph on the first
invocation (it assigns each variable its initial constant), and every invocation reads each
variable (READ_VARIABLE) and assigns its new value (ASSIGN_VARIABLE). TFLite Micro keeps the
values between invocations until the interpreter is reset, which runs the initialisation
again.

The import turns this into ``edgenn.ir.state.StateVar``s by following the values in program
order: a variable's value at the start is one tensor (``read``), every ASSIGN_VARIABLE makes
the assigned tensor its current value, every READ_VARIABLE reads the current value (no node:
its output is the current tensor), and the value after the last operator is ``write``. The
CALL_ONCE subgraph is evaluated at import: its constants are the initial values (a variable it
does not assign starts at zeros, as TFLite Micro's resource buffers do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from edgenn.errors import ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.tflite.reader import RawOperator, RawSubgraph, RawTensor
from edgenn.ir import Tensor
from edgenn.ir.state import StateVar
from edgenn.ir.tflite_enums import DTYPES, OP, enum_name

if TYPE_CHECKING:
    from edgenn.frontends.tflite.builder import Builder


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def variable_key(op: RawOperator) -> str:
    """A VAR_HANDLE's variable, as TFLite Micro identifies it: container and shared name."""
    container, shared = _text(op.options.get("container")), _text(op.options.get("shared_name"))
    return f"{container}/{shared}" if container else shared


def _same_bytes(a: Tensor, b: Tensor) -> bool:
    return a.dtype == b.dtype and a.nbytes == b.nbytes and a.quant == b.quant


class ResourceVariables:
    """The resource variables met while converting the main subgraph."""

    def __init__(self) -> None:
        self.handles: dict[int, str] = {}  # handle tensor index (main subgraph) -> variable
        self.read: dict[str, str] = {}  # variable -> IR tensor holding it at the start
        self.current: dict[str, str] = {}  # variable -> IR tensor holding it now
        self.init: dict[str, np.ndarray] = {}  # variable -> its value after a reset
        self.called_once = False

    # -- main-subgraph operators ---------------------------------------------------------------
    def var_handle(self, b: Builder, op: RawOperator) -> None:
        if len(op.outputs) != 1:
            raise b.fail(op, f"VAR_HANDLE has {len(op.outputs)} outputs, expected 1")
        key = variable_key(op)
        if not key:
            raise b.fail(op, "VAR_HANDLE names no variable (empty shared_name)")
        self.handles[op.outputs[0]] = key

    def _key(self, b: Builder, op: RawOperator) -> str:
        if not op.inputs or op.inputs[0] < 0 or op.inputs[0] not in self.handles:
            raise b.fail(op, "the resource operand is not a VAR_HANDLE's output")
        return self.handles[op.inputs[0]]

    def read_variable(self, b: Builder, op: RawOperator) -> None:
        key = self._key(b, op)
        if len(op.outputs) != 1 or op.outputs[0] < 0:
            raise b.fail(op, "READ_VARIABLE needs one output")
        out = op.outputs[0]
        if key not in self.current:
            t = b.tensor(out)
            if t.is_const:
                raise b.fail(op, f"READ_VARIABLE output {t.name!r} is a constant")
            self.read[key] = self.current[key] = t.name
            return
        value = b.tensors[self.current[key]]
        declared = b.tensor_spec(out)
        if not _same_bytes(value, declared):
            raise b.unsupported(op, f"variable {key!r} is read as {declared.dtype.value}"
                                    f"{list(declared.shape)} with other quantization than "
                                    f"its value {value.name!r} ({value.dtype.value}"
                                    f"{list(value.shape)})")
        if value.shape != declared.shape:
            raise b.unsupported(op, f"variable {key!r} is read with shape "
                                    f"{list(declared.shape)}, assigned {list(value.shape)}")
        b.alias(out, value.name)  # the reader's consumers read the current value itself

    def assign_variable(self, b: Builder, op: RawOperator) -> None:
        key = self._key(b, op)
        if len(op.inputs) != 2 or op.inputs[1] < 0:
            raise b.fail(op, "ASSIGN_VARIABLE takes a resource and a value")
        value = b.tensor(op.inputs[1])
        if value.is_const:
            raise b.unsupported(op, f"ASSIGN_VARIABLE of the constant {value.name!r} in the "
                                    "main subgraph is not supported")
        if key not in self.read:
            name = b.new_name(f"{key}:read")
            b.tensors[name] = Tensor(name, value.shape, value.dtype, value.quant)
            self.read[key] = name
        start = b.tensors[self.read[key]]
        if not _same_bytes(value, start):
            raise b.unsupported(op, f"variable {key!r} is assigned {value.dtype.value}"
                                    f"{list(value.shape)} ({value.name!r}) but holds "
                                    f"{start.dtype.value}{list(start.shape)} with its "
                                    "quantization")
        self.current[key] = value.name

    def call_once(self, b: Builder, op: RawOperator) -> None:
        index = op.options.get("init_subgraph_index")
        subs = b.raw.subgraphs
        if not isinstance(index, int) or not 0 < index < len(subs):
            raise b.fail(op, f"CALL_ONCE runs subgraph {index!r} of {len(subs)}")
        if self.called_once:
            raise b.unsupported(op, "a second CALL_ONCE is not supported")
        if self.current:
            # why: the initial values stand for the state before the first operator
            raise b.unsupported(op, "CALL_ONCE after a variable was read or assigned is not "
                                    "supported")
        self.called_once = True
        self._initialise(b, op, subs[index])

    def _initialise(self, b: Builder, call: RawOperator, sub: RawSubgraph) -> None:
        """Evaluate the initialisation subgraph: VAR_HANDLEs and ASSIGN_VARIABLEs of
        constants."""
        handles: dict[int, str] = {}
        for op in sub.operators:
            where = f"CALL_ONCE subgraph {sub.name!r} operator {op.index}"
            if op.opcode == OP.VAR_HANDLE and len(op.outputs) == 1:
                handles[op.outputs[0]] = variable_key(op)
            elif op.opcode == OP.ASSIGN_VARIABLE and len(op.inputs) == 2:
                if op.inputs[0] not in handles or op.inputs[1] < 0:
                    raise b.fail(call, f"{where}: ASSIGN_VARIABLE of no VAR_HANDLE")
                self.init[handles[op.inputs[0]]] = self._constant(b, call, sub,
                                                                  sub.tensors[op.inputs[1]],
                                                                  where)
            else:
                raise UnsupportedOperatorError(
                    f"{b.file}: node {b.op_name(call)!r}: {where}: "
                    f"{enum_name(OP, op.opcode)} is not supported in an initialisation "
                    "subgraph (VAR_HANDLE and ASSIGN_VARIABLE of constants are)")

    @staticmethod
    def _constant(b: Builder, call: RawOperator, sub: RawSubgraph, raw: RawTensor,
                  where: str) -> np.ndarray:
        dt = DTYPES.get(raw.type)
        buf = b.raw.buffers[raw.buffer] if 0 < raw.buffer < len(b.raw.buffers) else None
        if dt is None or buf is None:
            raise b.unsupported(call, f"{where}: the assigned value {raw.name!r} is not a "
                                      "constant of a supported type")
        count = int(np.prod(raw.shape, dtype=np.int64))
        if len(buf) != count * dt.itemsize:
            raise ModelFormatError(f"{b.file}: {where}: constant {raw.name!r} of shape "
                                   f"{list(raw.shape)} has {len(buf)} bytes")
        return np.frombuffer(buf, dt.numpy.newbyteorder("<")).astype(dt.numpy).reshape(
            raw.shape)

    # -- the result ------------------------------------------------------------------------------
    def state(self, b: Builder) -> list[StateVar]:
        out = []
        for key, read in self.read.items():
            t = b.tensors[read]
            init = self.init.get(key)
            if init is None:
                init = np.zeros(t.shape, t.dtype.numpy)
            elif init.dtype != t.dtype.numpy or init.size != t.size:
                raise ModelFormatError(
                    f"{b.file}: variable {key!r} is initialised with {init.dtype}"
                    f"{list(init.shape)} but used as {t.dtype.value}{list(t.shape)}")
            out.append(StateVar(key, read, self.current[key], init.reshape(t.shape)))
        return out
