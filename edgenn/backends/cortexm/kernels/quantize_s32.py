"""Portable Quantize kernels with an int32 side (int32 -> int8 / int16, int8 / int16 ->
int32), TFLite Micro's Requantize (the constants: ``edgenn.prepared.quantize``)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel
from edgenn.backends.cortexm.kernels.quantize_s16 import io_types
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quantize import prepare_quantize

SRC = ("edgenn_requant_s32.c",)
_REQUANT = {
    (DType.INT32, DType.INT8): "edgenn_requant_s32_s8",
    (DType.INT32, DType.INT16): "edgenn_requant_s32_s16",
    (DType.INT8, DType.INT32): "edgenn_requant_s8_s32",
    (DType.INT16, DType.INT32): "edgenn_requant_s16_s32",
}


def _matches(node: Node, graph: Graph) -> bool:
    return io_types(node, graph) in _REQUANT


def _prepare(node: Node, graph: Graph) -> KernelCall:
    r = prepare_quantize(node, graph).requant
    assert r is not None  # the element types differ, so there is always a rescale
    fn = _REQUANT[io_types(node, graph)]
    n = graph.tensor(node.inputs[0]).size
    call = c_call(fn, IN0, OUT0, n, r.in_zp, r.mult, r.shift, r.out_zp)
    return KernelCall(call, SRC)


register_kernel(PortableKernel("Quantize", "edgenn_requant_s32", _matches, _prepare,
                               (DType.INT8, DType.INT16, DType.INT32)))
