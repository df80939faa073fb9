"""ONNX data movement: Slice, Split, Gather, SpaceToDepth, DepthToSpace.

Slice, Split and a Gather with a 1-D index list keep an NHWC input NHWC (their axes are
remapped); other Gathers work in ONNX axis order; SpaceToDepth / DepthToSpace run on the NHWC
copy. The context builds single-output
nodes, so Split becomes one ``Slice`` per output (the same copies a ``Split`` would make).
Int8 (QDQ) nodes move int8 values, so their outputs keep the input's quantization.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import NCHW_TO_NHWC, Value, nchw_axis_to_nhwc
from edgenn.ir import QuantParams


def _ints(ctx: Context, index: int, attr: str) -> list[int] | None:
    """Constant integer input ``index`` (opset >= 10 style) or attribute ``attr``."""
    name = ctx.input(index)
    if name is not None:
        if not ctx.is_const(name):
            raise ctx.fail(f"input {index} ({name!r}) must be a constant")
        return [int(v) for v in ctx.const_array(name).reshape(-1)]
    value = ctx.attr(attr)
    return None if value is None else [int(v) for v in value]


def _quant(ctx: Context, v: Value) -> QuantParams | None:
    return ctx.tensors[v.ir].quant


def _emit_slice(ctx: Context, v: Value, begin: Sequence[int], end: Sequence[int],
                steps: Sequence[int], out: str) -> None:
    """A Slice given in ONNX axis order, on ``v`` in its own layout."""
    b, e, s = list(begin), list(end), list(steps)
    if v.nhwc:
        b, e, s = ([seq[p] for p in NCHW_TO_NHWC] for seq in (b, e, s))
    ctx.emit("Slice", [v.ir], {"begin": tuple(b), "end": tuple(e), "steps": tuple(s)},
             out=out, nhwc=v.nhwc, quant=_quant(ctx, v))


def onnx_span(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's effective (start, end) of one axis: negatives count from the end, then
    both clamp to [0, dim] (step > 0) or start to [0, dim - 1] and end to [-1, dim - 1]."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)


@converter("Slice")
def convert_slice(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    rank = len(shape)
    starts, ends = _ints(ctx, 1, "starts"), _ints(ctx, 2, "ends")
    if starts is None or ends is None or len(starts) != len(ends):
        raise ctx.malformed("Slice needs starts and ends of the same length")
    axes = _ints(ctx, 3, "axes") or list(range(len(starts)))
    steps = (_ints(ctx, 4, "steps") if ctx.opset >= 10 else None) or [1] * len(starts)
    if not len(axes) == len(steps) == len(starts):
        raise ctx.malformed(f"starts {starts}, axes {axes} and steps {steps} differ in length")
    begin, end, step = [0] * rank, list(shape), [1] * rank
    for a, s0, e0, st in zip(axes, starts, ends, steps, strict=True):
        if not -rank <= a < rank:
            raise ctx.malformed(f"axis {a} does not fit rank {rank}")
        if st == 0:
            raise ctx.malformed("a Slice step is 0")
        a %= rank
        begin[a], end[a] = onnx_span(shape[a], s0, e0, st)
        step[a] = st
        if not range(begin[a], end[a], st):
            raise ctx.fail(f"axis {a} is sliced to nothing (empty tensors are unsupported)")
    _emit_slice(ctx, ctx.act(x), begin, end, step, ctx.output())


@converter("Split")
def convert_split(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    rank = len(shape)
    axis = int(ctx.attr("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.malformed(f"axis {axis} does not fit rank {rank}")
    axis %= rank
    dim = shape[axis]
    sizes = _ints(ctx, 1, "split")
    if sizes is None:
        # why ceil: opset 18's num_outputs makes the last piece the smaller one
        n = int(ctx.attr("num_outputs", len(node.output)))
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if len(sizes) != len(node.output) or sum(sizes) != dim or min(sizes) < 0:
        raise ctx.malformed(f"split {sizes} does not fit axis {axis} of size {dim} into "
                            f"{len(node.output)} outputs")
    v = ctx.act(x)
    start = 0
    for out, size in zip(node.output, sizes, strict=True):
        if out:
            if size == 0:
                raise ctx.fail("empty Split outputs are unsupported")
            begin, end = [0] * rank, list(shape)
            begin[axis], end[axis] = start, start + size
            _emit_slice(ctx, v, begin, end, [1] * rank, out)
        start += size


@converter("Gather")
def convert_gather(ctx: Context, node: NodeProto) -> None:
    x, idx = ctx.need(0), ctx.need(1)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.malformed(f"axis {axis} does not fit rank {rank}")
    axis %= rank
    size = ctx.onnx_shape(x)[axis]
    if ctx.is_const(idx):
        data = np.asarray(ctx.const_array(idx))
        if data.dtype.kind not in "iu":
            raise ctx.malformed(f"indices {idx!r} are {data.dtype.name}")
        if data.size and (data.min() < -size or data.max() >= size):
            raise ctx.malformed(f"indices {data.reshape(-1).tolist()} do not fit axis {axis} "
                                f"of size {size}")
        # why: ONNX counts negative indices from the end; the IR takes [0, size) only
        fixed = np.where(data < 0, data + size, data).astype(np.int64)
        scalar = fixed.ndim == 0
        indices = ctx.new_const(idx, fixed.reshape(-1) if scalar else fixed)
    else:
        scalar = False
        indices = ctx.onnx_order(idx)
    nhwc = False
    if ctx.is_const(x):
        c = ctx.const(x)
        params, quant = ctx.new_const(x, c.data, c.quant), c.quant
    elif ctx.is_nhwc(x) and len(ctx.tensors[indices].shape) == 1 and not scalar:
        # why: a 1-D index list keeps the rank, so the NHWC layout survives the gather
        params, axis, nhwc = ctx.act(x).ir, nchw_axis_to_nhwc(axis), True
        quant = ctx.tensors[params].quant
    else:
        params = ctx.onnx_order(x)
        quant = ctx.tensors[params].quant
    attrs = {"axis": axis, "batch_dims": 0}
    out = ctx.output()
    if not scalar:
        ctx.emit("Gather", [params, indices], attrs, out=out, quant=quant, nhwc=nhwc)
        return
    # why: a 0-d index drops the axis; IR constants have rank >= 1, so gather one and reshape
    picked = ctx.emit("Gather", [params, indices], attrs, hint=out + ":one", quant=quant)
    shape = ctx.tensors[picked].shape
    ctx.emit("Reshape", [picked], {"shape": shape[:axis] + shape[axis + 1:]}, out=out,
             quant=quant)


@converter("SpaceToDepth", "DepthToSpace")
def convert_block_move(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    block = int(ctx.attr("blocksize", 0))
    if block < 1:
        raise ctx.malformed(f"blocksize {block}")
    attrs: dict[str, object] = {"block": block}
    # why both: DepthToSpace has had DCR / CRD modes since opset 11, SpaceToDepth since 28
    mode = str(ctx.attr("mode", "DCR"))
    if mode not in ("DCR", "CRD"):
        raise ctx.malformed(f"{node.op_type} mode {mode!r}")
    if mode != "DCR":
        attrs["mode"] = mode
    ir = ctx.nhwc(x)
    ctx.emit(node.op_type, [ir], attrs, out=ctx.output(), nhwc=True,
             quant=ctx.tensors[ir].quant)
