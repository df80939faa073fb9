/* TFLite Micro's int16 Logistic and Tanh after their input rescale (v in steps of
 * 1 / (3 * 4096)): sigmoid(i / 24) interpolated in the 256-entry Q0.16 table (TFLite's
 * sigmoid_table_uint16, edgenn_sigmoid_table.h), tanh as 2 sigmoid(2x) - 1, rounded to the
 * 2^-15 output scale. Shared by the LOGISTIC / TANH layers and the LSTM gates. */
#ifndef EDGENN_CURVES_S16_H
#define EDGENN_CURVES_S16_H

#include <stdint.h>

/* Q0.15 sigmoid of the rescaled input v, in [0, 32767]. */
static inline int16_t edgenn_sigmoid16(int32_t v, const uint16_t *table)
{
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
    return (int16_t)(r >> 10);
}

/* Q0.15 tanh of the rescaled input v, in [-32767, 32767]. */
static inline int16_t edgenn_tanh16(int32_t v, const uint16_t *table)
{
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
    return (int16_t)(r >> 8); /* arithmetic shift, as the C++ */
}

#endif
