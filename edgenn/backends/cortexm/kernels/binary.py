"""Portable element-wise binary kernels for int8 and int16: Sub, Div (int8), Maximum,
Minimum, SquaredDifference, PRelu, and the int16 Add and Mul (int8 Add / Mul are
``elementwise.py`` and ``eltwise_simd.py``).

Each layer gets a C function generated for its shapes: numpy broadcasting becomes nested
loops over the output with per-input element strides (0 on broadcast axes), computed here;
axes of size 1 are dropped and neighbouring axes merged wherever every input walks them as one
(a [1,4,5,6] - [1,1,1,6] subtraction runs as 20 x 6). The element arithmetic is the static
inline C of ``c/edgenn_binary.h``, called with the constants the reference layer's ``build``
computed, so the firmware and the reference runtime agree by construction.

int8 with one operand a single constant value: the output depends on the other byte alone, so
the reference layer is run on all 256 values at generation time and the firmware looks the
result up (``edgenn_lut_s8``, about 2 cycles per element).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from edgenn.backends.c_literals import C_TYPE
from edgenn.backends.cortexm.ccall import OUT0, Array, Buf, c_call, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    args,
    const_operand,
    dense_strides,
    padded,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.binary import BinaryParams, prepare_binary
from edgenn.prepared.binary_eval import binary_int

HEADER = ("edgenn_binary.h",)
LUT_SRC = ("edgenn_unary_s8.c",)


# -- broadcasting geometry -------------------------------------------------------------------
@dataclass(frozen=True)
class Loops:
    """Output loop bounds (outer to inner) and each input's element stride per loop."""

    dims: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]


def input_strides(shape: Sequence[int], out: Sequence[int]) -> list[int]:
    """Element strides of an input of ``shape`` read at every index of ``out`` (0 where it
    is broadcast; shapes are aligned at their last axis, as numpy and TFLite do)."""
    s = padded(shape, len(out))
    dense = dense_strides(s)
    return [0 if d == 1 else st for d, st in zip(s, dense, strict=True)]


def broadcast_loops(out: Sequence[int], shapes: Sequence[Sequence[int]]) -> Loops:
    """The fewest loops that walk ``out`` with every input's strides: axes of size 1 dropped,
    neighbouring axes merged when each input steps through them as through one axis."""
    per_input = [input_strides(s, out) for s in shapes]
    dims: list[int] = []
    strides: list[list[int]] = [[] for _ in shapes]
    for axis, d in enumerate(out):
        if d == 1:
            continue
        axis_strides = [st[axis] for st in per_input]
        # why: inner axis j continues outer axis i when stride_i == stride_j * dim_j for every
        # input (0 == 0 * d covers a broadcast spanning both)
        if dims and all(s[-1] == st * d for s, st in zip(strides, axis_strides, strict=True)):
            dims[-1] *= d
            for s, st in zip(strides, axis_strides, strict=True):
                s[-1] = st
            continue
        dims.append(int(d))
        for s, st in zip(strides, axis_strides, strict=True):
            s.append(st)
    if not dims:  # a single element
        return Loops((1,), tuple((0,) for _ in shapes))
    return Loops(tuple(dims), tuple(tuple(s) for s in strides))


def loop_function(loops: Loops, in_types: Sequence[str], out_type: str) -> str:
    """C of ``@P@_run(in0, in1, out)``: the loops, calling ``@P@_op`` per element."""
    n_in = len(in_types)
    params = ", ".join([f"const {t} *in{k}" for k, t in enumerate(in_types)]
                       + [f"{out_type} *out"])
    lines = [f"static void @P@_run({params})", "{"]
    ptr = [f"in{k}" for k in range(n_in)]
    depth = len(loops.dims)
    for level, d in enumerate(loops.dims):
        pad = "    " * (level + 1)
        lines.append(f"{pad}for (int32_t i{level} = 0; i{level} < {d}; i{level}++) {{")
        if level == depth - 1:
            elems = []
            for k in range(n_in):
                s = loops.strides[k][level]
                index = "0" if s == 0 else f"i{level}" if s == 1 else f"i{level} * {s}"
                elems.append(f"{ptr[k]}[{index}]")
            lines.append(f"{pad}    *out++ = ({out_type})@P@_op({', '.join(elems)});")
        else:
            for k in range(n_in):
                s = loops.strides[k][level]
                if s == 0:
                    continue  # why: the input does not move along this axis
                name = f"p{k}_{level}"
                lines.append(f"{pad}    const {in_types[k]} *{name} = {ptr[k]} + i{level} * {s};")
                ptr[k] = name
    for level in reversed(range(depth)):
        lines.append("    " * (level + 1) + "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- the kernels -------------------------------------------------------------------------------
ElementExpr = Callable[[BinaryParams], str]


def _types_match(types: tuple[DType, ...]) -> Callable[[Node, Graph], bool]:
    def matches(node: Node, graph: Graph) -> bool:
        if len(node.inputs) != 2 or not all(node.inputs):
            return False
        a = graph.tensor(node.inputs[0])
        out = graph.tensor(node.outputs[0])
        return a.dtype in types and out.dtype is a.dtype
    return matches


def _single_constant_lut(node: Node, graph: Graph) -> KernelCall | None:
    """int8 with one operand a size-1 constant: the 256-entry output table of the other."""
    a, b = (graph.tensor(n) for n in node.inputs)
    out = graph.tensor(node.outputs[0])
    if a.dtype is not DType.INT8 or b.dtype is not DType.INT8:
        return None
    var = a if b.is_const and b.size == 1 else b if a.is_const and a.size == 1 else None
    if var is None or var.is_const or var.size != out.size:
        return None
    index = node.inputs.index(var.name)
    assert (b if index == 0 else a).data is not None
    const = np.asarray((b if index == 0 else a).data, np.int64).reshape(())
    values = np.arange(-128, 128, dtype=np.int64)
    p = prepare_binary(node, graph)
    table = binary_int(p, values, const) if index == 0 else binary_int(p, const, values)
    call = c_call("edgenn_lut_s8", Buf("in", index), OUT0, out.size, Array("table"))
    return KernelCall(call, LUT_SRC, (CArray("table", "int8_t", np.asarray(table).reshape(256)),),
                      comment=f"{node.op} int8 with a constant operand, via a 256-entry table",
                      in_place=index == 0)


def elementwise_call(node: Node, graph: Graph, op_code: str, header: tuple[str, ...],
                     kernel_name: str, what: str = "") -> KernelCall:
    """The per-layer C of an element-wise layer: ``op_code`` defines ``@P@_op``, applied over
    the broadcast output by the loops of ``loop_function``; constant operands become arrays.
    ``what``: the element type named in the comment (default the output's)."""
    ins = [graph.tensor(n) for n in node.inputs]
    out = graph.tensor(node.outputs[0])
    loops = broadcast_loops(out.shape, [t.shape for t in ins])
    arrays: list[CArray] = []
    operands = [const_operand(node, graph, k, arrays) for k in range(len(ins))]
    code = op_code + "\n" + loop_function(loops, [C_TYPE[t.dtype] for t in ins],
                                          C_TYPE[out.dtype])
    # why in place: each output element is written after every input of it is read, and
    # input 0 (of the output's shape and element size) is read at the very index written
    dense = (not ins[0].is_const and ins[0].shape == out.shape
             and ins[0].dtype.itemsize == out.dtype.itemsize)
    shape = "x".join(map(str, out.shape)) or "scalar"
    return KernelCall(generated("run", kernel_name, *operands, OUT0), header,
                      tuple(arrays),
                      comment=f"{node.op} {what or out.dtype.value} {shape}, loops "
                              f"{list(loops.dims)}",
                      code=code, in_place=dense)


def _prepare(expr: ElementExpr) -> Callable[[Node, Graph], KernelCall]:
    def prepare(node: Node, graph: Graph) -> KernelCall:
        lut = _single_constant_lut(node, graph)
        if lut is not None:
            return lut
        op_code = (f"static inline int32_t @P@_op(int32_t a, int32_t b)\n{{\n"
                   f"    return {expr(prepare_binary(node, graph))};\n}}\n")
        return elementwise_call(node, graph, op_code, HEADER,
                                f"edgenn_{node.op.lower()}_generated")
    return prepare


def _addsub(subtract: int) -> ElementExpr:
    def expr(k: BinaryParams) -> str:
        return "edgenn_addsub_q(a, b, " + args(
            subtract, k.left_shift, k.a_zp, k.a_mult, k.a_shift, k.b_zp, k.b_mult, k.b_shift,
            k.out_mult, k.out_shift, k.out_zp, k.act_min, k.act_max) + ")"
    return expr


def _mul(k: BinaryParams) -> str:
    return "edgenn_mul_q(a, b, " + args(0, 0, k.mult, k.shift, 0, k.act_min, k.act_max) + ")"


def _div(k: BinaryParams) -> str:
    return "edgenn_div_q(a, b, " + args(k.a_zp, k.b_zp, k.mult, k.shift, k.out_zp, k.act_min,
                                        k.act_max) + ")"


def _sqdiff(k: BinaryParams) -> str:
    return "edgenn_sqdiff_q(a, b, " + args(
        k.left_shift, k.a_zp, k.a_mult, k.a_shift, k.b_zp, k.b_mult, k.b_shift, k.out_mult,
        k.out_shift, k.out_zp, k.act_min, k.act_max) + ")"


def _prelu(k: BinaryParams) -> str:
    return "edgenn_prelu_q(a, b, " + args(
        k.a_zp, k.b_zp, k.a_mult, k.a_shift, k.mult, k.shift, k.out_zp, k.act_min,
        k.act_max) + ")"


def _max(k: BinaryParams) -> str:
    return "edgenn_max_q(a, b)"


def _min(k: BinaryParams) -> str:
    return "edgenn_min_q(a, b)"


I8_I16 = (DType.INT8, DType.INT16)
_KERNELS: list[tuple[str, ElementExpr, tuple[DType, ...]]] = [
    ("Add", _addsub(0), (DType.INT16,)),
    ("Mul", _mul, (DType.INT16,)),
    ("Sub", _addsub(1), I8_I16),
    ("Div", _div, (DType.INT8,)),
    ("Maximum", _max, I8_I16),
    ("Minimum", _min, I8_I16),
    ("SquaredDifference", _sqdiff, I8_I16),
    ("PRelu", _prelu, I8_I16),
]
for _op, _expr, _types in _KERNELS:
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_generated", _types_match(_types),
                                   _prepare(_expr), _types))
