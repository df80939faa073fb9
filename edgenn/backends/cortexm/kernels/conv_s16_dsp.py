"""The 16x8 Conv2D kernel for DSP cores (``edgenn_conv_s16_gemm_dsp``): picks, per layer,
the form its constants allow, all generated for the layer's shape and bit-exact with TFLite
Micro's int16 ``ConvPerChannel``:

* ``conv_s16_rows``: windows of few elements a row, no patch (FOLDED sums);
* ``conv_s16_folded``: the int16 patch with the sums started at the biases (FOLDED);
* ``conv_s16_gemm``: the general patch + SMLAD code, int64 biases included.

why a module of its own: the forms build on ``conv_s16_gemm``'s geometry and packing, and the
FOLDED proof lives in ``pointwise_s16``, which builds on it too; the choice sits above them all.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels import conv_s16_folded as folded
from edgenn.backends.cortexm.kernels import conv_s16_rows as rows
from edgenn.backends.cortexm.kernels.conv_gemm import arena_room
from edgenn.backends.cortexm.kernels.conv_s16 import epilogue
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    SHIFTED,
    _claims,
    geometry,
    pack_weights,
    rescale,
    scratch_bytes,
    shared_code,
)
from edgenn.backends.cortexm.kernels.pointwise_s16 import FOLDED, fold, folded_fn
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.conv import prepare_conv_s16


class ConvS16Gemm:
    """16x8 Conv2D of one group: generated int16 patch + conv_gemm's 4x2 SMLAD block."""

    op = "Conv2D"
    priority = 20  # above the portable edgenn_conv_s16 (0), the fallback for int64 sums
    name = "edgenn_conv_s16_gemm_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_conv_s16(node, graph)
        g = geometry(p)
        co = g.out_c
        ep = epilogue(p.requant, p.w)
        mode, quant, code = rescale(p)
        w = p.w.reshape(co, -1).astype(np.int8)
        fmode, fquant = fold(p, mode, quant)
        if fmode == FOLDED and folded.widened() and rows.fits(g):
            whole = rows.whole_plane(g, arena_room(node, graph))
            how = ("on a zero-padded copy of the input" if whole else
                   "reading the input rows directly (border blocks: a zero-padded plane)")
            return KernelCall(
                call=generated("conv", self.name, IN0, OUT0, SCRATCH),
                sources=("edgenn_conv_s8_gemm_dsp.h", "edgenn_conv_s16_mac.h"),
                arrays=(CArray("w", "uint32_t", rows.row_weights(w, g)),
                        CArray("quant", "int32_t", fquant)),
                scratch_bytes=rows.scratch_bytes(g, whole),
                comment=f"16x8 {g.in_h}x{g.in_w}x{g.in_c} -> {g.out_h}x{g.out_w}x{co}, "
                        f"{g.k_h}x{g.k_w} stride {g.stride_h},{g.stride_w}: 4x2 SMLAD blocks "
                        f"{how}, widened weights, bias in the sum, one-SMMULR rescale in asm",
                code=rows.shared_code(g, folded_fn(g), whole),
            )
        if fmode == FOLDED and folded.fits(g):
            wide = folded.widened()
            return KernelCall(
                call=generated("conv", self.name, IN0, OUT0, SCRATCH),
                sources=("edgenn_conv_s8_gemm_dsp.h", "edgenn_conv_s16_mac.h"),
                arrays=(CArray("w", "uint32_t", folded.weights(w, wide)),
                        CArray("quant", "int32_t", fquant)),
                scratch_bytes=scratch_bytes(g),
                comment=f"16x8 {g.in_h}x{g.in_w}x{g.in_c} -> {g.out_h}x{g.out_w}x{co}, "
                        f"{g.k_h}x{g.k_w} stride {g.stride_h},{g.stride_w}: 4x2 SMLAD blocks"
                        f"{' on widened weights' if wide else ''}, bias in the sum, "
                        "one-SMMULR rescale in asm",
                code=folded.shared_code(g, folded_fn(g), wide),
            )
        return KernelCall(
            call=generated("conv", self.name, IN0, OUT0, SCRATCH),
            sources=("edgenn_conv_s8_gemm_dsp.h", "edgenn_conv_s16_mac.h"),
            arrays=(CArray("w", "uint32_t", pack_weights(w)),
                    CArray("quant", "int32_t", quant)),
            scratch_bytes=scratch_bytes(g),
            comment=f"16x8 {g.in_h}x{g.in_w}x{g.in_c} -> {g.out_h}x{g.out_w}x{co}, "
                    f"{g.k_h}x{g.k_w} stride {g.stride_h},{g.stride_w}: 4x2 SMLAD blocks, "
                    f"{ep.mode_name} sums{', one-SMLAL rescale' if mode >= SHIFTED else ''}",
            code=code + shared_code(g, mode),
        )


register_kernel(ConvS16Gemm())
