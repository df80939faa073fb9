/* 1-input-channel int8 convolution with SMLAD (see edgenn_conv_s8_1ch_dsp.h). */
#include "edgenn_conv_s8_1ch_dsp.h"
#include "edgenn_conv_s8_1ch_mac.h"

#include "edgenn_fixed_point.h"

/* Gather the taps of every pixel of output row oy: buf[ox * tp + p] = pair p. */
static void fc1_gather(const int8_t *in, uint32_t *buf, int oy, int in_h, int in_w, int out_w,
                       int kh, int kw, int stride_h, int stride_w, int pad_t, int pad_l, int in_zp,
                       int tp)
{
    const int iy0 = oy * stride_h - pad_t;
    const int taps = kh * kw;
    for (int ox = 0; ox < out_w; ox++) {
        const int ix0 = ox * stride_w - pad_l;
        int16_t *dst = (int16_t *)(buf + ox * tp);
        if (kh == 3 && kw == 3 && iy0 >= 0 && iy0 + 3 <= in_h && ix0 >= 0 &&
            ix0 + 3 <= in_w) { /* the common case, unrolled: pairs (t0 t1) .. (t8 0) */
            const int8_t *r0 = in + iy0 * in_w + ix0;
            const int8_t *r1 = r0 + in_w;
            const int8_t *r2 = r1 + in_w;
            uint32_t *d = buf + ox * tp;
            d[0] = ((uint32_t)(uint16_t)r0[0]) | ((uint32_t)r0[1] << 16);
            d[1] = ((uint32_t)(uint16_t)r0[2]) | ((uint32_t)r1[0] << 16);
            d[2] = ((uint32_t)(uint16_t)r1[1]) | ((uint32_t)r1[2] << 16);
            d[3] = ((uint32_t)(uint16_t)r2[0]) | ((uint32_t)r2[1] << 16);
            d[4] = (uint32_t)(uint16_t)r2[2];
            continue;
        }
        if (iy0 >= 0 && iy0 + kh <= in_h && ix0 >= 0 && ix0 + kw <= in_w) {
            const int8_t *src = in + iy0 * in_w + ix0;
            int t = 0;
            for (int ky = 0; ky < kh; ky++, src += in_w) {
                for (int kx = 0; kx < kw; kx++) {
                    dst[t++] = src[kx];
                }
            }
        } else {
            int t = 0;
            for (int ky = 0; ky < kh; ky++) {
                const int iy = iy0 + ky;
                const int y_in = iy >= 0 && iy < in_h;
                for (int kx = 0; kx < kw; kx++) {
                    const int ix = ix0 + kx;
                    dst[t++] = (int16_t)(y_in && ix >= 0 && ix < in_w ? in[iy * in_w + ix]
                                                                      : in_zp);
                }
            }
        }
        if (taps & 1) {
            dst[taps] = 0; /* the pad tap of the last pair (its weight is 0 too) */
        }
    }
}


/* One output row for channels [0, out_c) of a 3x3 kernel (5 pairs per pixel): the channel's
 * 5 weight words and its constants stay in registers along the row; 2 pixels per step. */
static inline __attribute__((always_inline)) int32_t fc1_out(int32_t acc, const int32_t *q,
                                                            int out_zp, int lo, int hi,
                                                            const int fast)
{
    return edgenn_requant_record(acc, q, out_zp, lo, hi, fast);
}

static inline __attribute__((always_inline)) void fc1_row_3x3(
    const uint32_t *buf, int8_t *orow, const uint32_t *wpack, const int32_t *quant, int out_w,
    int out_c, int out_zp, int lo, int hi, const int fast)
{
    for (int c = 0; c < out_c; c++) {
        const uint32_t *wc = wpack + 5 * c;
        const uint32_t w0 = wc[0], w1 = wc[1], w2 = wc[2], w3 = wc[3], w4 = wc[4];
        const int32_t q[4] = {quant[4 * c], quant[4 * c + 1], quant[4 * c + 2],
                              quant[4 * c + 3]};
        const uint32_t *x = buf;
        int8_t *o = orow + c;
        int ox = 0;
        for (; ox + 2 <= out_w; ox += 2) {
            int32_t a, b;
            edgenn_conv1ch_3x3_pair(x, w0, w1, w2, w3, w4, q[0], &a, &b);
            x += 10;
            o[0] = (int8_t)fc1_out(a, q, out_zp, lo, hi, fast);
            o[out_c] = (int8_t)fc1_out(b, q, out_zp, lo, hi, fast);
            o += 2 * out_c;
        }
        if (ox < out_w) {
            int32_t a = edgenn_smlad(x[0], w0, q[0]);
            a = edgenn_smlad(x[1], w1, a);
            a = edgenn_smlad(x[2], w2, a);
            a = edgenn_smlad(x[3], w3, a);
            a = edgenn_smlad(x[4], w4, a);
            *o = (int8_t)fc1_out(a, q, out_zp, lo, hi, fast);
        }
    }
}

/* any pair count */
static void fc1_row_any(const uint32_t *buf, int8_t *orow, const uint32_t *wpack,
                        const int32_t *quant, int out_w, int out_c, int tp, int out_zp, int lo,
                        int hi, int fast)
{
    for (int c = 0; c < out_c; c++) {
        const uint32_t *w = wpack + c * tp;
        const int32_t *q = quant + 4 * c;
        const uint32_t *x = buf;
        for (int ox = 0; ox < out_w; ox++, x += tp) {
            int32_t acc = q[0];
            for (int p = 0; p < tp; p++) {
                acc = edgenn_smlad(x[p], w[p], acc);
            }
            int32_t v;
            if (fast) {
                v = edgenn_ssat8(edgenn_requant_doubled(acc, q[1], q[2], q[3]));
                v = v < lo ? lo : v;
            } else {
                v = edgenn_requant_s32(acc, q[1], q[2], out_zp, lo, hi);
            }
            orow[ox * out_c + c] = (int8_t)v;
        }
    }
}

void edgenn_conv_s8_1ch_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                            const int32_t *quant, int32_t in_h, int32_t in_w, int32_t out_h,
                            int32_t out_w, int32_t out_c, int32_t kh, int32_t kw, int32_t stride_h,
                            int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t in_zp,
                            int32_t out_zp, int32_t act_lo, int32_t act_hi, int32_t fast)
{
    const int tp = (kh * kw + 1) >> 1;
    uint32_t *buf = (uint32_t *)scratch;
    for (int oy = 0; oy < out_h; oy++) {
        fc1_gather(in, buf, oy, in_h, in_w, out_w, kh, kw, stride_h, stride_w, pad_t, pad_l,
                   in_zp, tp);
        int8_t *orow = out + oy * out_w * out_c;
        if (kh == 3 && kw == 3 && fast == 2) {
            fc1_row_3x3(buf, orow, wpack, quant, out_w, out_c, out_zp, act_lo, act_hi, 2);
        } else if (kh == 3 && kw == 3 && fast == 1) {
            fc1_row_3x3(buf, orow, wpack, quant, out_w, out_c, out_zp, act_lo, act_hi, 1);
        } else if (kh == 3 && kw == 3) {
            fc1_row_3x3(buf, orow, wpack, quant, out_w, out_c, out_zp, act_lo, act_hi, 0);
        } else {
            fc1_row_any(buf, orow, wpack, quant, out_w, out_c, tp, out_zp, act_lo, act_hi,
                        fast);
        }
    }
}
