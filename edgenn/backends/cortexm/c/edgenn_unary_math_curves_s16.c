/* int16 LOGISTIC and TANH (see edgenn_unary_math_curves_s16.h). */
#include "edgenn_unary_math_curves_s16.h"

#include "edgenn_curves_s16.h"

/* x * mult rounded and shifted right: |x * mult| < 2^30 since mult <= 32767 */
static inline int32_t edgenn_curve_input(int16_t x, int32_t mult, int32_t shift, int32_t round)
{
    return ((int32_t)x * mult + round) >> shift;
}

void edgenn_logistic_s16(const int16_t *in, int16_t *out, int32_t n, int32_t mult,
                         int32_t shift, const uint16_t *table)
{
    const int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
    for (int32_t i = 0; i < n; i++) {
        out[i] = edgenn_sigmoid16(edgenn_curve_input(in[i], mult, shift, round), table);
    }
}

void edgenn_tanh_s16(const int16_t *in, int16_t *out, int32_t n, int32_t mult, int32_t shift,
                     const uint16_t *table)
{
    const int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
    for (int32_t i = 0; i < n; i++) {
        out[i] = edgenn_tanh16(edgenn_curve_input(in[i], mult, shift, round), table);
    }
}
