/* int16 LOGISTIC and TANH (see edgenn_unary_math_curves_s16.h). */
#include "edgenn_unary_math_curves_s16.h"

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
        const int32_t v = edgenn_curve_input(in[i], mult, shift, round);
        const uint32_t a = (uint32_t)(v < 0 ? -v : v);
        const uint32_t step = a >> 9; /* 9 fractional bits between table entries */
        uint32_t r;
        if (step >= 255u) {
            r = 0x7FFFu << 10;
        } else {
            const uint32_t ua = table[step];
            const uint32_t ub = table[step + 1u];
            r = (ua << 9) + (a & 0x1FFu) * (ub - ua);
        }
        /* sigmoid(-x) = 1 - sigmoid(x); the constants round to nearest on the way down */
        r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
        out[i] = (int16_t)(r >> 10);
    }
}

void edgenn_tanh_s16(const int16_t *in, int16_t *out, int32_t n, int32_t mult, int32_t shift,
                     const uint16_t *table)
{
    const int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = edgenn_curve_input(in[i], mult, shift, round);
        const uint32_t a = (uint32_t)(v < 0 ? -v : v);
        const uint32_t step = a >> 8; /* tanh(x) = 2 sigmoid(2x) - 1: one bit less */
        int32_t r;
        if (step >= 255u) {
            r = 0xFFFF << 8;
        } else {
            const uint32_t ua = table[step];
            const uint32_t ub = table[step + 1u];
            r = (int32_t)((ua << 8) + (a & 0xFFu) * (ub - ua));
        }
        r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
        out[i] = (int16_t)(r >> 8); /* arithmetic shift, as the C++ */
    }
}
