"""Fast int8 AvgPool2D and Mean for DSP cores: SXTAB16 window sums, no division instruction.

The C side is ``c/edgenn_avgpool_s8_dsp.c`` / ``.h``. Any channel count (16 channels per pass
in eight SXTAB16 accumulators, then 4, then single channels), any window, stride and padding
(windows clipped at the borders as TFLite Micro's reference AveragePool; ``count_include_pad`` only
without padding, where it changes nothing). The average is TFLite's ``(s +- n/2) / n`` with
truncation, i.e. rounding half away from zero; the kernel replaces the division with
``umulhi(s + bias + (s < 0 ? fix : 0), magic) - 256``, and :func:`avg_records` checks that
identity here on every sum a window of n int8 taps can produce, for every window size n that
occurs (a layer whose check fails is left to the portable kernel). Windows wider than 256
taps in one row are refused (a pass sums at most 256 taps in 16-bit lanes). The fused
activation clamps, and the requantization TFLite applies when input and output quantization
differ is appended as in the portable kernel.

Global pools (one window over the whole input, at most 256 taps) get a function generated per
layer (``ps_global_pool`` in ``edgenn_avgpool_s8_dsp.h``: channel and tap counts and the division
constants as immediates, two taps per iteration with back-to-back loads). Mean over H and W
(the other way TFLite writes a global average) uses the same code with TFLite's exact
requantization of ``sum - in_zp * count`` per channel instead of the division.
"""

from __future__ import annotations

import functools

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, c_call, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32, is_int8
from edgenn.backends.cortexm.kernels.pooling import pool_geometry, requant_tail
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.prepared.pooling import div_round_half_away, prepare_pool
from edgenn.prepared.reduce import prepare_reduce

OFFSET = 256  # POOL_SIMD_OFFSET: the bias makes s + OFFSET * n non-negative
MAX_PASS = 256  # POOL_SIMD_MAX_PASS: taps per pass in 16-bit lanes


@functools.lru_cache(maxsize=256)
def count_record(n: int) -> tuple[int, int, int, int] | None:
    """{n, magic, bias, fix} for windows of n taps, or None if the identity fails somewhere."""
    if n <= 0:
        return None
    magic = -(-(1 << 32) // n)
    bias = n // 2 + OFFSET * n
    if magic >= 1 << 32:  # n == 1: umulhi(x, 2^32 - 1) = x - 1 for 0 < x < 2^32
        magic, bias = (1 << 32) - 1, bias + 1
    fix = -1 if n % 2 == 0 else 0
    s = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
    x = s + bias + np.where(s < 0, fix, 0)
    if x.min() < 0 or x.max() >= 1 << 32:
        return None
    got = ((x * magic) >> 32) - OFFSET
    if not np.array_equal(got, div_round_half_away(s, np.full_like(s, n))):
        return None
    return n, magic, bias, fix


def _counts(node: Node, graph: Graph) -> set[int]:
    return {int(n) for n in np.unique(prepare_pool(node, graph).count)}


def avg_records(node: Node, graph: Graph) -> np.ndarray | None:
    """[k, 4] records of the window sizes that occur, or None if one is not proven.

    The magic is an unsigned 32-bit value (stored as int32 with wrap-around, read as uint32).
    """
    recs = [count_record(n) for n in sorted(_counts(node, graph))]
    if any(r is None for r in recs):
        return None
    return np.array(recs, np.int64).reshape(-1, 4)


def global_pool_code(c: int, taps: int, final: str) -> str:
    """The per-layer function ``@P@_gap(in, out)``: ps_global_pool with constants."""
    return ("static void @P@_gap(const int8_t *in, int8_t *out)\n{\n"
            f"    const ps_final_t f = {final};\n"
            f"    ps_global_pool(in, out, {c}, {taps}, f);\n}}\n")


class AvgPoolSimd:
    """AvgPool2D with SXTAB16 sums and a multiply for the division (cores with DSP)."""

    op = "AvgPool2D"
    priority = 30
    name = "edgenn_avgpool_s8_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph):
            return False
        n, _, w, _ = graph.tensor(node.inputs[0]).shape
        p = prepare_pool(node, graph)
        if n != 1 or min(p.k_w, w) > MAX_PASS:
            return False
        if p.count_include_pad and any(p.pads):
            return False
        return avg_records(node, graph) is not None

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_pool(node, graph)
        h, w, c = p.in_h, p.in_w, p.in_c
        records = avg_records(node, graph)
        assert records is not None
        tail = requant_tail(p.requant, OUT0, p.out_h * p.out_w * c)
        comment = f"{h}x{w}x{c} -> {p.out_h}x{p.out_w}x{c}, SXTAB16 sums"
        if p.out_h == p.out_w == 1 and records.shape[0] == 1 and records[0, 0] == h * w \
                and h * w <= MAX_PASS:
            # global average: one window over every pixel, specialised with constants
            taps, magic, bias, fix = (int(v) for v in records[0])
            act = int(p.act_min > -128 or p.act_max < 127)
            final = (f"{{{magic}u, {bias}, {fix}, {act}, {p.act_min}, {p.act_max}, "
                     "0, 0, 0, 0, 0}")
            code = global_pool_code(c, taps, final)
            name = "edgenn_avgpool_s8_global_dsp"
            return KernelCall((generated("gap", name, IN0, OUT0), *tail),
                              ("edgenn_avgpool_s8_dsp.h", "edgenn_unary_s8.c"),
                              comment=comment + ", global",
                              code=code)
        call = (c_call("edgenn_avgpool_s8_dsp", IN0, OUT0, SCRATCH, *pool_geometry(p),
                       Array("records"), p.act_min, p.act_max), *tail)
        return KernelCall(call, ("edgenn_avgpool_s8_dsp.c", "edgenn_unary_s8.c"),
                          (CArray("records", "int32_t", i32(records)),),
                          # the int32 row of sums only serves windows summed in passes
                          scratch_bytes=4 * c if int(records[:, 0].max()) > MAX_PASS else 0,
                          comment=comment)


register_kernel(AvgPoolSimd())


class MeanSimd:
    """Mean over H and W of an NHWC tensor (<= 256 pixels): SXTAB16 sums, TFLite requant."""

    op = "Mean"
    priority = 30
    name = "edgenn_mean_s8_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph):
            return False
        shape = graph.tensor(node.inputs[0]).shape
        if len(shape) != 4 or shape[0] != 1 or shape[1] * shape[2] > MAX_PASS:
            return False
        return prepare_reduce(node, graph).axes == (1, 2)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        layer = prepare_reduce(node, graph)
        _, h, w, c = graph.tensor(node.inputs[0]).shape
        # why no proof needed: the exact requantization (edgenn_requant_s32) of the int32 sum
        final = (f"{{0u, 0, 0, 0, -128, 127, 1, {layer.in_zp * layer.count}, {layer.mult}, "
                 f"{layer.shift}, {layer.out_zp}}}")
        return KernelCall(generated("gap", self.name, IN0, OUT0), ("edgenn_avgpool_s8_dsp.h",),
                          comment=f"{h}x{w}x{c} -> {c}, SXTAB16 sums",
                          code=global_pool_code(c, h * w, final))


register_kernel(MeanSimd())
