"""Portable Quantize / Dequantize kernels with an int16 side: float32 -> int16, int16 ->
int8, int8 -> int16, int16 -> int16 and int16 -> float32 (the int8-only cases are in
``unary.py``)."""

from __future__ import annotations

from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    args,
    c_double,
    c_float,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quantize import prepare_dequantize, prepare_quantize

SRC = ("edgenn_s16_misc_quant.c",)
_REQUANT = {
    (DType.INT16, DType.INT16): "edgenn_requant_s16_s16",
    (DType.INT16, DType.INT8): "edgenn_requant_s16_s8",
    (DType.INT8, DType.INT16): "edgenn_requant_s8_s16",
}


def _types(node: Node, graph: Graph) -> tuple[DType, DType]:
    return graph.tensor(node.inputs[0]).dtype, graph.tensor(node.outputs[0]).dtype


def _n(node: Node, graph: Graph) -> int:
    return graph.tensor(node.inputs[0]).size


def _quantize_match(node: Node, graph: Graph) -> bool:
    types = _types(node, graph)
    return types in _REQUANT or types == (DType.FLOAT32, DType.INT16)


def _quantize(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_quantize(node, graph)
    n = _n(node, graph)
    types = _types(node, graph)
    if layer.from_float:
        call = (f"edgenn_quantize_f32_s16({{in0}}, {{out0}}, {n}, {c_float(layer.out_scale)}, "
                f"{layer.out_zp});")
        return KernelCall(call, SRC, kernel_name="edgenn_quantize_f32_s16")
    r = layer.requant
    if r is None:  # int16 -> int16 with the same parameters
        return KernelCall(f"edgenn_copy_blocks({{in0}}, {{out0}}, 1, {2 * n}, {2 * n});",
                          ("edgenn_move.c",), kernel_name="edgenn_copy_blocks")
    fn = _REQUANT[types]
    extra = [r.act_min, r.act_max] if fn == "edgenn_requant_s16_s16" else []
    call = (f"{fn}({{in0}}, {{out0}}, "
            f"{args(n, r.in_zp, r.mult, r.shift, r.out_zp, *extra)});")
    return KernelCall(call, SRC, kernel_name=fn)


def _dequantize_match(node: Node, graph: Graph) -> bool:
    return _types(node, graph) == (DType.INT16, DType.FLOAT32)


def _dequantize(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_dequantize(node, graph)
    call = (f"edgenn_dequantize_s16_f32({{in0}}, {{out0}}, {_n(node, graph)}, "
            f"{c_double(layer.in_scale)}, {layer.in_zp});")
    return KernelCall(call, SRC, kernel_name="edgenn_dequantize_s16_f32")


register_kernel(PortableKernel("Quantize", "edgenn_quantize_s16", _quantize_match, _quantize,
                               (DType.FLOAT32, DType.INT8, DType.INT16)))
register_kernel(PortableKernel("Dequantize", "edgenn_dequantize_s16_f32", _dequantize_match,
                               _dequantize, (DType.INT16,)))
