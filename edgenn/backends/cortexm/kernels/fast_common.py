"""Shared generation-time helpers of the fast_* DSP kernels (packing, fast requantization)."""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.kernels.common import i32, is_int8
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node


def dsp_dense_conv(node: Node, graph: Graph, core: Core) -> bool:
    """An int8 Conv2D of one group on a core with the DSP extension: what the SIMD dense
    convolutions (im2col, GEMM, pointwise, one-channel) all need before their own limits."""
    return core.has_dsp and is_int8(node, graph) and int(node.attr("groups", 1)) == 1


def undilated(node: Node) -> bool:
    """Whether a window operator has dilation 1 on both axes."""
    return tuple(int(d) for d in node.attr("dilations", (1, 1))) == (1, 1)


def fast_requant_mode(w: np.ndarray, bias_folded: np.ndarray, shift: np.ndarray, mult: np.ndarray,
                      out_zp: int, act_min: int, act_max: int) -> int:
    """0, or 1/2 when the doubled-accumulator SMMULR requantization is bit-exact.

    The kernels multiply raw int8 inputs (|x| <= 128; padding taps hold the input zero point,
    also int8), so |acc| <= |folded bias| + 128 * sum|w| per channel. Conditions: every shift
    is a right shift r >= 1; |2 acc| < 2^31; the high product + 2^(r-1) + (out_zp << r) fits
    int32; act_max == 127 (the clamp is SSAT then max with act_min). 2 when act_min == -128 too.
    """
    shift = np.asarray(shift, np.int64)
    if shift.size == 0 or not np.all(shift <= -1) or act_max != 127:
        return 0
    w_abs = np.abs(w.reshape(w.shape[0], -1).astype(np.int64)).sum(axis=1)
    bound = np.abs(np.asarray(bias_folded, np.int64)) + 128 * w_abs
    if not np.all(2 * bound < 2**31):
        return 0
    r = -shift
    high = ((2 * bound * np.asarray(mult, np.int64)) >> 32) + 1
    if not np.all(high + (1 << (r - 1)) + (abs(out_zp) << r) < 2**31):
        return 0
    return 2 if act_min == -128 else 1


def quant_records(bias_folded: np.ndarray, mult: np.ndarray, shift: np.ndarray, out_zp: int,
                  fast: int, pad_to: int = 1, double_bias: bool = True) -> np.ndarray:
    """int32 [C', 4] records {bias, mult, shift, half} per channel, zero-padded to ``pad_to``.

    fast: bias doubled (unless ``double_bias`` is False: kernels with int8 weights double the
    accumulator at requantization instead, ``acc << 1``), shift = right shift r,
    half = (1 << (r - 1)) + (out_zp << r). exact: bias, mult, TFLite shift, half unused.
    """
    c = len(bias_folded)
    cpad = -(-c // pad_to) * pad_to
    rec = np.zeros((cpad, 4), np.int64)
    bias = np.asarray(bias_folded, np.int64)
    sh = np.asarray(shift, np.int64)
    if fast:
        rec[:c, 0] = 2 * bias if double_bias else bias
        rec[:c, 2] = -sh
        rec[:c, 3] = (1 << (-sh - 1)) + (out_zp << -sh)
    else:
        rec[:c, 0] = bias
        rec[:c, 2] = sh
    rec[:c, 1] = mult
    return i32(rec)


def pack_pairs(mat: np.ndarray) -> np.ndarray:
    """int64 [..., 2n] -> uint32 [..., n]: element 2i in the low halfword, 2i+1 in the high."""
    return ((mat[..., 0::2] & 0xFFFF) | ((mat[..., 1::2] & 0xFFFF) << 16)).astype(np.uint32)
