"""Converters of TFLite's reductions (REDUCE_MAX / REDUCE_MIN / SUM, ARG_MAX / ARG_MIN),
CUMSUM, L2_NORMALIZATION, RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR and BATCH_MATMUL.

Axis, axes and size operands must be constants (they become attributes).
"""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import Activation, DType, Node
from edgenn.ir.tflite_enums import OP

_REDUCERS = {"REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin", "SUM": "ReduceSum"}
_ARGS = {"ARG_MAX": "ArgMax", "ARG_MIN": "ArgMin"}
_RESIZES = {"RESIZE_NEAREST_NEIGHBOR": "nearest", "RESIZE_BILINEAR": "linear"}


def _by_code(table: dict[str, str]) -> dict[int, str]:
    return {int(getattr(OP, name)): v for name, v in table.items()}


_REDUCER_OF, _ARG_OF, _MODE_OF = _by_code(_REDUCERS), _by_code(_ARGS), _by_code(_RESIZES)


def _counts(b: Builder, op: RawOperator, name: str, n_in: int) -> None:
    if len(op.inputs) != n_in or len(op.outputs) != 1:
        raise b.fail(op, f"{name} takes {n_in} input(s) and one output, got "
                         f"{len(op.inputs)} and {len(op.outputs)}")


def _integers(b: Builder, op: RawOperator, slot: int, what: str) -> list[int]:
    data = b.const_array(op, slot, what)
    if data.dtype.kind not in "iu":
        raise b.fail(op, f"{what} is {data.dtype.name}, not integers")
    return [int(v) for v in data.reshape(-1)]


def _axes(b: Builder, op: RawOperator, rank: int, what: str) -> list[int]:
    axes = _integers(b, op, 1, what)
    if any(not -rank <= a < rank for a in axes):
        raise b.fail(op, f"{what} {axes} do not fit rank {rank}")
    return [a % rank for a in axes]


@converter(*_REDUCERS)
def reducer(b: Builder, op: RawOperator) -> None:
    kind = _REDUCER_OF[op.opcode]
    _counts(b, op, kind, 2)
    x = b.input(op, 0)
    axes = tuple(sorted(set(_axes(b, op, len(x.shape), "reduction axes"))))
    b.emit(Node(b.op_name(op), kind, (x.name,), (output_name(b, op),),
                {"axes": axes, "keepdims": bool(op.options.get("keep_dims", False))}))


@converter(*_ARGS)
def arg_min_max(b: Builder, op: RawOperator) -> None:
    kind = _ARG_OF[op.opcode]
    _counts(b, op, kind, 2)
    x = b.input(op, 0)
    axes = _axes(b, op, len(x.shape), "axis")
    if len(axes) != 1:
        raise b.fail(op, f"{kind} takes one axis, got {axes}")
    out = output_name(b, op)
    out_type = b.tensors[out].dtype
    if out_type not in (DType.INT32, DType.INT64):
        raise b.fail(op, f"{kind} output is {out_type.value}, not int32 or int64")
    b.emit(Node(b.op_name(op), kind, (x.name,), (out,),
                {"axis": axes[0], "keepdims": False, "output_type": out_type.value}))


@converter("CUMSUM")
def cumsum(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "CUMSUM", 2)
    x = b.input(op, 0)
    axes = _axes(b, op, len(x.shape), "axis")
    if len(axes) != 1:
        raise b.fail(op, f"CUMSUM takes one axis, got {axes}")
    b.emit(Node(b.op_name(op), "CumSum", (x.name,), (output_name(b, op),),
                {"axis": axes[0], "exclusive": bool(op.options.get("exclusive", False)),
                 "reverse": bool(op.options.get("reverse", False))}))


@converter("L2_NORMALIZATION")
def l2_normalization(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "L2_NORMALIZATION", 1)
    if b.activation(op) is not Activation.NONE:
        raise b.unsupported(op, "L2_NORMALIZATION with a fused activation is unsupported "
                                "(TFLite Micro rejects it)")
    x = b.input(op, 0)
    b.emit(Node(b.op_name(op), "L2Norm", (x.name,), (output_name(b, op),), {"epsilon": 1e-6}))


@converter(*_RESIZES)
def resize(b: Builder, op: RawOperator) -> None:
    mode = _MODE_OF[op.opcode]
    _counts(b, op, "RESIZE", 2)
    x = b.input(op, 0)
    size = _integers(b, op, 1, "output size")
    if len(size) != 2 or min(size) < 1:
        raise b.fail(op, f"output size {size} is not two positive integers")
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    if align and half:
        raise b.fail(op, "align_corners and half_pixel_centers are both set")
    b.emit(Node(b.op_name(op), "Resize", (x.name,), (output_name(b, op),),
                {"mode": mode, "size": (size[0], size[1]), "align_corners": align,
                 "half_pixel_centers": half}))


@converter("BATCH_MATMUL")
def batch_matmul(b: Builder, op: RawOperator) -> None:
    _counts(b, op, "BATCH_MATMUL", 2)
    lhs, rhs = b.input(op, 0), b.input(op, 1)
    if lhs.dtype is not rhs.dtype:
        raise b.unsupported(op, f"BATCH_MATMUL of {lhs.dtype.value} by {rhs.dtype.value} "
                                "(hybrid) is unsupported")
    b.emit(Node(b.op_name(op), "BatchMatMul", (lhs.name, rhs.name), (output_name(b, op),),
                {"adj_x": bool(op.options.get("adj_x", False)),
                 "adj_y": bool(op.options.get("adj_y", False))}))

