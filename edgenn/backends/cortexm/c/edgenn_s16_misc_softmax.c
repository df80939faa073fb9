/* Portable int16 softmax, bit-exact with TFLite Micro's reference_ops::SoftmaxInt16. */
#include "edgenn_s16_misc_softmax.h"

#include "edgenn_fixed_point.h"

/* TFLM's int16 LUTLookup: the top 9 bits pick the entry, the low 7 interpolate. */
static inline int32_t lut_lookup(int32_t value, const int16_t *lut)
{
    const int32_t index = 256 + (value >> 7);
    const int32_t offset = value & 0x7f;
    const int32_t base = lut[index];
    const int32_t slope = (int32_t)lut[index + 1] - base;
    return base + ((slope * offset + 64) >> 7);
}

void edgenn_softmax_s16(const int16_t *in, int16_t *out, int32_t rows, int32_t depth,
                        int32_t mult, int32_t shift, const int16_t *exp_lut,
                        const int16_t *recip_lut)
{
    for (int32_t r = 0; r < rows; r++) {
        const int16_t *x = in + r * depth;
        int16_t *y = out + r * depth;
        int32_t max = INT16_MIN;
        for (int32_t i = 0; i < depth; i++) {
            max = x[i] > max ? x[i] : max;
        }
        /* the exps (Q0.15) wait in the output; their sum is Q16.15 */
        int32_t sum = 0;
        for (int32_t i = 0; i < depth; i++) {
            const int32_t scaled = edgenn_mbqm((int32_t)x[i] - max, mult, shift);
            const int32_t e = lut_lookup(edgenn_clamp(scaled + 32767, INT16_MIN, INT16_MAX),
                                         exp_lut);
            y[i] = (int16_t)e;
            sum += e;
        }
        /* normalise the sum to [1, 2) with 16 fraction bits (rounded), recentre sum - 1 */
        const int32_t headroom_plus_one = edgenn_clz32((uint32_t)sum);
        const uint32_t normalised = (uint32_t)sum << (headroom_plus_one - 1);
        const int32_t shifted_sum = (int32_t)((normalised + (1u << 13)) >> 14);
        const int32_t sym = edgenn_clamp(shifted_sum - ((1 << 15) + (1 << 16)), INT16_MIN,
                                         INT16_MAX);
        const int32_t reciprocal = lut_lookup(sym, recip_lut); /* Q0.15 */
        const int32_t right_shift = 31 - headroom_plus_one;
        const int32_t rounding = (int32_t)1 << (right_shift - 1);
        for (int32_t i = 0; i < depth; i++) {
            /* why int32 suffices: both factors are below 2^15 */
            const int32_t v = ((int32_t)y[i] * reciprocal + rounding) >> right_shift;
            y[i] = (int16_t)edgenn_clamp(v, 0, INT16_MAX);
        }
    }
}

void edgenn_softmax_s8_s16(const int8_t *in, int16_t *out, int32_t rows, int32_t depth,
                           const int32_t *exp_lut, const int32_t *acc_lut, int32_t diff_min)
{
    for (int32_t r = 0; r < rows; r++) {
        const int8_t *x = in + r * depth;
        int16_t *y = out + r * depth;
        int32_t max = INT8_MIN;
        for (int32_t i = 0; i < depth; i++) {
            max = x[i] > max ? x[i] : max;
        }
        int32_t sum = 0; /* Q12.19 */
        for (int32_t i = 0; i < depth; i++) {
            sum += acc_lut[max - x[i]];
        }
        int32_t num_bits_over_unit;
        const int32_t shifted_scale = edgenn_get_reciprocal(sum, 12, &num_bits_over_unit);
        const int32_t exponent = num_bits_over_unit + 31 - 16;
        for (int32_t i = 0; i < depth; i++) {
            const int32_t diff = (int32_t)x[i] - max;
            int32_t v = INT16_MIN;
            if (diff >= diff_min) {
                const int32_t prod = edgenn_srdhm(shifted_scale, exp_lut[-diff]);
                v = edgenn_clamp(edgenn_rdbpot(prod, exponent) + INT16_MIN, INT16_MIN, INT16_MAX);
            }
            y[i] = (int16_t)v;
        }
    }
}
