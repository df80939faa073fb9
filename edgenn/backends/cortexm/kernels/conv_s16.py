"""Portable kernels of TFLite's 16x8 scheme: int16 Conv2D (general and depthwise) and
FullyConnected, bit-exact with the reference layers of ``ref/kernels/conv_s16.py`` (both take
the records of ``edgenn.prepared.conv`` / ``.fully_connected``).

The C (``c/edgenn_conv_s16*.c``, shared MACs in ``edgenn_conv_s16_mac.h``) multiplies int16
inputs by int8 weights two at a time: SMLAD (SMLALD for int64 sums) in the convolution and
dense kernels, SMLABB / SMLATT on packed words in the depthwise one (whose channels do not
pair up within one sum). Generation-time work:

* weights are stored int8 (no flash growth) in *pair order* along the summed axis (each run
  of 4 as w0 w2 w1 w3) so that SXTB16 / SXTB16 ROR 8 of one word give the int16 pairs that
  line up with the input words (x0, x1), (x2, x3) (:func:`pair_order`);
* the accumulator is chosen per layer (:func:`epilogue`): TFLite Micro's wrapping int32 sum
  for an int32 bias; for its int64 sum, int32 SMLAD when no sum of the layer can leave int32
  (``32768 * sum|w[c]| < 2^31`` for every channel, as CMSIS-NN's s16 kernels reason), else
  SMLALD into int64;
* the 64-bit rescale's 16-bit multipliers are precomputed and the int64 bias folded with its
  rounding term (``bias * m + 2^(t-1)``), so the epilogue of an int32 sum is one SMLAL and a
  shift; that bias is this layer's own ``static const int64_t`` array (``KernelCall.code``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point_s16 import reduced_multiplier
from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, Local, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, conv_shape
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvGeometry, prepare_conv_s16
from edgenn.prepared.fully_connected import prepare_fully_connected_s16
from edgenn.prepared.s16 import S16Requant

NARROW, WIDE32, WIDE64 = 0, 1, 2  # EDGENN_S16_* of edgenn_conv_s16_mac.h
INT32_MAX = 2**31 - 1
_MAX_ABS_X = 32768


def is_s16(node: Node, graph: Graph) -> bool:
    """True when the node's first input and first output are int16."""
    if not node.inputs or not node.inputs[0]:
        return False
    return (graph.tensor(node.inputs[0]).dtype is DType.INT16
            and graph.tensor(node.outputs[0]).dtype is DType.INT16)


def pair_order(w: np.ndarray) -> np.ndarray:
    """int8 weights with each run of 4 along the last axis stored as w0 w2 w1 w3 (a shorter
    tail keeps its order): SXTB16 then yields (w0, w1) and SXTB16 ROR 8 (w2, w3)."""
    n = w.shape[-1]
    idx = np.arange(n)
    full = n - n % 4
    quad = idx[:full].reshape(-1, 4)[:, [0, 2, 1, 3]].ravel()
    return np.ascontiguousarray(w[..., np.concatenate([quad, idx[full:]])])


def int64_array(name: str, values: np.ndarray) -> str:
    """``static const int64_t @P@_<name>[]`` for ``KernelCall.code`` (CArray has no int64)."""
    vals = [int(v) for v in np.asarray(values, np.int64).ravel()] or [0]

    def lit(v: int) -> str:
        # why: 9223372036854775808 is no int64 literal, so INT64_MIN is spelled as a sum
        return "(-9223372036854775807LL - 1)" if v == -(2**63) else f"{v}LL"

    rows = [", ".join(lit(v) for v in vals[i:i + 8]) for i in range(0, len(vals), 8)]
    body = ",\n    ".join(rows)
    return (f"static const int64_t @P@_{name}[{len(vals)}] __attribute__((aligned(8))) = {{\n"
            f"    {body}\n}};\n")


@dataclass(frozen=True)
class Epilogue:
    """A 16x8 layer's accumulation mode, rescale arrays and int64 bias (``code``)."""

    mode: int
    arrays: tuple[CArray, CArray]  # "mult" and "shift" as the mode reads them
    code: str  # the int64 bias array (wide modes: bias * m + 2^(t-1)), named @P@_bias
    bias: np.ndarray  # its values (int64)

    @property
    def mode_name(self) -> str:
        return ("int32 (TFLite's wrapping sum)", "int32 (bound-checked)", "int64")[self.mode]


def epilogue(requant: S16Requant, w_int: np.ndarray) -> Epilogue:
    """The mode and constants for ``requant`` with int64 weights ``w_int`` [Cout, ...]."""
    co = w_int.shape[0]
    mult = np.broadcast_to(np.asarray(requant.mult, np.int64), (co,))
    shift = np.broadcast_to(np.asarray(requant.shift, np.int64), (co,))
    bias = requant.bias
    if not requant.wide:
        mode = NARROW
    else:
        # why: the largest |sum of products| a channel can reach; below 2^31 an int32 SMLAD
        # sum equals TFLite Micro's int64 sum
        bound = _MAX_ABS_X * int(np.abs(w_int.reshape(co, -1)).sum(axis=1).max(initial=0))
        mode = WIDE32 if bound <= INT32_MAX else WIDE64
        mult, shift = reduced_multiplier(mult), 15 - shift
        # (acc + bias) * m + 2^(t-1) == acc * m + (bias * m + 2^(t-1)) modulo 2^64, the
        # arithmetic of the C++ and of the C: the bias and the rounding term fold into one
        folded = [(int(b) * int(m) + (1 << (int(t) - 1))) for b, m, t in zip(
            bias, mult, shift, strict=True)]
        bias = np.array([((v + 2**63) % 2**64) - 2**63 for v in folded], np.int64)
    arrays = (CArray("mult", "int32_t", mult), CArray("shift", "int32_t", shift))
    return Epilogue(mode, arrays, int64_array("bias", bias), bias)


def window_args(g: ConvGeometry) -> tuple[int, ...]:
    """in_h .. pad_l of a windowed kernel."""
    return conv_shape(g)


# the weights, the bias ``epilogue`` generates and its multipliers and shifts, in the order
# the 16x8 kernels take them
S16_QUANT = (Array("w"), Local("bias"), Array("mult"), Array("shift"))


def _conv(node: Node, graph: Graph) -> KernelCall:
    p = prepare_conv_s16(node, graph)
    ep = epilogue(p.requant, p.w)
    w = pair_order(p.w.astype(np.int8))
    call = c_call("edgenn_conv_s16", IN0, OUT0, *S16_QUANT, SCRATCH, *window_args(p), p.groups,
                  p.requant.act_min, p.requant.act_max, ep.mode)
    return KernelCall(
        call=call, sources=("edgenn_conv_s16.c",), arrays=(CArray("w", "int8_t", w), *ep.arrays),
        scratch_bytes=12 * p.k_h * p.k_w,
        comment=f"16x8 conv {p.k_h}x{p.k_w}, groups {p.groups}, {ep.mode_name} sums",
        code=ep.code,
    )


def _dwconv(node: Node, graph: Graph) -> KernelCall:
    p = prepare_conv_s16(node, graph)
    ep = epilogue(p.requant, p.w)
    # [Cout, KH, KW, 1] -> [KH, KW, Cout]: channels contiguous per tap; quads for multiplier 1
    w = np.ascontiguousarray(p.w[..., 0].transpose(1, 2, 0).astype(np.int8))
    if p.out_c == p.in_c:
        w = pair_order(w)
    call = c_call("edgenn_dwconv_s16", IN0, OUT0, *S16_QUANT, SCRATCH, *window_args(p),
                  p.requant.act_min, p.requant.act_max, ep.mode)
    return KernelCall(
        call=call, sources=("edgenn_conv_s16_dw.c",),
        arrays=(CArray("w", "int8_t", w), *ep.arrays), scratch_bytes=8 * p.out_c,
        comment=f"16x8 depthwise {p.k_h}x{p.k_w}, multiplier {p.out_c // p.in_c}, "
                f"{ep.mode_name} sums",
        code=ep.code,
    )


def _fc(node: Node, graph: Graph) -> KernelCall:
    p = prepare_fully_connected_s16(node, graph)
    ep = epilogue(p.requant, p.w)
    co, depth = p.w.shape
    batch = graph.tensor(node.inputs[0]).shape[0]
    call = c_call("edgenn_fc_s16", IN0, OUT0, *S16_QUANT, batch, depth, co, p.requant.act_min,
                  p.requant.act_max, ep.mode)
    return KernelCall(
        call=call, sources=("edgenn_conv_s16_fc.c",),
        arrays=(CArray("w", "int8_t", pair_order(p.w.astype(np.int8))), *ep.arrays),
        comment=f"16x8 dense {depth} -> {co}, {ep.mode_name} sums",
        code=ep.code,
    )


_S16 = (DType.INT16,)
register_kernel(PortableKernel(
    "Conv2D", "edgenn_conv_s16",
    lambda node, graph: is_s16(node, graph) and not is_depthwise(node, graph), _conv, _S16))
register_kernel(PortableKernel(
    "Conv2D", "edgenn_dwconv_s16",
    lambda node, graph: is_s16(node, graph) and is_depthwise(node, graph), _dwconv, _S16))
register_kernel(PortableKernel("FullyConnected", "edgenn_fc_s16", is_s16, _fc, _S16))
