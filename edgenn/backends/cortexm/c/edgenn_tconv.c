/* Transposed convolution, int8 and int16 x int8, bit-exact with TFLite Micro's
 * reference_integer_ops::TransposeConv. Per output pixel the contributing (input pixel, tap)
 * pairs are listed once, then every output channel sums over them: the int16 kernel with the
 * shared SMLAD / SMLALD dot products (edgenn_conv_s16_mac.h), the int8 one with SXTAB16,
 * which widens four input bytes minus the zero point to two int16 pairs in one instruction
 * each, and SMLAD. Integer sums are order-free (int32 wraps, int64 is exact), so gathering
 * gives TFLite Micro's scattered sums exactly. */
#include "edgenn_tconv.h"

#include "edgenn_conv_s16_mac.h"

/* The taps reaching output pixel (oy, ox) as runs (input offset, weight offset, length;
 * edgenn_conv_s16_mac.h); their count. */
static int32_t tconv_taps(int32_t *taps, int32_t oy, int32_t ox, int32_t in_h, int32_t in_w,
                          int32_t in_c, int32_t cig, int32_t k_h, int32_t k_w,
                          int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                          int32_t pad_t, int32_t pad_l, int32_t merge)
{
    int32_t n = 0;
    for (int32_t ky = 0; ky < k_h; ky++) {
        const int32_t ty = oy + pad_t - ky * dil_h;
        if (ty < 0 || ty % stride_h) {
            continue;
        }
        const int32_t iy = ty / stride_h;
        if (iy >= in_h) {
            continue;
        }
        for (int32_t kx = 0; kx < k_w; kx++) {
            const int32_t tx = ox + pad_l - kx * dil_w;
            if (tx < 0 || tx % stride_w) {
                continue;
            }
            const int32_t ix = tx / stride_w;
            if (ix >= in_w) {
                continue;
            }
            n = edgenn_s16_add_tap(taps, n, (iy * in_w + ix) * in_c, (ky * k_w + kx) * cig, cig,
                                   merge);
        }
    }
    return n;
}

/* (x0 + a0, x2 + a1) and (x1 + a0, x3 + a1) of the bytes x0..x3 of x, a = (a0, a1) */
static inline __attribute__((always_inline)) uint32_t sxtab16_lo(uint32_t a, uint32_t x)
{
    return edgenn_sxtab16(a, x);
}
static inline __attribute__((always_inline)) uint32_t sxtab16_hi(uint32_t a, uint32_t x)
{
    return edgenn_sxtab16_ror8(a, x);
}

/* sum of (x[i] - in_zp) * w[i] added to acc (wrapping int32); nzp2 = (-in_zp, -in_zp) */
static inline __attribute__((always_inline)) int32_t dot_s8(const int8_t *x, const int8_t *w,
                                                          int32_t n, uint32_t nzp2,
                                                          int32_t in_zp, int32_t acc)
{
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32_t xq = edgenn_s16_load32(x + i), wq = edgenn_s16_load32(w + i);
        /* (x0 - zp, x2 - zp) and (x1 - zp, x3 - zp), against (w0, w2) and (w1, w3) */
        acc = edgenn_smlad(sxtab16_lo(nzp2, xq), edgenn_sxtb16(wq), acc);
        acc = edgenn_smlad(sxtab16_hi(nzp2, xq), edgenn_sxtb16_ror8(wq), acc);
    }
    for (; i < n; i++) {
        acc = edgenn_s16_add(acc, ((int32_t)x[i] - in_zp) * (int32_t)w[i]);
    }
    return acc;
}

void edgenn_tconv_s8(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias,
                     const int32_t *mult, const int32_t *shift, int32_t *taps,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                     int32_t in_zp, int32_t out_zp, int32_t act_min, int32_t act_max)
{
    const int32_t cig = in_c / groups, cog = out_c / groups;
    const int32_t w_stride = k_h * k_w * cig;
    const uint32_t nzp2 = ((uint32_t)(-in_zp) & 0xffffu) | ((uint32_t)(-in_zp) << 16);
    for (int32_t oy = 0; oy < out_h; oy++) {
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t n = tconv_taps(taps, oy, ox, in_h, in_w, in_c, cig, k_h, k_w,
                                         stride_h, stride_w, dil_h, dil_w, pad_t, pad_l,
                                         groups == 1);
            int8_t *op = out + (oy * out_w + ox) * out_c;
            for (int32_t c = 0; c < out_c; c++) {
                const int8_t *xg = in + (c / cog) * cig;
                const int8_t *wc = w + c * w_stride;
                int32_t acc = bias[c];
                for (int32_t t = 0; t < n; t++) {
                    const int32_t *r = taps + 3 * t;
                    acc = dot_s8(xg + r[0], wc + r[1], r[2], nzp2, in_zp, acc);
                }
                op[c] = edgenn_requant(acc, mult[c], shift[c], out_zp, act_min, act_max);
            }
        }
    }
}

void edgenn_tconv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                      const int32_t *mult, const int32_t *shift, int32_t *taps,
                      int32_t in_h, int32_t in_w, int32_t in_c,
                      int32_t out_h, int32_t out_w, int32_t out_c,
                      int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                      int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                      int32_t act_min, int32_t act_max, int32_t mode)
{
    const int32_t cig = in_c / groups;
    const int32_t w_stride = k_h * k_w * cig;
    for (int32_t oy = 0; oy < out_h; oy++) {
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t n = tconv_taps(taps, oy, ox, in_h, in_w, in_c, cig, k_h, k_w,
                                         stride_h, stride_w, dil_h, dil_w, pad_t, pad_l,
                                         groups == 1 && (cig & 3) == 0);
            edgenn_s16_pixel(in, out + (oy * out_w + ox) * out_c, w, bias, mult, shift, taps, n,
                             cig, out_c, groups, w_stride, act_min, act_max, mode);
        }
    }
}
