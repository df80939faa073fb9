"""Gemm and MatMul: a constant right-hand side becomes a FullyConnected layer."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import ConstVal
from edgenn.ir import Activation, QuantParams


def _bias_vector(ctx: Context, name: str, co: int, beta: float) -> ConstVal:
    """Gemm's C as a [Co] vector (C may be a scalar, [Co], [1, Co] or [M=1, Co])."""
    c = ctx.const(name)
    data, q = c.data, c.quant
    if data.size not in (1, co) or (data.ndim == 2 and data.shape[-1] not in (1, co)):
        raise ctx.fail(f"Gemm bias {name!r} of shape {list(data.shape)} is not a vector")
    if q is not None:
        if beta != 1.0:
            raise ctx.fail("quantized Gemm with beta != 1 is not supported")
        if q.axis is not None:
            q = QuantParams(q.scale, q.zero_point, 0)
        return ConstVal(np.broadcast_to(data.reshape(-1), (co,)).copy(), q)
    return ConstVal((np.broadcast_to(data.reshape(-1), (co,)) * np.float32(beta))
                    .astype(np.float32))


def _fully_connected(ctx: Context, a_ir: str, w: ConstVal, w_name: str,
                     bias: ConstVal | None, b_name: str | None) -> None:
    inputs = [a_ir, ctx.new_const(w_name, w.data, w.quant)]
    if bias is not None and b_name is not None:
        inputs.append(ctx.new_const(b_name, bias.data, bias.quant))
    ctx.emit("FullyConnected", inputs, {"activation": Activation.NONE}, out=ctx.output())


@converter("Gemm")
def convert_gemm(ctx: Context, node: NodeProto) -> None:
    a, b = ctx.need(0), ctx.need(1)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    a_ir = ctx.onnx_order(a)
    if ctx.attr("transA", 0):
        a_ir = ctx.emit("Transpose", [a_ir], {"perm": (1, 0)}, hint=a + ":T")
    if not ctx.is_const(b):
        if ctx.quantized:
            raise ctx.fail("int8 Gemm needs constant weights")
        b_ir = ctx.onnx_order(b)
        if ctx.attr("transB", 0):
            b_ir = ctx.emit("Transpose", [b_ir], {"perm": (1, 0)}, hint=b + ":T")
        c_name = ctx.input(2)
        if alpha != 1.0:
            b_ir = ctx.emit("Mul", [b_ir, ctx.new_const("alpha", np.array(alpha, np.float32))],
                            {"activation": Activation.NONE})
        if c_name is None:
            ctx.emit("MatMul", [a_ir, b_ir], out=ctx.output())
            return
        prod = ctx.emit("MatMul", [a_ir, b_ir])
        if ctx.is_const(c_name):
            c = ctx.new_const(c_name, (ctx.const_array(c_name) * np.float32(beta))
                              .astype(np.float32))
        else:
            c = ctx.onnx_order(c_name)
            if beta != 1.0:  # a computed C is scaled at run time
                c = ctx.emit("Mul", [c, ctx.new_const("beta", np.array(beta, np.float32))],
                             {"activation": Activation.NONE})
        ctx.emit("Add", [prod, c], {"activation": Activation.NONE}, out=ctx.output())
        return
    w = ctx.const(b)
    if w.data.ndim != 2:
        raise ctx.malformed(f"Gemm weight {b!r} has shape {list(w.data.shape)}")
    if not ctx.attr("transB", 0):
        w = w.transpose((1, 0))  # FullyConnected weights are [Co, K]
    if alpha != 1.0:
        if w.quant is not None:
            raise ctx.fail("quantized Gemm with alpha != 1 is not supported")
        w = ConstVal((w.data * np.float32(alpha)).astype(np.float32))
    c_name = ctx.input(2)
    bias = _bias_vector(ctx, c_name, w.data.shape[0], beta) if c_name else None
    _fully_connected(ctx, a_ir, w, b, bias, c_name)


@converter("MatMul")
def convert_matmul(ctx: Context, node: NodeProto) -> None:
    a, b = ctx.need(0), ctx.need(1)
    if ctx.is_const(b) and ctx.rank(a) == 2 and ctx.rank(b) == 2:
        _fully_connected(ctx, ctx.onnx_order(a), ctx.const(b).transpose((1, 0)), b, None, None)
        return
    if ctx.quantized:  # int8 operands of rank >= 2: TFLite's BATCH_MATMUL arithmetic
        if min(ctx.rank(a), ctx.rank(b)) < 2:
            raise ctx.fail("int8 MatMul of a 1-D operand is not supported")
        ops = [ctx.new_const(n, ctx.const(n).data, ctx.const(n).quant) if ctx.is_const(n)
               else ctx.onnx_order(n) for n in (a, b)]
        ctx.emit("BatchMatMul", ops, out=ctx.output())
        return
    b_ir = ctx.new_const(b, ctx.const_array(b)) if ctx.is_const(b) else ctx.onnx_order(b)
    a_ir = ctx.new_const(a, ctx.const_array(a)) if ctx.is_const(a) else ctx.onnx_order(a)
    ctx.emit("MatMul", [a_ir, b_ir], out=ctx.output())
