"""Portable comparisons (Equal, NotEqual, Less, LessOrEqual, Greater, GreaterOrEqual), logical
operators (And, Or, Xor, Not), Where and Cast, as TFLite Micro computes them.

Each layer gets a C function generated for its shapes with the broadcasting loops of the
binary kernels (``binary.broadcast_loops``). Bool tensors are bytes holding 0 or 1 (C++'s
``bool``, as TFLite stores them). int8 comparisons rescale each operand as TFLM's
``ComparisonWithScaling``: ``(q - zp) * 256`` through ``edgenn_mbqm`` with the multiplier of
its own scale (the record of ``edgenn.prepared.compare``, the reference layer's too), so
firmware and reference agree by construction. Cast is C's conversion, float to int8 / int16
saturated first (the reference's rule for values C leaves undefined; float to int32
saturates in ``vcvt`` itself).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgenn.backends.c_literals import C_TYPE
from edgenn.backends.cortexm.ccall import IN0, OUT0, generated
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.binary import elementwise_call
from edgenn.backends.cortexm.kernels.common import PortableKernel
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.compare import prepare_compare

F32, I8, I16, I32, BOOL = DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32, DType.BOOL
WHERE_TYPES = (F32, I8, I16, I32, BOOL)  # the element types Where selects between
HEADER = ("edgenn_fixed_point.h",)
COMPARE = {"Equal": "==", "NotEqual": "!=", "Less": "<", "LessOrEqual": "<=",
           "Greater": ">", "GreaterOrEqual": ">="}
LOGICAL = {"And": "(a && b)", "Or": "(a || b)", "Xor": "((a != 0) != (b != 0))"}


def _types(node: Node, graph: Graph) -> list[DType]:
    return [graph.tensor(n).dtype for n in (*node.inputs, *node.outputs)]


def _elementwise(node: Node, graph: Graph, op_code: str, what: str) -> KernelCall:
    """The per-layer C: ``@P@_op`` (``op_code``) over the broadcast output."""
    return elementwise_call(node, graph, op_code, HEADER,
                            f"edgenn_{node.op.lower()}_generated", what)


def _compare_match(node: Node, graph: Graph) -> bool:
    if len(node.inputs) != 2 or not all(node.inputs):
        return False
    a, b, out = _types(node, graph)
    ok = (F32, I8, I32, BOOL) if node.op in ("Equal", "NotEqual") else (F32, I8, I32)
    return a in ok and b is a and out is BOOL


def _compare(node: Node, graph: Graph) -> KernelCall:
    scaled = prepare_compare(node, graph).scaled
    sym = COMPARE[node.op]
    ctype = C_TYPE[graph.tensor(node.inputs[0]).dtype]
    if scaled:
        (za, ma, sa), (zb, mb, sb) = ((r.zp, r.mult, r.shift) for r in scaled)
        body = (f"    const int32_t sa = edgenn_mbqm((a - ({za})) * 256, {ma}, {sa});\n"
                f"    const int32_t sb = edgenn_mbqm((b - ({zb})) * 256, {mb}, {sb});\n"
                f"    return (uint8_t)(sa {sym} sb);\n")
        ctype = "int32_t"
    else:
        body = f"    return (uint8_t)(a {sym} b);\n"
    code = f"static inline uint8_t @P@_op({ctype} a, {ctype} b)\n{{\n{body}}}\n"
    return _elementwise(node, graph, code, graph.tensor(node.inputs[0]).dtype.value)


def _logical_match(node: Node, graph: Graph) -> bool:
    return (len(node.inputs) == 2 and all(node.inputs)
            and all(t is BOOL for t in _types(node, graph)))


def _logical(node: Node, graph: Graph) -> KernelCall:
    code = (f"static inline uint8_t @P@_op(uint8_t a, uint8_t b)\n{{\n"
            f"    return (uint8_t){LOGICAL[node.op]};\n}}\n")
    return _elementwise(node, graph, code, "bool")


def _where_match(node: Node, graph: Graph) -> bool:
    if len(node.inputs) != 3 or not all(node.inputs):
        return False
    c, x, y, out = _types(node, graph)
    return c is BOOL and x in WHERE_TYPES and y is x and out is x


def _where(node: Node, graph: Graph) -> KernelCall:
    ctype = C_TYPE[graph.tensor(node.inputs[1]).dtype]
    code = (f"static inline {ctype} @P@_op(uint8_t c, {ctype} x, {ctype} y)\n{{\n"
            "    return c ? x : y;\n}\n")
    return _elementwise(node, graph, code, graph.tensor(node.inputs[1]).dtype.value)


def _unary_code(node: Node, graph: Graph, expr: str, what: str) -> KernelCall:
    x, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    code = (f"static void @P@_run(const {C_TYPE[x.dtype]} *in, {C_TYPE[out.dtype]} *out)\n"
            f"{{\n    for (int32_t i = 0; i < {x.size}; i++) {{\n"
            f"        const {C_TYPE[x.dtype]} v = in[i];\n"
            f"        out[i] = ({C_TYPE[out.dtype]})({expr});\n    }}\n}}\n")
    name = f"edgenn_{node.op.lower()}_generated"
    return KernelCall(generated("run", name, IN0, OUT0), HEADER,
                      comment=f"{node.op} {what}, {x.size} values", code=code,
                      in_place=x.dtype.itemsize == out.dtype.itemsize)


def _not_match(node: Node, graph: Graph) -> bool:
    return (len(node.inputs) == 1 and bool(node.inputs[0])
            and not graph.tensor(node.inputs[0]).is_const
            and all(t is BOOL for t in _types(node, graph)))


def _not(node: Node, graph: Graph) -> KernelCall:
    return _unary_code(node, graph, "v == 0", "bool")


_CAST_FROM, _CAST_TO = (F32, I8, I16, I32, BOOL), (F32, I8, I16, I32)


def _cast_match(node: Node, graph: Graph) -> bool:
    if len(node.inputs) != 1 or not node.inputs[0] or graph.tensor(node.inputs[0]).is_const:
        return False
    x, out = _types(node, graph)
    return x in _CAST_FROM and out in _CAST_TO


def _cast(node: Node, graph: Graph) -> KernelCall:
    x, out = _types(node, graph)
    expr = "v"
    if x is F32 and out in (I8, I16):
        info = np.iinfo(out.numpy)
        lo, hi = f"{int(info.min)}.0f", f"{int(info.max)}.0f"
        expr = f"v < {lo} ? {lo} : (v > {hi} ? {hi} : v)"
    elif x is BOOL:
        expr = "v != 0"
    return _unary_code(node, graph, expr, f"{x.value} to {out.value}")


_KERNELS: list[tuple[str, Callable[[Node, Graph], bool], Callable[[Node, Graph], KernelCall],
                     tuple[DType, ...]]] = [
    *((op, _compare_match, _compare,
       (F32, I8, I32, BOOL) if op in ("Equal", "NotEqual") else (F32, I8, I32))
      for op in COMPARE),
    *((op, _logical_match, _logical, (BOOL,)) for op in LOGICAL),
    ("Not", _not_match, _not, (BOOL,)),
    ("Where", _where_match, _where, (BOOL,)),
    ("Cast", _cast_match, _cast, _CAST_FROM),
]
for _op, _match, _prepare, _first in _KERNELS:
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_generated", _match, _prepare,
                                   _first))
