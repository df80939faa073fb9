"""Portable BorderPad (ONNX Pad ``reflect`` / ``edge``; int8, int16, int32 or float32): a few
strided copies, no new C.

Along each axis the output is up to three runs: the ``before`` pad, the input, the ``after``
pad. Each run reads the input affinely: the input itself with stride 1, a reflected pad
backwards (stride -1, from the element next to the edge), an edge pad with stride 0. So every
box of the product of the axes' runs is one ``edgenn_strided_copy`` (``movement.py``); a
model that pads one axis needs three.
"""

from __future__ import annotations

import itertools

from edgenn.backends.cortexm.ccall import OUT0
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, const_operand, dense_strides
from edgenn.backends.cortexm.kernels.movement import (
    SOURCES,
    TYPES,
    StridedCopy,
    copy_statement,
    same_types,
)
from edgenn.ir import Graph, Node

# one run of an axis: (output start, length, input start, input step)
Run = tuple[int, int, int, int]


def axis_runs(size: int, before: int, after: int, mode: str) -> list[Run]:
    """The runs of one axis of length ``size`` padded by ``before`` / ``after``."""
    runs: list[Run] = []
    if before:  # output j < before reads size index before - j (reflect) or 0 (edge)
        runs.append((0, before, before, -1) if mode == "reflect" else (0, before, 0, 0))
    runs.append((before, size, 0, 1))
    if after:  # output before + size + j reads size - 2 - j (reflect) or size - 1 (edge)
        runs.append((before + size, after, size - 2, -1) if mode == "reflect"
                    else (before + size, after, size - 1, 0))
    return runs


def _border_pad(node: Node, graph: Graph) -> KernelCall:
    x = graph.tensor(node.inputs[0])
    y = graph.tensor(node.outputs[0])
    mode = str(node.attr("mode"))
    pads = [(int(b), int(a)) for b, a in node.attr("pads")]
    src_dense, dst_dense = dense_strides(x.shape), dense_strides(y.shape)
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    calls = []
    per_axis = [axis_runs(n, b, a, mode) for n, (b, a) in zip(x.shape, pads, strict=True)]
    for k, box in enumerate(itertools.product(*per_axis)):
        copy = StridedCopy(
            dims=tuple(length for _, length, _, _ in box),
            src_strides=tuple(step * s for (_, _, _, step), s in zip(box, src_dense,
                                                                     strict=True)),
            dst_strides=tuple(dst_dense),
            src_offset=sum(start * s for (_, _, start, _), s in zip(box, src_dense,
                                                                    strict=True)),
            dst_offset=sum(o * s for (o, _, _, _), s in zip(box, dst_dense, strict=True)))
        calls.append(copy_statement(node, src, OUT0, copy, x.dtype.itemsize, arrays,
                                    str(k)))
    return KernelCall(tuple(calls), SOURCES, tuple(arrays),
                      comment=f"BorderPad {mode} {list(x.shape)} -> {list(y.shape)}")


def _matches(node: Node, graph: Graph) -> bool:
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    return same_types(node, graph) and x.quant == y.quant  # a copy keeps the integers


register_kernel(PortableKernel("BorderPad", "edgenn_strided_copy", _matches, _border_pad,
                               TYPES))
