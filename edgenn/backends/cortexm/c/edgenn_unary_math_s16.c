/* Portable int16 element-wise kernels (see edgenn_unary_math_s16.h). */
#include "edgenn_unary_math_s16.h"

#include "edgenn_fixed_point.h"

#define EDGENN_RSQRT_SHIFT 20            /* elementwise.cc's kShift */
#define EDGENN_HALF_THREE_Q3 ((1 << 28) + (1 << 27)) /* 1.5 with 3 integer bits */
#define EDGENN_HALF_SQRT2_Q0 1518500250  /* sqrt(2) / 2 in Q0.31 */

static inline int16_t edgenn_sat16(int32_t v)
{
    return (int16_t)edgenn_clamp(v, -32768, 32767);
}

void edgenn_leaky_relu_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                           int32_t m_identity, int32_t sh_identity, int32_t m_alpha,
                           int32_t sh_alpha, int32_t negate_alpha, int32_t zp_out)
{
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = (int32_t)in[i] - zp_in;
        int32_t y;
        if (v >= 0) {
            y = edgenn_mbqm(v, m_identity, sh_identity);
        } else {
            y = edgenn_mbqm(v, m_alpha, sh_alpha);
            y = negate_alpha ? -y : y;
        }
        out[i] = edgenn_sat16(y + zp_out);
    }
}

void edgenn_abs_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                    int32_t rescale, int32_t mult, int32_t shift, int32_t zp_out)
{
    for (int32_t i = 0; i < n; i++) {
        const int32_t d = (int32_t)in[i] - zp_in;
        int32_t v = d < 0 ? -d : d;
        if (rescale) {
            v = edgenn_mbqm(v, mult, shift);
        }
        out[i] = edgenn_sat16(v + zp_out);
    }
}

void edgenn_abs_plain_s16(const int16_t *in, int16_t *out, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        const int32_t x = in[i];
        const int32_t v = x < 0 ? -x : x;
        /* why: |-32768| does not fit; C++ stores it in an int16_t, which wraps */
        out[i] = (int16_t)(v > 32767 ? v - 65536 : v);
    }
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp(v, kReverseShift) for v > 1: the Q0.31
 * multiplier of 1 / sqrt(v) and its (left) shift. */
static int32_t edgenn_inv_sqrt(int32_t v, int32_t *shift_out)
{
    int32_t shift = 11;
    while (v >= (1 << 29)) {
        v /= 4;
        shift++;
    }
    const uint32_t pairs = ((uint32_t)edgenn_clz32((uint32_t)v) - 1u) / 2u - 1u;
    shift -= (int32_t)pairs;
    v = (int32_t)((uint32_t)v << (2u * pairs));
    const int32_t half_input = edgenn_rdbpot(v >> 1, 1);
    int32_t x = 1 << 28; /* 1.0 with 3 integer bits */
    for (int k = 0; k < 5; k++) {
        /* Newton-Raphson: x <- 1.5 x - (v / 2) x^3 */
        const int32_t x3 = edgenn_srmpot(edgenn_srdhm(edgenn_srdhm(x, x), x), 6);
        const uint32_t diff = (uint32_t)edgenn_srdhm(EDGENN_HALF_THREE_Q3, x) -
                              (uint32_t)edgenn_srdhm(half_input, x3);
        x = edgenn_srmpot((int32_t)diff, 3);
    }
    x = edgenn_srdhm(x, EDGENN_HALF_SQRT2_Q0);
    if (shift < 0) {
        x = (int32_t)((uint32_t)x << (uint32_t)(-shift));
        shift = 0;
    }
    *shift_out = -shift;
    return x;
}

void edgenn_rsqrt_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                      int32_t mult, int32_t shift, int32_t zp_out)
{
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = (int32_t)in[i] - zp_in;
        if (v <= 0) {
            out[i] = 32767;
            continue;
        }
        int32_t inv = EDGENN_INT32_MAX;
        int32_t inv_shift = 0;
        if (v > 1) {
            inv = edgenn_inv_sqrt(v, &inv_shift);
        }
        const int32_t data = edgenn_mbqm(1, inv, inv_shift + EDGENN_RSQRT_SHIFT);
        out[i] = edgenn_sat16(edgenn_mbqm(data, mult, shift - EDGENN_RSQRT_SHIFT) + zp_out);
    }
}

void edgenn_requant_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                        int32_t mult, int32_t shift, int32_t zp_out, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = edgenn_mbqm((int32_t)in[i] - zp_in, mult, shift) + zp_out;
        out[i] = (int16_t)edgenn_clamp(v, lo, hi);
    }
}

void edgenn_clamp_s16(const int16_t *in, int16_t *out, int32_t n, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int16_t)edgenn_clamp(in[i], lo, hi);
    }
}
