"""Data movement: Slice, Split, Gather, SpaceToDepth, DepthToSpace.

Every operator here moves elements and never changes them: int8 / int16 values keep their
integers, as TFLite Micro's kernels copy bytes without looking at quantization parameters.

=============  ==================================  =========================================
op             inputs                              attrs
=============  ==================================  =========================================
Slice          x                                   begin, end, steps (one each per dimension;
                                                   Python ``range`` semantics, a negative step
                                                   walks backwards and may end at -1)
Split          x -> y0, y1, ...                    axis, sizes (one per output, sum = dim)
Gather         x, indices (int32 / int64)          axis, batch_dims
SpaceToDepth   x[N,H,W,C] -> [N,H/b,W/b,C*b*b]     block
DepthToSpace   x[N,H,W,C] -> [N,H*b,W*b,C/(b*b)]   block, mode ("DCR" as TFLite, or ONNX "CRD")
=============  ==================================  =========================================

Gather's output shape is ``x[:axis] + indices[batch_dims:] + x[axis + 1:]``; constant indices
must lie in ``[0, x.shape[axis])`` (a variable index out of range is an error at run time).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, I32, define_op
from edgenn.ir.shape_rules import Inferred, Shape, fail, need, need_rank, register_shape
from edgenn.ir.tensor import Tensor

MOVED = (F32, I8, I16, I32)
INDEX_TYPES = (DType.INT32, DType.INT64)

define_op("Slice", "strided slice with resolved per-dimension begin / end / steps", MOVED,
          required=("begin", "end", "steps"), tflite=("STRIDED_SLICE", "SLICE"),
          onnx=("Slice",))
define_op("Split", "split one axis into consecutive pieces, one output each", MOVED,
          required=("axis", "sizes"), tflite=("SPLIT", "SPLIT_V", "UNPACK"), onnx=("Split",))
define_op("Gather", "take slices along an axis at the given indices", MOVED,
          required=("axis",), optional=("batch_dims",), tflite=("GATHER",), onnx=("Gather",))
define_op("SpaceToDepth", "move block x block spatial tiles into channels (NHWC)", MOVED,
          required=("block",), optional=("mode",), tflite=("SPACE_TO_DEPTH",),
          onnx=("SpaceToDepth",))
define_op("DepthToSpace", "move channels into block x block spatial tiles (NHWC)", MOVED,
          required=("block",), optional=("mode",), tflite=("DEPTH_TO_SPACE",),
          onnx=("DepthToSpace",))


def _ints(node: Node, key: str, count: int | None = None) -> tuple[int, ...]:
    """Attribute ``key`` as integers (``count`` of them when given)."""
    value = node.attrs[key]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise fail(node, f"attribute {key} must be a list of integers, got {value!r}")
    out = tuple(int(v) for v in value)
    if count is not None and len(out) != count:
        raise fail(node, f"attribute {key} has {len(out)} entries for a rank-{count} input")
    return out


def _int(node: Node, key: str, default: int | None = None) -> int:
    value = node.attrs.get(key, default)
    # why: a bool is an int in Python, and a float axis is a converter bug
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise fail(node, f"attribute {key} must be an integer, got {value!r}")
    return int(value)


def slice_count(begin: int, end: int, step: int) -> int:
    """Elements of ``range(begin, end, step)``."""
    return len(range(begin, end, step))


@register_shape("Slice")
def _slice(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    rank = len(x.shape)
    begin, end = _ints(node, "begin", rank), _ints(node, "end", rank)
    steps = _ints(node, "steps", rank)
    shape = []
    for axis, (size, b, e, s) in enumerate(zip(x.shape, begin, end, steps, strict=True)):
        # why these bounds: the converters resolve masks and negative indices, so anything
        # outside is a converter bug or a corrupt model, and an empty result has no storage
        ok = s != 0 and 0 <= b < size and (b < e <= size if s > 0 else -1 <= e < b)
        if not ok:
            raise fail(node, f"axis {axis} of size {size}: begin {b}, end {e}, step {s} "
                             "is not a non-empty slice")
        shape.append(slice_count(b, e, s))
    return [(tuple(shape), x.dtype)]


@register_shape("Split")
def _split(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    rank = len(x.shape)
    axis = _int(node, "axis")
    if not -rank <= axis < rank:
        raise fail(node, f"axis {axis} does not fit rank {rank}")
    axis %= rank
    sizes = _ints(node, "sizes")
    if not sizes or any(n < 1 for n in sizes) or sum(sizes) != x.shape[axis]:
        raise fail(node, f"sizes {list(sizes)} do not split axis {axis} of size "
                         f"{x.shape[axis]}")
    if len(sizes) != len(node.outputs):
        raise fail(node, f"{len(sizes)} sizes for {len(node.outputs)} outputs")
    out = []
    for n in sizes:
        shape = list(x.shape)
        shape[axis] = n
        out.append((tuple(shape), x.dtype))
    return out


def gather_geometry(node: Node, x: Shape, idx: Shape) -> tuple[int, int]:
    """(axis, batch_dims) of a Gather on ``x`` with ``idx``-shaped indices, normalized."""
    rank = len(x)
    axis, batch_dims = _int(node, "axis"), _int(node, "batch_dims", 0)
    if not -rank <= axis < rank:
        raise fail(node, f"axis {axis} does not fit rank {rank}")
    axis %= rank
    if batch_dims < 0:
        batch_dims += len(idx)
    if not 0 <= batch_dims <= min(axis, len(idx)):
        raise fail(node, f"batch_dims {node.attrs.get('batch_dims')} does not fit axis {axis} "
                         f"and indices of rank {len(idx)}")
    if tuple(x[:batch_dims]) != tuple(idx[:batch_dims]):
        raise fail(node, f"the first {batch_dims} dimensions of {list(x)} and the indices "
                         f"{list(idx)} differ")
    return axis, batch_dims


@register_shape("Gather")
def _gather(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, idx = need(node, inputs, 0), need(node, inputs, 1)
    if idx.dtype not in INDEX_TYPES:
        raise fail(node, f"indices {idx.name!r} are {idx.dtype.value}; int32 or int64 needed")
    axis, batch_dims = gather_geometry(node, x.shape, idx.shape)
    if idx.data is not None and idx.data.size:
        lo, hi = int(idx.data.min()), int(idx.data.max())
        if lo < 0 or hi >= x.shape[axis]:
            bad = lo if lo < 0 else hi
            raise fail(node, f"index {bad} is out of range for axis {axis} of size "
                             f"{x.shape[axis]}")
    shape = x.shape[:axis] + idx.shape[batch_dims:] + x.shape[axis + 1:]
    return [(tuple(shape), x.dtype)]


def _block(node: Node, x: Tensor) -> int:
    need_rank(node, x, 4)
    block = _int(node, "block")
    if block < 1:
        raise fail(node, f"block size {block} must be at least 1")
    return block


@register_shape("SpaceToDepth")
def _space_to_depth(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    b = _block(node, x)
    if node.attrs.get("mode", "DCR") not in ("DCR", "CRD"):
        raise fail(node, f"mode {node.attrs.get('mode')!r} is neither 'DCR' nor 'CRD'")
    n, h, w, c = x.shape
    if h % b or w % b:
        raise fail(node, f"height {h} and width {w} must be multiples of the block size {b}")
    return [((n, h // b, w // b, c * b * b), x.dtype)]


@register_shape("DepthToSpace")
def _depth_to_space(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    b = _block(node, x)
    mode = node.attrs.get("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise fail(node, f"mode {mode!r} is neither 'DCR' nor 'CRD'")
    n, h, w, c = x.shape
    if c % (b * b):
        raise fail(node, f"{c} channels are not a multiple of block size {b} squared")
    return [((n, h * b, w * b, c // (b * b)), x.dtype)]
