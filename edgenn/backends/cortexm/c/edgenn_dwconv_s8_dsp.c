/* Fast int8 depthwise convolution, 4 channels a step with SXTB16 + SMLABB/SMLATT
 * (see edgenn_dwconv_s8_dsp.h for the packed arrays). */
#include "edgenn_dwconv_s8_dsp.h"

#include "edgenn_fixed_point.h"

/* low (high) halfwords multiplied and added (SMLABB / SMLATT) */
EDGENN_INLINE int32_t dw_smlabb(uint32_t x, uint32_t w, int32_t acc)
{
    return edgenn_smlabb((int32_t)x, (int32_t)w, acc);
}
EDGENN_INLINE int32_t dw_smlatt(uint32_t x, uint32_t w, int32_t acc)
{
    return edgenn_smlatt((int32_t)x, (int32_t)w, acc);
}

/* one tap of 4 channels: xw holds the input bytes of channels c..c+3 */
EDGENN_INLINE void dw_tap(uint32_t xw, const uint32_t *wp, int32_t *a)
{
    const uint32_t xe = edgenn_sxtb16(xw);      /* channels c, c+2 */
    const uint32_t xo = edgenn_sxtb16_ror8(xw); /* channels c+1, c+3 */
    const uint32_t we = wp[0], wo = wp[1];
    a[0] = dw_smlabb(xe, we, a[0]);
    a[2] = dw_smlatt(xe, we, a[2]);
    a[1] = dw_smlabb(xo, wo, a[1]);
    a[3] = dw_smlatt(xo, wo, a[3]);
}

/* the input bytes of n (1..4) channels in a word, upper bytes 0 (their weights are 0):
 * why: a 4-byte load past the last channel could run past the end of the tensor */
EDGENN_INLINE uint32_t dw_load_n(const int8_t *p, int n)
{
    if (n >= 4) {
        return edgenn_load32(p);
    }
    uint32_t v = (uint8_t)p[0];
    if (n > 1) {
        v |= (uint32_t)(uint8_t)p[1] << 8;
    }
    if (n > 2) {
        v |= (uint32_t)(uint8_t)p[2] << 16;
    }
    return v;
}

/* requantize one accumulator with its record q = {bias, mult, shift, half} */
EDGENN_INLINE int32_t dw_out(int32_t acc, const int32_t *q, int out_zp, int lo, int hi,
                             const int fast)
{
    return edgenn_requant_record(acc, q, out_zp, lo, hi, fast);
}

EDGENN_INLINE void dw_store4(int8_t *o, const int32_t *a, const int32_t *q, int out_zp, int lo,
                             int hi, const int fast)
{
    o[0] = (int8_t)dw_out(a[0], q, out_zp, lo, hi, fast);
    o[1] = (int8_t)dw_out(a[1], q + 4, out_zp, lo, hi, fast);
    o[2] = (int8_t)dw_out(a[2], q + 8, out_zp, lo, hi, fast);
    o[3] = (int8_t)dw_out(a[3], q + 12, out_zp, lo, hi, fast);
}

#if EDGENN_HAVE_DSP
/* Hand-scheduled taps on ARMv7E-M. why: gcc interleaves the 9 taps' loads with the multiplies
 * of 4 independent chains and spills; the M4 pipelines back-to-back loads (1 cycle each after
 * the first), so each tap groups its 3 loads: 2 + 1 + 1 + 2 SXTB16 + 4 multiplies = 10 cycles
 * for 4 MACs. MID is placed between the loads and the multiplies (a pointer step there
 * cannot stall the next tap's address generation). */
#define DW_STR_(v) #v
#define DW_STR(v) DW_STR_(v)
#define DW_TAP(XLOAD, WOFF, MID)                                                            \
    XLOAD "\n\t"                                                                            \
    "ldr %[we], [%[wp], #" DW_STR(WOFF) "]\n\t"                                             \
    "ldr %[wo], [%[wp], #" DW_STR(WOFF) "+4]\n\t" MID                                       \
    "sxtb16 %[t], %[x], ror #8\n\t"                                                         \
    "sxtb16 %[x], %[x]\n\t"                                                                 \
    "smlabb %[a0], %[x], %[we], %[a0]\n\t"                                                  \
    "smlatt %[a2], %[x], %[we], %[a2]\n\t"                                                  \
    "smlabb %[a1], %[t], %[wo], %[a1]\n\t"                                                  \
    "smlatt %[a3], %[t], %[wo], %[a3]\n\t"
#define DW_ROW(W0, MID)                                                                     \
    DW_TAP("ldr %[x], [%[p]]", W0, "")                                                      \
    DW_TAP("ldr %[x], [%[p], %[ch]]", W0 + 8, "")                                           \
    DW_TAP("ldr %[x], [%[p], %[ch], lsl #1]", W0 + 16, MID)

/* the 9 taps of a 3x3 window at p (rows row bytes apart, pixels ch bytes apart) */
EDGENN_INLINE void dw_mac_3x3(const int8_t *p, int row, int ch, const uint32_t *wp, int32_t *a)
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    uint32_t x, t, we, wo;
    __asm__(DW_ROW(0, "add %[p], %[p], %[row]\n\t")
            DW_ROW(24, "add %[p], %[p], %[row]\n\t")
            DW_ROW(48, "")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p] "+r"(p),
              [x] "=&r"(x), [t] "=&r"(t), [we] "=&r"(we), [wo] "=&r"(wo)
            : [row] "r"(row), [ch] "r"(ch), [wp] "r"(wp)
            : "memory");
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
}

/* one tap of 4 channels at p */
EDGENN_INLINE void dw_mac_tap(const int8_t *p, const uint32_t *wp, int32_t *a)
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    uint32_t x, t, we, wo;
    __asm__(DW_TAP("ldr %[x], [%[p]]", 0, "")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3),
              [x] "=&r"(x), [t] "=&r"(t), [we] "=&r"(we), [wo] "=&r"(wo)
            : [p] "r"(p), [wp] "r"(wp)
            : "memory");
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
}
#else
EDGENN_INLINE void dw_mac_3x3(const int8_t *p, int row, int ch, const uint32_t *wp, int32_t *a)
{
    for (int ky = 0; ky < 3; ky++, p += row) {
        for (int kx = 0; kx < 3; kx++, wp += 2) {
            dw_tap(edgenn_load32(p + kx * ch), wp, a);
        }
    }
}
EDGENN_INLINE void dw_mac_tap(const int8_t *p, const uint32_t *wp, int32_t *a)
{
    dw_tap(edgenn_load32(p), wp, a);
}
#endif

/* The tail group (channels [4 * g0, ch), fewer than 4) of one pixel whose window at xp lies
 * inside its buffer (rows row bytes apart). */
static void dw_tail(const int8_t *xp, int8_t *o, const uint32_t *wpack, const int32_t *quant,
                    int g0, int row, int ch, int kh, int kw, int out_zp, int lo, int hi, int fast)
{
    const int c0 = 4 * g0;
    const int n = ch - c0;
    const int32_t *q = quant + 4 * c0;
    const uint32_t *wp = wpack + 2 * kh * kw * g0;
    int32_t a[4] = {q[0], q[4], q[8], q[12]};
    xp += c0;
    for (int ky = 0; ky < kh; ky++, xp += row) {
        for (int kx = 0; kx < kw; kx++, wp += 2) {
            dw_tap(dw_load_n(xp + kx * ch, n), wp, a);
        }
    }
    for (int c = 0; c < n; c++) {
        o[c0 + c] = (int8_t)dw_out(a[c], q + 4 * c, out_zp, lo, hi, fast);
    }
}

/* Copy the window of a border pixel into patch (kh x kw x ch bytes, rows kw * ch apart),
 * taps outside the input filled with the input zero point (zpw: 4 copies of it). */
static void dw_patch(const int8_t *in, int8_t *patch, int iy0, int ix0, int in_h, int in_w, int ch,
                     int kh, int kw, uint32_t zpw)
{
    for (int ky = 0; ky < kh; ky++) {
        const int iy = iy0 + ky;
        for (int kx = 0; kx < kw; kx++, patch += ch) {
            const int ix = ix0 + kx;
            int c = 0;
            if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
                const int8_t *src = in + (iy * in_w + ix) * ch;
                for (; c + 4 <= ch; c += 4) {
                    edgenn_store32(patch + c, edgenn_load32(src + c));
                }
                for (; c < ch; c++) {
                    patch[c] = src[c];
                }
            } else {
                for (; c + 4 <= ch; c += 4) {
                    edgenn_store32(patch + c, zpw);
                }
                for (; c < ch; c++) {
                    patch[c] = (int8_t)zpw;
                }
            }
        }
    }
}

/* A run of npix pixels whose 3x3 windows lie inside the input, full channel groups only.
 * x: the window origin of the first pixel; row: bytes per input row; xstep: bytes between
 * the window origins of neighbouring pixels; ostep: bytes per output pixel. */
EDGENN_INLINE void dw_run_3x3(const int8_t *x, int8_t *o, const uint32_t *wpack,
                              const int32_t *quant, int npix, int groups, int ch, int row,
                              int xstep, int ostep, int out_zp, int lo, int hi, const int fast)
{
    for (int i = 0; i < npix; i++, x += xstep, o += ostep) {
        const int8_t *xp = x;
        const uint32_t *wp = wpack;
        const int32_t *q = quant;
        int8_t *op = o;
        for (int g = 0; g < groups; g++, xp += 4, wp += 18, q += 16, op += 4) {
            int32_t a[4] = {q[0], q[4], q[8], q[12]};
            dw_mac_3x3(xp, row, ch, wp, a);
            dw_store4(op, a, q, out_zp, lo, hi, fast);
        }
    }
}

/* the same for any kernel size */
EDGENN_INLINE void dw_run_any(const int8_t *x, int8_t *o, const uint32_t *wpack,
                              const int32_t *quant, int npix, int groups, int ch, int row,
                              int xstep, int ostep, int kh, int kw, int out_zp, int lo, int hi,
                              const int fast)
{
    for (int i = 0; i < npix; i++, x += xstep, o += ostep) {
        const uint32_t *wp = wpack;
        for (int g = 0; g < groups; g++) {
            int32_t a[4] = {quant[16 * g], quant[16 * g + 4], quant[16 * g + 8],
                            quant[16 * g + 12]};
            const int8_t *xr = x + 4 * g;
            for (int ky = 0; ky < kh; ky++, xr += row) {
                const int8_t *xp = xr;
                for (int kx = 0; kx < kw; kx++, xp += ch, wp += 2) {
                    dw_mac_tap(xp, wp, a);
                }
            }
            dw_store4(o + 4 * g, a, quant + 16 * g, out_zp, lo, hi, fast);
        }
    }
}

static void dw_run_3x3_f0(const int8_t *x, int8_t *o, const uint32_t *w, const int32_t *q, int npix,
                          int groups, int ch, int row, int xstep, int ostep, int out_zp, int lo,
                          int hi)
{
    dw_run_3x3(x, o, w, q, npix, groups, ch, row, xstep, ostep, out_zp, lo, hi, 0);
}
static void dw_run_3x3_f1(const int8_t *x, int8_t *o, const uint32_t *w, const int32_t *q, int npix,
                          int groups, int ch, int row, int xstep, int ostep, int out_zp, int lo,
                          int hi)
{
    dw_run_3x3(x, o, w, q, npix, groups, ch, row, xstep, ostep, out_zp, lo, hi, 1);
}
static void dw_run_3x3_f2(const int8_t *x, int8_t *o, const uint32_t *w, const int32_t *q, int npix,
                          int groups, int ch, int row, int xstep, int ostep, int out_zp, int lo,
                          int hi)
{
    dw_run_3x3(x, o, w, q, npix, groups, ch, row, xstep, ostep, out_zp, lo, hi, 2);
}
static void dw_run_any_f(const int8_t *x, int8_t *o, const uint32_t *w, const int32_t *q, int npix,
                         int groups, int ch, int row, int xstep, int ostep, int kh, int kw,
                         int out_zp, int lo, int hi, int fast)
{
    if (fast == 2) {
        dw_run_any(x, o, w, q, npix, groups, ch, row, xstep, ostep, kh, kw, out_zp, lo, hi, 2);
    } else if (fast == 1) {
        dw_run_any(x, o, w, q, npix, groups, ch, row, xstep, ostep, kh, kw, out_zp, lo, hi, 1);
    } else {
        dw_run_any(x, o, w, q, npix, groups, ch, row, xstep, ostep, kh, kw, out_zp, lo, hi, 0);
    }
}

/* npix pixels of one output row whose windows lie inside the buffer at x, all channels */
static void dw_run(const int8_t *x, int8_t *o, const uint32_t *wpack, const int32_t *quant,
                   int npix, int ch, int row, int xstep, int kh, int kw, int out_zp, int lo, int hi,
                   int fast)
{
    const int groups = ch >> 2; /* full groups of 4 channels; the rest is the tail group */
    if (groups > 0) {
        if (kh == 3 && kw == 3 && fast == 2) {
            dw_run_3x3_f2(x, o, wpack, quant, npix, groups, ch, row, xstep, ch, out_zp, lo, hi);
        } else if (kh == 3 && kw == 3 && fast == 1) {
            dw_run_3x3_f1(x, o, wpack, quant, npix, groups, ch, row, xstep, ch, out_zp, lo, hi);
        } else if (kh == 3 && kw == 3) {
            dw_run_3x3_f0(x, o, wpack, quant, npix, groups, ch, row, xstep, ch, out_zp, lo, hi);
        } else {
            dw_run_any_f(x, o, wpack, quant, npix, groups, ch, row, xstep, ch, kh, kw, out_zp,
                         lo, hi, fast);
        }
    }
    if (ch & 3) {
        for (int i = 0; i < npix; i++) {
            dw_tail(x + i * xstep, o + i * ch, wpack, quant, groups, row, ch, kh, kw, out_zp,
                    lo, hi, fast);
        }
    }
}

void edgenn_dwconv_s8_dsp(const int8_t *in, int8_t *out, int8_t *scratch, const uint32_t *wpack,
                          const int32_t *quant, int32_t in_h, int32_t in_w, int32_t ch,
                          int32_t out_h, int32_t out_w, int32_t kh, int32_t kw, int32_t stride_h,
                          int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t in_zp,
                          int32_t out_zp, int32_t act_lo, int32_t act_hi, int32_t fast)
{
    const uint32_t zpw = (uint32_t)(uint8_t)in_zp * 0x01010101u;
    /* output columns whose windows lie inside the input horizontally: [oxa, oxb) */
    const int oxa = (pad_l + stride_w - 1) / stride_w;
    const int span = in_w - kw + pad_l;
    int oxb = span >= 0 ? span / stride_w + 1 : 0;
    oxb = oxb > out_w ? out_w : oxb;
    oxb = oxb < oxa ? oxa : oxb;
    const int row = in_w * ch;
    for (int oy = 0; oy < out_h; oy++) {
        const int iy0 = oy * stride_h - pad_t;
        int8_t *orow = out + oy * out_w * ch;
        const int rowin = iy0 >= 0 && iy0 + kh <= in_h && oxb > oxa;
        for (int ox = 0; ox < out_w; ox++) {
            const int ix0 = ox * stride_w - pad_l;
            if (rowin && ox == oxa) { /* the run of windows wholly inside the input */
                dw_run(in + (iy0 * in_w + ix0) * ch, orow + ox * ch, wpack, quant, oxb - oxa, ch,
                       row, stride_w * ch, kh, kw, out_zp, act_lo, act_hi, fast);
                ox = oxb - 1;
                continue;
            }
            /* border: the window copied with its padding taps, then the same code */
            dw_patch(in, scratch, iy0, ix0, in_h, in_w, ch, kh, kw, zpw);
            dw_run(scratch, orow + ox * ch, wpack, quant, 1, ch, kw * ch, 0, kh, kw, out_zp,
                   act_lo, act_hi, fast);
        }
    }
}
