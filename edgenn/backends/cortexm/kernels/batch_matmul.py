"""Portable int8 / int16 / float32 BatchMatMul with broadcast batch axes and adj_x / adj_y;
the constants are its record's (``edgenn.prepared.batch_matmul``, the reference layer's too)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.arith.fixed_point_s16 import reduced_multiplier
from edgenn.backends.cortexm.ccall import OUT0, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    const_operand,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.batch_matmul import prepare_batch_matmul


def batch_offsets(out_batch: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Element offset of the operand matrix that each output matrix reads (broadcasting)."""
    own = [1] * (len(out_batch) - len(shape) + 2) + [int(d) for d in shape[:-2]]
    if not out_batch:
        return np.zeros(1, np.int64)
    index = np.indices(tuple(out_batch)).reshape(len(out_batch), -1)
    index = np.where(np.asarray(own)[:, None] == 1, 0, index)  # size-1 axes broadcast
    flat = np.asarray(np.ravel_multi_index(tuple(index), own), dtype=np.int64)
    return flat * int(shape[-2]) * int(shape[-1])


def _matches(node: Node, graph: Graph) -> bool:
    a, b = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    y = graph.tensor(node.outputs[0])
    if not a.dtype is b.dtype is y.dtype or a.dtype not in (DType.INT8, DType.INT16,
                                                            DType.FLOAT32):
        return False
    if a.dtype is DType.INT16:  # TFLM's int16 kernel takes zero points 0 only
        return all(t.quant is not None and not t.quant.per_channel and t.quant.zp == 0
                   for t in (a, b, y))
    return True


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_batch_matmul(node, graph)
    a, b = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    y = graph.tensor(node.outputs[0])
    m, n = y.shape[-2:]
    k = a.shape[-2] if layer.adj_x else a.shape[-1]
    out_batch = y.shape[:-2]
    arrays = [CArray("a_off", "int32_t", batch_offsets(out_batch, a.shape)),
              CArray("b_off", "int32_t", batch_offsets(out_batch, b.shape))]
    pa, pb = const_operand(node, graph, 0, arrays), const_operand(node, graph, 1, arrays)
    batches = int(np.prod(out_batch, dtype=np.int64))
    common = (pa, pb, OUT0, batches, Array("a_off"), Array("b_off"), m, n, k, int(layer.adj_x),
              int(layer.adj_y))
    if a.dtype is DType.FLOAT32:
        name = "edgenn_batch_matmul_f32"
        call = c_call(name, *common)
    elif a.dtype is DType.INT8:
        name = "edgenn_batch_matmul_s8"
        call = c_call(name, *common, layer.a_zp, layer.b_zp, layer.mult, layer.shift,
                      layer.out_zp)
    else:
        name = "edgenn_batch_matmul_s16"
        call = c_call(name, *common, reduced_multiplier(layer.mult), 15 - layer.shift,
                      layer.out_zp)
    return KernelCall(call, ("edgenn_batch_matmul.c",), tuple(arrays))


register_kernel(PortableKernel("BatchMatMul", "edgenn_batch_matmul", _matches, _prepare,
                               (DType.INT8, DType.INT16, DType.FLOAT32)))
