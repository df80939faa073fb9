"""Portable Quantize / Dequantize kernels with an int16 side: float32 -> int16, int16 ->
int8, int8 -> int16, int16 -> int16 and int16 -> float32 (the int8-only cases are in
``unary.py``)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
)
from edgenn.backends.cortexm.kernels.unary import dequantize_call, quantize_call
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.requant import Requant

SRC = ("edgenn_s16_misc_quant.c",)
_REQUANT = {
    (DType.INT16, DType.INT16): "edgenn_requant_s16_s16",
    (DType.INT16, DType.INT8): "edgenn_requant_s16_s8",
    (DType.INT8, DType.INT16): "edgenn_requant_s8_s16",
}


def io_types(node: Node, graph: Graph) -> tuple[DType, DType]:
    """The element types of the node's first input and first output."""
    return graph.tensor(node.inputs[0]).dtype, graph.tensor(node.outputs[0]).dtype


def _n(node: Node, graph: Graph) -> int:
    return graph.tensor(node.inputs[0]).size


def _quantize_match(node: Node, graph: Graph) -> bool:
    types = io_types(node, graph)
    return types in _REQUANT or types == (DType.FLOAT32, DType.INT16)


def _quantize(node: Node, graph: Graph) -> KernelCall:
    def requant(r: Requant, n: int) -> KernelCall:
        fn = _REQUANT[io_types(node, graph)]
        extra = [r.act_min, r.act_max] if fn == "edgenn_requant_s16_s16" else []
        call = c_call(fn, IN0, OUT0, n, r.in_zp, r.mult, r.shift, r.out_zp, *extra)
        return KernelCall(call, SRC)

    return quantize_call(node, graph, "s16", SRC, requant)


def _dequantize_match(node: Node, graph: Graph) -> bool:
    return io_types(node, graph) == (DType.INT16, DType.FLOAT32)


def _dequantize(node: Node, graph: Graph) -> KernelCall:
    return dequantize_call(node, graph, "s16", SRC)


register_kernel(PortableKernel("Quantize", "edgenn_quantize_s16", _quantize_match, _quantize,
                               (DType.FLOAT32, DType.INT8, DType.INT16)))
register_kernel(PortableKernel("Dequantize", "edgenn_dequantize_s16_f32", _dequantize_match,
                               _dequantize, (DType.INT16,)))
