/* Fast int8 Add / Mul (see edgenn_eltwise_s8_dsp.h). */
#include "edgenn_eltwise_s8_dsp.h"

/* one element of mode 1: the generator checked |sum| < 2^31 and rshift >= 1 (see
 * edgenn_requant_doubled); out_zp << r rides along in half. */
EDGENN_INLINE int32_t ews_req1(int32_t t, int32_t mult, int32_t rshift, int32_t half)
{
    return edgenn_ssat8(edgenn_requant_doubled(t, mult, rshift, half));
}

static void ews_add1_run(const uint8_t *a, const uint8_t *b, int8_t *o, int32_t n,
                         const int32_t *ta, const int32_t *tb, int32_t mult, int32_t rshift,
                         int32_t half, int32_t lo, int32_t hi)
{
    const int act = lo > -128 || hi < 127;
    for (; n >= 4; n -= 4) {
        int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
        int32_t b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
        int32_t v0 = ews_req1(ta[a0] + tb[b0], mult, rshift, half);
        int32_t v1 = ews_req1(ta[a1] + tb[b1], mult, rshift, half);
        int32_t v2 = ews_req1(ta[a2] + tb[b2], mult, rshift, half);
        int32_t v3 = ews_req1(ta[a3] + tb[b3], mult, rshift, half);
        if (act) {
            v0 = edgenn_clamp(v0, lo, hi);
            v1 = edgenn_clamp(v1, lo, hi);
            v2 = edgenn_clamp(v2, lo, hi);
            v3 = edgenn_clamp(v3, lo, hi);
        }
        o[0] = (int8_t)v0;
        o[1] = (int8_t)v1;
        o[2] = (int8_t)v2;
        o[3] = (int8_t)v3;
        a += 4;
        b += 4;
        o += 4;
    }
    for (; n > 0; n--) {
        *o++ = (int8_t)edgenn_clamp(ews_req1(ta[*a++] + tb[*b++], mult, rshift, half), lo, hi);
    }
}

void edgenn_add_s8_dsp_smmulr(const int8_t *a, const int8_t *b, int8_t *out, int32_t n,
                              int32_t period, const int32_t *ta, const int32_t *tb, int32_t mult,
                              int32_t rshift, int32_t half, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i += period) {
        ews_add1_run((const uint8_t *)a + i, (const uint8_t *)b, out + i, period, ta, tb, mult,
                     rshift, half, lo, hi);
    }
}

void edgenn_add_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int32_t n, int32_t period,
                       const int32_t *ta, const int32_t *tb, int32_t mult, int32_t shift,
                       int32_t out_zp, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i += period) {
        const uint8_t *pa = (const uint8_t *)a + i, *pb = (const uint8_t *)b;
        int8_t *po = out + i;
        for (int32_t j = 0; j < period; j++) {
            po[j] = (int8_t)edgenn_requant_s32(ta[pa[j]] + tb[pb[j]], mult, shift, out_zp, lo, hi);
        }
    }
}

void edgenn_lut_s8_dsp(const int8_t *a, int8_t *out, int32_t n, const int8_t *lut)
{
    const uint8_t *pa = (const uint8_t *)a;
    for (; n >= 4; n -= 4) {
        int32_t a0 = pa[0], a1 = pa[1], a2 = pa[2], a3 = pa[3];
        int8_t v0 = lut[a0], v1 = lut[a1], v2 = lut[a2], v3 = lut[a3];
        out[0] = v0;
        out[1] = v1;
        out[2] = v2;
        out[3] = v3;
        pa += 4;
        out += 4;
    }
    for (; n > 0; n--) {
        *out++ = lut[*pa++];
    }
}

void edgenn_mul_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int32_t n, int32_t period,
                       int32_t a_zp, int32_t b_zp, int32_t mult, int32_t shift, int32_t out_zp,
                       int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i += period) {
        const int8_t *pa = a + i;
        int8_t *po = out + i;
        for (int32_t j = 0; j < period; j++) {
            const int32_t p = ((int32_t)pa[j] - a_zp) * ((int32_t)b[j] - b_zp);
            po[j] = (int8_t)edgenn_requant_s32(p, mult, shift, out_zp, lo, hi);
        }
    }
}

void edgenn_mul_s8_dsp_smmulr(const int8_t *a, const int8_t *b, int8_t *out, int32_t n,
                              int32_t period, int32_t a_zp, int32_t b_zp, int32_t left1,
                              int32_t mult, int32_t rshift, int32_t half, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i += period) {
        const int8_t *pa = a + i;
        int8_t *po = out + i;
        for (int32_t j = 0; j < period; j++) {
            const int32_t p = ((int32_t)pa[j] - a_zp) * ((int32_t)b[j] - b_zp);
            po[j] = (int8_t)edgenn_clamp(ews_req1((int32_t)((uint32_t)p << left1), mult, rshift,
                                                  half), lo, hi);
        }
    }
}
