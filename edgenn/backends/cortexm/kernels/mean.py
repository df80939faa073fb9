"""Portable int8 Mean over any axes (up to 6-D)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    dense_strides,
    is_int8,
    padded,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.prepared.reduce import prepare_reduce

RANK = 6


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_reduce(node, graph)
    shape = graph.tensor(node.inputs[0]).shape
    if len(shape) > RANK:
        raise UnsupportedOperatorError(f"{node}: Mean of a {len(shape)}-D tensor on Cortex-M")
    kept = [1 if i in layer.axes else d for i, d in enumerate(shape)]
    strides = [0 if i in layer.axes else s for i, s in enumerate(dense_strides(kept))]
    out_n = graph.tensor(node.outputs[0]).size
    call = c_call("edgenn_mean_s8", IN0, OUT0, SCRATCH, Array("dims"), Array("out_strides"),
                  out_n, layer.count, layer.in_zp, layer.mult, layer.shift, layer.out_zp)
    return KernelCall(call, ("edgenn_mean_s8.c",),
                      (CArray("dims", "int32_t", padded(shape, RANK)),
                       CArray("out_strides", "int32_t", padded(strides, RANK, 0))),
                      scratch_bytes=4 * out_n)


register_kernel(PortableKernel("Mean", "edgenn_mean_s8", is_int8, _prepare))
