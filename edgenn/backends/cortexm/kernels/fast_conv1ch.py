"""Fast int8 Conv2D for a single input channel (first layers) on DSP cores (Cortex-M4/M7).

CMSIS-NN has no special path here and spends most of a first layer's time on im2col; the
general DSP conv pads each 9-tap patch into a 4-channel-group loop. This kernel (C side
``c/edgenn_conv_s8_1ch_dsp.c``) gathers each output row's taps once into int16 pairs, then runs
channel by channel with the channel's packed weights and requantization constants held in
registers: per output ceil(KH*KW/2) SMLADs (5 for 3x3) and a short requantization.

Generation time: weights packed as int16 pairs over the taps (x2 in the fast requantization
mode), the input offset folded into the bias (padding taps hold the input zero point, whose
products cancel the folded term exactly), and the fast mode chosen only when proven exact
(:func:`fast_common.fast_requant_mode`).
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import args
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import (
    dsp_dense_conv,
    fast_requant_mode,
    pack_pairs,
    quant_records,
    undilated,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node

MAX_TAPS = 49  # up to 7x7: the scratch row stays small


def tap_pairs(kh: int, kw: int) -> int:
    return (kh * kw + 1) // 2


def pack_conv1ch_weights(w: np.ndarray, scale: int = 1) -> np.ndarray:
    """int8 [Cout, KH, KW, 1] -> uint32 [Cout][pair]: taps in row-major order, zero-padded."""
    cout, kh, kw, _ = w.shape
    tp = tap_pairs(kh, kw)
    mat = np.zeros((cout, 2 * tp), np.int64)
    mat[:, : kh * kw] = w.reshape(cout, kh * kw).astype(np.int64) * scale
    return pack_pairs(mat).ravel()


def conv1ch_mode(p: ConvParams) -> int:
    return fast_requant_mode(p.w, fold_input_zero_point(p.bias, p.w, p.in_zp), p.shift, p.mult,
                             p.out_zp, p.act_min, p.act_max)


def conv1ch_records(p: ConvParams, fast: int) -> np.ndarray:
    bias = fold_input_zero_point(p.bias, p.w, p.in_zp)
    return quant_records(bias, p.mult, p.shift, p.out_zp, fast)


def conv1ch_args(p: ConvParams, fast: int) -> list[int]:
    """Integer arguments of edgenn_conv_s8_1ch_dsp after (in, out, scratch, w, quant)."""
    return [p.in_h, p.in_w, p.out_h, p.out_w, p.out_c, p.k_h, p.k_w, p.stride_h, p.stride_w,
            p.pad_t, p.pad_l, p.in_zp, p.out_zp, p.act_min, p.act_max, fast]


def conv1ch_scratch(p: ConvParams) -> int:
    return 4 * p.out_w * tap_pairs(p.k_h, p.k_w)


class FastConv1Ch:
    """Conv2D with one input channel: row-gathered taps, channel-stationary SMLAD."""

    op = "Conv2D"
    priority = 20  # above edgenn_conv_s8_dsp (10)
    name = "edgenn_conv_s8_1ch_dsp"
    widened_weights = True  # int16 weights: only where the flash policy grants them

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not dsp_dense_conv(node, graph, core) or not undilated(node):
            return False
        w = graph.tensor(node.inputs[1])
        return w.shape[3] == 1 and w.shape[1] * w.shape[2] <= MAX_TAPS

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        fast = conv1ch_mode(p)
        return KernelCall(
            call="edgenn_conv_s8_1ch_dsp({in0}, {out0}, {scratch}, {w}, {quant}, "
            + args(*conv1ch_args(p, fast)) + ");",
            sources=("edgenn_conv_s8_1ch_dsp.c",),
            arrays=(CArray("w", "uint32_t", pack_conv1ch_weights(p.w, 2 if fast else 1)),
                    CArray("quant", "int32_t", conv1ch_records(p, fast))),
            scratch_bytes=conv1ch_scratch(p),
            kernel_name=self.name,
            comment=f"{p.in_h}x{p.in_w}x1 -> {p.out_h}x{p.out_w}x{p.out_c}, {p.k_h}x{p.k_w} "
            f"stride {p.stride_h},{p.stride_w}, 1-channel SMLAD (fast requant {fast})",
        )


register_kernel(FastConv1Ch())
