/* General int8 convolution with SMLAD: 2 output pixels x 4 output channels per inner step. Per
 * pair of output pixels the two input patches are converted once to int16 pairs in an
 * interleaved scratch buffer (word 2p = pixel a's pair p, word 2p+1 = pixel b's), then every
 * group of 4 output channels runs over the patch with 8 accumulators
 * (edgenn_conv_s8_dsp_mac.h). Byte order: a word of 4 int8 inputs b0 b1 b2 b3 becomes the pairs
 * (b0,b2) and (b1,b3) (SXTB16, SXTB16 ROR 8) without shuffling; the weights were permuted the
 * same way at generation time. */
#include "edgenn_conv_s8_dsp.h"
#include "edgenn_conv_s8_dsp_mac.h"
#include "edgenn_fixed_point.h"

/* element j of a patch lands at int16 index (j & ~1) * 2 + 2 * slot + (j & 1) */
#define CDSP_IDX(j, slot) ((((j) & ~1) << 1) + ((slot) << 1) + ((j) & 1))

/* the permutation inside a run of 4 converted bytes: swap bits 0 and 1 of the position */
#define CDSP_PERM4(i) (((i) & ~3) | (((i) & 1) << 1) | (((i) >> 1) & 1))

static void cdsp_patch(const int8_t *in, int16_t *buf, int slot, int oy, int ox, int in_h, int in_w,
                       int in_c, int kh, int kw, int stride_h, int stride_w, int pad_t, int pad_l,
                       int in_zp)
{
    const int row_len = kw * in_c;
    const int fast_len = (row_len & 1) ? 0 : (row_len & ~3);
    uint32_t *words = (uint32_t *)buf + slot;
    const int iy0 = oy * stride_h - pad_t;
    const int ix0 = ox * stride_w - pad_l;
    const int row_inside = ix0 >= 0 && ix0 + kw <= in_w;
    int j0 = 0;
    for (int ky = 0; ky < kh; ky++, j0 += row_len) {
        const int iy = iy0 + ky;
        const int y_inside = iy >= 0 && iy < in_h;
        if (y_inside && row_inside) {
            const int8_t *src = in + ((iy * in_w) + ix0) * in_c;
            uint32_t *dst = words + j0; /* pair (j0 + i) / 2 at word 2 * pair; j0 is even */
            int i = 0;
            for (; i < fast_len; i += 4) {
                uint32_t v = edgenn_load32(src + i);
                dst[i] = edgenn_sxtb16(v);
                dst[i + 2] = edgenn_sxtb16_ror8(v);
            }
            for (; i < row_len; i++) {
                int j = j0 + i;
                buf[CDSP_IDX(j, slot)] = src[i];
            }
        } else {
            int i = 0;
            for (int kx = 0; kx < kw; kx++) {
                const int ix = ix0 + kx;
                const int inside = y_inside && ix >= 0 && ix < in_w;
                const int8_t *src = in + ((iy * in_w) + ix) * in_c;
                for (int ci = 0; ci < in_c; ci++, i++) {
                    int j = j0 + (i < fast_len ? CDSP_PERM4(i) : i);
                    buf[CDSP_IDX(j, slot)] = (int16_t)(inside ? src[ci] : in_zp);
                }
            }
        }
    }
}

/* requantize channel c of both pixels; q = {bias, mult, shift, half} of the channel */
EDGENN_INLINE void cdsp_store2(int8_t *oa, int8_t *ob, int32_t acc_a, int32_t acc_b,
                               const int32_t *q, int fast, int out_zp, int lo, int hi)
{
    /* why not edgenn_requant_record once per pixel: gcc 12 schedules the two pixels' steps
     * interleaved as written here better than the helper twice (cycles pinned); the
     * arithmetic is edgenn_fixed_point.h's */
    if (fast) { /* out_zp folded in q[3]; hi == 127; fast == 2: lo == -128 as well */
        int32_t ra = edgenn_ssat8(edgenn_requant_doubled(acc_a, q[1], q[2], q[3]));
        int32_t rb = edgenn_ssat8(edgenn_requant_doubled(acc_b, q[1], q[2], q[3]));
        if (fast == 1) {
            ra = ra < lo ? lo : ra;
            rb = rb < lo ? lo : rb;
        }
        *oa = (int8_t)ra;
        *ob = (int8_t)rb;
    } else {
        *oa = (int8_t)edgenn_requant_s32(acc_a, q[1], q[2], out_zp, lo, hi);
        *ob = (int8_t)edgenn_requant_s32(acc_b, q[1], q[2], out_zp, lo, hi);
    }
}

EDGENN_INLINE void cdsp_conv(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                             const int32_t *quant, int in_h, int in_w, int in_c, int out_h,
                             int out_w, int out_c, int kh, int kw, int stride_h, int stride_w,
                             int pad_t, int pad_l, int in_zp, int out_zp, int lo, int hi,
                             const int fast)
{
    const int kdim = kh * kw * in_c;
    const int kp = (kdim + 1) >> 1;
    const int full = out_c >> 2;
    const int tail = out_c & 3;
    const int npix = out_h * out_w;
    int16_t *buf = (int16_t *)scratch;
    const uint32_t *xw = (const uint32_t *)scratch;
    if (kdim & 1) { /* the padding element of the last pair: weight 0, keep it defined */
        buf[CDSP_IDX(kdim, 0)] = 0;
        buf[CDSP_IDX(kdim, 1)] = 0;
    }
    int oy = 0, ox = 0;
    for (int pa = 0; pa < npix; pa += 2) {
        const int pb = pa + 1 < npix ? pa + 1 : pa;
        cdsp_patch(in, buf, 0, oy, ox, in_h, in_w, in_c, kh, kw, stride_h, stride_w, pad_t,
                   pad_l, in_zp);
        if (++ox == out_w) { ox = 0; oy++; }
        if (pb != pa) {
            cdsp_patch(in, buf, 1, oy, ox, in_h, in_w, in_c, kh, kw, stride_h, stride_w,
                       pad_t, pad_l, in_zp);
            if (++ox == out_w) { ox = 0; oy++; }
        } else {
            cdsp_patch(in, buf, 1, oy - (ox == 0), ox == 0 ? out_w - 1 : ox - 1, in_h, in_w,
                       in_c, kh, kw, stride_h, stride_w, pad_t, pad_l, in_zp);
        }
        int8_t *oa = out + pa * out_c;
        int8_t *ob = out + pb * out_c;
        const uint32_t *w = wpack;
        const int32_t *q = quant;
        for (int g = 0; g < full; g++) {
            int32_t acc[8] = {q[0], q[4], q[8], q[12], q[0], q[4], q[8], q[12]};
            cdsp_mac_2x4(xw, w, kp, acc);
            cdsp_store2(oa + 0, ob + 0, acc[0], acc[4], q + 0, fast, out_zp, lo, hi);
            cdsp_store2(oa + 1, ob + 1, acc[1], acc[5], q + 4, fast, out_zp, lo, hi);
            cdsp_store2(oa + 2, ob + 2, acc[2], acc[6], q + 8, fast, out_zp, lo, hi);
            cdsp_store2(oa + 3, ob + 3, acc[3], acc[7], q + 12, fast, out_zp, lo, hi);
            w += 4 * kp;
            q += 16;
            oa += 4;
            ob += 4;
        }
        if (tail) {
            int32_t acc[8] = {q[0], q[4], q[8], q[12], q[0], q[4], q[8], q[12]};
            cdsp_mac_2x4(xw, w, kp, acc);
            for (int c = 0; c < tail; c++) {
                cdsp_store2(oa + c, ob + c, acc[c], acc[4 + c], q + 4 * c, fast, out_zp, lo,
                            hi);
            }
        }
    }
}

void edgenn_conv_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                        const int32_t *quant, int32_t in_h, int32_t in_w, int32_t in_c,
                        int32_t out_h, int32_t out_w, int32_t out_c, int32_t kh, int32_t kw,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t in_zp, int32_t out_zp, int32_t act_lo, int32_t act_hi, int32_t fast)
{
    if (fast == 2) {
        cdsp_conv(in, out, scratch, wpack, quant, in_h, in_w, in_c, out_h, out_w, out_c, kh,
                  kw, stride_h, stride_w, pad_t, pad_l, in_zp, out_zp, act_lo, act_hi, 2);
    } else if (fast == 1) {
        cdsp_conv(in, out, scratch, wpack, quant, in_h, in_w, in_c, out_h, out_w, out_c, kh,
                  kw, stride_h, stride_w, pad_t, pad_l, in_zp, out_zp, act_lo, act_hi, 1);
    } else {
        cdsp_conv(in, out, scratch, wpack, quant, in_h, in_w, in_c, out_h, out_w, out_c, kh,
                  kw, stride_h, stride_w, pad_t, pad_l, in_zp, out_zp, act_lo, act_hi, 0);
    }
}
