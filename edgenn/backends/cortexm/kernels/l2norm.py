"""Portable int8 L2Norm over the last axis (``backends/ref/kernels/l2norm.py`` in C)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int8
from edgenn.ir import Graph, Node
from edgenn.prepared.l2norm import prepare_l2norm


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_l2norm(node, graph)  # checks the output is 1/128, zero point 0
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1]
    call = c_call("edgenn_l2norm_s8", IN0, OUT0, x.size // depth, depth, layer.in_zp)
    return KernelCall(call, ("edgenn_l2norm_s8.c",))


register_kernel(PortableKernel("L2Norm", "edgenn_l2norm_s8", is_int8, _prepare))
