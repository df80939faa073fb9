/* Portable QUANTIZE with an int32 side, bit-exact with TFLite Micro's Requantize. */
#include "edgenn_requant_s32.h"

#include "edgenn_fixed_point.h"

/* why unsigned: TFLite Micro's int32 subtraction and addition wrap on its targets; signed
 * overflow is undefined in C, unsigned arithmetic gives the same bits */
static inline int32_t wrapped(int32_t x, int32_t in_zp, int32_t mult, int32_t shift,
                              int32_t out_zp)
{
    int32_t v = (int32_t)((uint32_t)x - (uint32_t)in_zp);
    return (int32_t)((uint32_t)edgenn_mbqm(v, mult, shift) + (uint32_t)out_zp);
}

void edgenn_requant_s32_s8(const int32_t *in, int8_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int8_t)edgenn_clamp(wrapped(in[i], in_zp, mult, shift, out_zp),
                                      INT8_MIN, INT8_MAX);
    }
}

void edgenn_requant_s32_s16(const int32_t *in, int16_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int16_t)edgenn_clamp(wrapped(in[i], in_zp, mult, shift, out_zp),
                                       INT16_MIN, INT16_MAX);
    }
}

void edgenn_requant_s8_s32(const int8_t *in, int32_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = wrapped(in[i], in_zp, mult, shift, out_zp);
    }
}

void edgenn_requant_s16_s32(const int16_t *in, int32_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = wrapped(in[i], in_zp, mult, shift, out_zp);
    }
}
