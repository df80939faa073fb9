"""Fast 16x8 Conv2D (int16 activations, int8 weights, groups 1, any kernel size including
1x1) for DSP cores, generated for the layer's shape; bit-exact with TFLite Micro's int16
``ConvPerChannel`` like the portable ``edgenn_conv_s16`` it takes over from.

The MAC block is the int8 im2col GEMM's (``conv_gemm``): 4 output pixels x 2 channels,
hand-scheduled SMLAD asm (17 cycles per 16 MACs), weights one int8 word per (channel pair,
k pair) widened by SXTB16 / SXTB16 ROR 8 in registers. What differs from int8 is around it:

* the patch (word ``4 p + j`` = pixel j's int16 pair p) is copied straight from the int16
  input: a pair of elements adjacent in the input is one (possibly unaligned) word load, any
  other pair two halfword loads; no widening, no zero point (the scheme is symmetric), so
  padding taps and the pad element of an odd K are 0, as are their weights;
* the sum is TFLite's int32 one (an int32 bias: it is the first step's start) or, for an
  int64 bias, the provably exact int32 sum (``conv_s16.epilogue``'s WIDE32 mode; layers that
  need int64 sums stay on the portable kernel) followed by one SMLAL and the split 64-bit
  shift of ``edgenn_conv_s16_mac.h``.

Border windows are gathered into a dense zero-padded window first (as conv_gemm does), then
copied by the same loop. Layers with fewer than 4 output pixels repeat the last pixel in the
spare slots and store only the real ones.

That is the general code. Layers whose int64 bias plus the largest sum provably stays in
int32 (``pointwise_s16.fold``) and with at least 4 output pixels take the FOLDED forms
instead: the sums start at the biases and one SMMULR rescales them inside the asm, on
widened weights (``conv_s16_folded``: the patch; ``conv_s16_rows``: no patch, for windows of
few elements a row).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

import numpy as np

from edgenn.backends.cortexm.kernels.common import i32
from edgenn.backends.cortexm.kernels.conv_gemm import Plan, _mac_asm, arena_room
from edgenn.backends.cortexm.kernels.conv_s16 import (
    NARROW,
    WIDE64,
    epilogue,
    int64_array,
    is_s16,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvGeometry, ConvS16Params, prepare_conv_s16

SHIFTED = 3  # a WIDE32 layer whose rescale folds into one SMLAL (wide_records)
SHIFTED_HI = 4  # SHIFTED with every e == 0: the result is the high word
PIXELS = 4  # pixels per block (the 4x2 block of conv_gemm)
MAX_K = 2048  # elements per window: the patch (16 bytes per k pair) stays within 16 KB
MAX_UNROLLED = 160  # pairs copied by straight-line code; longer windows copy row by row
SMALL_SCRATCH = 4096  # bytes of patch + window always taken; more only within arena_room


@dataclass(frozen=True)
class Geometry(ConvGeometry):
    """The layer's shape (its record's ``ConvGeometry``) and output clamp, as the generators
    need them."""

    lo: int
    hi: int

    @property
    def k(self) -> int:
        return self.k_h * self.k_w * self.in_c

    @property
    def pairs(self) -> int:
        return (self.k + 1) // 2

    @property
    def npix(self) -> int:
        return self.out_h * self.out_w


def element_offsets(g: Geometry) -> np.ndarray:
    """Input offset (int16 elements) of each window element (ky, kx, ci order) from the
    window's first element."""
    ky, kx, ci = np.meshgrid(np.arange(g.k_h), np.arange(g.k_w), np.arange(g.in_c),
                             indexing="ij")
    off = ky * g.dil_h * g.in_w * g.in_c + kx * g.dil_w * g.in_c + ci
    return off.ravel().astype(np.int64)


def pack_weights(w: np.ndarray) -> np.ndarray:
    """int8 [Cout, K] -> uint32 words [channel pair][k pair]: bytes {w[c][2p], w[c+1][2p],
    w[c][2p+1], w[c+1][2p+1]} (missing channels and the pad element of an odd K: 0)."""
    co, k = w.shape
    s = (k + 1) // 2
    mat = np.zeros((co + (co & 1), 2 * s), np.int64)
    mat[:co, :k] = w
    b = mat.reshape(-1, 2, s, 2) & 0xFF  # [channel pair][channel][k pair][half]
    words = b[:, 0, :, 0] | (b[:, 1, :, 0] << 8) | (b[:, 0, :, 1] << 16) | (b[:, 1, :, 1] << 24)
    return np.ascontiguousarray(words).astype(np.uint32).ravel()


def _pair_code(offs: np.ndarray, n: int, p: int, dst: str) -> str:
    """C storing pair p of elements 0..n-1 (input offsets ``offs``) into ``dst``."""
    e0, e1 = 2 * p, 2 * p + 1
    o0 = int(offs[e0])
    if e1 < n and int(offs[e1]) == o0 + 1:
        return f"{dst} = edgenn_s16_load32(s + {o0});"
    if e1 < n:
        return (f"{dst} = (uint32_t)(uint16_t)s[{o0}] | "
                f"((uint32_t)(uint16_t)s[{int(offs[e1])}] << 16);")
    return f"{dst} = (uint32_t)(uint16_t)s[{o0}];"


def _copy_fn(g: Geometry) -> str:
    """@P@_cpi(s, d): the interior window at s into the slot at d (d[4 p] = pair p)."""
    offs = element_offsets(g)
    row = g.k_w * g.in_c
    head = ("static inline __attribute__((always_inline)) void @P@_cpi("
            "const int16_t *__restrict s, uint32_t *__restrict d)\n{\n")
    if g.pairs <= MAX_UNROLLED or row % 2:
        body = "\n".join("    " + _pair_code(offs, g.k, p, f"d[{PIXELS * p}]")
                         for p in range(g.pairs))
        return head + body + "\n}"
    # rows of even length: pairs never straddle rows, one row's code in a loop
    rpairs = row // 2
    body = "\n".join("        " + _pair_code(offs, row, p, f"d[{PIXELS * p}]")
                     for p in range(rpairs))
    return (head + f"    for (int r = 0; r < {g.k_h}; r++, s += {g.dil_h * g.in_w * g.in_c}, "
            f"d += {PIXELS * rpairs}) {{\n{body}\n    }}\n}}")


def needs_window(g: Geometry) -> bool:
    last_y = (g.out_h - 1) * g.stride_h - g.pad_t + (g.k_h - 1) * g.dil_h
    last_x = (g.out_w - 1) * g.stride_w - g.pad_l + (g.k_w - 1) * g.dil_w
    return g.pad_t > 0 or g.pad_l > 0 or last_y >= g.in_h or last_x >= g.in_w


def scratch_bytes(g: Geometry) -> int:
    """The patch (16 bytes per k pair) and the dense border window (4 bytes per k pair)."""
    return 4 * PIXELS * g.pairs + (4 * g.pairs if needs_window(g) else 0)


def _clamp(v: str, g: Geometry) -> list[str]:
    """C clamping int32 ``v`` to [lo, hi]: SSAT 16, then only the bounds inside int16."""
    out = [f"    {v} = edgenn_ssat({v}, 16);"]
    if g.lo > -32768:
        out.append(f"    {v} = {v} < {g.lo} ? {g.lo} : {v};")
    if g.hi < 32767:
        out.append(f"    {v} = {v} > {g.hi} ? {g.hi} : {v};")
    return out


def _epilogue_fn(mode: int, g: Geometry) -> str:
    """@P@_out(acc, r, b): one output value from its int32 sum and channel record."""
    if mode == NARROW:  # the int32 bias is already in the sum (the first step's start)
        lines = ["    int32_t v = edgenn_mbqm(acc, r[1], r[2]);"]
    elif mode == SHIFTED_HI:
        lines = ["    const uint64_t s = (uint64_t)((int64_t)acc * r[1]) + (uint64_t)*b;",
                 "    int32_t v = (int32_t)(uint32_t)(s >> 32);"]
    elif mode == SHIFTED:  # hi word of acc m' + b' (mod 2^64), then >> e (:func:`wide_records`)
        lines = ["    const uint64_t s = (uint64_t)((int64_t)acc * r[1]) + (uint64_t)*b;",
                 "    int32_t v = (int32_t)(uint32_t)(s >> 32) >> r[2];"]
    else:
        lines = ["    const uint64_t s = (uint64_t)((int64_t)acc * r[1]) + (uint64_t)*b;",
                 "    int32_t v = edgenn_s16_shift64(s, r[2]);"]
    return ("static inline __attribute__((always_inline)) int16_t @P@_out(int32_t acc, "
            "const int32_t *r, const int64_t *b)\n{\n    (void)b;\n"
            + "\n".join(lines + _clamp("v", g)) + "\n    return (int16_t)v;\n}")


def wide_records(mult: np.ndarray, total: np.ndarray, bias_r: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(m', e, b') with hi32(acc m' + b' mod 2^64) >> e == (int32)((acc m + bias_r) >> total)
    for every int32 acc, or None when some m' leaves int32.

    For total <= 32 the whole 64-bit sum is scaled by 2^(32 - total) (m' = m << (32 - total),
    b' = bias_r << (32 - total) mod 2^64): bits total .. total + 31 of the sum move to the
    high word, the bits lost at the top are those the int32 truncation drops anyway, and the
    product acc m' is exact in int64. For total > 32: m' = m, e = total - 32. One SMLAL and
    at most one ASR instead of the split 64-bit shift.
    """
    m = np.asarray(mult, np.int64)
    t = np.asarray(total, np.int64)
    up = np.where(t <= 32, 32 - t, 0)
    m2 = m << up
    if np.any(np.abs(m2) >= 2**31):
        return None
    b2 = [((int(b) << int(u)) + 2**63) % 2**64 - 2**63 for b, u in zip(bias_r, up, strict=True)]
    return m2, np.where(t > 32, t - 32, 0), np.array(b2, np.int64)


def generate(g: Geometry, mode: int) -> str:
    """The layer's C (``@P@`` = a name shared by layers whose code is the same)."""
    s = g.pairs
    plan = Plan(0, False, PIXELS)
    mac = "\n        ".join(_mac_asm(s, plan))
    npix, co = g.npix, g.out_c
    win = needs_window(g)
    iy_max = g.in_h - 1 - (g.k_h - 1) * g.dil_h
    ix_max = g.in_w - 1 - (g.k_w - 1) * g.dil_w
    row = g.k_w * g.in_c
    src = f"in + (iy0 * {g.in_w} + ix0) * {g.in_c}"
    if win:
        patch_body = f"""    if (iy0 >= 0 && iy0 <= {iy_max} && ix0 >= 0 && ix0 <= {ix_max}) {{
        @P@_cpi({src}, d);
        return;
    }}
    /* border: a dense window whose padding taps (and the pad element of an odd K) are 0 */
    int16_t *win = (int16_t *)(buf + {PIXELS * s});
    win[{2 * s - 1}] = 0;
    for (int ky = 0; ky < {g.k_h}; ky++) {{
        const int iy = iy0 + ky * {g.dil_h};
        int16_t *wr = win + ky * {row};
        for (int kx = 0; kx < {g.k_w}; kx++) {{
            const int ix = ix0 + kx * {g.dil_w};
            int16_t *wt = wr + kx * {g.in_c};
            if (iy < 0 || iy >= {g.in_h} || ix < 0 || ix >= {g.in_w}) {{
                for (int i = 0; i < {g.in_c}; i++) wt[i] = 0;
            }} else {{
                const int16_t *st = in + (iy * {g.in_w} + ix) * {g.in_c};
                for (int i = 0; i < {g.in_c}; i++) wt[i] = st[i];
            }}
        }}
    }}
    for (int p = 0; p < {s}; p++) d[{PIXELS} * p] = edgenn_s16_load32(win + 2 * p);"""
    else:
        patch_body = f"    @P@_cpi({src}, d);"
    few = npix < PIXELS
    last = npix - PIXELS
    first = "const int p0 = 0;" if few else f"const int p0 = pa < {last} ? pa : {last};"
    pairs = (co + 1) // 2
    stores = []
    for j in range(PIXELS):
        guard = f"if ({j} < {npix}) " if few else ""
        stores.append(f"            {guard}o[{j * co}] = @P@_out(acc[{2 * j}], r, b);")
        second = f"o[{j * co + 1}] = @P@_out(acc[{2 * j + 1}], r + 4, b + 1);"
        if co % 2:
            second = f"if (c + 1 < {co}) {second}"
        stores.append(f"            {guard}{second}")
    store_code = "\n".join(stores)
    slot_pixel = f"q < {npix - 1} ? q : {npix - 1}" if few else "q"
    return f"""
/* conv_s16_gemm: {g.in_h}x{g.in_w}x{g.in_c} -> {g.out_h}x{g.out_w}x{co}, {g.k_h}x{g.k_w},
 * stride {g.stride_h},{g.stride_w}, dilation {g.dil_h},{g.dil_w}, K = {g.k} ({s} pairs) */
{_copy_fn(g)}

/* the patch of output pixel (oy, ox) into slot j */
static void @P@_patch(const int16_t *in, uint32_t *buf, int j, int oy, int ox)
{{
    uint32_t *d = buf + j;
    const int iy0 = oy * {g.stride_h} - {g.pad_t};
    const int ix0 = ox * {g.stride_w} - {g.pad_l};
{patch_body}
}}

{_epilogue_fn(mode, g)}

static inline __attribute__((always_inline)) void @P@_mac(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int32_t *acc)
{{
#if EDGENN_HAVE_DSP
    int32_t a0, a1, b0, b1, c0, c1, d0, d1;
    uint32_t xa, xb, wv, wt;
    const uint32_t *end = x + {PIXELS * s};
    __asm__ volatile(
        {mac}
        : CGEMM_OPERANDS
        : [end] "m"(end), [rq] "m"(r)
        : "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = b0; acc[3] = b1;
    acc[4] = c0; acc[5] = c1; acc[6] = d0; acc[7] = d1;
#else
    for (int j = 0; j < 8; j++) acc[j] = r[4 * (j & 1)];
    for (int p = 0; p < {s}; p++) cgemm_step_c(x + {PIXELS} * p, w[p], acc);
#endif
}}

static void @P@_conv(const int16_t *in, int16_t *out, void *scratch, const uint32_t *w0,
    const int32_t *r0, const int64_t *b0)
{{
    uint32_t *buf = (uint32_t *)scratch;
    for (int pa = 0; pa < {npix}; pa += {PIXELS}) {{
        {first}
        for (int j = 0; j < {PIXELS}; j++) {{
            const int q = p0 + j, pix = {slot_pixel};
            const int oy = pix / {g.out_w};
            @P@_patch(in, buf, j, oy, pix - oy * {g.out_w});
        }}
        const uint32_t *w = w0;
        const int32_t *r = r0;
        const int64_t *b = b0;
        int16_t *o = out + p0 * {co};
        for (int c = 0; c < {2 * pairs}; c += 2, w += {s}, r += 8, b += 2, o += 2) {{
            int32_t acc[8];
            @P@_mac(buf, w, r, acc);
{store_code}
        }}
    }}
}}
"""


def shared_code(g: Geometry, mode: int) -> str:
    """The generated functions under a name derived from their text, defined once per model;
    the layer's ``@P@_conv`` passes its own weights, records and int64 biases."""
    body = generate(g, mode)
    name = "cs16g_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int16_t *in, "
            "int16_t *out, void *scratch)\n{\n"
            f"    {name}_conv(in, out, scratch, @P@_w, @P@_quant, @P@_bias);\n}}\n")


def geometry(p: ConvS16Params) -> Geometry:
    """The generator's view of a 16x8 layer's record."""
    shape = {f.name: getattr(p, f.name) for f in fields(ConvGeometry)}
    return Geometry(**shape, lo=p.requant.act_min, hi=p.requant.act_max)


def records(mode: int, ep_mult: np.ndarray, ep_shift: np.ndarray, bias: np.ndarray,
            co: int) -> np.ndarray:
    """int32 {start, mult, shift, 0} per channel (padded to even): ``start`` is the int32
    bias in the narrow mode (the asm's first step adds it), else 0."""
    cpad = co + (co & 1)
    rec = np.zeros((cpad, 4), np.int64)
    rec[:co, 1] = ep_mult
    rec[:co, 2] = ep_shift
    if mode == NARROW:
        rec[:co, 0] = bias
    return i32(rec).ravel()


def rescale(p: ConvS16Params) -> tuple[int, np.ndarray, str]:
    """(mode, int32 records, the ``@P@_bias`` int64 array's C) of a 16x8 layer: NARROW,
    SHIFTED where :func:`wide_records` applies, else WIDE32 (WIDE64 layers are not taken)."""
    ep = epilogue(p.requant, p.w)
    co = p.w.shape[0]
    bias = np.broadcast_to(np.asarray(p.requant.bias, np.int64), (co,))
    mult = np.asarray(ep.arrays[0].values, np.int64)
    shift = np.asarray(ep.arrays[1].values, np.int64)
    mode, code = ep.mode, ep.code
    if mode != NARROW:
        fast = wide_records(mult, shift, ep.bias)  # ep.bias: bias * m + 2^(t-1), folded
        if fast is not None:
            mode, (mult, shift, folded) = SHIFTED if np.any(fast[1]) else SHIFTED_HI, fast
            code = int64_array("bias", folded)
    return mode, records(mode, mult, shift, bias, co), code


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph)) or is_depthwise(node, graph):
        return False
    if int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4:
        return False
    _, kh, kw, cin = w.shape
    if kh * kw * cin > MAX_K or graph.tensor(node.outputs[0]).shape[3] > 1024:
        return False
    # why the room: the patch must not raise the arena above TFLite Micro's (conv_gemm's rule)
    p = prepare_conv_s16(node, graph)
    if scratch_bytes(geometry(p)) > max(SMALL_SCRATCH, arena_room(node, graph)):
        return False
    return epilogue(p.requant, p.w).mode != WIDE64
