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

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, generated
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.binary import elementwise_call
from edgenn.backends.cortexm.kernels.common import PortableKernel, c_float
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.binary import BinaryParams, prepare_binary
from edgenn.prepared.clamp import prepare_clamp
from edgenn.prepared.unary_math import prepare_unary_math

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
UnaryExpr = Callable[[Node, Graph], str]  # the node -> a C expression of ``v``

UNARY: dict[str, UnaryExpr] = {
    "Relu": lambda n, g: "(v < 0.0f ? 0.0f : v)",
    "Relu6": lambda n, g: "(v > 6.0f ? 6.0f : (v < 0.0f ? 0.0f : v))",
    "Clip": lambda n, g: _clamp_expr("v", *_bounds(n, g)),
    "Sigmoid": lambda n, g: "edgenn_logistic_f32(v)",
    "Tanh": lambda n, g: "tanhf(v)",
    "HardSwish": lambda n, g: "edgenn_hard_swish_f32(v)",
    "HardSigmoid": lambda n, g: _hard_sigmoid(prepare_unary_math(n, g).alpha,
                                              prepare_unary_math(n, g).beta),
    "LeakyRelu": lambda n, g: f"(v > 0.0f ? v : v * {c_float(prepare_unary_math(n, g).alpha)})",
    "Abs": lambda n, g: "fabsf(v)",
    "Neg": lambda n, g: "(-v)",
    "Sqrt": lambda n, g: "sqrtf(v)",
    "Rsqrt": lambda n, g: "(1.0f / sqrtf(v))",
    "Exp": lambda n, g: "expf(v)",
    "Log": lambda n, g: "logf(v)",
}


def _bounds(node: Node, graph: Graph) -> tuple[float, float]:
    p = prepare_clamp(node, graph)
    return float(p.act_min), float(p.act_max)


def _hard_sigmoid(alpha: float, beta: float) -> str:
    return _clamp_expr(f"{c_float(alpha)} * v + {c_float(beta)}", 0.0, 1.0)


def _unary(expr: UnaryExpr) -> Callable[[Node, Graph], KernelCall]:
    def prepare(node: Node, graph: Graph) -> KernelCall:
        n = graph.tensor(node.inputs[0]).size
        code = (f"static inline float @P@_op(float v)\n{{\n    return {expr(node, graph)};\n}}\n\n"
                "static void @P@_run(const float *in, float *out)\n{\n"
                f"    for (int32_t i = 0; i < {n}; i++) {{\n"
                "        out[i] = @P@_op(in[i]);\n    }\n}\n")
        name = f"edgenn_{node.op.lower()}_f32"
        return KernelCall(generated("run", name, IN0, OUT0), HEADER, code=code,
                          comment=f"{node.op} float32, {n} values", in_place=True)
    return prepare


def _unary_match(node: Node, graph: Graph) -> bool:
    return len(node.inputs) >= 1 and all_float(node, graph) and not graph.tensor(
        node.inputs[0]).is_const


# -- binary --------------------------------------------------------------------------------------
BinaryExpr = Callable[[BinaryParams], str]  # the record -> a C expression of ``a`` and ``b``


def _clamped(body: str) -> BinaryExpr:
    """``body`` clamped to the reference layer's bounds: +-FLT_MAX without an activation in a
    TFLite model (TFLite Micro's ``x + inf`` is FLT_MAX), +-inf in an ONNX one (a clamp that
    passes every value, NaN included)."""
    def expr(k: BinaryParams) -> str:
        return f"edgenn_clamp_f32({body}, {c_float(k.act_min)}, {c_float(k.act_max)})"
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
                   f"    return {expr(prepare_binary(node, graph))};\n}}\n")
        return elementwise_call(node, graph, op_code, HEADER,
                                f"edgenn_{node.op.lower()}_f32")
    return prepare


for _op, _uexpr in UNARY.items():
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_f32", _unary_match,
                                   _unary(_uexpr), F32))
for _op, _bexpr in BINARY.items():
    register_kernel(PortableKernel(_op, f"edgenn_{_op.lower()}_f32", _binary_match,
                                   _binary(_bexpr), F32))
