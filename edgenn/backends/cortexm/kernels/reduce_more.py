"""Portable reductions: ReduceMax / ReduceMin (int8), ReduceSum (int8, int16), Mean (int16)
and ArgMax / ArgMin (int8 -> int32), all up to 6-D.

The constants (multipliers, shifts, zero points) are the records of ``edgenn.prepared.reduce``,
which the reference layers take too, so the C and the reference agree by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.arith.fixed_point import wrap_int32
from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, CCall, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    dense_strides,
    padded,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.reduce import prepare_arg, prepare_reduce

RANK = 6
SRC = ("edgenn_reduce.c",)


def _types(node: Node, graph: Graph) -> tuple[DType, DType]:
    return graph.tensor(node.inputs[0]).dtype, graph.tensor(node.outputs[0]).dtype


def _fits(node: Node, graph: Graph, dtype: DType, out: DType | None = None) -> bool:
    t_in, t_out = _types(node, graph)
    return (t_in is dtype and t_out is (out or dtype)
            and len(graph.tensor(node.inputs[0]).shape) <= RANK)


def layout(shape: Sequence[int], axes: Sequence[int]) -> tuple[CArray, CArray]:
    """The input dims and the output strides (0 on reduced axes), padded to 6-D."""
    kept = [1 if i in axes else d for i, d in enumerate(shape)]
    strides = [0 if i in axes else s for i, s in enumerate(dense_strides(kept))]
    return (CArray("dims", "int32_t", padded(shape, RANK)),
            CArray("out_strides", "int32_t", padded(strides, RANK, 0)))


def _extreme(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_reduce(node, graph)
    out_n = graph.tensor(node.outputs[0]).size
    call: tuple[CCall, ...] = (c_call("edgenn_reduce_extreme_s8", IN0, OUT0, Array("dims"),
                                      Array("out_strides"), out_n, int(layer.largest)),)
    sources: tuple[str, ...] = SRC
    r = layer.requant
    if r is not None:  # the output's own quantization, after the raw extreme
        call += (c_call("edgenn_requant_s8", OUT0, OUT0, out_n, r.in_zp, r.mult, r.shift,
                        r.out_zp, r.act_min, r.act_max),)
        sources = (*SRC, "edgenn_unary_s8.c")
    return KernelCall(call, sources, layout(layer.in_shape, layer.axes))


def _sum_call(node: Node, graph: Graph, offset: int, mult: int, shift: int,
              out_zp: int) -> KernelCall:
    layer = prepare_reduce(node, graph)
    suffix = "s16" if graph.tensor(node.inputs[0]).dtype is DType.INT16 else "s8"
    out_n = graph.tensor(node.outputs[0]).size
    call = c_call(f"edgenn_reduce_sum_{suffix}", IN0, OUT0, SCRATCH, Array("dims"),
                  Array("out_strides"), out_n, offset, mult, shift, out_zp)
    shape = graph.tensor(node.inputs[0]).shape
    return KernelCall(call, SRC, layout(shape, layer.axes), scratch_bytes=4 * out_n)


def _sum(node: Node, graph: Graph) -> KernelCall:
    """ReduceSum, and Mean (whose reference layer folds 1 / count into the multiplier)."""
    layer = prepare_reduce(node, graph)
    offset = int(wrap_int32(layer.in_zp * layer.count))  # the C subtracts in int32
    return _sum_call(node, graph, offset, int(layer.mult), int(layer.shift), layer.out_zp)


def _arg(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_arg(node, graph)
    shape = layer.in_shape
    outer = int(np.prod(shape[:layer.axis], dtype=np.int64))
    inner = int(np.prod(shape[layer.axis + 1:], dtype=np.int64))
    call = c_call("edgenn_arg_s8", IN0, OUT0, outer, shape[layer.axis], inner,
                  int(layer.largest), int(layer.last))
    return KernelCall(call, SRC)


def _int8(node: Node, graph: Graph) -> bool:
    return _fits(node, graph, DType.INT8)


def _int16(node: Node, graph: Graph) -> bool:
    return _fits(node, graph, DType.INT16)


def _int8_to_int32(node: Node, graph: Graph) -> bool:
    return _fits(node, graph, DType.INT8, DType.INT32)


for _op in ("ReduceMax", "ReduceMin"):
    register_kernel(PortableKernel(_op, "edgenn_reduce_extreme_s8", _int8, _extreme))
register_kernel(PortableKernel("ReduceSum", "edgenn_reduce_sum_s8", _int8, _sum))
register_kernel(PortableKernel("ReduceSum", "edgenn_reduce_sum_s16", _int16, _sum,
                               (DType.INT16,)))
register_kernel(PortableKernel("Mean", "edgenn_reduce_sum_s16", _int16, _sum, (DType.INT16,)))
for _op in ("ArgMax", "ArgMin"):
    register_kernel(PortableKernel(_op, "edgenn_arg_s8", _int8_to_int32, _arg))
