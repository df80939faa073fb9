"""Portable element-wise unary kernels: one int8 lookup table for all, real C for int16.

int8 -> int8: an element-wise operator takes only 256 input values, so its record
(``edgenn.prepared.unary_math``) holds the output for all of them and the firmware looks the
result up (``edgenn_lut_s8``, about 2 cycles per element): exact by construction whatever the
operator's arithmetic (LeakyRelu, HardSwish, Abs, Rsqrt).

int16 -> int16: 65536 inputs make a table too large for flash, so each operator has its own
C (``edgenn_unary_math_s16.c``, ``edgenn_unary_math_curves_s16.c``), fed with the record's
constants (the reference layer's too).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgenn.arith.int16_curves import SIGMOID_TABLE_UINT16
from edgenn.backends.cortexm.ccall import IN0, OUT0, Arg, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    is_int8,
    is_int16,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.clamp import prepare_clamp
from edgenn.prepared.curves import prepare_curve
from edgenn.prepared.unary_math import prepare_unary_math

LUT_SRC = ("edgenn_unary_s8.c",)
S16_SRC = ("edgenn_unary_math_s16.c",)
CURVES_SRC = ("edgenn_unary_math_curves_s16.c",)
LUT_OPS = ("LeakyRelu", "HardSwish", "Abs", "Rsqrt")


def _n(node: Node, graph: Graph) -> int:
    return graph.tensor(node.inputs[0]).size


def int8_table(node: Node, graph: Graph) -> np.ndarray:
    """The node's outputs for the inputs -128..127 (its record's table)."""
    table = prepare_unary_math(node, graph).table
    assert table is not None  # an int8 operator
    return table


def _lut(node: Node, graph: Graph) -> KernelCall:
    call = c_call("edgenn_lut_s8", IN0, OUT0, _n(node, graph), Array("table"))
    return KernelCall(call, LUT_SRC, (CArray("table", "int8_t", int8_table(node, graph)),),
                      comment=f"{node.op} int8 via 256-entry table",
                      in_place=True)


def _s16(function: str, node: Node, graph: Graph, *values: Arg | int | float,
         sources: tuple[str, ...] = S16_SRC, arrays: tuple[CArray, ...] = ()) -> KernelCall:
    call = c_call(function, IN0, OUT0, _n(node, graph), *values)
    return KernelCall(call, sources, arrays, in_place=True)


def _leaky_relu(node: Node, graph: Graph) -> KernelCall:
    k = prepare_unary_math(node, graph)
    return _s16("edgenn_leaky_relu_s16", node, graph, k.in_zp, k.identity_mult,
                k.identity_shift, k.alpha_mult, k.alpha_shift, int(k.alpha_negative), k.out_zp)


def _abs(node: Node, graph: Graph) -> KernelCall:
    k = prepare_unary_math(node, graph)
    if k.plain:
        return _s16("edgenn_abs_plain_s16", node, graph)
    return _s16("edgenn_abs_s16", node, graph, k.in_zp, int(k.needs_rescale), k.mult, k.shift,
                k.out_zp)


def _rsqrt(node: Node, graph: Graph) -> KernelCall:
    k = prepare_unary_math(node, graph)
    return _s16("edgenn_rsqrt_s16", node, graph, k.in_zp, k.mult, k.shift, k.out_zp)


def _requant(node: Node, graph: Graph) -> KernelCall:
    """Relu and Clip: requantize, then clamp to the layer's bounds."""
    k = prepare_clamp(node, graph)
    return _s16("edgenn_requant_s16", node, graph, k.in_zp, k.mult, k.shift, k.out_zp,
                k.act_min, k.act_max)


def _relu6(node: Node, graph: Graph) -> KernelCall:
    k = prepare_clamp(node, graph)
    return _s16("edgenn_clamp_s16", node, graph, k.act_min, k.act_max)


def _curve(function: str) -> Callable[[Node, Graph], KernelCall]:
    def prepare(node: Node, graph: Graph) -> KernelCall:
        curve = prepare_curve(node, graph).int16
        assert curve is not None  # int16 input
        table = CArray("table", "uint16_t", SIGMOID_TABLE_UINT16)
        return _s16(function, node, graph, curve.multiplier, curve.shift, Array("table"),
                    sources=CURVES_SRC, arrays=(table,))

    return prepare


for _op in LUT_OPS:
    register_kernel(PortableKernel(_op, "edgenn_lut_s8", is_int8, _lut))

_INT16: dict[str, tuple[str, Callable[[Node, Graph], KernelCall]]] = {
    "LeakyRelu": ("edgenn_leaky_relu_s16", _leaky_relu),
    "Abs": ("edgenn_abs_s16", _abs),
    "Rsqrt": ("edgenn_rsqrt_s16", _rsqrt),
    "Relu": ("edgenn_requant_s16", _requant),
    "Clip": ("edgenn_requant_s16", _requant),
    "Relu6": ("edgenn_clamp_s16", _relu6),
    "Sigmoid": ("edgenn_logistic_s16", _curve("edgenn_logistic_s16")),
    "Tanh": ("edgenn_tanh_s16", _curve("edgenn_tanh_s16")),
}
for _op, (_name, _prepare) in _INT16.items():
    register_kernel(PortableKernel(_op, _name, is_int16, _prepare, types=(DType.INT16,)))
