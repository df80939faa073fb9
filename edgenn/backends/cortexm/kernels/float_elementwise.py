"""Portable float32 element-wise kernels: activations and unary math (Relu, Relu6, Clip,
Sigmoid, Tanh, HardSwish, HardSigmoid, LeakyRelu, Abs, Neg, Sqrt, Rsqrt, Exp, Log) and the
broadcasting binary operators (Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference, PRelu).

Each layer gets a C function generated for its shape: the element expression is TFLite
Micro's reference arithmetic written in single precision (``c/edgenn_math_f32.h``; libm's
``expf`` / ``tanhf`` / ``logf``), the broadcasting loops are those of the integer kernels
(``binary.broadcast_loops``). Add / Sub / Mul / Div clamp to their fused activation's range
as the reference layer does (bounded by +-FLT_MAX in a TFLite model, as TFLite Micro's
``CalculateActivationRange``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.binary import elementwise_call
from edgenn.backends.cortexm.kernels.common import PortableKernel, c_float, ref_layer
from edgenn.ir import DType, Graph, Node

HEADER = ("edgenn_math_f32.h",)
F32 = (DType.FLOAT32,)
FLT_MAX = float(np.finfo(np.float32).max)


def finite_range(lo: float, hi: float) -> tuple[float, float]:
    """A fused activation's clamp as TFLite Micro applies it to float outputs."""
    return max(float(lo), -FLT_MAX), min(float(hi), FLT_MAX)


def all_float(node: Node, graph: Graph) -> bool:
    """Every input and output of ``node`` present and float32."""
    names = [*node.inputs, *node.outputs]
    return bool(node.inputs) and all(names) and all(
        graph.tensor(n).dtype is DType.FLOAT32 for n in names)


def _clamp_expr(v: str, lo: float, hi: float) -> str:
    """``v`` clamped to [lo, hi], an infinite bound taken as +-FLT_MAX (the default bounds of
    ONNX Clip in onnxruntime, and TFLite's for float activations)."""
    lo, hi = finite_range(lo, hi)
    return f"edgenn_clamp_f32({v}, {c_float(lo)}, {c_float(hi)})"


# -- unary ---------------------------------------------------------------------------------------
UnaryExpr = Callable[[Any], str]  # the reference layer -> a C expression of ``v``

UNARY: dict[str, UnaryExpr] = {
    "Relu": lambda k: "(v < 0.0f ? 0.0f : v)",
    "Relu6": lambda k: "(v > 6.0f ? 6.0f : (v < 0.0f ? 0.0f : v))",
    "Clip": lambda k: _clamp_expr("v", k.flo, k.fhi),
    "Sigmoid": lambda k: "edgenn_logistic_f32(v)",
    "Tanh": lambda k: "tanhf(v)",
    "HardSwish": lambda k: "edgenn_hard_swish_f32(v)",
    "HardSigmoid": lambda k: _clamp_expr(f"{c_float(k.alpha)} * v + {c_float(k.beta)}", 0.0,
                                         1.0),
    "LeakyRelu": lambda k: f"(v > 0.0f ? v : v * {c_float(k.alpha)})",
    "Abs": lambda k: "fabsf(v)",
    "Neg": lambda k: "(-v)",
    "Sqrt": lambda k: "sqrtf(v)",
    "Rsqrt": lambda k: "(1.0f / sqrtf(v))",
    "Exp": lambda k: "expf(v)",
    "Log": lambda k: "logf(v)",
}


def _unary(expr: UnaryExpr) -> Callable[[Node, Graph], KernelCall]:
    def prepare(node: Node, graph: Graph) -> KernelCall:
        layer = ref_layer(node, graph)
        n = graph.tensor(node.inputs[0]).size
        code = (f"static inline float @P@_op(float v)\n{{\n    return {expr(layer)};\n}}\n\n"
                "static void @P@_run(const float *in, float *out)\n{\n"
                f"    for (int32_t i = 0; i < {n}; i++) {{\n"
                "        out[i] = @P@_op(in[i]);\n    }\n}\n")
        name = f"edgenn_{node.op.lower()}_f32"
        return KernelCall("{prefix}_run({in0}, {out0});", HEADER, kernel_name=name, code=code,
                          comment=f"{node.op} float32, {n} values", in_place=True)
    return prepare


def _unary_match(node: Node, graph: Graph) -> bool:
    return len(node.inputs) >= 1 and all_float(node, graph) and not graph.tensor(
        node.inputs[0]).is_const


# -- binary --------------------------------------------------------------------------------------
BinaryExpr = Callable[[Any], str]  # the reference layer -> a C expression of ``a`` and ``b``


def _clamped(body: str) -> BinaryExpr:
    """``body`` clamped to the reference layer's bounds: +-FLT_MAX without an activation in a
    TFLite model (TFLite Micro's ``x + inf`` is FLT_MAX), +-inf in an ONNX one (a clamp that
    passes every value, NaN included)."""
    def expr(k: Any) -> str:
        return f"edgenn_clamp_f32({body}, {c_float(k.flo)}, {c_float(k.fhi)})"
    return expr


BINARY: dict[str, BinaryExpr] = {
    "Add": _clamped("a + b"),
    "Sub": _clamped("a - b"),
    "Mul": _clamped("a * b"),
    "Div": _clamped("a / b"),
    "Maximum": lambda k: "(a > b ? a : b)",
    "Minimum": lambda k: "(a < b ? a : b)",
    "SquaredDifference": lambda k: "((a - b) * (a - b))",
    "PRelu": lambda k: "(a >= 0.0f ? a : a * b)",
}


def _binary_match(node: Node, graph: Graph) -> bool:
    return len(node.inputs) == 2 and all_float(node, graph) and not all(
        graph.tensor(n).is_const for n in node.inputs)


def _binary(expr: BinaryExpr) -> Callable[[Node, Graph], KernelCall]:
    def prepare(node: Node, graph: Graph) -> KernelCall:
        op_code = (f"static inline float @P@_op(float a, float b)\n{{\n"
                   f"    return {expr(ref_layer(node, graph))};\n}}\n")
        return elementwise_call(node, graph, op_code, HEADER,
                                f"edgenn_{node.op.lower()}_f32")
    return prepare


for _op, _uexpr in UNARY.items():
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_f32", _unary_match,
                                   _unary(_uexpr), F32))
for _op, _bexpr in BINARY.items():
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_f32", _binary_match,
                                   _binary(_bexpr), F32))
