"""Portable element-wise kernels: Relu / Relu6 / Clip, Sigmoid / Tanh (lookup tables),
Quantize (float32 or int8 -> int8) and Dequantize (int8 -> float32)."""

from __future__ import annotations

from collections.abc import Callable

from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, Float, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    is_int8,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.clamp import prepare_clamp
from edgenn.prepared.curves import prepare_curve
from edgenn.prepared.quantize import prepare_dequantize, prepare_quantize
from edgenn.prepared.requant import Requant

SRC = ("edgenn_unary_s8.c",)


def _n(node: Node, graph: Graph) -> int:
    return graph.tensor(node.inputs[0]).size


def _clamp(node: Node, graph: Graph) -> KernelCall:
    p = prepare_clamp(node, graph)
    n = _n(node, graph)
    if not p.requant:
        return KernelCall(c_call("edgenn_clamp_s8", IN0, OUT0, n, p.act_min, p.act_max),
                          SRC)
    call = c_call("edgenn_requant_s8", IN0, OUT0, n, p.in_zp, p.mult, p.shift, p.out_zp,
                  p.act_min, p.act_max)
    return KernelCall(call, SRC)


def _lut(node: Node, graph: Graph) -> KernelCall:
    table = prepare_curve(node, graph).table
    assert table is not None  # int8 input (is_int8)
    return KernelCall(c_call("edgenn_lut_s8", IN0, OUT0, _n(node, graph), Array("table")), SRC,
                      (CArray("table", "int8_t", table),))


def _is_float_to_int8(node: Node, graph: Graph) -> bool:
    return (graph.tensor(node.inputs[0]).dtype is DType.FLOAT32
            and graph.tensor(node.outputs[0]).dtype is DType.INT8)


def _quantize_match(node: Node, graph: Graph) -> bool:
    return is_int8(node, graph) or _is_float_to_int8(node, graph)


def quantize_call(node: Node, graph: Graph, suffix: str, sources: tuple[str, ...],
                  requant: Callable[[Requant, int], KernelCall]) -> KernelCall:
    """A Quantize node's call: float32 -> ``suffix`` (``edgenn_quantize_f32_<suffix>``), a
    copy when its record has no rescale, else ``requant(rescale, element count)``."""
    p = prepare_quantize(node, graph)
    n = _n(node, graph)
    if p.from_float:
        call = c_call(f"edgenn_quantize_f32_{suffix}", IN0, OUT0, n, Float(p.out_scale),
                      p.out_zp)
        return KernelCall(call, sources)
    if p.requant is None:  # the same type and parameters
        size = n * graph.tensor(node.inputs[0]).dtype.itemsize
        return KernelCall(c_call("edgenn_copy_blocks", IN0, OUT0, 1, size, size),
                          ("edgenn_move.c",))
    return requant(p.requant, n)


def dequantize_call(node: Node, graph: Graph, suffix: str,
                    sources: tuple[str, ...]) -> KernelCall:
    """A Dequantize node's call, ``edgenn_dequantize_<suffix>_f32``."""
    p = prepare_dequantize(node, graph)
    name = f"edgenn_dequantize_{suffix}_f32"
    call = c_call(name, IN0, OUT0, _n(node, graph), Float(p.in_scale, double=True), p.in_zp)
    return KernelCall(call, sources)


def _requant_s8(r: Requant, n: int) -> KernelCall:
    call = c_call("edgenn_requant_s8", IN0, OUT0, n, r.in_zp, r.mult, r.shift, r.out_zp, -128,
                  127)
    return KernelCall(call, SRC)


def _quantize(node: Node, graph: Graph) -> KernelCall:
    return quantize_call(node, graph, "s8", SRC, _requant_s8)


def _dequantize_match(node: Node, graph: Graph) -> bool:
    return (graph.tensor(node.inputs[0]).dtype is DType.INT8
            and graph.tensor(node.outputs[0]).dtype is DType.FLOAT32)


def _dequantize(node: Node, graph: Graph) -> KernelCall:
    return dequantize_call(node, graph, "s8", SRC)


for _op in ("Relu", "Relu6", "Clip"):
    register_kernel(PortableKernel(_op, "edgenn_clamp_s8", is_int8, _clamp))
for _op in ("Sigmoid", "Tanh"):
    register_kernel(PortableKernel(_op, "edgenn_lut_s8", is_int8, _lut))
register_kernel(PortableKernel("Quantize", "edgenn_quantize", _quantize_match, _quantize,
                               (DType.FLOAT32, DType.INT8)))
def _requant_u8_match(node: Node, graph: Graph) -> bool:
    return (graph.tensor(node.inputs[0]).dtype is DType.INT8
            and graph.tensor(node.outputs[0]).dtype is DType.UINT8)


def _requant_u8(node: Node, graph: Graph) -> KernelCall:
    r = prepare_quantize(node, graph).requant
    assert r is not None  # int8 -> uint8 always changes the type
    call = c_call("edgenn_requant_s8_u8", IN0, OUT0, _n(node, graph), r.in_zp, r.mult, r.shift,
                  r.out_zp)
    return KernelCall(call, SRC)


register_kernel(PortableKernel("Quantize", "edgenn_requant_s8_u8", _requant_u8_match,
                               _requant_u8, (DType.INT8,)))
register_kernel(PortableKernel("Dequantize", "edgenn_dequantize_s8_f32", _dequantize_match,
                               _dequantize))
