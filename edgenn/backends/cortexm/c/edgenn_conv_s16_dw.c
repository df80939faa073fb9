/* int16 x int8 depthwise convolution, bit-exact with TFLite Micro's int16
 * DepthwiseConvPerChannel. With depth multiplier 1, four channels run together: two word
 * loads bring the inputs (x0, x1) (x2, x3), one word the four weights, SXTB16 (and SXTB16
 * ROR 8) widen them to the pairs (w0, w1) (w2, w3), and the four halfword products
 * (SMLABB / SMLATT) accumulate in registers over the window's in-bounds taps. Other
 * multipliers and tail channels take the scalar loop. A pixel's sums go to scratch and one
 * tight loop rescales them (registers stay free for the MACs). Accumulation modes as
 * edgenn_conv_s16_mac.h. */
#include "edgenn_conv_s16_dw.h"

#include "edgenn_conv_s16_mac.h"

#define LO(v) ((int32_t)(int16_t)((v) & 0xffffu))
#define HI(v) ((int32_t)(int16_t)((v) >> 16))

/* four channels c..c+3 (multiplier 1) over an nky x nkx rectangle of taps: int32 sums
 * (wrapping: TFLite Micro's or provably exact) into sums[0..3] */
EDGENN_S16_INLINE void dw_quad32(const int16_t *px, const int8_t *wp, int32_t row_step,
                                 int32_t col_step, int32_t w_row, int32_t w_col, int32_t nky,
                                 int32_t nkx, int32_t *sums)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t i = 0; i < nky; i++) {
        const int16_t *xp = px + i * row_step;
        const int8_t *wq = wp + i * w_row;
        for (int32_t j = 0; j < nkx; j++) {
            const uint32_t x01 = edgenn_s16_load32(xp), x23 = edgenn_s16_load32(xp + 2);
            const uint32_t q = edgenn_s16_load32(wq);
            const uint32_t wl = edgenn_sxtb16(q), wh = edgenn_sxtb16_ror8(q);
            a0 = edgenn_s16_add(a0, LO(x01) * LO(wl));
            a1 = edgenn_s16_add(a1, HI(x01) * HI(wl));
            a2 = edgenn_s16_add(a2, LO(x23) * LO(wh));
            a3 = edgenn_s16_add(a3, HI(x23) * HI(wh));
            xp += col_step;
            wq += w_col;
        }
    }
    sums[0] = a0, sums[1] = a1, sums[2] = a2, sums[3] = a3;
}

/* the same with exact int64 sums */
EDGENN_S16_INLINE void dw_quad64(const int16_t *px, const int8_t *wp, int32_t row_step,
                                 int32_t col_step, int32_t w_row, int32_t w_col, int32_t nky,
                                 int32_t nkx, int64_t *sums)
{
    int64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t i = 0; i < nky; i++) {
        const int16_t *xp = px + i * row_step;
        const int8_t *wq = wp + i * w_row;
        for (int32_t j = 0; j < nkx; j++) {
            const uint32_t x01 = edgenn_s16_load32(xp), x23 = edgenn_s16_load32(xp + 2);
            const uint32_t q = edgenn_s16_load32(wq);
            const uint32_t wl = edgenn_sxtb16(q), wh = edgenn_sxtb16_ror8(q);
            a0 += LO(x01) * LO(wl);
            a1 += HI(x01) * HI(wl);
            a2 += LO(x23) * LO(wh);
            a3 += HI(x23) * HI(wh);
            xp += col_step;
            wq += w_col;
        }
    }
    sums[0] = a0, sums[1] = a1, sums[2] = a2, sums[3] = a3;
}

/* one channel (any multiplier): x and w step by a tap's strides */
static int64_t dw_channel(const int16_t *xc, const int8_t *wc, int32_t row_step,
                          int32_t col_step, int32_t w_row, int32_t w_col, int32_t nky,
                          int32_t nkx, int32_t wide)
{
    int64_t a64 = 0;
    int32_t a32 = 0;
    for (int32_t i = 0; i < nky; i++) {
        for (int32_t j = 0; j < nkx; j++) {
            const int32_t prod = (int32_t)xc[i * row_step + j * col_step] *
                                 (int32_t)wc[i * w_row + j * w_col];
            if (wide) {
                a64 += prod;
            } else {
                a32 = edgenn_s16_add(a32, prod);
            }
        }
    }
    return wide ? a64 : a32;
}

/* the pixel's epilogue in one tight loop over its channels (the sums are in scratch);
 * why noinline: on its own the loop keeps its pointers and the clamp in registers */
static __attribute__((noinline)) void dw_epilogue(int16_t *op, const void *sums, const int64_t *bias, const int32_t *mult,
                        const int32_t *shift, int32_t out_c, int32_t lo, int32_t hi,
                        int32_t mode)
{
    if (mode == EDGENN_S16_WIDE32) {
        const int32_t *s = (const int32_t *)sums;
        for (int32_t c = 0; c < out_c; c++) {
            op[c] = edgenn_s16_out64_32(s[c], bias[c], mult[c], shift[c], lo, hi);
        }
    } else if (mode == EDGENN_S16_NARROW) {
        const int32_t *s = (const int32_t *)sums;
        for (int32_t c = 0; c < out_c; c++) {
            op[c] = edgenn_s16_out32(s[c], bias[c], mult[c], shift[c], lo, hi);
        }
    } else {
        const int64_t *s = (const int64_t *)sums;
        for (int32_t c = 0; c < out_c; c++) {
            op[c] = edgenn_s16_out64(s[c], bias[c], mult[c], shift[c], lo, hi);
        }
    }
}

void edgenn_dwconv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                       const int32_t *mult, const int32_t *shift, void *scratch,
                       int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_h, int32_t out_w, int32_t out_c,
                       int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                       int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                       int32_t act_min, int32_t act_max, int32_t mode)
{
    const int32_t depth_mult = out_c / in_c;
    const int32_t quads = depth_mult == 1 ? out_c / 4 : 0;
    const int32_t wide = mode == EDGENN_S16_WIDE64;
    int32_t *sums32 = (int32_t *)scratch;
    int64_t *sums64 = (int64_t *)scratch;
    const int32_t row_step = dil_h * in_w * in_c, col_step = dil_w * in_c;
    const int32_t w_row = k_w * out_c, w_col = out_c;
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t iy0 = oy * stride_h - pad_t;
        /* the in-bounds taps form a rectangle [ky0, ky1) x [kx0, kx1) */
        int32_t ky0 = 0, ky1 = k_h;
        while (ky0 < k_h && iy0 + ky0 * dil_h < 0) {
            ky0++;
        }
        while (ky1 > ky0 && iy0 + (ky1 - 1) * dil_h >= in_h) {
            ky1--;
        }
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t ix0 = ox * stride_w - pad_l;
            int32_t kx0 = 0, kx1 = k_w;
            while (kx0 < k_w && ix0 + kx0 * dil_w < 0) {
                kx0++;
            }
            while (kx1 > kx0 && ix0 + (kx1 - 1) * dil_w >= in_w) {
                kx1--;
            }
            const int32_t nky = ky1 - ky0, nkx = kx1 - kx0;
            const int32_t inside = nky > 0 && nkx > 0;
            /* why the guard: with no tap inside, the first tap's address may lie outside */
            const int16_t *px =
                inside ? in + ((iy0 + ky0 * dil_h) * in_w + ix0 + kx0 * dil_w) * in_c : in;
            const int8_t *wp = w + (inside ? ky0 * w_row + kx0 * w_col : 0);
            for (int32_t q = 0; q < quads; q++) {
                const int32_t c = 4 * q;
                if (wide) {
                    dw_quad64(px + c, wp + c, row_step, col_step, w_row, w_col, nky, nkx,
                              sums64 + c);
                } else {
                    dw_quad32(px + c, wp + c, row_step, col_step, w_row, w_col, nky, nkx,
                              sums32 + c);
                }
            }
            for (int32_t c = 4 * quads; c < out_c; c++) {
                const int64_t a = dw_channel(px + c / depth_mult, wp + c, row_step, col_step,
                                             w_row, w_col, nky, nkx, wide);
                if (wide) {
                    sums64[c] = a;
                } else {
                    sums32[c] = (int32_t)a;
                }
            }
            dw_epilogue(out + (oy * out_w + ox) * out_c, scratch, bias, mult, shift, out_c,
                        act_min, act_max, mode);
        }
    }
}
