"""Reductions and friends: REDUCE_MAX / REDUCE_MIN / SUM, ARG_MAX / ARG_MIN, CUMSUM,
L2_NORMALIZATION, RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR, BATCH_MATMUL.

Axes, axis and size attributes become int32 constant operands. REDUCE_MAX / REDUCE_MIN and
the resizes work in their input's quantization (TFLM checks or assumes it), so an output
with other parameters is the op followed by a QUANTIZE, as the IR defines them.
"""

from __future__ import annotations

import tflite

from edgenn.export.lowering import OP, Lowering, op_version
from edgenn.export.lowerings.common import node_name, options
from edgenn.export.ops import lowers, reshape_to
from edgenn.ir import DType

_REDUCERS = {"ReduceMax": OP.REDUCE_MAX, "ReduceMin": OP.REDUCE_MIN, "ReduceSum": OP.SUM}
# TFLite's float L2_NORMALIZATION divides by max(norm, 1e-6)
TFLITE_L2_EPSILON = 1e-6


@lowers(*_REDUCERS)
def _reduce(lw: Lowering) -> None:
    assert lw.node is not None
    rank = len(lw.ir(0).shape)
    axes = sorted({int(a) % rank for a in lw.node.attr("axes")})
    keep = bool(lw.node.attr("keepdims", True))
    x = lw.input(0)
    axes_t = lw.int32_const(f"{node_name(lw)}_axes", axes)
    builtin = _REDUCERS[lw.node.op]
    reducer = options("ReducerOptions", keep_dims=keep)
    if builtin == OP.SUM:  # requantizes to its output
        lw.emit(builtin, [x, axes_t], [lw.output()], *reducer)
        return
    y, finish = lw.output_as_input()
    lw.emit(builtin, [x, axes_t], [y], *reducer)
    finish()


@lowers("ArgMax", "ArgMin")
def _arg(lw: Lowering) -> None:
    assert lw.node is not None
    node, x_ir, y_ir = lw.node, lw.ir(0), lw.out()
    if y_ir.dtype is not DType.INT32:
        raise lw.unsupported(f"output {y_ir.name!r} is {y_ir.dtype.value}; TFLite Micro's "
                             f"{node.op} writes int32 only (quantize() makes it int32)")
    if node.attr("select_last_index", False):
        raise lw.unsupported("select_last_index: TFLite returns the first of equal values")
    rank = len(x_ir.shape)
    axis = int(node.attr("axis")) % rank
    name = node_name(lw)
    axis_t = lw.int32_const(f"{name}_axis", [axis])
    builtin, table = ((OP.ARG_MAX, "ArgMaxOptions") if node.op == "ArgMax"
                      else (OP.ARG_MIN, "ArgMinOptions"))
    dropped = tuple(d for i, d in enumerate(x_ir.shape) if i != axis)
    y = lw.output()
    # why: TFLite's ARG_MAX always drops the axis; keepdims is a RESHAPE after it
    out = lw.new_tensor(f"{name}_dropped", dropped, DType.INT32) if dropped != y_ir.shape else y
    lw.emit(builtin, [lw.input(0), axis_t], [out],
            *options(table, output_type=tflite.TensorType.INT32), dtype=x_ir.dtype)
    if out != y:
        reshape_to(lw, out, y, list(y_ir.shape))


@lowers("CumSum")
def _cumsum(lw: Lowering) -> None:
    assert lw.node is not None
    rank = len(lw.ir(0).shape)
    axis = int(lw.node.attr("axis")) % rank
    axis_t = lw.int32_const(f"{node_name(lw)}_axis", axis)
    lw.emit(OP.CUMSUM, [lw.input(0), axis_t], [lw.output()],
            *options("CumsumOptions", exclusive=bool(lw.node.attr("exclusive", False)),
                     reverse=bool(lw.node.attr("reverse", False))))


@lowers("L2Norm")
def _l2norm(lw: Lowering) -> None:
    assert lw.node is not None
    eps = float(lw.node.attr("epsilon", TFLITE_L2_EPSILON))
    if lw.ir(0).dtype is DType.FLOAT32 and eps > TFLITE_L2_EPSILON:
        # why: a smaller epsilon (ONNX's LpNormalization has none) differs from TFLite's
        # only for vectors whose norm is below 1e-6; a larger one changes ordinary results
        raise lw.unsupported(f"epsilon {eps} is larger than TFLite's fixed {TFLITE_L2_EPSILON}")
    lw.emit(OP.L2_NORMALIZATION, [lw.input(0)], [lw.output()],
            *options("L2NormOptions", fused_activation_function=0))


@lowers("Resize")
def _resize(lw: Lowering) -> None:
    assert lw.node is not None
    node, dtype = lw.node, lw.ir(0).dtype
    nearest = node.attr("mode") == "nearest"
    align = bool(node.attr("align_corners", False))
    half = bool(node.attr("half_pixel_centers", False))
    builtin, table = ((OP.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptions") if nearest
                      else (OP.RESIZE_BILINEAR, "ResizeBilinearOptions"))
    version = op_version(builtin, dtype)
    if dtype is not DType.INT16 and (half or (nearest and align)):
        version = 3
    size = lw.int32_const(f"{node_name(lw)}_size", [int(s) for s in node.attr("size")])
    x = lw.input(0)
    y, finish = lw.output_as_input()
    lw.emit(builtin, [x, size], [y],
            *options(table, align_corners=align, half_pixel_centers=half), version=version)
    finish()


@lowers("BatchMatMul")
def _batch_matmul(lw: Lowering) -> None:
    assert lw.node is not None
    ranks = [len(lw.ir(0).shape), len(lw.ir(1).shape)]
    if min(ranks) < 2 or max(ranks) > 5:
        raise lw.unsupported(f"TFLite's BATCH_MATMUL takes ranks 2 to 5, got {ranks}")
    lw.emit(OP.BATCH_MATMUL, [lw.input(0), lw.input(1)], [lw.output()],
            *options("BatchMatMulOptions", adj_x=bool(lw.node.attr("adj_x", False)),
                     adj_y=bool(lw.node.attr("adj_y", False))))
