"""Fast int8 depthwise Conv2D (depth multiplier 1) on DSP cores (Cortex-M4/M7).

C side ``c/edgenn_dwconv_s8_dsp.c``: NHWC puts 4 adjacent channels in one word; SXTB16 (and SXTB16
ROR 8) splits it into the int16 pairs (c, c+2) and (c+1, c+3), and SMLABB/SMLATT multiply
each half by its own channel's weight. Per tap and 4 channels: one input word, two weight
words, two SXTB16, four single-cycle multiplies. Windows wholly inside the input run an
unrolled, hand-scheduled 3x3 (or generic KHxKW) loop; a border window is first copied into
a KHxKWxC scratch patch with its padding taps set to the input zero point, then runs the same
code; the channel tail (C % 4) loads its bytes one by one.

Generation time: weights packed per channel group and tap as int16 pairs (x2 in the fast
requantization mode), the input offset folded into the bias (padding taps hold the input
zero point, whose products cancel the folded term exactly: integer arithmetic, bit-exact),
and the single-SMMULR requantization chosen only when proven exact
(:func:`fast_common.fast_requant_mode`). Depth multipliers > 1 and dilation stay with the
portable ``edgenn_dwconv_s8``.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import args, is_int8
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import (
    fast_requant_mode,
    pack_pairs,
    quant_records,
    undilated,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.ir.conv import is_depthwise

GROUP = 4  # channels per step (one 32-bit word of NHWC input)


def pack_dw_weights(w: np.ndarray, scale: int = 1) -> np.ndarray:
    """int8 [C, KH, KW, 1] -> uint32 [group][tap][2]: (w[4g], w[4g+2]), (w[4g+1], w[4g+3]).

    Channels are zero-padded to a multiple of 4 (the padded lanes then add nothing).
    """
    c = w.shape[0]
    taps = w.shape[1] * w.shape[2]
    cpad = -(-c // GROUP) * GROUP
    mat = np.zeros((cpad, taps), np.int64)
    mat[:c] = w.reshape(c, taps).astype(np.int64) * scale
    grp = mat.reshape(cpad // GROUP, GROUP, taps).transpose(0, 2, 1)  # [g][tap][4 channels]
    # lanes in the order SXTB16 / SXTB16-ROR-8 deliver them: (0, 2) then (1, 3)
    return pack_pairs(grp[..., [0, 2, 1, 3]]).ravel()


def dw_mode(p: ConvParams) -> int:
    """The requantization mode (0 exact double rounding; 1/2 proven-exact SMMULR)."""
    return fast_requant_mode(p.w, fold_input_zero_point(p.bias, p.w, p.in_zp), p.shift, p.mult,
                             p.out_zp, p.act_min, p.act_max)


def dw_records(p: ConvParams, fast: int) -> np.ndarray:
    """int32 {bias, mult, shift, half} per channel, channels padded to a multiple of 4."""
    bias = fold_input_zero_point(p.bias, p.w, p.in_zp)
    return quant_records(bias, p.mult, p.shift, p.out_zp, fast, pad_to=GROUP)


def dw_args(p: ConvParams, fast: int) -> list[int]:
    """Integer arguments of edgenn_dwconv_s8_dsp after (in, out, scratch, wpack, quant)."""
    return [p.in_h, p.in_w, p.in_c, p.out_h, p.out_w, p.k_h, p.k_w, p.stride_h, p.stride_w,
            p.pad_t, p.pad_l, p.in_zp, p.out_zp, p.act_min, p.act_max, fast]


def dw_scratch(p: ConvParams) -> int:
    """The border patch: KH x KW x C bytes (a multiple of 4)."""
    return -(-(p.k_h * p.k_w * p.in_c) // 4) * 4


def dw_supported(node: Node, graph: Graph) -> bool:
    """Depthwise (groups == Cin == Cout, weights [C, KH, KW, 1]), dilation 1, int8."""
    if not is_int8(node, graph) or len(node.inputs) < 2:
        return False
    x = graph.tensor(node.inputs[0])
    w = graph.tensor(node.inputs[1])
    if not is_depthwise(node, graph):
        return False
    if w.shape[0] != x.shape[3]:
        return False  # depth multiplier > 1: the portable kernel
    return undilated(node)


class FastDepthwiseConv:
    """Depthwise conv, 4 channels a step: SXTB16 + SMLABB/SMLATT (cores with DSP)."""

    op = "Conv2D"
    priority = 10  # above the portable edgenn_dwconv_s8 (0)
    name = "edgenn_dwconv_s8_dsp"
    widened_weights = True  # int16 weights: only where the flash policy grants them

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_dsp and dw_supported(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        fast = dw_mode(p)
        return KernelCall(
            call="edgenn_dwconv_s8_dsp({in0}, {out0}, {scratch}, {w}, {quant}, "
            + args(*dw_args(p, fast)) + ");",
            sources=("edgenn_dwconv_s8_dsp.c",),
            arrays=(CArray("w", "uint32_t", pack_dw_weights(p.w, 2 if fast else 1)),
                    CArray("quant", "int32_t", dw_records(p, fast))),
            scratch_bytes=dw_scratch(p),
            kernel_name=self.name,
            comment=f"{p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, "
            f"{p.k_h}x{p.k_w} stride {p.stride_h},{p.stride_w}, depthwise SMLABB/SMLATT x4 "
            f"(fast requant {fast})",
        )


register_kernel(FastDepthwiseConv())
