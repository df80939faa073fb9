"""QuantizeLinear / DequantizeLinear (see ``edgenn.frontends.onnx.qdq`` for the pattern)."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.qdq import q_params
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import ConstVal
from edgenn.ir import DType, QuantParams


def _params(ctx: Context, data_ndim: int) -> tuple[np.ndarray, np.ndarray, int | None]:
    scale = np.asarray(ctx.const_array(ctx.need(1)), np.float32).reshape(-1)
    zp_name = ctx.input(2)
    zp = (np.asarray(ctx.consts[zp_name].data).reshape(-1) if zp_name
          else np.zeros(scale.shape, np.int64))
    axis = None if scale.size == 1 else int(ctx.attr("axis", 1)) % data_ndim
    return scale, zp, axis


@converter("QuantizeLinear")
def convert_quantize(ctx: Context, node: NodeProto) -> None:
    x, out = ctx.need(0), ctx.output()
    if ctx.is_const(x):  # Q of a float weight: quantize it now
        data = ctx.const_array(x)
        scale, zp, axis = _params(ctx, data.ndim)
        if zp.dtype not in (np.int8, np.int32):
            raise ctx.fail(f"quantized constant of type {zp.dtype.name} is not supported")
        shape = [1] * data.ndim
        if axis is not None:
            shape[axis] = -1
        info = np.iinfo(zp.dtype)
        q = np.round(data / scale.reshape(shape)) + zp.astype(np.int64).reshape(shape)
        ctx.set_const(out, ConstVal(np.clip(q, info.min, info.max).astype(zp.dtype),
                                    QuantParams(scale, zp.astype(np.int64), axis)))
        return
    params = q_params(ctx, node)
    v = ctx.value(x)
    if ctx.tensors[v.ir].dtype == DType.INT8:  # the int8 op already produced it
        ctx.bind(out, v)
        return
    ctx.emit("Quantize", [v.ir], out=out, nhwc=v.nhwc, ncl=v.ncl, quant=params)


@converter("DequantizeLinear")
def convert_dequantize(ctx: Context, node: NodeProto) -> None:
    x, out = ctx.need(0), ctx.output()
    if ctx.is_const(x):
        data = ctx.consts[x].data
        scale, zp, axis = _params(ctx, max(data.ndim, 1))
        if data.dtype == np.uint8:  # exact: shift values and zero point by 128
            data, zp = (data.astype(np.int16) - 128).astype(np.int8), zp.astype(np.int64) - 128
        if data.dtype not in (np.int8, np.int32):
            raise ctx.fail(f"dequantizing a {data.dtype.name} constant is not supported")
        ctx.set_const(out, ConstVal(data, QuantParams(scale, zp.astype(np.int64), axis)))
        return
    v = ctx.value(x)
    t = ctx.tensors[v.ir]
    if t.dtype != DType.INT8:
        raise ctx.fail(f"DequantizeLinear of a {t.dtype.value} tensor (edgenn takes int8)")
    if t.quant is None:  # an int8 graph input: its quantization is the DQ's
        scale, zp, _ = _params(ctx, len(t.shape))
        ctx.tensors[v.ir] = t.with_(quant=QuantParams.per_tensor(float(scale[0]), int(zp[0])))
    ctx.dq_src[out] = x
