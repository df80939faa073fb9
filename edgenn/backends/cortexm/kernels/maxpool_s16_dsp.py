"""int16 MaxPool2D for DSP cores, generated for the layer's shape: 2 channels per word,
SSUB16 + SEL per tap (the int8 ``fast_pool``'s SSUB8 + SEL, two lanes wide).

Windows wholly inside the input take the taps as immediate offsets from one pointer (the
window unrolled, channel words in a loop); border windows are clipped exactly as TFLite
Micro's reference MaxPool does, in a generic loop. The fused activation clamps with the
same SIMD max / min (only bounds inside int16), and the in-place requantization TFLite
applies when input and output quantization differ is appended as in the portable kernel.
Claims even channel counts (every pixel's channels are whole words).
"""

from __future__ import annotations

import hashlib

from edgenn.backends.cortexm.ccall import IN0, OUT0, CCall, Generated
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import is_int16
from edgenn.backends.cortexm.kernels.pooling import requant_tail
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.pooling import prepare_pool

MAX_TAPS = 64  # taps of an unrolled interior window


def _pack(v: int) -> str:
    h = v & 0xFFFF
    return f"0x{h | (h << 16):08x}u"


def generate(h: int, w: int, c: int, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int,
             pt: int, pl: int, lo: int, hi: int) -> str:
    words = c // 2
    row = w * c  # int16 elements per input row
    taps = [ky * row // 2 + kx * words for ky in range(kh) for kx in range(kw)]
    inner = "\n".join(f"            m = ms16_max(m, p[{t}]);" for t in taps[1:])
    clamp = []
    if lo > -32768:
        clamp.append(f"m = ms16_max(m, {_pack(lo)});")
    if hi < 32767:
        clamp.append(f"m = ms16_min(m, {_pack(hi)});")
    clamp_code = " ".join(clamp)
    return f"""/* maxpool_s16_dsp: {h}x{w}x{c} -> {oh}x{ow}, {kh}x{kw} stride {sh},{sw} */
static void @P@_pool(const int16_t *in, int16_t *out)
{{
    const uint32_t *src = (const uint32_t *)(const void *)in;
    uint32_t *o = (uint32_t *)(void *)out;
    for (int oy = 0; oy < {oh}; oy++) {{
        const int iy = oy * {sh} - {pt};
        const int y0 = iy > 0 ? iy : 0, y1 = iy + {kh} < {h} ? iy + {kh} : {h};
        for (int ox = 0; ox < {ow}; ox++) {{
            const int ix = ox * {sw} - {pl};
            const int x0 = ix > 0 ? ix : 0, x1 = ix + {kw} < {w} ? ix + {kw} : {w};
            if (y1 - y0 == {kh} && x1 - x0 == {kw}) {{
                const uint32_t *p = src + (y0 * {w} + x0) * {words};
                for (int i = 0; i < {words}; i++, p++, o++) {{
            uint32_t m = p[0];
{inner}
            {clamp_code}
            *o = m;
                }}
                continue;
            }}
            for (int i = 0; i < {words}; i++, o++) {{
                uint32_t m = 0x80008000u; /* -32768 in both lanes */
                for (int y = y0; y < y1; y++) {{
                    for (int x = x0; x < x1; x++) {{
                        m = ms16_max(m, src[(y * {w} + x) * {words} + i]);
                    }}
                }}
                {clamp_code}
                *o = m;
            }}
        }}
    }}
}}
"""


HELPERS = """#ifndef MS16_HELPERS_DEFINED
#define MS16_HELPERS_DEFINED
/* per int16 lane max / min: SSUB16 sets the GE flags, SEL picks a's lane where a >= b */
static inline __attribute__((always_inline)) uint32_t ms16_max(uint32_t a, uint32_t b)
{
#if EDGENN_HAVE_DSP
    uint32_t r;
    __asm__("ssub16 %0, %1, %2\\n\\tsel %0, %1, %2" : "=&r"(r) : "r"(a), "r"(b) : "cc");
    return r;
#else
    const int16_t a0 = (int16_t)(a & 0xffffu), a1 = (int16_t)(a >> 16);
    const int16_t b0 = (int16_t)(b & 0xffffu), b1 = (int16_t)(b >> 16);
    const uint32_t l0 = (uint16_t)(a0 > b0 ? a0 : b0), l1 = (uint16_t)(a1 > b1 ? a1 : b1);
    return l0 | (l1 << 16);
#endif
}
static inline __attribute__((always_inline)) uint32_t ms16_min(uint32_t a, uint32_t b)
{
    return ms16_max(a, b) ^ a ^ b;
}
#endif
"""


class MaxPoolS16Dsp:
    """int16 MaxPool2D, 2 lanes per SSUB16 + SEL (DSP cores, even channel counts)."""

    op = "MaxPool2D"
    priority = 10  # above the portable edgenn_maxpool_s16 (0)
    name = "edgenn_maxpool_s16_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int16(node, graph):
            return False
        kh, kw = prepare_pool(node, graph).kernel
        return graph.tensor(node.inputs[0]).shape[3] % 2 == 0 and kh * kw <= MAX_TAPS

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_pool(node, graph)
        h, w, c = p.in_h, p.in_w, p.in_c
        body = generate(h, w, c, p.out_h, p.out_w, p.k_h, p.k_w, p.stride_h, p.stride_w,
                        p.pad_t, p.pad_l, int(p.act_min), int(p.act_max))
        name = "ms16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
        guard = name.upper() + "_DEFINED"
        code = HELPERS + f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}#endif\n"
        n = p.out_h * p.out_w * c
        call = (CCall(Generated(f"{name}_pool", self.name, per_layer=False), (IN0, OUT0)),
                *requant_tail(p.requant, OUT0, n, DType.INT16))
        sources = ("edgenn_s16_misc_quant.c",) if p.requant is not None else ()
        return KernelCall(call, sources, code=code,
                          comment=f"{h}x{w}x{c} -> {p.out_h}x{p.out_w}x{c}, SIMD max x2")


register_kernel(MaxPoolS16Dsp())
