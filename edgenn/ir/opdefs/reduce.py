"""Reductions, scans, normalization, resizing and the batched matrix product.

=============  ====================================  =============================================
op             inputs                                attrs
=============  ====================================  =============================================
ReduceMax,     x                                     axes (sorted, non-negative), keepdims (True)
ReduceMin,
ReduceSum
ArgMax,        x                                     axis, keepdims (False), output_type ("int32"
ArgMin                                               or "int64"), select_last_index (False)
CumSum         x                                     axis, exclusive (False), reverse (False)
L2Norm         x (over the last axis)                epsilon (1e-6: the norm is at least epsilon)
Resize         x[N,H,W,C]                            mode ("nearest" / "linear"), size (OH, OW),
                                                     align_corners, half_pixel_centers
BatchMatMul    a[..., M, K], b[..., K, N]            adj_x, adj_y (transpose the last two axes
                                                     of a / b first); batch axes broadcast
=============  ====================================  =============================================

The quantized types listed are those TFLite Micro has kernels for: int8 everywhere, int16 for
ReduceSum, nearest-neighbour Resize and BatchMatMul (zero points 0). Every output keeps its
first input's element type except ArgMax / ArgMin (``output_type``).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, need_rank, register_shape
from edgenn.ir.tensor import Tensor

_REDUCE = ("axes",)
define_op("ReduceMax", "largest value over axes", (F32, I8), required=_REDUCE,
          optional=("keepdims",), tflite=("REDUCE_MAX",), onnx=("ReduceMax",))
define_op("ReduceMin", "smallest value over axes", (F32, I8), required=_REDUCE,
          optional=("keepdims",), tflite=("REDUCE_MIN",), onnx=("ReduceMin",))
define_op("ReduceSum", "sum over axes (int8 / int16 requantized to the output)", (F32, I8, I16),
          required=_REDUCE, optional=("keepdims",), tflite=("SUM",), onnx=("ReduceSum",))

_ARG = ("keepdims", "output_type", "select_last_index")
define_op("ArgMax", "index of the largest value along an axis", (F32, I8), required=("axis",),
          optional=_ARG, tflite=("ARG_MAX",), onnx=("ArgMax",))
define_op("ArgMin", "index of the smallest value along an axis", (F32, I8), required=("axis",),
          optional=_ARG, tflite=("ARG_MIN",), onnx=("ArgMin",))

define_op("CumSum", "running sum along an axis (exclusive / reverse)", (F32, I8),
          required=("axis",), optional=("exclusive", "reverse"), tflite=("CUMSUM",),
          onnx=("CumSum",))
define_op("L2Norm", "x / max(||x||_2, epsilon) over the last axis (int8 output is 1/128, zp 0)",
          (F32, I8), optional=("epsilon",), tflite=("L2_NORMALIZATION",),
          onnx=("LpNormalization",))
define_op("Resize", "nearest-neighbour or bilinear resize of H and W (NHWC)", (F32, I8, I16),
          required=("mode", "size"), optional=("align_corners", "half_pixel_centers"),
          tflite=("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"), onnx=("Resize",))
define_op("BatchMatMul", "batched matrix product with broadcast batch axes", (F32, I8, I16),
          optional=("adj_x", "adj_y"), tflite=("BATCH_MATMUL",), onnx=("MatMul",))

RESIZE_MODES = ("nearest", "linear")
ARG_OUTPUT_TYPES = {"int32": DType.INT32, "int64": DType.INT64}


def _axis(node: Node, value: object, rank: int, what: str = "axis") -> int:
    # why: a bool is an int in Python; a float or string would only fail at build time
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise fail(node, f"{what} must be an integer, got {value!r}")
    if not -rank <= int(value) < rank:
        raise fail(node, f"{what} {value} does not fit rank {rank}")
    return int(value) % rank


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep: bool) -> tuple[int, ...]:
    """``shape`` after reducing ``axes`` (kept as 1s, or dropped)."""
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@register_shape("ReduceMax", "ReduceMin", "ReduceSum")
def _reduce(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    rank = len(x.shape)
    raw = node.attr("axes")
    if not isinstance(raw, tuple | list):
        raise fail(node, f"axes must be a list of integers, got {raw!r}")
    axes = tuple(sorted({_axis(node, a, rank, "axes entry") for a in raw}))
    if node.op != "ReduceSum" and any(x.shape[a] == 0 for a in axes):
        raise fail(node, f"cannot take {node.op} over an empty axis of {list(x.shape)}")
    return [(reduced_shape(x.shape, axes, bool(node.attr("keepdims", True))), x.dtype)]


@register_shape("ArgMax", "ArgMin")
def _arg(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    if not x.shape:
        raise fail(node, "needs an input of rank 1 or more")
    axis = _axis(node, node.attr("axis"), len(x.shape))
    if x.shape[axis] == 0:
        raise fail(node, f"axis {axis} of {list(x.shape)} is empty")
    out_type = ARG_OUTPUT_TYPES.get(str(node.attr("output_type", "int32")))
    if out_type is None:
        raise fail(node, f"output_type must be int32 or int64, got {node.attr('output_type')!r}")
    return [(reduced_shape(x.shape, (axis,), bool(node.attr("keepdims", False))), out_type)]


@register_shape("CumSum")
def _cumsum(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    if not x.shape:
        raise fail(node, "needs an input of rank 1 or more")
    _axis(node, node.attr("axis"), len(x.shape))
    return [(x.shape, x.dtype)]


@register_shape("L2Norm")
def _l2norm(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    if not x.shape:
        raise fail(node, "needs an input of rank 1 or more")
    eps = node.attr("epsilon", 1e-6)
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 <= eps < 1:
        raise fail(node, f"epsilon must be a number in [0, 1), got {eps!r}")
    return [(x.shape, x.dtype)]


@register_shape("Resize")
def _resize(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    need_rank(node, x, 4)
    mode = node.attr("mode")
    if mode not in RESIZE_MODES:
        raise fail(node, f"mode must be one of {', '.join(RESIZE_MODES)}, got {mode!r}")
    size = node.attr("size")
    if (not isinstance(size, tuple | list) or len(size) != 2
            or any(isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 1
                   for s in size)):
        raise fail(node, f"size must be two positive integers (height, width), got {size!r}")
    if node.attr("align_corners", False) and node.attr("half_pixel_centers", False):
        raise fail(node, "align_corners and half_pixel_centers cannot both be set")
    if 0 in x.shape[1:3]:
        raise fail(node, f"cannot resize the empty image {list(x.shape)}")
    n, _, _, c = x.shape
    return [((n, int(size[0]), int(size[1]), c), x.dtype)]


def matmul_shape(node: Node, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape of BatchMatMul (TFLite's BATCH_MATMUL rules) or one error."""
    if len(a) < 2 or len(b) < 2:
        raise fail(node, f"needs operands of rank 2 or more, got {list(a)} and {list(b)}")
    m, k = (a[-1], a[-2]) if node.attr("adj_x", False) else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if node.attr("adj_y", False) else (b[-2], b[-1])
    if k != k2:
        raise fail(node, f"cannot multiply {list(a)} by {list(b)} (adj_x "
                         f"{bool(node.attr('adj_x', False))}, adj_y "
                         f"{bool(node.attr('adj_y', False))}): inner sizes {k} and {k2}")
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise fail(node, f"batch axes of {list(a)} and {list(b)} do not broadcast") from None
    return (*batch, m, n)


@register_shape("BatchMatMul")
def _batch_matmul(node: Node, inputs: list[Tensor | None]) -> Inferred:
    a, b = need(node, inputs, 0), need(node, inputs, 1)
    if a.dtype is not b.dtype:
        raise fail(node, f"operands are {a.dtype.value} and {b.dtype.value}; "
                         "both must have one type")
    return [(matmul_shape(node, a.shape, b.shape), a.dtype)]
