"""The widened-weight form of the 16x8 pointwise kernel (``pointwise_s16``'s FOLDED layers with
a short K): the weights pre-widened to int16 pairs in flash, every channel group of a pixel
pair in one straight-line asm statement.

Why a second form: the offset form of ``pointwise_s16`` saves two SXTB16 a k pair (15 cycles
for 16 MACs) but pays, per group, the untangling SUBs, the pixel sums' start values and, per
pixel pair, the 128 x sum of each pixel; its group loop costs 8 cycles a group. On a short K
(a 16 -> 16 1x1: 8 k pairs) those fixed costs outweigh the saving, and the per-output
epilogue dominates: this form does a k pair in 16 cycles (one load burst of x_a, x_b and two
channels' weight words, 4 SMLAD, a burst of the other two channels' words, 4 SMLAD), needs no
sums, starts the sums at the biases within the first load burst, and addresses the output
with immediates (no loop, one output-pointer load a group).

The stream, per group of up to 4 channels: [bias c (int32), for every k pair the channels'
words (w[c, 2j] | w[c, 2j + 1] << 16), m' c]. The rescale is FOLDED's (``pointwise_s16.fold``
proves the bias-started int32 sum cannot overflow for any int16 input): SMMULR by m', SSAT 16
(USAT 15 for a ReLU) and the bounds inside int16.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.kernels.conv_s16_gemm import Geometry

GROUP = 4  # channels per group
MAX_PAIRS = 16  # k pairs: beyond, the offset form's saving (1 cycle a k pair) wins
MAX_BLOCKS = 64  # groups x k pairs emitted straight (about 60 bytes of code each)


def fits(g: Geometry) -> bool:
    """Whether a FOLDED 1x1 layer takes this form (its code is straight-line: bounded)."""
    kp = (g.in_c + 1) // 2
    groups = -(-g.out_c // GROUP)
    return kp <= MAX_PAIRS and kp * groups <= MAX_BLOCKS and 4 * g.out_c <= 4095


def stream(w: np.ndarray, quant: np.ndarray) -> np.ndarray:
    """uint32 stream of int8 weights [Cout, K] and FOLDED records {bias, m', 0, 0}."""
    co, k = w.shape
    kp = (k + 1) // 2
    wide = np.zeros((co, 2 * kp), np.int64)
    wide[:, :k] = w
    words = (wide[:, 0::2] & 0xFFFF) | ((wide[:, 1::2] & 0xFFFF) << 16)  # [c][k pair]
    rec = quant.reshape(-1, 4)[:co].astype(np.int64)
    parts = []
    for c0 in range(0, co, GROUP):
        c1 = min(co, c0 + GROUP)
        parts += [rec[c0:c1, 0] % 2**32, words[c0:c1].T.ravel(), rec[c0:c1, 1] % 2**32]
    return np.concatenate(parts).astype(np.uint32)


def _q(line: str) -> str:
    return f'"{line}\\n\\t"'


def _kpair(j: int, nch: int, cin: int, two: bool) -> list[str]:
    """One k pair: two load bursts of (x, weights) and the SMLADs; the first k pair seeds
    pixel b's sums from pixel a's start values (the biases)."""
    half = cin % 2 == 1 and j == cin // 2
    ld = "ldrh" if half else "ldr"
    lines = [f"{ld} %[xa], [%[xp], #{4 * j}]"]
    if two:
        lines.append(f"{ld} %[xb], [%[xp], #{2 * cin + 4 * j}]")
    for base in range(0, nch, 2):
        chans = list(range(base, min(nch, base + 2)))
        regs = ["u", "v"][:len(chans)]
        lines += [f"ldr %[{r}], [%[wp]], #4" for r in regs]
        for c, r in zip(chans, regs, strict=True):
            if two and j == 0:
                lines.append(f"smlad %[b{c}], %[xb], %[{r}], %[a{c}]")
            lines.append(f"smlad %[a{c}], %[xa], %[{r}], %[a{c}]")
            if two and j:
                lines.append(f"smlad %[b{c}], %[xb], %[{r}], %[b{c}]")
    return lines


def _epilogue(g: Geometry, g0: int, nch: int, two: bool, end: bool = False) -> list[str]:
    """SMMULR by the group's m' (three loaded with the output pointer in one burst), the clamp,
    STRH at immediate offsets from the pixel pair's output pointer; ``end``: the pixel loop's
    end pointer into v as well (behind the fourth m' when v is free, a pipelined load)."""
    mregs = ["u", "v", "xb"]
    lines = ["ldr %[xa], %[om]"]
    lines += [f"ldr %[{mregs[c]}], [%[wp]], #4" for c in range(min(nch, 3))]
    pix = ["a", "b"] if two else ["a"]
    for c in range(min(nch, 3)):
        lines += [f"smmulr %[{p}{c}], %[{p}{c}], %[{mregs[c]}]" for p in pix]
    relu = g.lo == 0 and g.hi >= 32767
    lo = g.lo > -32768 and not relu
    hi = g.hi < 32767
    if nch == 4:
        lines.append("ldr %[u], [%[wp]], #4")
        if end and not hi:
            lines.append("ldr %[v], %[xend]")
            end = False
        lines += [f"smmulr %[{p}3], %[{p}3], %[u]" for p in pix]
    if lo:
        lines += [f"movw %[u], #{g.lo & 0xFFFF}", f"movt %[u], #{(g.lo >> 16) & 0xFFFF}"]
    if hi:
        lines += [f"movw %[v], #{g.hi & 0xFFFF}", f"movt %[v], #{(g.hi >> 16) & 0xFFFF}"]
    for c in range(nch):
        for j, p in enumerate(pix):
            reg = f"%[{p}{c}]"
            lines.append(f"usat {reg}, #15, {reg}" if relu else f"ssat {reg}, #16, {reg}")
            if lo:
                lines += [f"cmp {reg}, %[u]", "it lt", f"movlt {reg}, %[u]"]
            if hi:
                lines += [f"cmp {reg}, %[v]", "it gt", f"movgt {reg}, %[v]"]
            lines.append(f"strh {reg}, [%[xa], #{2 * (j * g.out_c + g0 + c)}]")
    if end:
        lines.append("ldr %[v], %[xend]")
    return lines


def _row_fn(g: Geometry, two: bool) -> str:
    """@P@_wrows: every pixel pair, all channel groups of each in one loop trip of one asm
    statement; @P@_wrow1: the last pixel of an odd count."""
    cin, co = g.in_c, g.out_c
    kp = (cin + 1) // 2
    accs = ["a0", "a1", "a2", "a3"] + (["b0", "b1", "b2", "b3"] if two else [])
    lines: list[str] = ["1:"] if two else []
    for g0 in range(0, co, GROUP):
        nch = min(GROUP, co - g0)
        lines += [f"ldr %[a{c}], [%[wp]], #4" for c in range(nch)]
        for j in range(kp):
            lines += _kpair(j, nch, cin, two)
        lines += _epilogue(g, g0, nch, two, end=two and g0 + GROUP >= co)
    if two:  # the next pixel pair: pointers on, the stream from its start
        size = 4 * (2 * co + kp * co)
        lines += [f"addw %[xa], %[xa], #{4 * co}", "str %[xa], %[om]",
                  f"add %[xp], %[xp], #{4 * cin}", f"subw %[wp], %[wp], #{size}",
                  "cmp %[xp], %[v]", "bne 1b"]
    asm = "\n        ".join(_q(x) for x in lines)
    outs = ", ".join(f'[{a}] "=&r"({a})' for a in accs)
    outs += (', [xp] "+r"(xp), [wp] "+r"(wp), [xa] "=&r"(xa), [xb] "=&r"(xb), [u] "=&r"(u), '
             '[v] "=&r"(v), [om] "+m"(o)')
    ins = '[xend] "m"(xend)' if two else ""
    name = "wrows" if two else "wrow1"
    npx = 2 if two else 1
    npairs = g.npix // 2
    loop_open = (f"    for (int p = 0; p < {npairs}; p++, x += {2 * cin}, o += {2 * co}) {{\n"
                 if two else "    {\n")
    return f"""static inline __attribute__((always_inline)) void @P@_{name}(const int16_t *x,
    const uint32_t *w, int16_t *o)
{{
#if EDGENN_HAVE_DSP
    const int16_t *xp = x, *const xend = x + {2 * cin * npairs};
    const uint32_t *wp = w;
    int32_t {", ".join(accs)};
    uint32_t xa, xb, u, v;
    (void)xend;
    __asm__ volatile(
        {asm}
        : {outs}
        : {ins}
        : "cc", "memory");
    (void)xa; (void)xb; (void)u; (void)v;
#else
{loop_open}    const uint32_t *w1 = w;
    for (int c0 = 0; c0 < {co}; c0 += {GROUP}) {{
        const int n = {co} - c0 < {GROUP} ? {co} - c0 : {GROUP};
        const uint32_t *m = w + n + n * {kp};
        for (int c = 0; c < n; c++) {{
            for (int j = 0; j < {npx}; j++) {{
                uint32_t acc = w[c];
                for (int k = 0; k < {kp}; k++) {{
                    const int16_t *xj = x + j * {cin} + 2 * k;
                    const uint32_t word = w[n + k * n + c];
                    acc += (uint32_t)(xj[0] * (int16_t)word);
                    if (2 * k + 1 < {cin}) acc += (uint32_t)(xj[1] * (int16_t)(word >> 16));
                }}
                o[j * {co} + c0 + c] = @P@_out((int32_t)acc, (const int32_t *)&m[c] - 1, 0);
            }}
        }}
        w = m + n;
    }}
    w = w1;
    }}
#endif
}}"""


def generate(g: Geometry, out_fn: str) -> str:
    """The layer's C: ``out_fn`` is the FOLDED @P@_out (the portable path's rescale)."""
    cin, co, npix = g.in_c, g.out_c, g.npix
    body = "    @P@_wrows(in, w0, out);\n" if npix > 1 else ""
    if npix % 2:
        body += f"    @P@_wrow1(in + {(npix - 1) * cin}, w0, out + {(npix - 1) * co});\n"
    return f"""
/* pointwise_s16: {npix} pixels x {cin} -> {co}, 2x4 SMLAD blocks on widened weights,
   FOLDED rescale in asm */
{out_fn}

{_row_fn(g, True) if npix > 1 else ""}

{_row_fn(g, False) if npix % 2 else ""}

static void @P@_conv(const int16_t *in, int16_t *out, const uint32_t *w0,
    const int32_t *r0, const int64_t *b0)
{{
    (void)r0; (void)b0;
{body}}}
"""
