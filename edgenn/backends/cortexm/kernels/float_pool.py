"""Portable float32 MaxPool2D / AvgPool2D, Softmax and the reductions Mean, ReduceSum,
ReduceMax, ReduceMin over any axes (up to 6-D), in TFLite Micro's reference order
(``c/edgenn_pool_f32.c``)."""

from __future__ import annotations

from collections.abc import Callable

from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, Float, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel
from edgenn.backends.cortexm.kernels.float_elementwise import all_float
from edgenn.backends.cortexm.kernels.pooling import pool_geometry
from edgenn.backends.cortexm.kernels.reduce_more import RANK, layout
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.pooling import prepare_pool
from edgenn.prepared.reduce import prepare_reduce
from edgenn.prepared.softmax import softmax_beta

SRC = ("edgenn_pool_f32.c",)
F32 = (DType.FLOAT32,)


def _data_in(node: Node, graph: Graph) -> bool:
    """Float32 data in and out (axes and other operands, if any, are constants)."""
    return (bool(node.inputs) and bool(node.inputs[0]) and all(
        graph.tensor(n).dtype is DType.FLOAT32 for n in (node.inputs[0], *node.outputs))
        and all(graph.tensor(n).is_const for n in node.inputs[1:] if n))


def _pool(node: Node, graph: Graph) -> KernelCall:
    p = prepare_pool(node, graph)
    lo, hi = p.act_min, p.act_max  # as the reference layer clamps (``float_conv._clamp_args``)
    geometry = pool_geometry(p)
    if node.op == "MaxPool2D":
        call = c_call("edgenn_maxpool_f32", IN0, OUT0, *geometry, Float(lo), Float(hi))
        return KernelCall(call, SRC)
    include = int(p.count_include_pad)
    call = c_call("edgenn_avgpool_f32", IN0, OUT0, *geometry, include, Float(lo), Float(hi))
    return KernelCall(call, SRC)


def _softmax(node: Node, graph: Graph) -> KernelCall:
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1]
    call = c_call("edgenn_softmax_f32", IN0, OUT0, x.size // depth, depth,
                  Float(softmax_beta(node)))
    return KernelCall(call, SRC, in_place=True)


REDUCE_KIND = {"ReduceSum": 0, "Mean": 1, "ReduceMax": 2, "ReduceMin": 3}


def _reduce_match(node: Node, graph: Graph) -> bool:
    return _data_in(node, graph) and len(graph.tensor(node.inputs[0]).shape) <= RANK


def _reduce(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_reduce(node, graph)
    x = graph.tensor(node.inputs[0])
    out_n = graph.tensor(node.outputs[0]).size
    count = out_n and x.size // out_n
    call = c_call("edgenn_reduce_f32", IN0, OUT0, Array("dims"), Array("out_strides"),
                  out_n, REDUCE_KIND[node.op], count)
    return KernelCall(call, SRC, layout(x.shape, layer.axes),
                      comment=f"{node.op} float32 over axes {list(layer.axes)}")


_KERNELS: list[tuple[str, str, Callable[[Node, Graph], bool],
                     Callable[[Node, Graph], KernelCall]]] = [
    ("MaxPool2D", "edgenn_maxpool_f32", all_float, _pool),
    ("AvgPool2D", "edgenn_avgpool_f32", all_float, _pool),
    ("Softmax", "edgenn_softmax_f32", all_float, _softmax),
    *((op, "edgenn_reduce_f32", _reduce_match, _reduce) for op in REDUCE_KIND),
]
for _op, _name, _match, _prepare in _KERNELS:
    register_kernel(PortableKernel(_op, _name, _match, _prepare, F32))
