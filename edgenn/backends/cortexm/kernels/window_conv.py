"""A fused chain member that reads its input from an int16 row window (no im2col patch).

Inside a fused chain (kernels/fused_rows.py) the rows a member reads are produced once and
kept in a small ring; so they can be stored in the form the inner loop wants, which layer by
layer would cost a second copy of the whole map. Each window row holds the member's padded
input row (left/right padding columns included, filled with the input zero point once) as
int16 values, every group of 4 channels in the order (c0, c2, c1, c3): one word load then
gives exactly the int16 pair that SXTB16 (resp. SXTB16 ROR 8) of a word of 4 int8 weights
meets, as in the per-layer kernel's patch (conv_gemm.py ``patch_positions``). The consumer
therefore never widens, never builds a patch and never branches on borders: for each output
row it gets the KH row pointers (hoisted by the driver) and runs SMLAD blocks straight on them:

* stride-1 rows (kw > 1): blocks of 3 output pixels x 2 channels whose taps kx = 0 .. kw - 1
  run back to back per input channel pair; pixel j + 1 at tap kx reads the word pixel j read
  at kx + 1, so after a pair's first tap each tap loads one new input word into a rotating
  register (xa, xb, d0): 10 cycles per 12 MACs against 16 per 16 for 4-pixel blocks (a
  sliding 4-pixel block would need 15 registers; the core has 14). The patch of the per-layer
  kernel cannot share words this way: each pixel's window is a separate copy there;
* other rows: conv_gemm's 4-pixel x 2-channel blocks, output pixel j at a fixed byte offset
  (j * stride * Cin * 2) from the row pointer (4 x 2 rather than 2 x 4: without a patch to
  keep small, conv_gemm's calibrated cost model, ``layer_plan_of``, favours 4 x 2).

K of up to MAX_STRAIGHT pairs is unrolled straight (the row pointer reloaded from its stack
slot at each kernel row); longer K runs one unrolled kernel row in a loop over the row
pointers. Weights (int8 words, conv_gemm ``pack_weights``, the taps reordered for the sliding
blocks), requantization records (``records``), the packed-pair test, the requantization asm
and its exactness modes are conv_gemm's; only the addressing of the inputs differs.

:func:`window_plan` returns None where this path does not apply (the member then keeps the
int8 path): groups != 1, 1x1 kernels, dilation, Cin % 4 != 0, fewer output pixels in a row
than a block, a single output channel, the exact (slow) requantization mode, offsets beyond
the 12-bit immediates, compact code, cores without the DSP extension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernel import CArray
from edgenn.backends.cortexm.kernels.conv import ConvParams
from edgenn.backends.cortexm.kernels.conv_gemm import (
    Plan,
    _q,
    _recover_asm,
    _requant_asm,
    k_pairs,
    pack_weights,
    packed_ok,
    patch_positions,
    records,
    requant_mode,
)
from edgenn.backends.cortexm.targets import Core

NAME = "edgenn_window_conv_s8_dsp"
PIXELS = 4  # output pixels of a block (x 2 channels)
MAX_STRAIGHT = 80  # k pairs unrolled straight; longer K: a loop over the KH rows
MAX_KH = 8  # one asm memory operand per row pointer (the asm operand limit is 30)


@dataclass(frozen=True)
class WindowPlan:
    """One member's int16-window geometry and conv_gemm plan."""

    p: ConvParams
    plan: Plan

    @property
    def cols(self) -> int:
        """Columns of a window row (padding included)."""
        p = self.p
        return p.pad_l + p.in_w + p.pad_r

    @property
    def row_elems(self) -> int:
        """int16 values of one window row."""
        return self.cols * self.p.in_c

    @property
    def row_pairs(self) -> int:
        return self.p.k_w * self.p.in_c // 2

    @property
    def pixel_step(self) -> int:
        """Bytes between the windows of two adjacent output pixels."""
        return 2 * self.p.stride_w * self.p.in_c

    @property
    def straight(self) -> bool:
        return k_pairs(self.p) <= MAX_STRAIGHT

    @property
    def slide(self) -> bool:
        """3-pixel blocks of a stride-1 row: pixel j + 1 at tap kx reads what pixel j reads at
        kx + 1, so per channel pair the taps kx = 0 .. kw - 1 run in a row and each new tap
        loads one input word (kept in a rotating register) instead of one per pixel: 10
        cycles per 12 MACs after the first tap, against 16 per 16 for 4-pixel blocks.
        (4 sliding pixels would need 15 registers, the core has 14.)"""
        return self.plan.pixels == 3

    def word_index(self, ky: int, kx: int, cp: int) -> int:
        """Index of the weight word of tap (ky, kx), input channel pair cp, in a channel
        pair's run of words (the order the K loop reads them)."""
        p = self.p
        if self.slide:
            return ky * self.row_pairs + cp * p.k_w + kx
        return ky * self.row_pairs + kx * (p.in_c // 2) + cp


def reordered_positions(p: ConvParams) -> np.ndarray:
    """Position of each (ky, kx, ci) element in the window's pair order: channel groups of 4
    stored (c0, c2, c1, c3)."""
    perm = np.array([0, 2, 1, 3], np.int64)
    ky, kx, ci = np.meshgrid(np.arange(p.k_h), np.arange(p.k_w), np.arange(p.in_c),
                             indexing="ij")
    pos = ky * p.k_w * p.in_c + kx * p.in_c + (ci & ~3) + perm[ci & 3]
    return pos.ravel().astype(np.int64)


def window_plan(p: ConvParams, core: Core) -> WindowPlan | None:
    """The int16-window plan of a member, or None (the member keeps the int8 path)."""
    if not core.has_dsp or is_compact() or p.groups != 1 or p.depthwise:
        return None
    # why not 1x1: its per-layer kernel builds no patch either, and its short K leaves a
    # block's requantization dominant (a 8 -> 16 pointwise member measured 2x slower)
    if p.k_h * p.k_w == 1:
        return None
    if (p.dil_h, p.dil_w) != (1, 1) or p.in_c % 4 or p.out_w < 3 or p.k_h > MAX_KH:
        return None
    if not 2 <= p.out_c <= 1024:  # a full channel pair; the stores' 12-bit offsets
        return None
    mode = requant_mode(p)
    if not mode:
        return None
    # sliding 3-pixel blocks where adjacent pixels share input columns (stride 1, kw > 1)
    px = 3 if p.stride_w == 1 and p.k_w > 1 else PIXELS
    if p.out_w < px:
        return None
    wp = WindowPlan(p, Plan(mode, packed_ok(p, mode), px))
    # 12-bit immediate offsets: the last pair of a row for the last pixel; the weights
    if 4 * (wp.row_pairs - 1) + (PIXELS - 1) * wp.pixel_step + 2 * p.in_c > 4095 or \
            4 * k_pairs(p) > 4095:
        return None
    # the window's pair order is the per-layer patch's (so conv_gemm's weight words fit)
    if not np.array_equal(patch_positions(p), reordered_positions(p)):
        return None
    return wp


def arrays(wp: WindowPlan) -> tuple[CArray, ...]:
    p = wp.p
    words = pack_weights(p, wp.plan.packed, 2).reshape(-1, p.k_h, p.k_w, p.in_c // 2)
    if wp.slide:  # per channel pair: taps kx innermost (word_index)
        words = words.transpose(0, 1, 3, 2)
    return (CArray("w", "uint32_t", np.ascontiguousarray(words).ravel()),
            CArray("quant", "int32_t", records(p, wp.plan)))


def _step(xo: int, wo: int, d: int, packed: bool) -> list[str]:
    """One k pair of the 4x2 block: pixel j's pair at [xp, #xo + j d] (cf. CGEMM_STEP)."""
    split = [] if packed else ["sxtb16 %[wv], %[wv], ror #8"]
    return [_q(t) for t in (
        f"ldr %[wv], [%[wp], #{wo}]", f"ldr %[xa], [%[xp], #{xo}]",
        f"ldr %[xb], [%[xp], #{xo + d}]", "sxtb16 %[wt], %[wv]", *split,
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]",
        "smlad %[b0], %[xb], %[wt], %[b0]", "smlad %[b1], %[xb], %[wv], %[b1]",
        f"ldr %[xa], [%[xp], #{xo + 2 * d}]", f"ldr %[xb], [%[xp], #{xo + 3 * d}]",
        "smlad %[c0], %[xa], %[wt], %[c0]", "smlad %[c1], %[xa], %[wv], %[c1]",
        "smlad %[d0], %[xb], %[wt], %[d0]", "smlad %[d1], %[xb], %[wv], %[d1]")]


def _first_step(d: int, packed: bool) -> list[str]:
    """The first k pair, adding the biases (cf. conv_gemm ``_first_step``)."""
    split = [] if packed else ["sxtb16 %[wv], %[wv], ror #8"]
    return [_q(t) for t in (
        "ldr %[xa], %[rq]", "ldr %[a0], [%[xa]]", "ldr %[a1], [%[xa], #16]",
        "ldr %[wv], [%[wp]]", "ldr %[xa], [%[xp]]", f"ldr %[xb], [%[xp], #{d}]",
        f"ldr %[c0], [%[xp], #{2 * d}]", f"ldr %[d0], [%[xp], #{3 * d}]",
        "sxtb16 %[wt], %[wv]", *split,
        "smlad %[c1], %[c0], %[wv], %[a1]", "smlad %[c0], %[c0], %[wt], %[a0]",
        "smlad %[d1], %[d0], %[wv], %[a1]", "smlad %[d0], %[d0], %[wt], %[a0]",
        "smlad %[b0], %[xb], %[wt], %[a0]", "smlad %[b1], %[xb], %[wv], %[a1]",
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]")]


def _mac_asm(wp: WindowPlan) -> list[str]:
    """The K loop of one block; leaves ``wp`` at the next channel pair's weights.

    Straight (K <= MAX_STRAIGHT pairs): every pair unrolled, the row pointer reloaded from
    its stack slot (``y<ky>``) at each kernel row. Else the biases are set first and one
    unrolled kernel row runs in a loop over the row pointers (``ys``: pointer to the next).
    """
    p, d, packed = wp.p, wp.pixel_step, wp.plan.packed
    rp = wp.row_pairs
    if wp.straight:
        asm = _first_step(d, packed)
        for ky in range(p.k_h):
            if ky:
                asm.append(_q(f"ldr %[xp], %[y{ky}]"))
            for i in range(rp):
                if ky or i:
                    asm += _step(4 * i, 4 * (ky * rp + i), d, packed)
        return asm + [_q(f"add %[wp], %[wp], #{4 * k_pairs(p)}")]
    asm = [_q(t) for t in (
        "ldr %[xb], %[rq]", "ldr %[a0], [%[xb]]", "ldr %[a1], [%[xb], #16]",
        "mov %[b0], %[a0]", "mov %[c0], %[a0]", "mov %[d0], %[a0]",
        "mov %[b1], %[a1]", "mov %[c1], %[a1]", "mov %[d1], %[a1]",
        "ldr %[xa], %[yq]")]
    asm.append('"1:\\n\\t"')
    asm += [_q("ldr %[xp], [%[xa]], #4"), _q("str %[xa], %[ys]")]
    for i in range(rp):
        asm += _step(4 * i, 4 * i, d, packed)
    asm += [_q(f"add %[wp], %[wp], #{4 * rp}"), _q("ldr %[xa], %[ys]"),
            _q("ldr %[xb], %[yend]"), _q("cmp %[xa], %[xb]"), _q("bne 1b")]
    return asm


def _slide_first(o: list[int], packed: bool) -> list[str]:
    """The first tap of the first channel pair, adding the biases; x columns 0..2 in
    xa, xb, d0."""
    split = [] if packed else ["sxtb16 %[wv], %[wv], ror #8"]
    return [_q(t) for t in (
        "ldr %[wt], %[rq]", "ldr %[a0], [%[wt]]", "ldr %[a1], [%[wt], #16]",
        "ldr %[wv], [%[wp]]", f"ldr %[xa], [%[xp], #{o[0]}]", f"ldr %[xb], [%[xp], #{o[1]}]",
        f"ldr %[d0], [%[xp], #{o[2]}]", "sxtb16 %[wt], %[wv]", *split,
        "smlad %[b0], %[xb], %[wt], %[a0]", "smlad %[b1], %[xb], %[wv], %[a1]",
        "smlad %[c0], %[d0], %[wt], %[a0]", "smlad %[c1], %[d0], %[wv], %[a1]",
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]")]


_XREGS = ("xa", "xb", "d0")  # the rotating input columns of a sliding block (d0/d1 are free)


def _slide_row(wp: WindowPlan, ky: int, wbase: int, first: bool) -> list[str]:
    """One kernel row of a sliding block: per channel pair, taps kx = 0 .. kw - 1; column c
    of the row (pixel j + tap kx) lives in _XREGS[c % 3]. ``wbase``: word index of the row's
    first weight relative to ``wp``."""
    p, packed = wp.p, wp.plan.packed
    split = [] if packed else ["sxtb16 %[wv], %[wv], ror #8"]
    col = 2 * p.in_c  # bytes between two input columns of a row
    asm: list[str] = []
    for cp in range(p.in_c // 2):
        for kx in range(p.k_w):
            wo = 4 * (wbase + cp * p.k_w + kx)
            offs = [4 * cp + col * (kx + j) for j in range(3)]
            if first and cp == 0 and kx == 0:
                asm += _slide_first(offs, packed)
                continue
            loads = [f"ldr %[wv], [%[wp], #{wo}]"]
            if kx == 0:
                loads += [f"ldr %[{_XREGS[j]}], [%[xp], #{offs[j]}]" for j in range(3)]
            else:
                loads.append(f"ldr %[{_XREGS[(kx + 2) % 3]}], [%[xp], #{offs[2]}]")
            r = [_XREGS[(kx + j) % 3] for j in range(3)]
            asm += [_q(t) for t in (
                *loads, "sxtb16 %[wt], %[wv]", *split,
                f"smlad %[a0], %[{r[0]}], %[wt], %[a0]", f"smlad %[a1], %[{r[0]}], %[wv], %[a1]",
                f"smlad %[b0], %[{r[1]}], %[wt], %[b0]", f"smlad %[b1], %[{r[1]}], %[wv], %[b1]",
                f"smlad %[c0], %[{r[2]}], %[wt], %[c0]", f"smlad %[c1], %[{r[2]}], %[wv], %[c1]")]
    return asm


def _slide_mac(wp: WindowPlan) -> list[str]:
    """The K loop of a sliding block (straight, or a loop over the rows with the row-pointer
    cursor in d1); leaves ``wp`` at the next channel pair's weights."""
    p = wp.p
    if wp.straight:
        asm: list[str] = []
        for ky in range(p.k_h):
            if ky:
                asm.append(_q(f"ldr %[xp], %[y{ky}]"))
            asm += _slide_row(wp, ky, ky * wp.row_pairs, ky == 0)
        return asm + [_q(f"add %[wp], %[wp], #{4 * k_pairs(p)}")]
    asm = [_q(t) for t in (
        "ldr %[xb], %[rq]", "ldr %[a0], [%[xb]]", "ldr %[a1], [%[xb], #16]",
        "mov %[b0], %[a0]", "mov %[c0], %[a0]", "mov %[b1], %[a1]", "mov %[c1], %[a1]",
        "ldr %[d1], %[yq]")]
    asm.append('"1:\\n\\t"')
    asm.append(_q("ldr %[xp], [%[d1]], #4"))
    asm += _slide_row(wp, 0, 0, False)
    asm += [_q(f"add %[wp], %[wp], #{4 * wp.row_pairs}"), _q("ldr %[xa], %[yend]"),
            _q("cmp %[d1], %[xa]"), _q("bne 1b")]
    return asm


_DECLS = """    int32_t a0, a1, b0, b1, c0, c1, d0, d1;
    uint32_t xa, xb, wv, wt;"""


def generate(wp: WindowPlan) -> str:
    """C of the member (``@P@`` = its prefix): ``@P@_wrow(rp, out)`` computes one output row
    from the KH window row pointers ``rp`` into ``out`` (int8, out_w * out_c)."""
    p, plan = wp.p, wp.plan
    s = k_pairs(p)
    groups, tail = divmod(p.out_c, 2)
    px_in = p.stride_w * p.in_c  # int16 values between two output pixels' windows
    px = plan.pixels
    last = p.out_w - px
    mac = _slide_mac(wp) if wp.slide else _mac_asm(wp)
    recover = _recover_asm("abc" if wp.slide else "acbd") if plan.packed else []
    req_full = recover + _requant_asm(p, plan, 2)
    body = ['"9:\\n\\t"', *mac, _q("str %[wp], %[ws]"), *req_full,
            _q("add %[xp], %[xp], #32"), _q("str %[xp], %[rq]"),
            _q("add %[wp], %[wp], #2"), _q("str %[wp], %[oq]"),
            _q("ldr %[xa], %[rend]"), _q("cmp %[xp], %[xa]"), _q("ldr %[wp], %[ws]"),
            _q("ldr %[xp], %[y0]"), _q("bne 9b")]
    blk_all = "\n        ".join(body)
    tail_fn = ""
    if tail:
        blk1 = "\n        ".join([*mac, *recover, *_requant_asm(p, plan, 1)])
        tail_fn = f"""
/* the last (odd) channel: MAC + requantize + store */
static inline __attribute__((always_inline)) void @P@_wblk1(const uint32_t *const *y,
    const uint32_t *w, const int32_t *r, int8_t *o)
{{
{_DECLS}
    const uint32_t *x = y[0];
    const uint32_t *const *yq = y, *const *yend = y + {p.k_h}, *const *ys;
    __asm__ volatile(
        {blk1}
        : CGEMM_OPERANDS, [ys] "=m"(ys)
        : [rq] "m"(r), [oq] "m"(o), [yq] "m"(yq), [yend] "m"(yend){"".join(
            f', [y{k}] "m"(y[{k}])' for k in range(1, p.k_h))}
        : "cc", "memory");
}}
"""
    tail_call = (f"        @P@_wblk1(y, w0 + {groups * s}, r0 + {8 * groups}, o + {2 * groups});\n"
                 if tail else "")
    return f"""
/* window_conv: {p.in_w}x{p.in_c} rows (+{p.pad_l}/{p.pad_r} padding columns) ->
 * {p.out_w}x{p.out_c}, {p.k_h}x{p.k_w} stride {p.stride_w}, K = {s} pairs, {px} pixels x 2
 * channels{" (sliding)" if wp.slide else ""}, {"packed-pair" if plan.packed else "signed"} weights,
 * requantization mode {plan.mode} */
#if EDGENN_HAVE_DSP
/* every full pair of channels of one {px}-pixel block: MAC + requantize + store */
static inline __attribute__((always_inline)) void @P@_wblkall(const uint32_t *const *y,
    const uint32_t *w, const int32_t *r, int8_t *o)
{{
{_DECLS}
    const uint32_t *x = y[0];
    const uint32_t *const *yq = y, *const *yend = y + {p.k_h}, *const *ys;
    const int32_t *const rend = r + {8 * groups};
    const uint32_t *ws;
    __asm__ volatile(
        {blk_all}
        : CGEMM_OPERANDS, [rq] "+m"(r), [oq] "+m"(o), [ws] "=m"(ws), [ys] "=m"(ys)
        : [rend] "m"(rend), [y0] "m"(y[0]), [yq] "m"(yq), [yend] "m"(yend){"".join(
            f', [y{k}] "m"(y[{k}])' for k in range(1, p.k_h))}
        : "cc", "memory");
}}
{tail_fn}
static void @P@_wrow(const int16_t *const *rp, int8_t *out, const uint32_t *w0,
    const int32_t *r0)
{{
    for (int ox = 0; ox < {p.out_w}; ox += {px}) {{
        const int b = ox < {last} ? ox : {last};
        const uint32_t *y[{p.k_h}];
        for (int ky = 0; ky < {p.k_h}; ky++) {{
            y[ky] = (const uint32_t *)(const void *)(rp[ky] + b * {px_in});
        }}
        int8_t *o = out + b * {p.out_c};
        @P@_wblkall(y, w0, r0, o);
{tail_call}    }}
}}
#else
#error "window_conv members are generated for cores with the DSP extension only"
#endif
"""

