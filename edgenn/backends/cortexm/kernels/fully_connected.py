"""Portable int8 FullyConnected kernel (input zero point folded into the bias)."""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    args,
    i32,
    int8_weights,
    is_int8,
    ref_layer,
)
from edgenn.ir import Graph, Node


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    w = int8_weights(node, graph.tensor(node.inputs[1]))
    co, depth = w.shape
    batch = graph.tensor(node.inputs[0]).shape[0]
    bias = np.asarray(layer.bias_int, np.int64)
    folded = i32(fold_input_zero_point(bias, w, layer.in_zp))
    mult = np.broadcast_to(np.asarray(layer.mult, np.int64), (co,))
    shift = np.broadcast_to(np.asarray(layer.shift, np.int64), (co,))
    call = (f"edgenn_fc_s8({{in0}}, {{out0}}, {{w}}, {{bias_folded}}, {{mult}}, {{shift}}, "
            f"{args(batch, depth, co, layer.out_zp, layer.lo, layer.hi)});")
    return KernelCall(
        call=call,
        sources=("edgenn_fc_s8.c",),
        arrays=(CArray("w", "int8_t", w), CArray("bias_folded", "int32_t", folded),
                CArray("mult", "int32_t", mult), CArray("shift", "int32_t", shift)),
        kernel_name="edgenn_fc_s8",
    )


register_kernel(PortableKernel("FullyConnected", "edgenn_fc_s8", is_int8, _prepare))
