"""Portable TransposeConv2D kernels: int8 and int16 x int8 (TFLite's 16x8 scheme).

The C (``c/edgenn_tconv.c``) gathers each output pixel from the input pixels and taps that
reach it, so it needs no output-sized accumulator as TFLite Micro's scatter does; a
``3 * KH * KW`` int32 scratch holds one pixel's tap runs. Constants come from the reference
layer's build (``ref/kernels/conv_transpose.py``): per-channel multipliers and shifts, the
clamp, and for int16 the accumulation mode of ``conv_s16.epilogue`` (int32 SMLAD sums when
no sum can overflow, else int64 SMLALD; the 64-bit rescale). Weights stay int8, in pair order
for int16 (``conv_s16.pair_order``) and plain for int8 (input and weight bytes both widen in
SXTB16 order there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, args, is_int8, ref_layer
from edgenn.backends.cortexm.kernels.conv_s16 import epilogue, is_s16, pair_order, window_args
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node

SRC = ("edgenn_tconv.c",)


def _comment(layer: Any, kind: str) -> str:
    return (f"{kind} transposed conv {layer.kh}x{layer.kw}, stride "
            f"{layer.strides[0]}x{layer.strides[1]}")


def _tconv_s8(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    co = layer.co
    if np.abs(layer.w_int).max(initial=0) > 127:
        # why: weight zero points are folded into the int8 weights the C multiplies
        raise UnsupportedOperatorError(f"{node}: weights minus their zero points leave int8")
    mult = np.broadcast_to(np.asarray(layer.mult, np.int64), (co,))
    shift = np.broadcast_to(np.asarray(layer.shift, np.int64), (co,))
    arrays = (CArray("w", "int8_t", layer.w_int.astype(np.int8)),
              CArray("bias", "int32_t", layer.bias_int), CArray("mult", "int32_t", mult),
              CArray("shift", "int32_t", shift))
    call = (f"edgenn_tconv_s8({{in0}}, {{out0}}, {{w}}, {{bias}}, {{mult}}, {{shift}}, "
            f"{{scratch}}, {window_args(layer, node, graph)}, "
            f"{args(layer.groups, layer.in_zp, layer.out_zp, layer.lo, layer.hi)});")
    return KernelCall(call, SRC, arrays, scratch_bytes=12 * layer.kh * layer.kw,
                      kernel_name="edgenn_tconv_s8", comment=_comment(layer, "int8"))


def _tconv_s16(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    ep = epilogue(layer.requant, layer.w_int)
    w = pair_order(layer.w_int.astype(np.int8))
    call = (f"edgenn_tconv_s16({{in0}}, {{out0}}, {{w}}, {{prefix}}_bias, {{mult}}, {{shift}}, "
            f"{{scratch}}, {window_args(layer, node, graph)}, "
            f"{args(layer.groups, layer.requant.lo, layer.requant.hi, ep.mode)});")
    return KernelCall(call, SRC, (CArray("w", "int8_t", w), *ep.arrays),
                      scratch_bytes=12 * layer.kh * layer.kw, kernel_name="edgenn_tconv_s16",
                      comment=f"{_comment(layer, '16x8')}, {ep.mode_name} sums", code=ep.code)


register_kernel(PortableKernel("TransposeConv2D", "edgenn_tconv_s8", is_int8, _tconv_s8))
register_kernel(PortableKernel("TransposeConv2D", "edgenn_tconv_s16", is_s16, _tconv_s16,
                               (DType.INT16,)))
