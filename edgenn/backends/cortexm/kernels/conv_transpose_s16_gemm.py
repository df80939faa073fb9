"""Fast 16x8 TransposeConv2D (groups 1) for DSP cores: one generated 16x8 convolution per
output phase (``conv_s16_gemm``), the int16 twin of ``conv_transpose_gemm``.

The phases are ``conv_transpose_gemm.phase_pairs``: the outputs r, r + stride, ... of each
axis are a stride-1 convolution of the input with the taps that reach them. In the 16x8
scheme a tap outside the input contributes nothing, which is what the convolution's zero
padding gives; the sums are order-free (int32 wraps, and the int64-bias layers use the int32
sum only where it provably cannot overflow, ``conv_s16.epilogue``), and the rescale is the
layer's own (``conv_s16_gemm.rescale``), so every phase is bit-exact with TFLite Micro's
scatter. Each phase writes its outputs densely into scratch; a loop copies them to their
strided output pixels; a phase no tap reaches gets the rescaled bias. Layers whose sums
need int64 keep the portable ``edgenn_tconv_s16``.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv_s16 import WIDE64, epilogue, is_s16
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    MAX_K,
    Geometry,
    generate,
    geometry,
    pack_weights,
    rescale,
    scratch_bytes,
)
from edgenn.backends.cortexm.kernels.conv_transpose_gemm import (
    AxisPhase,
    fill_code,
    phase_pairs,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.conv import ConvS16Params, prepare_conv_s16

MAX_SCRATCH = 16384  # bytes: the largest phase's patch, window and dense outputs


def _phases(node: Node, graph: Graph) -> list[tuple[AxisPhase, AxisPhase]]:
    """The phases some tap reaches."""
    return [(py, px) for py, px in phase_pairs(node, graph) if py.taps and px.taps]


def _record(node: Node, graph: Graph) -> ConvS16Params:
    """TFLite Micro's 16x8 TransposeConv takes an int64 bias (or none) only."""
    return prepare_conv_s16(node, graph, allow_narrow=False)


def _geometry(p: ConvS16Params, py: AxisPhase, px: AxisPhase) -> Geometry:
    """The stride-1 convolution that computes phase (py, px) of the output."""
    return replace(geometry(p), out_h=py.count, out_w=px.count, k_h=len(py.taps),
                   k_w=len(px.taps), stride_h=1, stride_w=1, dil_h=py.dil, dil_w=px.dil,
                   pad_t=py.pad, pad_l=px.pad, pad_b=0, pad_r=0)


def _sub_weights(p: ConvS16Params, py: AxisPhase, px: AxisPhase) -> np.ndarray:
    w = p.w[:, list(py.taps)][:, :, list(px.taps)]
    return np.ascontiguousarray(w).reshape(w.shape[0], -1).astype(np.int8)


def _scatter(py: AxisPhase, px: AxisPhase, sy: int, sx: int, ow: int, co: int,
             buf: str) -> str:
    """C copying a phase's dense int16 outputs (at ``buf``) to their strided pixels."""
    if co % 2 == 0:
        move = "\n".join(f"            edgenn_s16_store32(d + {i}, edgenn_s16_load32(s + {i}));"
                         for i in range(0, co, 2))
    else:
        move = f"            for (int c = 0; c < {co}; c++) d[c] = s[c];"
    return f"""    {{
        const int16_t *s = {buf};
        for (int my = 0; my < {py.count}; my++) {{
            int16_t *d = out + (({py.r} + {sy} * my) * {ow} + {px.r}) * {co};
            for (int mx = 0; mx < {px.count}; mx++, s += {co}, d += {sx * co}) {{
{move}
            }}
        }}
    }}"""


STORE = """#ifndef EDGENN_S16_STORE32_DEFINED
#define EDGENN_S16_STORE32_DEFINED
static inline __attribute__((always_inline)) void edgenn_s16_store32(void *p, uint32_t v)
{
    __builtin_memcpy(p, &v, 4);
}
#endif
"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not core.has_dsp or not is_s16(node, graph) or int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4:
        return False
    p = _record(node, graph)
    if p.out_c > 1024 or epilogue(p.requant, p.w).mode == WIDE64:
        return False
    phases = _phases(node, graph)
    if not phases:
        return False
    for py, px in phases:
        g = _geometry(p, py, px)
        if g.k > MAX_K or scratch_bytes(g) + 2 * g.npix * g.out_c + 4 > MAX_SCRATCH:
            return False
    return True


class TransposeConvS16Gemm:
    """16x8 TransposeConv2D as one generated 16x8 convolution per output phase."""

    op = "TransposeConv2D"
    priority = 20  # above the portable edgenn_tconv_s16 (0)
    name = "edgenn_tconv_s16_gemm_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = _record(node, graph)
        phases = _phases(node, graph)
        ow, co = p.out_w, p.out_c
        sy, sx = p.strides
        mode, quant, code = rescale(p)
        geoms = [(py, px, _geometry(p, py, px)) for py, px in phases]
        conv_bytes = max((scratch_bytes(g) + 3) & ~3 for _, _, g in geoms)
        out_bytes = max(2 * g.npix * g.out_c for _, _, g in geoms)
        arrays: list[CArray] = [CArray("quant", "int32_t", quant)]
        defs: dict[str, str] = {}
        steps = []
        for i, (py, px, g) in enumerate(geoms):
            body = generate(g, mode)
            name = "cts16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
            defs.setdefault(name, body.replace("@P@", name))
            arrays.append(CArray(f"w{i}", "uint32_t", pack_weights(_sub_weights(p, py, px))))
            buf = f"(int16_t *)(void *)((uint8_t *)scratch + {conv_bytes})"
            steps.append(f"    {name}_conv(in, {buf}, scratch, @P@_w{i}, @P@_quant, "
                         f"@P@_bias);\n" + _scatter(py, px, sy, sx, int(ow), int(co), buf))
        empty = [(py, px) for py, px in phase_pairs(node, graph) if not (py.taps and px.taps)]
        if empty:
            # the bias alone, rescaled by the reference's own arithmetic
            zeros = np.zeros((1, int(co)), np.int64)
            arrays.append(CArray("fill", "int16_t", p.requant(zeros).astype(np.int16).ravel()))
            steps += [fill_code(py, px, sy, sx, int(ow), int(co), "int16_t", "@P@_fill")
                      for py, px in empty]
        code += STORE + "".join(
            f"#ifndef {n.upper()}_DEFINED\n#define {n.upper()}_DEFINED\n{b}\n#endif\n"
            for n, b in defs.items())
        code += ("static void @P@_tconv(const int16_t *in, int16_t *out, void *scratch)\n{\n"
                 + "\n".join(steps) + "\n}\n")
        return KernelCall(
            call=generated("tconv", self.name, IN0, OUT0, SCRATCH),
            sources=("edgenn_conv_s8_gemm_dsp.h", "edgenn_conv_s16_mac.h"),
            arrays=tuple(arrays), scratch_bytes=conv_bytes + out_bytes,
            comment=f"16x8 transposed conv {p.k_h}x{p.k_w} stride {sy}x{sx}: "
                    f"{len(geoms)} phase convolutions (conv_s16_gemm)",
            code=code)


register_kernel(TransposeConvS16Gemm())
