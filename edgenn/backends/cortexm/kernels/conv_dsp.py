"""Cortex-M DSP (ARMv7E-M) int8 Conv2D: SMLAD over int16 pairs, 2 pixels x 4 channels a step.

The C side is ``c/edgenn_conv_s8_dsp.c``. Everything that can be decided at generation time is done
here, so the inner loop is loads and SMLADs only:

* the weights are permuted and packed as int16 pairs in exactly the order the loop reads
  them (:func:`pack_weights`): output channels padded to a multiple of 4, the patch length
  K = KH*KW*Cin padded to even, and inside each kernel row of ``KW*Cin`` bytes (when that is
  even) every run of 4 positions stored as 0, 2, 1, 3 — the order in which SXTB16 and
  SXTB16-ROR-8 split a word of 4 input bytes into two int16 pairs;
* the bias is pre-folded with the input offset: ``bias - in_zp * sum(w)``. The kernel then
  multiplies raw int8 inputs, and padding taps hold ``in_zp`` itself, so their products
  cancel the folded term exactly (integer arithmetic: bit-exact with the reference);
* per channel one record {bias, mult, shift, half} (padded channels are never stored);
* the fast requantization (:func:`fast_requant_ok`): when every shift is a right shift and
  the accumulator provably stays below 2^30 in magnitude, weights and bias are doubled, so
  SaturatingRoundingDoublingHighMul becomes one SMMULR and the rounding divide cannot
  overflow — the same integers as TFLite's double rounding, fewer instructions.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import args, i32
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import dsp_dense_conv, undilated
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node

GROUP = 4  # output channels per inner step (4 per pixel, 2 pixels: 8 accumulators)


def patch_positions(kh: int, kw: int, cin: int) -> np.ndarray:
    """Where patch element j = (ky*KW + kx)*Cin + ci sits in the kernel's int16 patch."""
    row = kw * cin
    i = np.arange(row)
    fast = (row // 4) * 4 if row % 2 == 0 else 0
    swapped = (i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1)
    within = np.where(i < fast, swapped, i)
    return (np.arange(kh)[:, None] * row + within[None, :]).ravel()


def pack_weights(w: np.ndarray, scale: int = 1) -> np.ndarray:
    """int8 [Cout, KH, KW, Cin] -> uint32 words [group][pair][4 channels] (int16 pairs).

    Word (g, p, c) = w'[4g+c, 2p] (low half) | w'[4g+c, 2p+1] (high half), where w' is the
    weight matrix in patch order (:func:`patch_positions`), zero-padded.
    """
    cout, kh, kw, cin = w.shape
    k = kh * kw * cin
    kp = (k + 1) // 2
    cpad = -(-cout // GROUP) * GROUP
    mat = np.zeros((cpad, 2 * kp), np.int64)
    mat[:cout, patch_positions(kh, kw, cin)] = w.reshape(cout, k).astype(np.int64) * scale
    lo = mat[:, 0::2] & 0xFFFF
    hi = mat[:, 1::2] & 0xFFFF
    words = (lo | (hi << 16)).astype(np.uint32)  # [cpad, kp]
    return np.ascontiguousarray(words.reshape(cpad // GROUP, GROUP, kp).transpose(0, 2, 1)).ravel()


def fast_mode(p: ConvParams) -> int:
    """0, or 1/2 when the kernel may use the doubled-accumulator SMMULR requantization.

    Bit-exact conditions: every shift <= -1 (a pure right shift r, so the rounding step is
    ``(x + 2^(r-1) + (x >> 31)) >> r``); |2 * acc| < 2^31 for every input (raw inputs and
    padding taps are int8, |x| <= 128, so |acc| <= |folded bias| + 128 * sum|w|); the high
    product plus the rounding term plus ``out_zp << r`` fits int32; act_max == 127 (the
    clamp is SSAT then max with act_min). 2 when act_min == -128 too (SSAT alone).
    """
    shift = np.asarray(p.shift, np.int64)
    if not np.all(shift <= -1) or p.act_max != 127:
        return 0
    w_abs = np.abs(p.w.reshape(p.out_c, -1).astype(np.int64)).sum(1)
    bound = np.abs(fold_input_zero_point(p.bias, p.w, p.in_zp)) + 128 * w_abs
    if not np.all(2 * bound < 2**31):
        return 0
    r = -shift
    high = ((2 * bound * np.asarray(p.mult, np.int64)) >> 32) + 1
    if not np.all(high + (1 << (r - 1)) + (abs(p.out_zp) << r) < 2**31):
        return 0
    return 2 if p.act_min == -128 else 1


def fast_requant_ok(p: ConvParams) -> bool:
    """True when :func:`fast_mode` is not 0."""
    return fast_mode(p) != 0


def quant_records(p: ConvParams, fast: int) -> np.ndarray:
    """int32 [Cpad, 4]: {bias, mult, shift, half} per channel, zero-padded to GROUP channels."""
    cpad = -(-p.out_c // GROUP) * GROUP
    rec = np.zeros((cpad, 4), np.int64)
    bias = fold_input_zero_point(p.bias, p.w, p.in_zp)
    shift = np.asarray(p.shift, np.int64)
    if fast:
        rec[: p.out_c, 0] = 2 * bias
        rec[: p.out_c, 2] = -shift
        rec[: p.out_c, 3] = (1 << (-shift - 1)) + (p.out_zp << -shift)
    else:
        rec[: p.out_c, 0] = bias
        rec[: p.out_c, 2] = shift
    rec[: p.out_c, 1] = p.mult
    return i32(rec)


def scratch_bytes(kh: int, kw: int, cin: int) -> int:
    """The interleaved int16 patch of 2 pixels: 8 bytes per pair of patch elements."""
    return 8 * ((kh * kw * cin + 1) // 2)


def call_args(p: ConvParams, fast: int) -> list[int]:
    """The integer arguments of edgenn_conv_s8_dsp after (in, out, scratch, w, quant)."""
    return [p.in_h, p.in_w, p.in_c, p.out_h, p.out_w, p.out_c, p.k_h, p.k_w, p.stride_h,
            p.stride_w, p.pad_t, p.pad_l, p.in_zp, p.out_zp, p.act_min, p.act_max, int(fast)]


def dsp_call(p: ConvParams, fast: int) -> str:
    """The C call (format string of the KernelCall protocol)."""
    return ("edgenn_conv_s8_dsp({in0}, {out0}, {scratch}, {w}, {quant}, "
            + args(*call_args(p, fast)) + ");")


class DspConv:
    """im2col-to-int16 per pixel pair + a hand-scheduled 2x4 SMLAD loop (cores with DSP)."""

    op = "Conv2D"
    priority = 10
    name = "edgenn_conv_s8_dsp"
    widened_weights = True  # int16 weights: only where the flash policy grants them

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not dsp_dense_conv(node, graph, core) or not undilated(node):
            return False
        w = graph.tensor(node.inputs[1])
        # why: the x8-unrolled loop addresses the patch with 12-bit immediate offsets only
        # up to one step; beyond that nothing limits K, but keep the scratch reasonable.
        return scratch_bytes(w.shape[1], w.shape[2], w.shape[3]) <= 32768

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        fast = fast_mode(p)
        return KernelCall(
            call=dsp_call(p, fast),
            sources=("edgenn_conv_s8_dsp.c",),
            arrays=(
                CArray("w", "uint32_t", pack_weights(p.w, 2 if fast else 1)),
                CArray("quant", "int32_t", quant_records(p, fast)),
            ),
            scratch_bytes=scratch_bytes(p.k_h, p.k_w, p.in_c),
            kernel_name=self.name,
            comment=f"{p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, "
            f"{p.k_h}x{p.k_w} stride {p.stride_h},{p.stride_w}, DSP 2x4 SMLAD",
        )


register_kernel(DspConv())
