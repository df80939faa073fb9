"""Portable TransposeConv2D kernels: int8 and int16 x int8 (TFLite's 16x8 scheme).

The C (``c/edgenn_tconv.c``) gathers each output pixel from the input pixels and taps that
reach it, so it needs no output-sized accumulator as TFLite Micro's scatter does; a
``3 * KH * KW`` int32 scratch holds one pixel's tap runs. Constants come from the records of
``edgenn.prepared.conv`` (the reference layer's too): per-channel multipliers and shifts, the
clamp, and for int16 the accumulation mode of ``conv_s16.epilogue`` (int32 SMLAD sums when
no sum can overflow, else int64 SMLALD; the 64-bit rescale). Weights stay int8, in pair order
for int16 (``conv_s16.pair_order``) and plain for int8 (input and weight bytes both widen in
SXTB16 order there).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, is_int8
from edgenn.backends.cortexm.kernels.conv_s16 import (
    S16_QUANT,
    epilogue,
    is_s16,
    pair_order,
    window_args,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.conv import ConvGeometry, prepare_conv_s16, prepare_transpose_conv

SRC = ("edgenn_tconv.c",)


def _comment(g: ConvGeometry, kind: str) -> str:
    return f"{kind} transposed conv {g.k_h}x{g.k_w}, stride {g.stride_h}x{g.stride_w}"


def _tconv_s8(node: Node, graph: Graph) -> KernelCall:
    p = prepare_transpose_conv(node, graph)  # weights minus zero points in int8, or an error
    arrays = (CArray("w", "int8_t", p.w), CArray("bias", "int32_t", p.bias),
              CArray("mult", "int32_t", p.mult), CArray("shift", "int32_t", p.shift))
    call = c_call("edgenn_tconv_s8", IN0, OUT0, *(Array(a.name) for a in arrays), SCRATCH,
                  *window_args(p), p.groups, p.in_zp, p.out_zp, p.act_min, p.act_max)
    return KernelCall(call, SRC, arrays, scratch_bytes=12 * p.k_h * p.k_w,
                      comment=_comment(p, "int8"))


def _tconv_s16(node: Node, graph: Graph) -> KernelCall:
    p = prepare_conv_s16(node, graph, allow_narrow=False)
    ep = epilogue(p.requant, p.w)
    w = pair_order(p.w.astype(np.int8))
    call = c_call("edgenn_tconv_s16", IN0, OUT0, *S16_QUANT, SCRATCH, *window_args(p),
                  p.groups, p.requant.act_min, p.requant.act_max, ep.mode)
    return KernelCall(call, SRC, (CArray("w", "int8_t", w), *ep.arrays),
                      scratch_bytes=12 * p.k_h * p.k_w,
                      comment=f"{_comment(p, '16x8')}, {ep.mode_name} sums", code=ep.code)


register_kernel(PortableKernel("TransposeConv2D", "edgenn_tconv_s8", is_int8, _tconv_s8))
register_kernel(PortableKernel("TransposeConv2D", "edgenn_tconv_s16", is_s16, _tconv_s16,
                               (DType.INT16,)))
