"""Portable Softmax with int16 output: int16 input (TFLM's exp and 1 / (1 + x) tables of the
record, interpolating lookups in C), and int8 input with int16 output (the int8
kernel's tabulated gemmlowp exps, scaled to 1/65536)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int16
from edgenn.backends.cortexm.kernels.softmax import gemmlowp_softmax_call
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.softmax import prepare_softmax_s16


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_softmax_s16(node, graph)
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1] if x.shape else 1
    call = c_call("edgenn_softmax_s16", IN0, OUT0, x.size // depth, depth, layer.mult,
                  layer.shift, Array("exp_lut"), Array("recip_lut"))
    return KernelCall(call, ("edgenn_s16_misc_softmax.c",),
                      (CArray("exp_lut", "int16_t", layer.exp_lut),
                       CArray("recip_lut", "int16_t", layer.recip_lut)))


def _is_int8_to_int16(node: Node, graph: Graph) -> bool:
    return (graph.tensor(node.inputs[0]).dtype is DType.INT8
            and graph.tensor(node.outputs[0]).dtype is DType.INT16)


def _prepare_s8_s16(node: Node, graph: Graph) -> KernelCall:
    return gemmlowp_softmax_call(node, graph, "edgenn_softmax_s8_s16", "edgenn_s16_misc_softmax.c")


register_kernel(PortableKernel("Softmax", "edgenn_softmax_s16", is_int16, _prepare,
                               (DType.INT16,)))
register_kernel(PortableKernel("Softmax", "edgenn_softmax_s8_s16", _is_int8_to_int16,
                               _prepare_s8_s16, (DType.INT8,)))
