"""Slice, Split, Gather, SpaceToDepth and DepthToSpace: pure data movement (any element type).

As TFLite Micro, int8 / int16 values are moved unchanged (its kernels copy bytes and never
rescale), so no quantization constant is involved.

Arrays arrive batch first. Axis 0 of the IR shapes is the batch when it is 1: a slice or split
then keeps the whole batch (the only valid slice of a size-1 axis is all of it). A layer whose
input has another axis 0 runs only at its declared shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import ShapeError
from edgenn.ir import DType, Node
from edgenn.ir.opdefs.movement import gather_geometry

TYPES = (DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32)


class _Moving(Layer):
    """A one-input data-movement layer: the batch rule and the constant-input case."""

    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.in_shape = tuple(x.shape)
        self.batched = bool(x.shape) and x.shape[0] == 1
        self.operands = Operands(self.inputs)
        self.setup()

    def setup(self) -> None:
        """Per-operator constants (override)."""

    def operand(self, xs: Sequence[np.ndarray]) -> np.ndarray:
        x = self.operands.gather(xs)[0]
        if not self.batched and tuple(x.shape) != self.in_shape:
            # why: without a batch axis there is no rule for a different leading size
            raise ShapeError(f"{self.node}: runs only on its declared input shape "
                             f"{list(self.in_shape)} (got {list(x.shape)})")
        return x


@register("Slice", *TYPES)
class Slice(_Moving):
    """``x[begin:end:step]`` per axis (an ``end`` of -1 with a negative step: past index 0)."""

    def setup(self) -> None:
        spans = zip(self.node.attr("begin"), self.node.attr("end"), self.node.attr("steps"),
                    strict=True)
        index = [slice(int(b), int(e) if int(e) >= 0 else None, int(s)) for b, e, s in spans]
        if self.batched:
            index[0] = slice(None)
        self.index = tuple(index)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        return [np.ascontiguousarray(self.operand(xs)[self.index])]


@register("Split", *TYPES)
class Split(_Moving):
    """Consecutive pieces of ``sizes`` elements along ``axis``, one per output."""

    def setup(self) -> None:
        self.axis = int(self.node.attr("axis")) % len(self.in_shape)
        sizes = [int(n) for n in self.node.attr("sizes")]
        self.cuts = [int(c) for c in np.cumsum(sizes)[:-1]]

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operand(xs)
        if self.axis == 0 and self.batched:  # one piece: the whole batch
            return [np.ascontiguousarray(x)]
        return [np.ascontiguousarray(p) for p in np.split(x, self.cuts, axis=self.axis)]


@register("SpaceToDepth", *TYPES)
class SpaceToDepth(_Moving):
    """out[n, h, w, k] = x[n, h * b + i, w * b + j, c] with k = (i * b + j) * C + c ("DCR",
    TFLite's order) or k = c * b * b + i * b + j (ONNX's "CRD", opset 28)."""

    def setup(self) -> None:
        self.block = int(self.node.attr("block"))
        self.mode = str(self.node.attr("mode", "DCR"))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operand(xs)
        n, h, w, c = x.shape
        b = self.block
        y = x.reshape(n, h // b, b, w // b, b, c)
        y = y.transpose(0, 1, 3, 2, 4, 5) if self.mode == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
        return [np.ascontiguousarray(y).reshape(n, h // b, w // b, b * b * c)]


@register("DepthToSpace", *TYPES)
class DepthToSpace(_Moving):
    """out[n, h * b + i, w * b + j, c] = x[n, h, w, k] with k = (i * b + j) * C + c ("DCR",
    TFLite and ONNX's default) or k = c * b * b + i * b + j (ONNX's "CRD")."""

    def setup(self) -> None:
        self.block = int(self.node.attr("block"))
        self.mode = str(self.node.attr("mode", "DCR"))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operand(xs)
        n, h, w, c = x.shape
        b = self.block
        c_out = c // (b * b)
        if self.mode == "DCR":
            y = x.reshape(n, h, w, b, b, c_out).transpose(0, 1, 3, 2, 4, 5)
        else:
            y = x.reshape(n, h, w, c_out, b, b).transpose(0, 1, 4, 2, 5, 3)
        return [np.ascontiguousarray(y).reshape(n, h * b, w * b, c_out)]


def gather(node: Node, x: np.ndarray, idx: np.ndarray, axis: int,
           batch_dims: int) -> np.ndarray:
    """TFLite Micro's GATHER on whole arrays: ``x[:axis] + idx[batch_dims:] + x[axis + 1:]``
    with out[b, o, c, i] = x[b, o, idx[b, c], i] over the flattened groups of axes."""
    groups = math.prod(x.shape[:batch_dims])
    outer = math.prod(x.shape[batch_dims:axis])
    size = x.shape[axis]
    coords = idx.reshape(groups, -1)
    if coords.size and (coords.min() < 0 or coords.max() >= size):
        bad = int(coords.min()) if coords.min() < 0 else int(coords.max())
        raise ShapeError(f"{node}: index {bad} is out of range for axis {axis} of size {size}")
    xv = x.reshape(groups, outer, size, -1)
    picked = xv[np.arange(groups)[:, None, None], np.arange(outer)[None, :, None],
                coords[:, None, :]]
    return np.ascontiguousarray(picked).reshape(x.shape[:axis] + idx.shape[batch_dims:]
                                                + x.shape[axis + 1:])


@register("Gather", *TYPES)
class Gather(Layer):
    """Slices of ``x`` along ``axis`` at ``indices`` (constant or computed, int32 / int64).

    A computed operand whose declared axis 0 is 1 is batched: each sample gathers with its
    own indices; any other operand (constant, or computed at a fixed shape) is shared.
    """

    def build(self) -> None:
        x, idx = self.inputs[0], self.inputs[1]
        assert x is not None and idx is not None
        self.axis, self.batch_dims = gather_geometry(self.node, x.shape, idx.shape)
        self.operands = Operands(self.inputs)
        self.declared = (tuple(x.shape), tuple(idx.shape))
        self.batched = tuple(not t.is_const and bool(t.shape) and t.shape[0] == 1
                             for t in (x, idx))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, idx = self.operands.gather(xs)
        for a, shape, batched in zip((x, idx), self.declared, self.batched, strict=True):
            if not batched and tuple(a.shape) != shape:
                raise ShapeError(f"{self.node}: operand of declared shape {list(shape)} has "
                                 f"no batch axis (got {list(a.shape)})")
        n = max([a.shape[0] for a, b in zip((x, idx), self.batched, strict=True) if b],
                default=1)
        axis, bd = self.axis, self.batch_dims
        x_b, idx_b = self.batched
        # why these shortcuts: the batch axis then folds into an axis TFLM's loops already
        # treat element by element, so one vectorised gather equals a gather per sample
        if (n == 1 or (x_b and not idx_b and bd == 0 and axis >= 1)
                or (idx_b and not x_b and bd == 0 and axis == 0)):
            return [gather(self.node, x, idx, axis, bd)]
        if bd >= 1:  # both operands start with the batch: share the unbatched one
            x = np.broadcast_to(x, (n, *x.shape[1:]))
            idx = np.broadcast_to(idx, (n, *idx.shape[1:]))
            return [gather(self.node, x, idx, axis, bd)]
        parts = []
        for k in range(n):
            part = gather(self.node, x[k:k + 1] if x_b else x, idx[k:k + 1] if idx_b else idx,
                          axis, bd)
            if part.shape[:1] != (1,):
                raise ShapeError(f"{self.node}: a batch of {n} needs an output with axis 0 "
                                 f"of size 1, not {list(part.shape)}")
            parts.append(part)
        return [np.concatenate(parts, axis=0)]
