"""Fast int8 MaxPool2D for DSP cores: 4 channels per 32-bit word, SSUB8 + SEL per tap.

The C side is ``c/edgenn_maxpool_s8_dsp.c``; it matches when the channel count is a multiple of
4 (so every pixel's channels are whole words). Windows are clipped at the borders exactly as
TFLite Micro's reference MaxPool does; the fused activation clamps with the same SIMD max/min,
and the requantization TFLite applies when input and output quantization differ is appended as
in the portable kernel.
"""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import is_int8
from edgenn.backends.cortexm.kernels.pooling import requant_tail
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.prepared.pooling import prepare_pool


def maxpool_args(node: Node, graph: Graph) -> list[int]:
    """Integer arguments of edgenn_maxpool_s8_dsp after (in, out)."""
    p = prepare_pool(node, graph)
    return [p.in_h, p.in_w, p.in_c, p.out_h, p.out_w, p.k_h, p.k_w, p.stride_h, p.stride_w,
            p.pad_t, p.pad_l, int(p.act_min), int(p.act_max)]


class FastMaxPool:
    """MaxPool2D with 4-lane SIMD max (cores with the DSP extension, C % 4 == 0)."""

    op = "MaxPool2D"
    priority = 10
    name = "edgenn_maxpool_s8_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph):
            return False
        return graph.tensor(node.inputs[0]).shape[3] % 4 == 0

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_pool(node, graph)
        h, w, c = p.in_h, p.in_w, p.in_c
        n = p.out_h * p.out_w * c
        call = (c_call("edgenn_maxpool_s8_dsp", IN0, OUT0, *maxpool_args(node, graph)),
                *requant_tail(p.requant, OUT0, n))
        return KernelCall(call, ("edgenn_maxpool_s8_dsp.c", "edgenn_unary_s8.c"),
                          comment=f"{h}x{w}x{c} -> {p.out_h}x{p.out_w}x{c}, SIMD max x4")


register_kernel(FastMaxPool())
