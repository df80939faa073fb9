/* Fast int8 AvgPool2D (see edgenn_avgpool_s8_dsp.h). */
#include "edgenn_avgpool_s8_dsp.h"



static inline int32_t ps_max(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t ps_min(int32_t a, int32_t b) { return a < b ? a : b; }

/* lanes of an SXTAB16 accumulator: (int16) low, (int16) high */
#define PS_LO(v) ((int32_t)(int16_t)(v))
#define PS_HI(v) ((int32_t)(v) >> 16)

/* s[0..15] += window sums of 16 channels at p (rows x cols taps, <= 256; pixel step c,
 * row step row_skip bytes after the cols pixels). */
static void ps_sum16(const int8_t *p, int32_t rows, int32_t cols, int32_t c, int32_t row_skip,
                     int32_t *s)
{
    uint32_t e0 = 0, o0 = 0, e1 = 0, o1 = 0, e2 = 0, o2 = 0, e3 = 0, o3 = 0;
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t x = 0; x < cols; x++) {
            const uint32_t w0 = edgenn_load32(p), w1 = edgenn_load32(p + 4);
            const uint32_t w2 = edgenn_load32(p + 8), w3 = edgenn_load32(p + 12);
            p += c;
            e0 = ps_sxtab16(e0, w0);
            o0 = ps_sxtab16_ror8(o0, w0);
            e1 = ps_sxtab16(e1, w1);
            o1 = ps_sxtab16_ror8(o1, w1);
            e2 = ps_sxtab16(e2, w2);
            o2 = ps_sxtab16_ror8(o2, w2);
            e3 = ps_sxtab16(e3, w3);
            o3 = ps_sxtab16_ror8(o3, w3);
        }
        p += row_skip;
    }
    s[0] += PS_LO(e0); s[1] += PS_LO(o0); s[2] += PS_HI(e0); s[3] += PS_HI(o0);
    s[4] += PS_LO(e1); s[5] += PS_LO(o1); s[6] += PS_HI(e1); s[7] += PS_HI(o1);
    s[8] += PS_LO(e2); s[9] += PS_LO(o2); s[10] += PS_HI(e2); s[11] += PS_HI(o2);
    s[12] += PS_LO(e3); s[13] += PS_LO(o3); s[14] += PS_HI(e3); s[15] += PS_HI(o3);
}

/* the same for 4 channels */
static void ps_sum4(const int8_t *p, int32_t rows, int32_t cols, int32_t c, int32_t row_skip,
                    int32_t *s)
{
    uint32_t e = 0, o = 0;
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t x = 0; x < cols; x++) {
            const uint32_t w = edgenn_load32(p);
            p += c;
            e = ps_sxtab16(e, w);
            o = ps_sxtab16_ror8(o, w);
        }
        p += row_skip;
    }
    s[0] += PS_LO(e); s[1] += PS_LO(o); s[2] += PS_HI(e); s[3] += PS_HI(o);
}

/* one channel (the c % 4 tail) */
static void ps_sum1(const int8_t *p, int32_t rows, int32_t cols, int32_t c, int32_t row_skip,
                    int32_t *s)
{
    int32_t acc = 0;
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t x = 0; x < cols; x++) {
            acc += *p;
            p += c;
        }
        p += row_skip;
    }
    *s += acc;
}

/* One output pixel whose window has at most POOL_SIMD_MAX_PASS taps: every channel block is
 * summed in registers and written straight to the output (no scratch round trip). f is
 * built by the caller with constant mean / act fields so the branches fold. */
EDGENN_INLINE void ps_window(const int8_t *base, int32_t rows, int32_t cols, int32_t c,
                             int32_t row_skip, int8_t *o, const ps_final_t f)
{
    int32_t ch = 0;
    for (; ch + 16 <= c; ch += 16) {
        const int8_t *p = base + ch;
        uint32_t e0 = 0, o0 = 0, e1 = 0, o1 = 0, e2 = 0, o2 = 0, e3 = 0, o3 = 0;
        for (int32_t r = 0; r < rows; r++, p += row_skip) {
            for (int32_t x = 0; x < cols; x++, p += c) {
                uint32_t w0, w1, w2, w3;
                ps_load4(p, 0, &w0, &w1, &w2, &w3);
                e0 = ps_sxtab16(e0, w0);
                o0 = ps_sxtab16_ror8(o0, w0);
                e1 = ps_sxtab16(e1, w1);
                o1 = ps_sxtab16_ror8(o1, w1);
                e2 = ps_sxtab16(e2, w2);
                o2 = ps_sxtab16_ror8(o2, w2);
                e3 = ps_sxtab16(e3, w3);
                o3 = ps_sxtab16_ror8(o3, w3);
            }
        }
        edgenn_store32(o + ch, ps_pack4(e0, o0, f));
        edgenn_store32(o + ch + 4, ps_pack4(e1, o1, f));
        edgenn_store32(o + ch + 8, ps_pack4(e2, o2, f));
        edgenn_store32(o + ch + 12, ps_pack4(e3, o3, f));
    }
    for (; ch + 4 <= c; ch += 4) {
        const int8_t *p = base + ch;
        uint32_t e = 0, od = 0;
        for (int32_t r = 0; r < rows; r++, p += row_skip) {
            for (int32_t x = 0; x < cols; x++, p += c) {
                const uint32_t w = edgenn_load32(p);
                e = ps_sxtab16(e, w);
                od = ps_sxtab16_ror8(od, w);
            }
        }
        edgenn_store32(o + ch, ps_pack4(e, od, f));
    }
    for (; ch < c; ch++) {
        int32_t s = 0;
        ps_sum1(base + ch, rows, cols, c, row_skip, &s);
        o[ch] = (int8_t)ps_final(s, f);
    }
}

void edgenn_avgpool_s8_dsp(const int8_t *in, int8_t *out, int32_t *sums, int32_t in_h, int32_t in_w,
                           int32_t c, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                           int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                           const int32_t *records, int32_t act_min, int32_t act_max)
{
    const int32_t row = in_w * c;
    const int act = act_min > -128 || act_max < 127;
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t y0 = ps_max(oy * stride_h - pad_t, 0);
        const int32_t y1 = ps_min(oy * stride_h - pad_t + k_h, in_h);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t x0 = ps_max(ox * stride_w - pad_l, 0);
            const int32_t x1 = ps_min(ox * stride_w - pad_l + k_w, in_w);
            const int32_t cols = x1 - x0;
            const int32_t row_skip = row - cols * c;
            /* rows per pass: at most POOL_SIMD_MAX_PASS taps in the 16-bit lanes (the
             * generator refuses windows wider than that) */
            const int32_t pass_rows = POOL_SIMD_MAX_PASS / cols;
            /* the record of this window size (a handful of sizes: a linear search) */
            const int32_t taps = (y1 - y0) * cols;
            const int32_t *rec = records;
            while (rec[0] != taps) {
                rec += 4;
            }
            const uint32_t magic = (uint32_t)rec[1];
            const int32_t bias = rec[2], fix = rec[3];
            int8_t *o = out + (oy * out_w + ox) * c;
            if (taps <= POOL_SIMD_MAX_PASS) {
                const int8_t *base = in + y0 * row + x0 * c;
                if (act) {
                    const ps_final_t f = {magic, bias, fix, 1, act_min, act_max, 0, 0, 0, 0, 0};
                    ps_window(base, y1 - y0, cols, c, row_skip, o, f);
                } else {
                    const ps_final_t f = {magic, bias, fix, 0, -128, 127, 0, 0, 0, 0, 0};
                    ps_window(base, y1 - y0, cols, c, row_skip, o, f);
                }
                continue;
            }
            for (int32_t ch = 0; ch < c; ch++) {
                sums[ch] = 0;
            }
            for (int32_t ya = y0; ya < y1; ya += pass_rows) {
                const int32_t rows = ps_min(pass_rows, y1 - ya);
                const int8_t *base = in + ya * row + x0 * c;
                int32_t ch = 0;
                for (; ch + 16 <= c; ch += 16) {
                    ps_sum16(base + ch, rows, cols, c, row_skip, sums + ch);
                }
                for (; ch + 4 <= c; ch += 4) {
                    ps_sum4(base + ch, rows, cols, c, row_skip, sums + ch);
                }
                for (; ch < c; ch++) {
                    ps_sum1(base + ch, rows, cols, c, row_skip, sums + ch);
                }
            }
            for (int32_t ch = 0; ch < c; ch++) {
                const int32_t s = sums[ch];
                const uint32_t x = (uint32_t)(s + bias + ((s >> 31) & fix));
                int32_t v = (int32_t)(((uint64_t)x * magic) >> 32) - POOL_SIMD_OFFSET;
                if (act) {
                    v = ps_min(ps_max(v, act_min), act_max);
                }
                o[ch] = (int8_t)v;
            }
        }
    }
}
