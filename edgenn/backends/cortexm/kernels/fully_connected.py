"""Portable int8 FullyConnected kernel (input zero point folded into the bias)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int8
from edgenn.ir import Graph, Node
from edgenn.prepared.fully_connected import prepare_fully_connected


def _prepare(node: Node, graph: Graph) -> KernelCall:
    p = prepare_fully_connected(node, graph)
    batch = graph.tensor(node.inputs[0]).shape[0]
    call = c_call("edgenn_fc_s8", IN0, OUT0, Array("w"), Array("bias_folded"), Array("mult"),
                  Array("shift"), batch, p.depth, p.out_c, p.out_zp, p.act_min, p.act_max)
    return KernelCall(
        call=call,
        sources=("edgenn_fc_s8.c",),
        arrays=(CArray("w", "int8_t", p.w), CArray("bias_folded", "int32_t", p.bias_folded),
                CArray("mult", "int32_t", p.mult), CArray("shift", "int32_t", p.shift)),
    )


register_kernel(PortableKernel("FullyConnected", "edgenn_fc_s8", is_int8, _prepare))
