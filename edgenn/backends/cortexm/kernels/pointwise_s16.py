"""Fast 16x8 pointwise Conv2D (1x1, stride 1, no padding, one group; int16 activations, int8
weights) for DSP cores, generated for the layer's shape; bit-exact with TFLite Micro's int16
``ConvPerChannel`` like ``conv_s16_gemm``, which it takes over from for these layers.

The block is the int8 pointwise kernel's (``pointwise``): 2 output pixels x 4 channels = 8
accumulators per k pair, pixels read straight from the input. No widening is needed: one
32-bit load of an int16 pixel gives the SMLAD operand (x[k], x[k + 1]). The weights stay int8
in flash, reordered at build time so that each word holds, for a k pair and a channel pair
(A, B), the bytes ``wA[k], wB[k], wA[k + 1], wB[k + 1]``: SXTB16 gives A's pair, SXTB16
ROR 8 B's. Per k pair: 3 loads (x of both pixels, one weight word), 2 SXTB16, 4 SMLAD, one
more weight word (a lone load: the 14 registers are all taken), 2 SXTB16, 4 SMLAD = 18 cycles
for 16 MACs; the gemm kernel copies a patch per pixel first. An odd K's last pair is one
LDRH (its weight bytes of the pad element are 0). An odd pixel count runs its last pixel in
1 x 4 blocks (11 cycles per 8 MACs).

The sums and the rescale are ``conv_s16_gemm``'s (``rescale``: TFLite's wrapping int32 sum
started at the int32 bias, or the bound-checked int32 sum of an int64 bias with one SMLAL),
and so is the per-output epilogue C (``_epilogue_fn``): requantization is written once.
"""

from __future__ import annotations

import hashlib

import numpy as np

from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv_s16 import INT32_MAX, WIDE64, epilogue, is_s16
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    SHIFTED,
    SHIFTED_HI,
    Geometry,
    _clamp,
    _epilogue_fn,
    geometry,
    pack_weights,
    rescale,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvS16Params, prepare_conv_s16

FOLDED = 5  # SHIFTED_HI with the bias started in the int32 sum: one SMMULR (:func:`fold`)
GROUP = 4  # channels per block
MAX_CIN = 1984  # pixel b's loads: [xp, #2 Cin + offset], offset < 64 in the chunk loop
KP_UNROLL = 48  # k pairs emitted straight; beyond, a loop over chunks of KP_CHUNK
KP_CHUNK = 16
RESCALE = {SHIFTED: ", one-SMLAL rescale", SHIFTED_HI: ", one-SMLAL rescale",
           FOLDED: ", bias in the sum, one-SMMULR rescale"}


def group_weights(w: np.ndarray) -> np.ndarray:
    """int8 [Cout, K] -> uint32 words [channel group][k pair][channel pair in the group]
    (``pack_weights``'s words; missing channels of the last group are 0)."""
    co, k = w.shape
    s = (k + 1) // 2
    groups = -(-co // GROUP)
    words = pack_weights(w).reshape(-1, s)  # [channel pair][k pair]
    full = np.zeros((2 * groups, s), np.uint32)
    full[:words.shape[0]] = words
    return np.ascontiguousarray(full.reshape(groups, 2, s).transpose(0, 2, 1)).ravel()


def fold(p: ConvS16Params, mode: int, quant: np.ndarray) -> tuple[int, np.ndarray]:
    """FOLDED records {bias, m', 0, 0} of a SHIFTED_HI layer when no sum plus its channel's
    bias can leave int32, else (mode, quant) unchanged.

    SHIFTED_HI computes hi32(acc m' + b') with b' = bias m' + 2^31 (``wide_records`` for
    total <= 32: b' = (bias m + 2^(t-1)) << (32 - t)), i.e. hi32((acc + bias) m' + 2^31):
    SMMULR of (acc + bias) and m', exact when acc + bias is an int32 for every possible acc
    (|acc| <= 32768 sum|w|, the bound ``conv_s16.epilogue`` checked for WIDE32).
    """
    if mode != SHIFTED_HI:
        return mode, quant
    co = p.w.shape[0]
    bias = np.broadcast_to(np.asarray(p.requant.bias, np.int64), (co,))
    bound = 32768 * np.abs(p.w.reshape(co, -1).astype(np.int64)).sum(axis=1)
    if np.any(bound + np.abs(bias) > INT32_MAX):
        return mode, quant
    rec = quant.reshape(-1, 4).copy()
    rec[:co, 0] = bias
    return FOLDED, rec.ravel()


def _folded_fn(g: Geometry) -> str:
    """@P@_out of the FOLDED mode (the bias is already in the sum)."""
    lines = ["    int32_t v = edgenn_smmulr(acc, r[1]);", *_clamp("v", g)]
    return ("static inline __attribute__((always_inline)) int16_t @P@_out(int32_t acc, "
            "const int32_t *r, const int64_t *b)\n{\n    (void)b;\n"
            + "\n".join(lines) + "\n    return (int16_t)v;\n}")


def _q(line: str) -> str:
    return f'"{line}\\n\\t"'


def _pair(xoff: int, boff: int, two: bool, half: bool) -> list[str]:
    """One k pair of a block: x at [xp, #xoff] (pixel b at #boff; LDRH for an odd K's last
    element), the channel pairs' weight words post-incremented from wp."""
    ld = "ldrh" if half else "ldr"
    lines = ["ldr %[u], [%[wp]], #4", f"{ld} %[xa], [%[xp], #{xoff}]"]
    if two:
        lines.append(f"{ld} %[xb], [%[xp], #{boff}]")
    for i, (c0, c1) in enumerate(((0, 1), (2, 3))):
        if i:
            lines.append("ldr %[u], [%[wp]], #4")
        lines += ["sxtb16 %[v], %[u], ror #8", "sxtb16 %[u], %[u]"]
        for c, reg in ((c0, "u"), (c1, "v")):
            lines.append(f"smlad %[a{c}], %[xa], %[{reg}], %[a{c}]")
            if two:
                lines.append(f"smlad %[b{c}], %[xb], %[{reg}], %[b{c}]")
    return [_q(x) for x in lines]


def _kloop(cin: int, two: bool) -> list[str]:
    """The k pairs: straight up to KP_UNROLL, else the remainder, a loop of chunks that
    advances xp and compares it with ``end`` (memory; the temporaries are free there), then
    an odd K's last element."""
    kp = (cin + 1) // 2
    b = 2 * cin
    if kp <= KP_UNROLL:
        return [ln for j in range(kp)
                for ln in _pair(4 * j, b + 4 * j, two, cin % 2 == 1 and j == cin // 2)]
    first = (cin // 2) % KP_CHUNK
    lines = [ln for j in range(first) for ln in _pair(4 * j, b + 4 * j, two, False)]
    if first:
        lines.append(_q(f"add %[xp], %[xp], #{4 * first}"))
    lines.append('"1:\\n\\t"')
    lines += [ln for j in range(KP_CHUNK) for ln in _pair(4 * j, b + 4 * j, two, False)]
    lines += [_q(f"add %[xp], %[xp], #{4 * KP_CHUNK}"), _q("ldr %[u], %[end]"),
              _q("cmp %[xp], %[u]"), _q("bne 1b")]
    if cin % 2:
        lines += _pair(0, b, two, True)
    return lines


def _block_fn(cin: int, two: bool) -> str:
    """@P@_blk2 / @P@_blk1: the sums of one channel group for 2 (1) pixels at x; *w moves on."""
    accs = ["a0", "a1", "a2", "a3"] + (["b0", "b1", "b2", "b3"] if two else [])
    name = "blk2" if two else "blk1"
    kp = (cin + 1) // 2
    looped = kp > KP_UNROLL
    asm = "\n        ".join(_kloop(cin, two))
    init = "\n".join(f"    int32_t {a} = r[{4 * int(a[1])}];" for a in accs)
    outs = ", ".join(f'[{a}] "+r"({a})' for a in accs)
    outs += ', [xp] "+r"(xp), [wp] "+r"(wp), [xa] "=&r"(xa), [u] "=&r"(u), [v] "=&r"(v)'
    if two:
        outs += ', [xb] "=&r"(xb)'
    stores = "\n".join(f"    acc[{i}] = {a};" for i, a in enumerate(accs))
    npx = 2 if two else 1
    fallback = f"""    for (int j = 0; j < {GROUP * npx}; j++) acc[j] = r[4 * (j % {GROUP})];
    for (int k = 0; k < {kp}; k++) {{
        for (int j = 0; j < {npx}; j++) {{
            const int16_t *xj = x + j * {cin} + 2 * k;
            const int32_t x0 = xj[0], x1 = 2 * k + 1 < {cin} ? xj[1] : 0;
            for (int c = 0; c < {GROUP}; c++) {{
                const uint32_t word = w[k * 2 + c / 2];
                const int32_t w0 = (int8_t)(word >> (8 * (c & 1)));
                const int32_t w1 = (int8_t)(word >> (16 + 8 * (c & 1)));
                acc[j * {GROUP} + c] = (int32_t)((uint32_t)acc[j * {GROUP} + c]
                    + (uint32_t)(x0 * w0) + (uint32_t)(x1 * w1));
            }}
        }}
    }}
    *wq = w + {2 * kp};"""
    end = f"    const int16_t *end = x + {2 * (cin // 2)};\n" if looped else ""
    end_in = '[end] "m"(end)' if looped else ""
    return f"""static inline __attribute__((always_inline)) void @P@_{name}(const int16_t *x,
    const uint32_t **wq, const int32_t *r, int32_t *acc)
{{
    const uint32_t *w = *wq;
#if EDGENN_HAVE_DSP
{init}
{end}    const int16_t *xp = x;
    const uint32_t *wp = w;
    uint32_t xa, u, v{', xb' if two else ''};
    __asm__ volatile(
        {asm}
        : {outs}
        : {end_in}
        : "cc", "memory");
{stores}
    *wq = wp;
#else
{fallback}
#endif
}}"""


def _stores(g: Geometry, nch: int, two: bool) -> str:
    out = []
    for j in range(2 if two else 1):
        for c in range(nch):
            out.append(f"        o[{j * g.out_c + c}] = @P@_out(acc[{GROUP * j + c}], "
                       f"r + {4 * c}, b + {c});")
    return "\n".join(out)


def generate(g: Geometry, mode: int) -> str:
    """The layer's C (``@P@`` = a name shared by layers whose code is the same)."""
    cin, co, npix = g.in_c, g.out_c, g.npix
    full, tail = divmod(co, GROUP)

    def groups(two: bool) -> str:
        blk = "blk2" if two else "blk1"
        text = ""
        if full:
            step = f"r += {4 * GROUP}, b += {GROUP}, o += {GROUP}"
            text += f"""    for (int c = 0; c < {full}; c++, {step}) {{
        int32_t acc[{2 * GROUP}];
        @P@_{blk}(x, &w, r, acc);
{_stores(g, GROUP, two)}
    }}
"""
        if tail:
            text += f"""    {{
        int32_t acc[{2 * GROUP}];
        @P@_{blk}(x, &w, r, acc);
{_stores(g, tail, two)}
    }}
"""
        return text

    odd = ""
    if npix % 2:
        odd = f"""    {{
    const int16_t *x = in + {(npix - 1) * cin};
    int16_t *o = out + {(npix - 1) * co};
    const uint32_t *w = w0;
    const int32_t *r = r0;
    const int64_t *b = b0;
{groups(False)}    }}
"""
    return f"""
/* pointwise_s16: {npix} pixels x {cin} -> {co}, 2x4 SMLAD blocks */
{_folded_fn(g) if mode == FOLDED else _epilogue_fn(mode, g)}

{_block_fn(cin, True)}

{_block_fn(cin, False) if npix % 2 else ""}

static void @P@_conv(const int16_t *in, int16_t *out, const uint32_t *w0,
    const int32_t *r0, const int64_t *b0)
{{
    (void)b0;
    for (int p = 0; p < {npix - 1}; p += 2) {{
    const int16_t *x = in + p * {cin};
    int16_t *o = out + p * {co};
    const uint32_t *w = w0;
    const int32_t *r = r0;
    const int64_t *b = b0;
{groups(True)}    }}
{odd}}}
"""


def shared_code(g: Geometry, mode: int) -> str:
    """The generated functions under a name derived from their text, defined once per model."""
    body = generate(g, mode)
    name = "pws16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int16_t *in, "
            "int16_t *out)\n{\n"
            f"    {name}_conv(in, out, @P@_w, @P@_quant, @P@_bias);\n}}\n")


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph)) or is_depthwise(node, graph):
        return False
    if int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4 or w.shape[1] != 1 or w.shape[2] != 1:
        return False
    if w.shape[3] > MAX_CIN:
        return False
    p = prepare_conv_s16(node, graph)
    if (p.stride_h, p.stride_w, p.pad_t, p.pad_l) != (1, 1, 0, 0):
        return False
    if (p.out_h, p.out_w) != (p.in_h, p.in_w):
        return False
    return epilogue(p.requant, p.w).mode != WIDE64


class PointwiseS16:
    """16x8 1x1 Conv2D: the int8 pointwise kernel's 2x4 SMLAD block on int16 pixels."""

    op = "Conv2D"
    priority = 25  # above conv_s16_gemm (20), which takes every other 16x8 convolution
    name = "edgenn_conv_s16_1x1_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_conv_s16(node, graph)
        g = geometry(p)
        co = g.out_c
        ep = epilogue(p.requant, p.w)
        mode, quant, code = rescale(p)
        mode, quant = fold(p, mode, quant)
        groups = -(-co // GROUP)
        quant = np.concatenate([quant, np.zeros(4 * GROUP * groups - quant.size, np.int32)])
        w = p.w.reshape(co, -1).astype(np.int8)
        return KernelCall(
            call="{prefix}_conv({in0}, {out0});",
            sources=("edgenn_conv_s16_mac.h",),
            arrays=(CArray("w", "uint32_t", group_weights(w)),
                    CArray("quant", "int32_t", quant)),
            kernel_name=self.name,
            comment=f"16x8 1x1 {g.npix} pixels x {g.in_c} -> {co}: 2x4 SMLAD blocks, "
                    f"{ep.mode_name} sums{RESCALE.get(mode, '')}",
            code=code + shared_code(g, mode),
        )


register_kernel(PointwiseS16())
