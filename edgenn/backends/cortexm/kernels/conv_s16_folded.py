"""The FOLDED form of the fast 16x8 Conv2D (``conv_s16_gemm``): layers whose int64 bias
provably fits the int32 sum (``pointwise_s16.fold``, from the record's weights and biases),
the usual case of converter-made models.

Why a second form: ``conv_s16_gemm``'s general code rescales each output in C from an int32
array of accumulators (one SMLAL and a 64-bit shift each, with the call, stores and reloads
around it), which on short windows costs more than the MACs (a 3x3 conv of one input channel:
5 k pairs, ~20 cycles of MACs per output against ~25 of rescale). Here:

* the sums start at the int32 biases (the first k pair adds them) and the rescale is one
  SMMULR by m' (FOLDED: hi32((acc + bias) m' + 2^31)), then SSAT 16 (USAT 15 for a ReLU)
  and the bounds inside int16, in the same asm statement as the MACs; every full channel
  pair of a 4-pixel block runs in one asm loop (conv_gemm's ``blkall`` shape), the
  outputs stored by STRH at immediate offsets;
* the weights are widened to int16 pairs in flash (two words per channel pair and k pair),
  so a k pair of the 4x2 block is two load bursts and 8 SMLAD, 16 cycles for 16 MACs (the
  int8 weights' SXTB16 split costs 17); compact code (``codesize.is_compact``) keeps the int8
  weights and conv_gemm's CGEMM_STEP;
* the patch copy batches the loads of adjacent element pairs four at a time (a load burst
  pipelines, 1 cycle a load after the first), for the interior windows and, from a dense
  zero-padded gather, the border ones.

Layers with fewer than 4 output pixels, or whose STRH offsets would leave the 12-bit
immediate, stay on the general form.
"""

from __future__ import annotations

import hashlib

import numpy as np

from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernels.conv_gemm import Plan, _add, _loop_shape, _mac_asm
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    MAX_UNROLLED,
    PIXELS,
    Geometry,
    element_offsets,
    needs_window,
    pack_weights,
)

MAX_STORE = 4095  # STRH immediate: pixel 3's second channel at 2 (3 Cout + 1)


def fits(g: Geometry) -> bool:
    """Whether a FOLDED layer takes this form."""
    return g.npix >= PIXELS and 2 * (3 * g.out_c + 1) <= MAX_STORE


def widened(compact: bool | None = None) -> bool:
    """Widened weights (16 cycles a k pair, twice the weights' flash) unless compact code."""
    return not (is_compact() if compact is None else compact)


def weights(w: np.ndarray, wide: bool) -> np.ndarray:
    """int8 [Cout, K] -> uint32 words: widened [channel pair][k pair][channel] with
    w[c][2p] | w[c][2p + 1] << 16 (missing channels and the pad element of an odd K: 0),
    else ``conv_s16_gemm.pack_weights``'s int8 words."""
    if not wide:
        return pack_weights(w)
    co, k = w.shape
    s = (k + 1) // 2
    mat = np.zeros((co + (co & 1), 2 * s), np.int64)
    mat[:co, :k] = w
    words = (mat[:, 0::2] & 0xFFFF) | ((mat[:, 1::2] & 0xFFFF) << 16)  # [c][k pair]
    words = words.reshape(-1, 2, s).transpose(0, 2, 1)  # [channel pair][k pair][channel]
    return np.ascontiguousarray(words).astype(np.uint32).ravel()


def _q(text: str) -> str:
    return '"' + text + '\\n\\t"'


# --------------------------------------------------------------------------- patch copy
def _copy_fn(name: str, offs: np.ndarray, n: int, loop: tuple[int, int, int] | None) -> str:
    """C copying elements 0..n-1 (source offsets ``offs``) into d[4 p] (pair p); ``loop`` =
    (rows, source step, words per row): the code of one row run in a loop."""
    head = (f"static inline __attribute__((always_inline)) void {name}("
            "const int16_t *__restrict s, uint32_t *__restrict d)\n{\n")
    ind = "    "
    lines = []
    if loop is not None:
        rows, sstep, dstep = loop
        lines.append(f"    for (int r = 0; r < {rows}; r++, s += {sstep}, d += {dstep}) {{")
        ind = "        "
    words: list[int] = []
    others: list[int] = []
    for p in range((n + 1) // 2):
        e0, e1 = 2 * p, 2 * p + 1
        (words if e1 < n and offs[e1] == offs[e0] + 1 else others).append(p)
    # why batches of 4: back-to-back loads pipeline (1 cycle each after the first)
    for start in range(0, len(words), 4):
        batch = words[start:start + 4]
        names = ", ".join(f"v{i}" for i in range(len(batch)))
        where = ", ".join(str(int(offs[2 * p])) for p in batch)
        lines.append(f"{ind}{{")
        lines.append(f"{ind}    uint32_t {names};")
        lines.append(f"{ind}    CGEMM_LDR{len(batch)}(s, {where}, {names});")
        lines += [f"{ind}    d[{PIXELS * p}] = v{i};" for i, p in enumerate(batch)]
        lines.append(f"{ind}}}")
    for p in others:
        o0 = int(offs[2 * p])
        if 2 * p + 1 < n:
            lines.append(f"{ind}d[{PIXELS * p}] = (uint32_t)(uint16_t)s[{o0}] | "
                         f"((uint32_t)(uint16_t)s[{int(offs[2 * p + 1])}] << 16);")
        else:  # the pad element of an odd K (its weights are 0)
            lines.append(f"{ind}d[{PIXELS * p}] = (uint32_t)(uint16_t)s[{o0}];")
    if loop is not None:
        lines.append("    }")
    return head + "\n".join(lines) + "\n}"


def _copies(g: Geometry) -> tuple[str, str]:
    """@P@_cpi (interior window from the input) and @P@_cpw (the dense border window)."""
    row = g.k_w * g.in_c
    offs = element_offsets(g)
    dense = np.arange(g.k, dtype=np.int64)
    if g.pairs <= MAX_UNROLLED or row % 2 or g.k_h == 1:
        return (_copy_fn("@P@_cpi", offs, g.k, None),
                _copy_fn("@P@_cpw", dense, g.k, None) if needs_window(g) else "")
    # rows of even length: pairs never straddle rows, one row's code in a loop
    dstep = PIXELS * row // 2
    cpi = _copy_fn("@P@_cpi", offs, row, (g.k_h, g.dil_h * g.in_w * g.in_c, dstep))
    cpw = _copy_fn("@P@_cpw", dense, row, (g.k_h, row, dstep)) if needs_window(g) else ""
    return cpi, cpw


def _patch_fn(g: Geometry) -> str:
    s = g.pairs
    row = g.k_w * g.in_c
    src = f"in + (iy0 * {g.in_w} + ix0) * {g.in_c}"
    if not needs_window(g):
        body = f"    @P@_cpi({src}, d);"
    else:
        iy_max = g.in_h - 1 - (g.k_h - 1) * g.dil_h
        ix_max = g.in_w - 1 - (g.k_w - 1) * g.dil_w
        body = f"""    if (iy0 >= 0 && iy0 <= {iy_max} && ix0 >= 0 && ix0 <= {ix_max}) {{
        @P@_cpi({src}, d);
        return;
    }}
    /* border: a dense window whose padding taps (and the pad element of an odd K) are 0 */
    int16_t *win = (int16_t *)(buf + {PIXELS * s});
    win[{2 * s - 1}] = 0;
    for (int ky = 0; ky < {g.k_h}; ky++) {{
        const int iy = iy0 + ky * {g.dil_h};
        int16_t *wr = win + ky * {row};
        if (iy < 0 || iy >= {g.in_h}) {{
            for (int i = 0; i < {row}; i++) wr[i] = 0;
            continue;
        }}
        const int16_t *sr = in + iy * {g.in_w * g.in_c};
        for (int kx = 0; kx < {g.k_w}; kx++) {{
            const int ix = ix0 + kx * {g.dil_w};
            int16_t *wt = wr + kx * {g.in_c};
            if (ix < 0 || ix >= {g.in_w}) {{
                for (int i = 0; i < {g.in_c}; i++) wt[i] = 0;
            }} else {{
                for (int i = 0; i < {g.in_c}; i++) wt[i] = sr[ix * {g.in_c} + i];
            }}
        }}
    }}
    @P@_cpw(win, d);"""
    cpi, cpw = _copies(g)
    return f"""{cpi}

{cpw}

/* the patch of output pixel (oy, ox) into slot j (word 4 p + j = its pair p) */
static void @P@_patch(const int16_t *in, uint32_t *buf, int j, int oy, int ox)
{{
    uint32_t *d = buf + j;
    const int iy0 = oy * {g.stride_h} - {g.pad_t};
    const int ix0 = ox * {g.stride_w} - {g.pad_l};
{body}
}}"""


# --------------------------------------------------------------------------- MAC + rescale
def _wfirst(xo: tuple[int, ...] = (0, 4, 8, 12)) -> list[str]:
    """The first k pair on widened weights (pixel j's pair at [xp, #xo[j]]): the sums
    start at the records' biases."""
    a, b, c, d = xo
    return [_q(t) for t in (
        "ldr %[xa], %[rq]", "ldr %[a0], [%[xa]]", "ldr %[a1], [%[xa], #16]",
        "ldr %[wt], [%[wp]]", "ldr %[wv], [%[wp], #4]", f"ldr %[xa], [%[xp], #{a}]",
        f"ldr %[xb], [%[xp], #{b}]", f"ldr %[c0], [%[xp], #{c}]", f"ldr %[d0], [%[xp], #{d}]",
        "smlad %[c1], %[c0], %[wv], %[a1]", "smlad %[c0], %[c0], %[wt], %[a0]",
        "smlad %[d1], %[d0], %[wv], %[a1]", "smlad %[d0], %[d0], %[wt], %[a0]",
        "smlad %[b0], %[xb], %[wt], %[a0]", "smlad %[b1], %[xb], %[wv], %[a1]",
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]")]


def wstep(xo: tuple[int, ...], wo: int) -> list[str]:
    """One k pair on widened weights (pixel j's pair at [xp, #xo[j]], the channels' words at
    [wp, #wo]): a burst of 4 loads, 4 SMLAD, 2 loads, 4 SMLAD."""
    a, b, c, d = xo
    return [_q(t) for t in (
        f"ldr %[wt], [%[wp], #{wo}]", f"ldr %[wv], [%[wp], #{wo + 4}]",
        f"ldr %[xa], [%[xp], #{a}]", f"ldr %[xb], [%[xp], #{b}]",
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]",
        "smlad %[b0], %[xb], %[wt], %[b0]", "smlad %[b1], %[xb], %[wv], %[b1]",
        f"ldr %[xa], [%[xp], #{c}]", f"ldr %[xb], [%[xp], #{d}]",
        "smlad %[c0], %[xa], %[wt], %[c0]", "smlad %[c1], %[xa], %[wv], %[c1]",
        "smlad %[d0], %[xb], %[wt], %[d0]", "smlad %[d1], %[xb], %[wv], %[d1]")]


def _slots(xo: int) -> tuple[int, int, int, int]:
    """The patch's word offsets of a k pair's 4 pixels (word 4 p + j)."""
    return (xo, xo + 4, xo + 8, xo + 12)


def direct_mac(offsets: list[int], step: int) -> list[str]:
    """Straight-line K of one block whose pixels read the (padded) input directly: k pair i
    of pixel j at [xp, #offsets[i] + j step]; wp then moves past the pair's weights."""
    px = [tuple(o + j * step for j in range(PIXELS)) for o in offsets]
    asm = _wfirst(px[0])
    for i in range(1, len(offsets)):
        asm += wstep(px[i], 8 * i)
    return asm + _add("wp", 8 * len(offsets))


def mac_asm(s: int, wide: bool) -> list[str]:
    """The K loop of one block (conv_gemm's ``_mac_asm`` shape: first step, straight steps,
    a loop entered at step ``skip``); leaves wp at the next channel pair's weights."""
    if not wide:
        return _mac_asm(s, Plan(0, False, PIXELS))
    xstep, wbytes = 16, 8
    kl = _loop_shape(s)
    asm = _wfirst()
    for i in range(1, kl.straight + 1):
        asm += wstep(_slots(xstep * i), wbytes * i)
    if not kl.loops:
        return asm
    start = kl.straight + 1 - kl.skip
    asm += _add("xp", xstep * start) + _add("wp", wbytes * start)
    if kl.skip:
        asm.append(_q("b 2f"))
    asm.append('"1:\\n\\t"')
    for i in range(kl.u):
        if kl.skip and i == kl.skip:
            asm.append('"2:\\n\\t"')
        asm += wstep(_slots(xstep * i), wbytes * i)
    asm += [_q(f"add %[xp], %[xp], #{xstep * kl.u}"), _q(f"add %[wp], %[wp], #{wbytes * kl.u}"),
            _q("ldr %[xa], %[end]"), _q("cmp %[xp], %[xa]"), _q("bne 1b")]
    return asm


def rescale_asm(g: Geometry, nch: int) -> list[str]:
    """SMMULR by m' (records {bias, m', 0, 0} at rq), the clamp and the STRHs of the block's
    first ``nch`` channels (output pointer at oq: pixel 0, the pair's first channel)."""
    lines = ["ldr %[xp], %[rq]", "ldr %[wp], %[oq]", "ldr %[xa], [%[xp], #4]"]
    if nch == 2:
        lines.append("ldr %[xb], [%[xp], #20]")
    regs = [(f"{r}{h}", j, h) for h in range(nch) for j, r in enumerate("abcd")]
    lines += [f"smmulr %[{r}], %[{r}], %[{'xb' if h else 'xa'}]" for r, _, h in regs]
    relu = g.lo == 0 and g.hi >= 32767
    lo = g.lo > -32768 and not relu
    hi = g.hi < 32767
    if lo:
        lines += [f"movw %[xa], #{g.lo & 0xFFFF}", f"movt %[xa], #{(g.lo >> 16) & 0xFFFF}"]
    if hi:
        lines += [f"movw %[xb], #{g.hi & 0xFFFF}", f"movt %[xb], #{(g.hi >> 16) & 0xFFFF}"]
    for r, j, h in regs:
        a = f"%[{r}]"
        lines.append(f"usat {a}, #15, {a}" if relu else f"ssat {a}, #16, {a}")
        if lo:
            lines += [f"cmp {a}, %[xa]", "it lt", f"movlt {a}, %[xa]"]
        if hi:
            lines += [f"cmp {a}, %[xb]", "it gt", f"movgt {a}, %[xb]"]
        lines.append(f"strh {a}, [%[wp], #{2 * (j * g.out_c + h)}]")
    return [_q(t) for t in lines]


_DECLS = """    int32_t a0, a1, b0, b1, c0, c1, d0, d1;
    uint32_t xa, xb, wv, wt;"""


def patch_mac(s: int, wide: bool) -> list[str]:
    """The K of one block on the patch, leaving wp at the next channel pair's weights."""
    words = (2 if wide else 1) * s
    return mac_asm(s, wide) + ([] if _loop_shape(s).loops else _add("wp", 4 * words))


def block_fns(g: Geometry, mac: list[str], x_words: int, wpp: int) -> str:
    """@P@_blkall (every full channel pair of a block) and @P@_blk1 (an odd Cout's last
    channel): ``mac`` the block's K (it leaves wp at the next pair's weights), ``x_words``
    the K loop's end (words from x), ``wpp`` weight words per channel pair; the portable
    twins call @P@_blkc."""
    co = g.out_c
    full = co // 2
    text = ""
    if full:
        body = "\n        ".join(
            ['"9:\\n\\t"', *mac, _q("str %[wp], %[ws]"),
             *rescale_asm(g, 2), _q("add %[xp], %[xp], #32"), _q("str %[xp], %[rq]"),
             _q("add %[wp], %[wp], #4"), _q("str %[wp], %[oq]"), _q("ldr %[xa], %[rend]"),
             _q("cmp %[xp], %[xa]"), _q("ldr %[wp], %[ws]"), _q("ldr %[xp], %[xq]"),
             _q("bne 9b")])
        text += f"""
#if EDGENN_HAVE_DSP
/* all {full} channel pairs of a block: MAC + rescale + store */
static inline __attribute__((always_inline)) void @P@_blkall(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int16_t *o)
{{
{_DECLS}
    const uint32_t *const end = x + {x_words};
    const uint32_t *const x0 = x;
    const int32_t *const rend = r + {8 * full};
    const uint32_t *ws;
    __asm__ volatile(
        {body}
        : CGEMM_OPERANDS, [rq] "+m"(r), [oq] "+m"(o), [ws] "=m"(ws)
        : [end] "m"(end), [rend] "m"(rend), [xq] "m"(x0)
        : "cc", "memory");
}}
#else
static inline __attribute__((always_inline)) void @P@_blkall(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int16_t *o)
{{
    for (int c = 0; c < {full}; c++, w += {wpp}, r += 8, o += 2) @P@_blkc(x, w, r, o, 2);
}}
#endif
"""
    if co % 2:
        body = "\n        ".join([*mac, *rescale_asm(g, 1)])
        text += f"""
#if EDGENN_HAVE_DSP
/* the last channel of an odd Cout (its pair's second channel has zero weights) */
static inline __attribute__((always_inline)) void @P@_blk1(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int16_t *o)
{{
{_DECLS}
    const uint32_t *end = x + {x_words};
    __asm__ volatile(
        {body}
        : CGEMM_OPERANDS
        : [end] "m"(end), [rq] "m"(r), [oq] "m"(o)
        : "cc", "memory");
}}
#else
#define @P@_blk1(x, w, r, o) @P@_blkc(x, w, r, o, 1)
#endif
"""
    return text


def portable_fn(g: Geometry, wide: bool, xword: str) -> str:
    """@P@_blkc: the block's sums and rescale in C (cores without the DSP extension);
    ``xword``: C of pixel j's k pair p (an uint32_t)."""
    s, co = g.pairs, g.out_c
    if wide:
        step = ("for (int h = 0; h < 2; h++) acc[2 * j + h] = "
                "edgenn_smlad(xv, w[2 * p + h], acc[2 * j + h]);")
    else:
        step = ("acc[2 * j] = edgenn_smlad(xv, edgenn_sxtb16(w[p]), acc[2 * j]); "
                "acc[2 * j + 1] = edgenn_smlad(xv, edgenn_sxtb16(w[p] >> 8), acc[2 * j + 1]);")
    return f"""#if !EDGENN_HAVE_DSP
static inline __attribute__((always_inline)) void @P@_blkc(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int16_t *o, int nch)
{{
    int32_t acc[8];
    for (int j = 0; j < 8; j++) acc[j] = r[4 * (j & 1)];
    for (int p = 0; p < {s}; p++)
        for (int j = 0; j < {PIXELS}; j++) {{
            const uint32_t xv = {xword};
            {step}
        }}
    for (int j = 0; j < {PIXELS}; j++)
        for (int h = 0; h < nch; h++) o[j * {co} + h] = @P@_out(acc[2 * j + h], r + 4 * h, 0);
}}
#endif"""


def generate(g: Geometry, out_fn: str, wide: bool) -> str:
    """The layer's C (``@P@`` = a name shared by layers whose code is the same); ``out_fn``:
    the FOLDED ``@P@_out`` (``pointwise_s16.folded_fn``) of the portable twin."""
    s, co, npix = g.pairs, g.out_c, g.npix
    full = co // 2
    wpp = (2 if wide else 1) * s
    calls = []
    if full:
        calls.append("        @P@_blkall(buf, w0, r0, o);")
    if co % 2:
        calls.append(f"        @P@_blk1(buf, w0 + {full * wpp}, r0 + {8 * full}, o + {2 * full});")
    call_code = "\n".join(calls)
    return f"""
/* conv_s16_gemm FOLDED: {g.in_h}x{g.in_w}x{g.in_c} -> {g.out_h}x{g.out_w}x{co},
 * {g.k_h}x{g.k_w}, stride {g.stride_h},{g.stride_w}, dilation {g.dil_h},{g.dil_w},
 * K = {g.k} ({s} pairs), {"widened" if wide else "int8"} weights */
{_patch_fn(g)}

{out_fn}

{portable_fn(g, wide, "x[4 * p + j]")}

{block_fns(g, patch_mac(s, wide), PIXELS * s, wpp)}

static void @P@_conv(const int16_t *in, int16_t *out, void *scratch, const uint32_t *w0,
    const int32_t *r0)
{{
    uint32_t *buf = (uint32_t *)scratch;
    for (int pa = 0; pa < {npix}; pa += {PIXELS}) {{
        const int p0 = pa < {npix - PIXELS} ? pa : {npix - PIXELS};
        int oy = p0 / {g.out_w}, ox = p0 - oy * {g.out_w};
        for (int j = 0; j < {PIXELS}; j++) {{
            @P@_patch(in, buf, j, oy, ox);
            if (++ox == {g.out_w}) {{ ox = 0; oy++; }}
        }}
        int16_t *o = out + p0 * {co};
{call_code}
    }}
}}
"""


def shared_code(g: Geometry, out_fn: str, wide: bool) -> str:
    """The generated functions under a name derived from their text, defined once per model."""
    body = generate(g, out_fn, wide)
    name = "cs16f_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int16_t *in, "
            "int16_t *out, void *scratch)\n{\n"
            f"    {name}_conv(in, out, scratch, @P@_w, @P@_quant);\n}}\n")
