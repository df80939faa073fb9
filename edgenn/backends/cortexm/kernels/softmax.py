"""Portable int8 Softmax: gemmlowp exp tabulated at generation time, reciprocal in C."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int8
from edgenn.ir import Graph, Node
from edgenn.prepared.softmax import prepare_softmax


def gemmlowp_softmax_call(node: Node, graph: Graph, function: str, source: str) -> KernelCall:
    """The call of an int8-input Softmax kernel (``edgenn_softmax_s8`` or its int16-output
    twin): rows of ``depth`` values, the exp and accumulator tables of the record."""
    layer = prepare_softmax(node, graph)
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1] if x.shape else 1
    call = c_call(function, IN0, OUT0, x.size // depth, depth, Array("exp_lut"),
                  Array("acc_lut"), layer.diff_min)
    return KernelCall(call, (source,),
                      (CArray("exp_lut", "int32_t", layer.exp_lut),
                       CArray("acc_lut", "int32_t", layer.acc_lut)))


def _prepare(node: Node, graph: Graph) -> KernelCall:
    return gemmlowp_softmax_call(node, graph, "edgenn_softmax_s8", "edgenn_softmax_s8.c")


register_kernel(PortableKernel("Softmax", "edgenn_softmax_s8", is_int8, _prepare))
