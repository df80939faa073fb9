"""Portable int8 CumSum along any axis (exclusive / reverse), with the constants of its record
(``edgenn.prepared.cumsum``, the reference layer's too)."""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int8
from edgenn.ir import Graph, Node
from edgenn.prepared.cumsum import prepare_cumsum


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_cumsum(node, graph)
    shape = layer.shape
    axis = layer.axis
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    values = (outer, shape[axis], inner, int(layer.exclusive), int(layer.reverse),
              layer.in_zp, layer.in_mult, layer.in_shift, layer.start, layer.out_mult,
              layer.out_shift, layer.out_zp)
    return KernelCall(c_call("edgenn_cumsum_s8", IN0, OUT0, *values),
                      ("edgenn_cumsum_s8.c",))


register_kernel(PortableKernel("CumSum", "edgenn_cumsum_s8", is_int8, _prepare))
