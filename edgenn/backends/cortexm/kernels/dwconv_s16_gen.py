"""Fast 16x8 depthwise Conv2D (depth multiplier 1, channels a multiple of 4) for DSP cores,
generated for the layer's shape; bit-exact with TFLite Micro's int16
``DepthwiseConvPerChannel`` like the portable ``edgenn_dwconv_s16`` it takes over from.

Four channels at a time: two word loads bring the int16 inputs (x0, x1) (x2, x3), one word
the four int8 weights in pair order (``conv_s16.pair_order``: bytes w0 w2 w1 w3), SXTB16 /
SXTB16 ROR 8 widen them to (w0, w1) (w2, w3), and SMLABB / SMLATT add the four products
(each channel has its own sum, so no dual MAC applies). Windows wholly inside the input run
the taps unrolled with immediate offsets; border windows clip the tap rectangle as the
portable kernel does, and each distinct clipped rectangle (at most MAX_RECTS of them) gets
its taps unrolled the same way. The four sums go straight to the rescale of ``conv_s16_gemm``
(TFLite's int32 sum with an int32 bias; for an int64 bias the provably exact int32 sum and
one SMLAL), so a pixel needs no scratch. Layers whose sums need int64 stay on the portable
kernel. A layer whose bias plus any sum stays int32 starts its sums at the bias and rescales
with one SMMULR (``pointwise_s16.fold``).
"""

from __future__ import annotations

import hashlib

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv_s16 import (
    NARROW,
    WIDE64,
    epilogue,
    is_s16,
    pair_order,
)
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    Geometry,
    _epilogue_fn,
    geometry,
    rescale,
)
from edgenn.backends.cortexm.kernels.pointwise_s16 import FOLDED, fold, folded_fn
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import prepare_conv_s16

MAX_TAPS = 64  # taps of an unrolled interior window


def _quad(taps: list[tuple[int, int]], ind: str) -> str:
    """C of one 4-channel group over ``taps`` (input offset, weight offset) from p / wp."""
    lines = []
    for xo, wo in taps:
        lines += [f"{ind}{{",
                  f"{ind}    const uint32_t x01 = edgenn_s16_load32(p + {xo}), "
                  f"x23 = edgenn_s16_load32(p + {xo + 2});",
                  f"{ind}    const uint32_t q = edgenn_s16_load32(wp + {wo});",
                  f"{ind}    const uint32_t wl = edgenn_sxtb16(q), wh = edgenn_sxtb16_ror8(q);",
                  f"{ind}    a0 = edgenn_smlabb((int32_t)x01, (int32_t)wl, a0);",
                  f"{ind}    a1 = edgenn_smlatt((int32_t)x01, (int32_t)wl, a1);",
                  f"{ind}    a2 = edgenn_smlabb((int32_t)x23, (int32_t)wh, a2);",
                  f"{ind}    a3 = edgenn_smlatt((int32_t)x23, (int32_t)wh, a3);",
                  f"{ind}}}"]
    return "\n".join(lines)


def _q(text: str) -> str:
    return '"' + text + '\\n\\t"'


def _quad_asm(g: Geometry, rect: tuple[int, int, int, int] | None = None) -> str:
    """The window's taps of one 4-channel group as one asm statement: 3 loads (pipelined),
    2 SXTB16, 4 SMLABB / SMLATT per tap; immediate offsets within a kernel row, the row
    pointers stepped between rows by ADDW. ``rect`` (ky0, ky1, kx0, kx1): only those taps
    (a border window; p and wp then point at tap (ky0, kx0))."""
    c = g.out_c
    ky0, ky1, kx0, kx1 = rect or (0, g.k_h, 0, g.k_w)
    lines = []
    for ky in range(ky0, ky1):
        for kx in range(kx1 - kx0):
            xo, wo = 2 * kx * g.dil_w * c, kx * c
            lines += [_q(f"ldr %[x01], [%[p], #{xo}]"), _q(f"ldr %[x23], [%[p], #{xo + 4}]"),
                      _q(f"ldr %[q], [%[wp], #{wo}]"), _q("sxtb16 %[wl], %[q]"),
                      _q("sxtb16 %[wh], %[q], ror #8"),
                      _q("smlabb %[a0], %[x01], %[wl], %[a0]"),
                      _q("smlatt %[a1], %[x01], %[wl], %[a1]"),
                      _q("smlabb %[a2], %[x23], %[wh], %[a2]"),
                      _q("smlatt %[a3], %[x23], %[wh], %[a3]")]
        if ky + 1 < ky1:
            lines += [_q(f"addw %[p], %[p], #{2 * g.dil_h * g.in_w * c}"),
                      _q(f"addw %[wp], %[wp], #{g.k_w * c}")]
    body = "\n            ".join(lines)
    return f"""        uint32_t x01, x23, q, wl, wh;
        __asm__(
            {body}
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p] "+r"(p),
              [wp] "+r"(wp), [x01] "=&r"(x01), [x23] "=&r"(x23), [q] "=&r"(q), [wl] "=&r"(wl),
              [wh] "=&r"(wh)
            :
            : "cc", "memory");"""


def asm_fits(g: Geometry) -> bool:
    """Do the asm's immediate offsets fit LDR's 12 bits?"""
    c = g.out_c
    return (2 * (g.k_w - 1) * g.dil_w * c + 4 <= 4095 and (g.k_w - 1) * c <= 4095
            and 2 * g.dil_h * g.in_w * c <= 4095 and g.k_w * c <= 4095)


MAX_RECTS = 16  # border rectangles with their own unrolled code; more: the generic loop


def _ranges(n_out: int, stride: int, pad: int, k: int, dil: int, n_in: int
            ) -> list[tuple[int, int]]:
    """(k0, k1) of the in-bounds taps of every output position along one axis."""
    out = []
    for o in range(n_out):
        i0 = o * stride - pad
        ks = [t for t in range(k) if 0 <= i0 + t * dil < n_in]
        out.append((ks[0], ks[-1] + 1) if ks else (0, 0))
    return out


def border_rects(g: Geometry) -> list[tuple[int, int, int, int]]:
    """The distinct non-empty, non-full tap rectangles of the layer's border windows, when
    few enough to unroll each (else [])."""
    ys = set(_ranges(g.out_h, g.stride_h, g.pad_t, g.k_h, g.dil_h, g.in_h))
    xs = set(_ranges(g.out_w, g.stride_w, g.pad_l, g.k_w, g.dil_w, g.in_w))
    rects = sorted({(y0, y1, x0, x1) for y0, y1 in ys for x0, x1 in xs
                    if y1 > y0 and x1 > x0 and (y0, y1, x0, x1) != (0, g.k_h, 0, g.k_w)})
    return rects if len(rects) <= MAX_RECTS else []


def _rect_fns(g: Geometry, start: str, store: str, rects: list[tuple[int, int, int, int]]
              ) -> str:
    """@P@_rect<i>: all channels of a border pixel whose taps are rects[i], unrolled."""
    c = g.out_c
    out = []
    for i, rect in enumerate(rects):
        y0, y1, x0, x1 = rect
        taps = [((ky - y0) * g.dil_h * g.in_w * c + (kx - x0) * g.dil_w * c,
                 ((ky - y0) * g.k_w + kx - x0) * c)
                for ky in range(y0, y1) for kx in range(x0, x1)]
        out.append(f"""static void @P@_rect{i}(const int16_t *p0, const int8_t *w0,
    const int32_t *r, const int64_t *b, int16_t *o)
{{
    for (int c = 0; c < {c}; c += 4, r += 16, b += 4, o += 4) {{
        const int16_t *p = p0 + c;
        const int8_t *wp = w0 + c;
{start}
#if EDGENN_HAVE_DSP
{_quad_asm(g, rect)}
#else
{_quad(taps, "        ")}
#endif
{store}
    }}
}}""")
    return "\n\n".join(out)


def _edge_call(g: Geometry, rects: list[tuple[int, int, int, int]]) -> str:
    """C calling the border pixel's code: its rectangle's unrolled function, else @P@_edge."""
    src = (f"in + ((iy0 + ky0 * {g.dil_h}) * {g.in_w} + ix0 + kx0 * {g.dil_w}) * {g.out_c}")
    wsrc = f"w + (ky0 * {g.k_w} + kx0) * {g.out_c}"
    generic = f"@P@_edge({src}, {wsrc}, r, b, o, ky1 - ky0, kx1 - kx0);"
    if not rects:
        return "            " + generic
    cases = "\n".join(
        f"            if (ky0 == {y0} && ky1 == {y1} && kx0 == {x0} && kx1 == {x1}) "
        f"{{ @P@_rect{i}({src}, {wsrc}, r, b, o); continue; }}"
        for i, (y0, y1, x0, x1) in enumerate(rects))
    return cases + "\n            " + generic


def generate(g: Geometry, mode: int) -> str:
    c = g.out_c
    row = g.in_w * c
    taps = [(ky * g.dil_h * row + kx * g.dil_w * c, (ky * g.k_w + kx) * c)
            for ky in range(g.k_h) for kx in range(g.k_w)]
    # the bias starts the sums in the narrow and FOLDED modes; the other wide ones start at 0
    start = ("        int32_t a0 = r[0], a1 = r[4], a2 = r[8], a3 = r[12];"
             if mode in (NARROW, FOLDED) else "        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;")
    rects = border_rects(g)
    store = """        o[0] = @P@_out(a0, r, b);
        o[1] = @P@_out(a1, r + 4, b + 1);
        o[2] = @P@_out(a2, r + 8, b + 2);
        o[3] = @P@_out(a3, r + 12, b + 3);"""
    return f"""
/* dwconv_s16_gen: {g.in_h}x{g.in_w}x{c} -> {g.out_h}x{g.out_w}, {g.k_h}x{g.k_w},
 * stride {g.stride_h},{g.stride_w}, dilation {g.dil_h},{g.dil_w} */
{folded_fn(g) if mode == FOLDED else _epilogue_fn(mode, g)}

/* all channels of an interior pixel (p: the window's first tap, channel 0) */
static inline __attribute__((always_inline)) void @P@_inner(const int16_t *in_all,
    const int16_t *p0, const int8_t *w, const int32_t *r, const int64_t *b, int16_t *o)
{{
    (void)in_all;
    for (int c = 0; c < {c}; c += 4, r += 16, b += 4, o += 4) {{
        const int16_t *p = p0 + c;
        const int8_t *wp = w + c;
{start}
#if EDGENN_HAVE_DSP
{_quad_asm(g)}
#else
{_quad(taps, "        ")}
#endif
{store}
    }}
}}

{_rect_fns(g, start, store, rects)}

/* a border pixel: the nky x nkx rectangle of in-bounds taps from p0 / w0 */
static void @P@_edge(const int16_t *p0, const int8_t *w0, const int32_t *r,
    const int64_t *b, int16_t *o, int nky, int nkx)
{{
    for (int c = 0; c < {c}; c += 4, r += 16, b += 4, o += 4) {{
{start}
        for (int i = 0; i < nky; i++) {{
            for (int j = 0; j < nkx; j++) {{
                const int16_t *p = p0 + c + i * {g.dil_h * row} + j * {g.dil_w * c};
                const int8_t *wp = w0 + c + (i * {g.k_w} + j) * {c};
{_quad([(0, 0)], "                ")}
            }}
        }}
{store}
    }}
}}

static void @P@_dw(const int16_t *in, int16_t *out, const int8_t *w, const int32_t *r,
    const int64_t *b)
{{
    for (int oy = 0; oy < {g.out_h}; oy++) {{
        const int iy0 = oy * {g.stride_h} - {g.pad_t};
        int ky0 = 0, ky1 = {g.k_h};
        while (ky0 < {g.k_h} && iy0 + ky0 * {g.dil_h} < 0) ky0++;
        while (ky1 > ky0 && iy0 + (ky1 - 1) * {g.dil_h} >= {g.in_h}) ky1--;
        for (int ox = 0; ox < {g.out_w}; ox++) {{
            const int ix0 = ox * {g.stride_w} - {g.pad_l};
            int kx0 = 0, kx1 = {g.k_w};
            while (kx0 < {g.k_w} && ix0 + kx0 * {g.dil_w} < 0) kx0++;
            while (kx1 > kx0 && ix0 + (kx1 - 1) * {g.dil_w} >= {g.in_w}) kx1--;
            int16_t *o = out + (oy * {g.out_w} + ox) * {c};
            if (ky1 - ky0 == {g.k_h} && kx1 - kx0 == {g.k_w}) {{
                @P@_inner(in, in + (iy0 * {g.in_w} + ix0) * {c}, w, r, b, o);
                continue;
            }}
            if (ky1 <= ky0 || kx1 <= kx0) {{ /* no tap inside: the bias alone */
                @P@_edge(in, w, r, b, o, 0, 0);
                continue;
            }}
{_edge_call(g, rects)}
        }}
    }}
}}
"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph) and is_depthwise(node, graph)):
        return False
    p = prepare_conv_s16(node, graph)
    if p.out_c != p.in_c or p.out_c % 4 or p.k_h * p.k_w > MAX_TAPS:
        return False
    if not asm_fits(geometry(p)):
        return False
    return epilogue(p.requant, p.w).mode != WIDE64


class DwConvS16Gen:
    """16x8 depthwise Conv2D (multiplier 1, C % 4 == 0): generated SMLABB / SMLATT quads."""

    op = "Conv2D"
    priority = 20  # above the portable edgenn_dwconv_s16 (0)
    name = "edgenn_dwconv_s16_gen_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_conv_s16(node, graph)
        g = geometry(p)
        mode, quant, code = rescale(p)
        mode, quant = fold(p, mode, quant)  # the bias in the sum, one SMMULR (pointwise_s16)
        # [Cout, KH, KW, 1] -> [KH, KW, Cout], each run of 4 channels in pair order
        w = pair_order(np.ascontiguousarray(
            p.w[..., 0].transpose(1, 2, 0).astype(np.int8)))
        body = generate(g, mode)
        name = "dws16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
        guard = name.upper() + "_DEFINED"
        code += (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n"
                 "static inline __attribute__((always_inline)) void @P@_dw(const int16_t *in,"
                 " int16_t *out)\n{\n"
                 f"    {name}_dw(in, out, @P@_w, @P@_quant, @P@_bias);\n}}\n")
        return KernelCall(
            call=generated("dw", self.name, IN0, OUT0),
            sources=("edgenn_conv_s16_mac.h",),
            arrays=(CArray("w", "int8_t", w.ravel()), CArray("quant", "int32_t", quant)),
            comment=f"16x8 depthwise {g.in_h}x{g.in_w}x{g.in_c}, {g.k_h}x{g.k_w} stride "
                    f"{g.stride_h},{g.stride_w}: SMLABB/SMLATT quads",
            code=code)


register_kernel(DwConvS16Gen())
