"""Portable int8 L2Norm over the last axis (``backends/ref/kernels/l2norm.py`` in C)."""

from __future__ import annotations

from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, args, is_int8, ref_layer
from edgenn.ir import Graph, Node


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)  # checks the output is 1/128, zero point 0
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1]
    call = f"edgenn_l2norm_s8({{in0}}, {{out0}}, {args(x.size // depth, depth, layer.in_zp)});"
    return KernelCall(call, ("edgenn_l2norm_s8.c",), kernel_name="edgenn_l2norm_s8")


register_kernel(PortableKernel("L2Norm", "edgenn_l2norm_s8", is_int8, _prepare))
