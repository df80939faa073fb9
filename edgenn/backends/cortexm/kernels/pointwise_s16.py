"""Fast 16x8 pointwise Conv2D (1x1, stride 1, no padding, one group; int16 activations, int8
weights) for DSP cores, generated for the layer's shape; bit-exact with TFLite Micro's int16
``ConvPerChannel`` like ``conv_s16_gemm``, which it takes over from for these layers (the gemm
kernel copies a patch per pixel first).

The block is the int8 pointwise kernel's (``pointwise``): 2 output pixels x 4 channels = 8
accumulators per k pair, pixels read straight from the input. No widening is needed: one
32-bit load of an int16 pixel gives the SMLAD operand (x[k], x[k + 1]); an odd K's last
element is one LDRH (its pad weights are 0). The weights stay int8 in flash, reordered at
build time so that each word holds, for a k pair and a channel pair (A, B), the bytes
``wA[k], wB[k], wA[k + 1], wB[k + 1]`` (SXTB16 gives A's pair, SXTB16 ROR 8 B's).

Two forms, by the layer's rescale (``conv_s16_gemm.rescale``, requantization written once):

* FOLDED (:func:`fold`: an int64 bias whose sum with any accumulator stays int32, the usual
  case): the sum starts at the bias and one SMMULR rescales it. Every channel group of a
  pixel pair runs in one asm statement (:func:`_row_fn`) from one stream per group
  [starts, weights, multipliers]; the weights are in the int8 kernel's offset form (A's bytes
  + 128: the raw word multiplies by 256 wB + wA + 128, its SXTB16 ROR 8 by wB), so a k pair
  is 4 loads, 2 SXTB16 and 8 SMLAD = 15 cycles for 16 MACs, and 128 x each pixel's sum
  (computed once per pixel pair) leaves the even channels' start values.
* otherwise (TFLite's wrapping int32 sum of an int32 bias, or the one-SMLAL form of a wide
  one): the sums of a group in asm (:func:`_block_fn`: 18 cycles per k pair, SXTB16 of both
  halves) and ``conv_s16_gemm``'s per-output epilogue C.

An odd pixel count runs its last pixel in 1 x 4 blocks.
"""

from __future__ import annotations

import hashlib

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels import pointwise_s16_wide as wide
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
MAX_COUT = 2040  # pixel b's stores: strh [xp, #2 (Cout + c)], 12-bit immediate
MAX_CIN = 1984  # pixel b's loads: [xp, #2 Cin + offset], offset < 64 in the chunk loop
KP_UNROLL = 48  # k pairs emitted straight; beyond, a loop over chunks of KP_CHUNK
KP_CHUNK = 16
WIDE = 6  # FOLDED on widened weights, straight-line groups (``pointwise_s16_wide``)
RESCALE = {SHIFTED: ", one-SMLAL rescale", SHIFTED_HI: ", one-SMLAL rescale",
           FOLDED: ", bias in the sum, one-SMMULR rescale",
           WIDE: ", widened weights, bias in the sum, one-SMMULR rescale"}


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


def folded_fn(g: Geometry) -> str:
    """@P@_out of the FOLDED mode (the bias is already in the sum)."""
    lines = ["    int32_t v = edgenn_smmulr(acc, r[1]);", *_clamp("v", g)]
    return ("static inline __attribute__((always_inline)) int16_t @P@_out(int32_t acc, "
            "const int32_t *r, const int64_t *b)\n{\n    (void)b;\n"
            + "\n".join(lines) + "\n    return (int16_t)v;\n}")


def _q(line: str) -> str:
    return f'"{line}\\n\\t"'


def _pair(xoff: int, boff: int, two: bool, half: bool, seed: bool = False,
          offset: bool = False) -> list[str]:
    """One k pair of a block: x at [xp, #xoff] (pixel b at #boff; LDRH for an odd K's last
    element), the channel pairs' weight words post-incremented from wp; ``seed``: pixel b's
    accumulators start from pixel a's initial values (the group's first pair).

    ``offset`` (the row kernel's words, :func:`offset_words`): the raw word multiplies the
    pixel pair by 256 wB + wA + 128, SXTB16 ROR 8 of it by wB, so 4 loads, 2 SXTB16 and
    8 SMLAD = 15 cycles; the even channels are untangled after the sums."""
    ld = "ldrh" if half else "ldr"
    if offset:
        lines = ["ldr %[u], [%[wp]], #4", "ldr %[v], [%[wp]], #4",
                 f"{ld} %[xa], [%[xp], #{xoff}]"]
        if two:
            lines.append(f"{ld} %[xb], [%[xp], #{boff}]")
        for c0, reg in ((0, "u"), (2, "v")):
            c1 = c0 + 1
            lines.append(f"smlad %[a{c0}], %[xa], %[{reg}], %[a{c0}]")
            if two:
                lines.append(f"smlad %[b{c0}], %[xb], %[{reg}], %[b{c0}]")
            lines.append(f"sxtb16 %[{reg}], %[{reg}], ror #8")
            if two and seed:
                lines.append(f"smlad %[b{c1}], %[xb], %[{reg}], %[a{c1}]")
            lines.append(f"smlad %[a{c1}], %[xa], %[{reg}], %[a{c1}]")
            if two and not seed:
                lines.append(f"smlad %[b{c1}], %[xb], %[{reg}], %[b{c1}]")
        return [_q(x) for x in lines]
    lines = ["ldr %[u], [%[wp]], #4", f"{ld} %[xa], [%[xp], #{xoff}]"]
    if two:
        lines.append(f"{ld} %[xb], [%[xp], #{boff}]")
    for i, (c0, c1) in enumerate(((0, 1), (2, 3))):
        if i:
            lines.append("ldr %[u], [%[wp]], #4")
        lines += ["sxtb16 %[v], %[u], ror #8", "sxtb16 %[u], %[u]"]
        for c, reg in ((c0, "u"), (c1, "v")):
            if two and seed:
                lines.append(f"smlad %[b{c}], %[xb], %[{reg}], %[a{c}]")
            lines.append(f"smlad %[a{c}], %[xa], %[{reg}], %[a{c}]")
            if two and not seed:
                lines.append(f"smlad %[b{c}], %[xb], %[{reg}], %[b{c}]")
    return [_q(x) for x in lines]


def _kloop(cin: int, two: bool, seed: bool = False) -> list[str]:
    """The k pairs: straight up to KP_UNROLL, else the remainder, a loop of chunks that
    advances xp and compares it with ``end`` (memory; the temporaries are free there), then
    an odd K's last element."""
    kp = (cin + 1) // 2
    b = 2 * cin
    if kp <= KP_UNROLL:
        return [ln for j in range(kp) for ln in
                _pair(4 * j, b + 4 * j, two, cin % 2 == 1 and j == cin // 2, seed and j == 0,
                      seed)]
    first = (cin // 2) % KP_CHUNK
    lines = [ln for j in range(first)
             for ln in _pair(4 * j, b + 4 * j, two, False, seed and j == 0, seed)]
    if seed and two and not first:  # (the even channels' b accumulators are set already)
        lines += [_q(f"mov %[b{c}], %[a{c}]") for c in (1, 3)]
    if first:
        lines.append(_q(f"add %[xp], %[xp], #{4 * first}"))
    lines.append('"1:\\n\\t"')
    lines += [ln for j in range(KP_CHUNK)
              for ln in _pair(4 * j, b + 4 * j, two, False, False, seed)]
    lines += [_q(f"add %[xp], %[xp], #{4 * KP_CHUNK}"), _q("ldr %[u], %[end]"),
              _q("cmp %[xp], %[u]"), _q("bne 1b")]
    if cin % 2:
        lines += _pair(0, b, two, True, False, seed)
    if seed:  # the row kernel keeps xp for the next group
        lines.append(_q(f"sub %[xp], %[xp], #{4 * (cin // 2)}"))
    return lines


def _block_fn(g: Geometry, two: bool) -> str:
    """@P@_blk2 / @P@_blk1: the sums of one channel group for 2 (1) pixels at x, into acc
    (the layers whose rescale stays ``conv_s16_gemm``'s C)."""
    cin = g.in_c
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
    ins = ['[end] "m"(end)'] if looped else []
    npx = 2 if two else 1
    after = "\n".join(f"    acc[{i}] = {a};" for i, a in enumerate(accs))
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
    }}"""
    end = f"    const int16_t *end = x + {2 * (cin // 2)};\n" if looped else ""
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
        : {", ".join(ins)}
        : "cc", "memory");
{after}
#else
{fallback}
#endif
    *wq = w + {2 * kp};
}}"""


def _row_epilogue(g: Geometry, nch: int, two: bool) -> list[str]:
    """The FOLDED rescale of one group in the row kernel: the m' words follow the group's
    weights in the stream; xa holds the output pointer (kept in memory during the sums)."""
    lines = [f"sub %[{p}{c}], %[{p}{c}], %[{p}{c + 1}], lsl #8"
             for p in ("ab" if two else "a") for c in (0, 2)]
    lines.append("ldr %[xa], %[om]")
    relu = g.lo == 0 and g.hi >= 32767
    lo = g.lo > -32768 and not relu
    hi = g.hi < 32767
    if lo:
        lines += [f"movw %[u], #{g.lo & 0xFFFF}", f"movt %[u], #{(g.lo >> 16) & 0xFFFF}"]
    if hi:
        lines += [f"movw %[v], #{g.hi & 0xFFFF}", f"movt %[v], #{(g.hi >> 16) & 0xFFFF}"]
    for c in range(GROUP):
        lines.append("ldr %[xb], [%[wp]], #4")
        if c >= nch:
            continue
        regs = [(f"%[a{c}]", 2 * c)] + ([(f"%[b{c}]", 2 * (g.out_c + c))] if two else [])
        for reg, _ in regs:
            lines.append(f"smmulr {reg}, {reg}, %[xb]")
        for reg, off in regs:
            lines.append(f"usat {reg}, #15, {reg}" if relu else f"ssat {reg}, #16, {reg}")
            if lo:
                lines += [f"cmp {reg}, %[u]", "it lt", f"movlt {reg}, %[u]"]
            if hi:
                lines += [f"cmp {reg}, %[v]", "it gt", f"movgt {reg}, %[v]"]
            lines.append(f"strh {reg}, [%[xa], #{off}]")
    return [_q(x) for x in lines]


def _row_fn(g: Geometry, two: bool) -> str:
    """@P@_row2 / @P@_row1 (FOLDED): every channel group of 2 (1) pixels at x in one asm
    statement, from the stream [4 biases, weights, 4 m'] per group."""
    cin, co = g.in_c, g.out_c
    full, tail = divmod(co, GROUP)
    kp = (cin + 1) // 2
    accs = ["a0", "a1", "a2", "a3"] + (["b0", "b1", "b2", "b3"] if two else [])
    name = "row2" if two else "row1"

    def group(nch: int) -> list[str]:
        init = [f"ldr %[a{c}], [%[wp]], #4" for c in range(GROUP)] + ["ldr %[u], %[sa]"]
        if two:
            init += ["ldr %[v], %[sb]", "sub %[b0], %[a0], %[v]", "sub %[b2], %[a2], %[v]"]
        init += ["sub %[a0], %[a0], %[u]", "sub %[a2], %[a2], %[u]"]
        return [_q(x) for x in init] + _kloop(cin, two, seed=True) + _row_epilogue(g, nch, two)

    lines: list[str] = []
    if full:
        lines += ['"3:\\n\\t"', *group(GROUP), _q("add %[xa], %[xa], #8"),
                  _q("str %[xa], %[om]")]
        if full > 1:
            lines += [_q("ldr %[u], %[oend]"), _q("cmp %[xa], %[u]"), _q("bne 3b")]
    if tail:
        lines += group(tail)
    asm = "\n        ".join(lines)
    outs = ", ".join(f'[{a}] "=&r"({a})' for a in accs)
    outs += (', [xp] "+r"(xp), [wp] "+r"(wp), [xa] "=&r"(xa), [xb] "=&r"(xb), '
             '[u] "=&r"(u), [v] "=&r"(v), [om] "+m"(o)')
    ins = ['[oend] "m"(oend)', '[sa] "m"(sa)'] + (['[sb] "m"(sb)'] if two else []) + (
        ['[end] "m"(end)'] if kp > KP_UNROLL else [])
    sums = _sums_c(cin, two)
    npx = 2 if two else 1
    stride = 2 * GROUP + 2 * kp
    decl = ", ".join(accs)
    return f"""static inline __attribute__((always_inline)) void @P@_{name}(const int16_t *x,
    const uint32_t *w, int16_t *o)
{{
#if EDGENN_HAVE_DSP
    const int16_t *xp = x, *end = x + {2 * (cin // 2)};
    const uint32_t *wp = w;
    int16_t *const oend = o + {GROUP * full};
    uint32_t sa = 0{", sb = 0" if two else ""};  /* 128 x the pixels' sums */
{sums}
    int32_t {decl};
    uint32_t xa, xb, u, v;
    (void)end; (void)oend;
    __asm__ volatile(
        {asm}
        : {outs}
        : {", ".join(ins)}
        : "cc", "memory");
    (void)xb;
#else
    for (int g = 0; g < {full + (1 if tail else 0)}; g++, w += {stride}, o += {GROUP}) {{
        for (int c = 0; c < {GROUP} && {GROUP} * g + c < {co}; c++) {{
            const int32_t m = (int32_t)w[{GROUP + 2 * kp} + c];
            /* the stream's offset form undone: A's bytes ^ 0x80, A's start - 256 bias_B */
            const uint32_t flip = (c & 1) ? 0u : 0x00800080u;
            for (int j = 0; j < {npx}; j++) {{
                uint32_t acc = (c & 1) ? w[c] : w[c] - 256u * w[c + 1];
                for (int k = 0; k < {kp}; k++) {{
                    const int16_t *xj = x + j * {cin} + 2 * k;
                    const int32_t x0 = xj[0], x1 = 2 * k + 1 < {cin} ? xj[1] : 0;
                    const uint32_t word = w[{GROUP} + k * 2 + c / 2] ^ flip;
                    acc += (uint32_t)(x0 * (int8_t)(word >> (8 * (c & 1))))
                        + (uint32_t)(x1 * (int8_t)(word >> (16 + 8 * (c & 1))));
                }}
                o[j * {co} + c] = @P@_out((int32_t)acc, &m - 1, 0);
            }}
        }}
    }}
#endif
}}"""


SUM_UNROLL = 32  # input words summed by straight code per pixel; more: a loop


def _sums_c(cin: int, two: bool) -> str:
    """C setting sa (sb) to 128 x the sum of pixel a's (b's) elements: one SMLAD by
    (128, 128) per word, in locals (sa and sb are memory operands of the asm)."""
    words = cin // 2
    out = []
    for j, sv in enumerate(["sa", "sb"][:2 if two else 1]):
        t = f"t{sv[1]}"
        base = f"x + {j * cin}"
        out.append(f"    int32_t {t} = 0;")
        step = f"{t} = edgenn_smlad(edgenn_s16_load32({base} + 2 * i), 0x00800080u, {t});"
        if words <= SUM_UNROLL:
            out += [f"    {step.replace('2 * i', str(2 * i))}" for i in range(words)]
        else:
            out.append(f"    for (int i = 0; i < {words}; i++) {step}")
        if cin % 2:
            out.append(f"    {t} += 128 * (int32_t)x[{j * cin + cin - 1}];")
        out.append(f"    {sv} = (uint32_t){t};")
    return "\n".join(out)


def folded_stream(words: np.ndarray, quant: np.ndarray, kp: int) -> np.ndarray:
    """The FOLDED row kernel's stream: per group [KA0, bias1, KA2, bias3, its 2 kp offset
    weight words, 4 m'], KA = bias_A + 256 bias_B (mod 2^32): with the initial sum
    KA - 128 sum(x), accA - (accB << 8) is bias_A + dot_A (:func:`_pair`'s offset form)."""
    groups = words.size // (2 * kp)
    rec = quant.reshape(-1, 4)[:GROUP * groups].astype(np.int64)
    bias = rec[:, 0].reshape(groups, 2, 2)  # [group][channel pair][A, B]
    ka = bias.copy()
    ka[:, :, 0] = bias[:, :, 0] + 256 * bias[:, :, 1]
    start = (ka.reshape(groups, GROUP) % 2**32).astype(np.uint32)
    mult = (rec[:, 1].reshape(groups, GROUP) % 2**32).astype(np.uint32)
    offset = words.reshape(groups, 2 * kp) ^ np.uint32(0x00800080)
    return np.concatenate([start, offset, mult], axis=1).astype(np.uint32).ravel()


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
    if mode == WIDE:
        return wide.generate(g, folded_fn(g))

    def call(two: bool, nch: int) -> str:
        blk = "blk2" if two else "blk1"
        return f"        @P@_{blk}(x, &w, r, acc);\n{_stores(g, nch, two)}"

    def groups(two: bool) -> str:
        text = ""
        if full:
            step = f"r += {4 * GROUP}, b += {GROUP}, o += {GROUP}"
            text += f"""    for (int c = 0; c < {full}; c++, {step}) {{
        int32_t acc[{2 * GROUP}];
{call(two, GROUP)}
    }}
"""
        if tail:
            text += f"""    {{
        int32_t acc[{2 * GROUP}];
{call(two, tail)}
    }}
"""
        return text

    blocks = "\n\n".join(_block_fn(g, two) for two in (True, False) if two or npix % 2)
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
    if mode == FOLDED:
        odd_call = (f"    @P@_row1(in + {(npix - 1) * cin}, w0, out + {(npix - 1) * co});"
                    if npix % 2 else "")
        return f"""
/* pointwise_s16: {npix} pixels x {cin} -> {co}, 2x4 SMLAD blocks, FOLDED rescale in asm */
{folded_fn(g)}

{_row_fn(g, True)}

{_row_fn(g, False) if npix % 2 else ""}

static void @P@_conv(const int16_t *in, int16_t *out, const uint32_t *w0,
    const int32_t *r0, const int64_t *b0)
{{
    (void)r0; (void)b0;
    for (int p = 0; p < {npix - 1}; p += 2) @P@_row2(in + p * {cin}, w0, out + p * {co});
{odd_call}
}}
"""
    return f"""
/* pointwise_s16: {npix} pixels x {cin} -> {co}, 2x4 SMLAD blocks */
{_epilogue_fn(mode, g)}

{blocks}

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
    quant = "0" if mode in (FOLDED, WIDE) else "@P@_quant"
    name = "pws16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int16_t *in, "
            "int16_t *out)\n{\n"
            f"    {name}_conv(in, out, @P@_w, {quant}, @P@_bias);\n}}\n")


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph)) or is_depthwise(node, graph):
        return False
    if int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4 or w.shape[1] != 1 or w.shape[2] != 1:
        return False
    if w.shape[3] > MAX_CIN or w.shape[0] > MAX_COUT:
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
        if mode == FOLDED and wide.fits(g):
            mode = WIDE
        groups = -(-co // GROUP)
        quant = np.concatenate([quant, np.zeros(4 * GROUP * groups - quant.size, np.int32)])
        w = p.w.reshape(co, -1).astype(np.int8)
        words = group_weights(w)
        arrays = ((CArray("w", "uint32_t", wide.stream(w, quant)),) if mode == WIDE else
                  (CArray("w", "uint32_t", folded_stream(words, quant, (g.in_c + 1) // 2)),)
                  if mode == FOLDED else
                  (CArray("w", "uint32_t", words), CArray("quant", "int32_t", quant)))
        return KernelCall(
            call=generated("conv", self.name, IN0, OUT0),
            sources=("edgenn_conv_s16_mac.h",),
            arrays=arrays,
            comment=f"16x8 1x1 {g.npix} pixels x {g.in_c} -> {co}: 2x4 SMLAD blocks, "
                    f"{ep.mode_name} sums{RESCALE.get(mode, '')}",
            code=code + shared_code(g, mode),
        )


register_kernel(PointwiseS16())
