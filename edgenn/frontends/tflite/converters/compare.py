"""Converters of TFLite's comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER,
GREATER_EQUAL), logical operators (LOGICAL_AND / OR / NOT), SELECT / SELECT_V2 and CAST.

The operand types are those TFLite Micro's kernels take (``comparisons.cc``, ``logical.cc``,
``select.cc``, ``cast.cc``); any other is refused here in one line rather than at run time.
"""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import DType, Node
from edgenn.ir.tflite_enums import OP

F32, I8, I16, I32, I64, BOOL = (DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32,
                                DType.INT64, DType.BOOL)
_COMPARE = {"EQUAL": "Equal", "NOT_EQUAL": "NotEqual", "LESS": "Less",
            "LESS_EQUAL": "LessOrEqual", "GREATER": "Greater", "GREATER_EQUAL": "GreaterOrEqual"}
_LOGICAL = {"LOGICAL_AND": "And", "LOGICAL_OR": "Or"}
_ORDERED = (F32, I8, I32, I64)  # TFLM's comparison types (EQUAL / NOT_EQUAL: bool too)
_SELECT = (F32, I8, I16)  # TFLM's SELECT_V2 types
# TFLM's CAST (cast.cc): from these types to these (uint32 has no IR type)
_CAST_FROM = (I8, I16, I32, F32, BOOL)
_CAST_TO = (I8, I16, I32, F32)


def _by_code(table: dict[str, str]) -> dict[int, str]:
    return {int(getattr(OP, name)): v for name, v in table.items()}


_COMPARE_OF, _LOGICAL_OF = _by_code(_COMPARE), _by_code(_LOGICAL)


def _counts(b: Builder, op: RawOperator, name: str, n_in: int) -> None:
    if len(op.inputs) != n_in or len(op.outputs) != 1:
        raise b.fail(op, f"{name} takes {n_in} input(s) and one output, got "
                         f"{len(op.inputs)} and {len(op.outputs)}")


@converter(*_COMPARE)
def compare(b: Builder, op: RawOperator) -> None:
    kind = _COMPARE_OF[op.opcode]
    _counts(b, op, kind, 2)
    x, y = b.input(op, 0), b.input(op, 1)
    types = (*_ORDERED, BOOL) if kind in ("Equal", "NotEqual") else _ORDERED
    if x.dtype not in types:
        raise b.unsupported(op, f"{kind} of {x.dtype.value} is unsupported (TFLite Micro "
                                f"takes {', '.join(t.value for t in types)})")
    if x.dtype is I8:
        for t in (x, y):
            q = t.quant
            if q is None or q.axis is not None or not 0 < float(q.scale[0]) < 1:
                # why: TFLM's Prepare folds each scale into a multiplier below one
                raise b.unsupported(op, f"int8 {kind} needs per-tensor scales below 1 "
                                        f"(tensor {t.name!r})")
    b.emit(Node(b.op_name(op), kind, (x.name, y.name), (output_name(b, op),)))


@converter(*_LOGICAL)
def logical(b: Builder, op: RawOperator) -> None:
    kind = _LOGICAL_OF[op.opcode]
    _counts(b, op, kind, 2)
    x, y = b.input(op, 0), b.input(op, 1)
    b.emit(Node(b.op_name(op), kind, (x.name, y.name), (output_name(b, op),)))


@converter("LOGICAL_NOT")
def logical_not(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "LOGICAL_NOT", 1)
    b.emit(Node(b.op_name(op), "Not", (b.input(op, 0).name,), (output_name(b, op),)))


@converter("SELECT", "SELECT_V2")
def select(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "SELECT", 3)
    cond, x, y = (b.input(op, i) for i in range(3))
    if op.opcode == int(OP.SELECT) and not cond.shape == x.shape == y.shape:
        # why: SELECT (v1) also takes a 1-D condition over the first axis, which is not
        # numpy broadcasting; SELECT_V2 broadcasts as numpy does
        raise b.unsupported(op, f"SELECT of shapes {list(cond.shape)}, {list(x.shape)}, "
                                f"{list(y.shape)} (only equal shapes; SELECT_V2 broadcasts)")
    if cond.dtype is not BOOL:
        raise b.fail(op, f"the condition is {cond.dtype.value}, not bool")
    if x.dtype not in _SELECT:
        raise b.unsupported(op, f"SELECT of {x.dtype.value} is unsupported (TFLite Micro "
                                f"takes {', '.join(t.value for t in _SELECT)})")
    out = b.tensors[output_name(b, op)]
    if x.quant != out.quant:
        # why: TFLM's SELECT copies the stored values
        raise b.unsupported(op, "SELECT with an output quantization other than its inputs'")
    b.emit(Node(b.op_name(op), "Where", (cond.name, x.name, y.name), (out.name,)))


@converter("CAST")
def cast(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "CAST", 1)
    x = b.input(op, 0)
    out = b.tensors[output_name(b, op)]
    if x.dtype not in _CAST_FROM or out.dtype not in _CAST_TO:
        raise b.unsupported(op, f"CAST from {x.dtype.value} to {out.dtype.value} is "
                                "unsupported")
    b.emit(Node(b.op_name(op), "Cast", (x.name,), (out.name,), {"to": out.dtype.value}))
