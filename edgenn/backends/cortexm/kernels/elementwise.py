"""Portable int8 Add / Mul with numpy broadcasting (up to 4-D)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import OUT0, Arg, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    const_operand,
    dense_strides,
    is_int8,
    padded,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.prepared.binary import prepare_binary

RANK = 4


def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    """Element strides of ``shape`` read at every index of ``out`` (0 on broadcast axes)."""
    s = padded(shape, len(out))
    strides = dense_strides(s)
    return [0 if d == 1 and o != 1 else st for d, o, st in zip(s, out, strides, strict=True)]


def _geometry(node: Node, graph: Graph) -> tuple[list[CArray], Arg, Arg]:
    out = graph.tensor(node.outputs[0]).shape
    if len(out) > RANK:
        raise UnsupportedOperatorError(f"{node}: broadcasting beyond {RANK}-D on Cortex-M")
    arrays: list[CArray] = []
    a = const_operand(node, graph, 0, arrays)
    b = const_operand(node, graph, 1, arrays)
    sa = broadcast_strides(graph.tensor(node.inputs[0]).shape, out)
    sb = broadcast_strides(graph.tensor(node.inputs[1]).shape, out)
    arrays += [
        CArray("dims", "int32_t", padded(out, RANK)),
        CArray("a_strides", "int32_t", padded(sa, RANK, 0)),
        CArray("b_strides", "int32_t", padded(sb, RANK, 0)),
    ]
    return arrays, a, b


_GEOMETRY = (Array("dims"), Array("a_strides"), Array("b_strides"))


def _add(node: Node, graph: Graph) -> KernelCall:
    p = prepare_binary(node, graph)
    arrays, a, b = _geometry(node, graph)
    call = c_call("edgenn_add_s8", a, b, OUT0, *_GEOMETRY, p.a_zp, p.a_mult, p.a_shift, p.b_zp,
                  p.b_mult, p.b_shift, p.out_mult, p.out_shift, p.out_zp, p.act_min, p.act_max)
    return KernelCall(call, ("edgenn_eltwise_s8.c",), tuple(arrays))


def _mul(node: Node, graph: Graph) -> KernelCall:
    p = prepare_binary(node, graph)
    arrays, a, b = _geometry(node, graph)
    call = c_call("edgenn_mul_s8", a, b, OUT0, *_GEOMETRY, p.a_zp, p.b_zp, p.mult, p.shift,
                  p.out_zp, p.act_min, p.act_max)
    return KernelCall(call, ("edgenn_eltwise_s8.c",), tuple(arrays))


register_kernel(PortableKernel("Add", "edgenn_add_s8", is_int8, _add))
register_kernel(PortableKernel("Mul", "edgenn_mul_s8", is_int8, _mul))
