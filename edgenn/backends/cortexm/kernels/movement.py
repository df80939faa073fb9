"""Portable data movement: one strided copy, and a gather at run-time indices.

``StridedCopy`` describes any element-wise move as a box of up to six dimensions read with
one set of strides and written with another (``edgenn_strided_copy`` in
``edgenn_movement.c``). Slice, Split, SpaceToDepth and DepthToSpace (here) and Transpose and
Concat (``data_movement.py``) only differ in the strides they compute, once, in Python; the
plan is simplified first (size-1 dimensions dropped, dimensions that are contiguous on both
sides merged) so the innermost rows are as long as possible, and a row contiguous on both
sides moves in words where alignment allows.
Gather reads rows at indices only known at run time (or given as a constant table) with
``edgenn_gather``. No kernel here touches values: int8 / int16 bytes move unchanged, as TFLM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgenn.backends.cortexm.ccall import OUT0, Arg, Array, Buf, CCall, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    const_operand,
    dense_strides,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.movement import gather_geometry

RANK = 6  # EDGENN_COPY_RANK
SOURCES = ("edgenn_movement.c",)
TYPES = (DType.INT8, DType.INT16, DType.INT32, DType.FLOAT32)


@dataclass(frozen=True)
class StridedCopy:
    """``dst[dst_offset + sum i_k dst_strides[k]] = src[src_offset + sum i_k src_strides[k]]``
    for every index ``i`` of the box ``dims`` (strides and offsets in elements)."""

    dims: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    src_offset: int = 0
    dst_offset: int = 0

    @classmethod
    def gathering(cls, dims: Sequence[int], src_strides: Sequence[int],
                  src_offset: int = 0) -> StridedCopy:
        """Read ``dims`` with ``src_strides`` into a dense destination."""
        return cls(tuple(dims), tuple(src_strides), tuple(dense_strides(dims)), src_offset)

    @classmethod
    def scattering(cls, dims: Sequence[int], dst_strides: Sequence[int],
                   dst_offset: int = 0) -> StridedCopy:
        """Write a dense ``dims`` source with ``dst_strides``."""
        return cls(tuple(dims), tuple(dense_strides(dims)), tuple(dst_strides), 0, dst_offset)

    def simplified(self) -> StridedCopy:
        """The same copy with size-1 dimensions dropped and mergeable neighbours merged."""
        kept = [(n, s, d) for n, s, d in zip(self.dims, self.src_strides, self.dst_strides,
                                             strict=True) if n != 1]
        merged: list[tuple[int, int, int]] = []
        for n, s, d in kept:
            if merged:
                pn, ps, pd = merged[-1]
                # why: an outer step that is exactly a whole inner row on both sides makes
                # the two loops one longer loop
                if ps == s * n and pd == d * n:
                    merged[-1] = (pn * n, s, d)
                    continue
            merged.append((n, s, d))
        if not merged:
            merged = [(1, 1, 1)]
        dims, src, dst = (tuple(v) for v in zip(*merged, strict=True))
        return StridedCopy(dims, src, dst, self.src_offset, self.dst_offset)

    def plan(self, node: Node, elem_size: int) -> tuple[list[int], int]:
        """(the int32 plan ``edgenn_strided_copy`` reads, the unit it moves in bytes).

        Strides and offsets are in bytes. A row contiguous on both sides moves in the widest
        unit (4, 2 or 1 bytes) that divides it and every stride and offset, so an int8 copy
        of aligned rows runs word by word (tensor bases are at least 4-aligned).
        """
        s = self.simplified()
        if len(s.dims) > RANK:
            raise UnsupportedOperatorError(
                f"{node}: a copy of {len(s.dims)} non-mergeable dimensions on Cortex-M "
                f"(at most {RANK})")
        dims = list(s.dims)
        src = [v * elem_size for v in s.src_strides]
        dst = [v * elem_size for v in s.dst_strides]
        offsets = [s.src_offset * elem_size, s.dst_offset * elem_size]
        unit = elem_size
        if src[-1] == dst[-1] == elem_size:
            row = dims[-1] * elem_size
            steps = [row, *src[:-1], *dst[:-1], *offsets]
            # why no wider than 4: the C moves 1, 2 or 4 bytes; elem_size always divides
            unit = next(w for w in (4, 2, 1) if all(v % w == 0 for v in steps))
            dims[-1], src[-1], dst[-1] = row // unit, unit, unit
        pad = RANK - len(dims)
        plan = [1] * pad + dims + [0] * pad + src + [0] * pad + dst + offsets
        return plan, unit


def copy_statement(node: Node, src: Arg, dst: Arg, copy: StridedCopy, elem_size: int,
                   arrays: list[CArray], tag: str = "") -> CCall:
    """The C call of one strided copy; its plan is appended to ``arrays`` as ``plan<tag>``."""
    plan, unit = copy.plan(node, elem_size)
    arrays.append(CArray(f"plan{tag}", "int32_t", plan))
    return c_call("edgenn_strided_copy", src, dst, Array(f"plan{tag}"), unit)


def same_types(node: Node, graph: Graph) -> bool:
    """True when every input and output has one element type this module moves."""
    dts = {graph.tensor(n).dtype for n in (*node.inputs, *node.outputs) if n}
    return len(dts) == 1 and dts <= set(TYPES)


def _single_copy(node: Node, graph: Graph, copy: StridedCopy, name: str) -> KernelCall:
    x = graph.tensor(node.inputs[0])
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    call = copy_statement(node, src, OUT0, copy, x.dtype.itemsize, arrays)
    return KernelCall(call, SOURCES, tuple(arrays),
                      comment=f"{node.op} {list(x.shape)} -> "
                              f"{list(graph.tensor(node.outputs[0]).shape)}")


# -- Slice and Split ---------------------------------------------------------------------------
def _slice(node: Node, graph: Graph) -> KernelCall:
    x = graph.tensor(node.inputs[0])
    y = graph.tensor(node.outputs[0])
    dense = dense_strides(x.shape)
    begin = [int(b) for b in node.attr("begin")]
    steps = [int(s) for s in node.attr("steps")]
    offset = sum(b * s for b, s in zip(begin, dense, strict=True))
    strides = [st * s for st, s in zip(steps, dense, strict=True)]
    return _single_copy(node, graph, StridedCopy.gathering(y.shape, strides, offset),
                        "edgenn_strided_copy")


def _split(node: Node, graph: Graph) -> KernelCall:
    x = graph.tensor(node.inputs[0])
    axis = int(node.attr("axis")) % len(x.shape)
    dense = dense_strides(x.shape)
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    calls, start = [], 0
    for k, name in enumerate(node.outputs):
        piece = graph.tensor(name).shape
        copy = StridedCopy.gathering(piece, dense, start * dense[axis])
        calls.append(copy_statement(node, src, Buf("out", k), copy, x.dtype.itemsize, arrays,
                                    str(k)))
        start += piece[axis]
    return KernelCall(tuple(calls), SOURCES, tuple(arrays))


# -- space <-> depth ---------------------------------------------------------------------------
def _space_to_depth(node: Node, graph: Graph) -> KernelCall:
    n, h, w, c = graph.tensor(node.inputs[0]).shape
    b = int(node.attr("block"))
    # out[n, oh, ow, i, j, c] ("DCR") or out[n, oh, ow, c, i, j] ("CRD") =
    # x[n, oh * b + i, ow * b + j, c]
    if node.attr("mode", "DCR") == "DCR":
        dims = (n, h // b, w // b, b, b, c)
        strides = (h * w * c, b * w * c, b * c, w * c, c, 1)
    else:
        dims = (n, h // b, w // b, c, b, b)
        strides = (h * w * c, b * w * c, b * c, 1, w * c, c)
    return _single_copy(node, graph, StridedCopy.gathering(dims, strides),
                        "edgenn_strided_copy")


def _depth_to_space(node: Node, graph: Graph) -> KernelCall:
    n, h, w, c = graph.tensor(node.inputs[0]).shape
    b = int(node.attr("block"))
    co = c // (b * b)
    # out[n, h, i, w, j, c'] = x[n, h, w, k]: k = (i * b + j) * co + c' ("DCR") or
    # c' * b * b + i * b + j ("CRD")
    dims = (n, h, b, w, b, co)
    if node.attr("mode", "DCR") == "DCR":
        strides = (h * w * c, w * c, b * co, c, co, 1)
    else:
        strides = (h * w * c, w * c, b, c, 1, b * b)
    return _single_copy(node, graph, StridedCopy.gathering(dims, strides),
                        "edgenn_strided_copy")


# -- Gather ------------------------------------------------------------------------------------
def _gather_matches(node: Node, graph: Graph) -> bool:
    x, idx = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    y = graph.tensor(node.outputs[0])
    # why: a computed index tensor is read in place, so it must already be int32
    idx_ok = idx.dtype is DType.INT32 or (idx.is_const and idx.dtype is DType.INT64)
    return x.dtype in TYPES and y.dtype is x.dtype and idx_ok


def _gather(node: Node, graph: Graph) -> KernelCall:
    x, idx = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    axis, bd = gather_geometry(node, x.shape, idx.shape)
    groups = math.prod(x.shape[:bd])
    outer = math.prod(x.shape[bd:axis])
    coords = math.prod(idx.shape[bd:])
    block = math.prod(x.shape[axis + 1:]) * x.dtype.itemsize
    arrays: list[CArray] = []
    params = const_operand(node, graph, 0, arrays)
    if idx.is_const:
        assert idx.data is not None  # range checked by the IR's shape inference
        arrays.append(CArray("indices", "int32_t", np.asarray(idx.data, np.int64)))
        indices: Arg = Array("indices")
    else:
        indices = Buf("in", 1)
    call = c_call("edgenn_gather", params, indices, OUT0, groups, outer, x.shape[axis], coords,
                  block)
    return KernelCall(call, SOURCES, tuple(arrays),
                      comment=f"Gather axis {axis} batch_dims {bd}")


register_kernel(PortableKernel("Slice", "edgenn_strided_copy", same_types, _slice, TYPES))
register_kernel(PortableKernel("Split", "edgenn_strided_copy", same_types, _split, TYPES))
register_kernel(PortableKernel("SpaceToDepth", "edgenn_strided_copy", same_types,
                               _space_to_depth, TYPES))
register_kernel(PortableKernel("DepthToSpace", "edgenn_strided_copy", same_types,
                               _depth_to_space, TYPES))
register_kernel(PortableKernel("Gather", "edgenn_gather", _gather_matches, _gather, TYPES))
