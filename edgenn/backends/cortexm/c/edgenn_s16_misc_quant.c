/* Portable int16 QUANTIZE / DEQUANTIZE, bit-exact with TFLite Micro. */
#include "edgenn_s16_misc_quant.h"

#include "edgenn_fixed_point.h"

static inline int32_t requant_one(int32_t x, int32_t mult, int32_t shift, int32_t out_zp,
                                  int32_t lo, int32_t hi)
{
    return edgenn_clamp(edgenn_mbqm(x, mult, shift) + out_zp, lo, hi);
}

void edgenn_requant_s16_s16(const int16_t *in, int16_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp, int32_t lo,
                            int32_t hi)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int16_t)requant_one((int32_t)in[i] - in_zp, mult, shift, out_zp, lo, hi);
    }
}

void edgenn_requant_s16_s8(const int16_t *in, int8_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int8_t)requant_one((int32_t)in[i] - in_zp, mult, shift, out_zp,
                                     INT8_MIN, INT8_MAX);
    }
}

void edgenn_requant_s8_s16(const int8_t *in, int16_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int16_t)requant_one((int32_t)in[i] - in_zp, mult, shift, out_zp,
                                      INT16_MIN, INT16_MAX);
    }
}

void edgenn_quantize_f32_s16(const float *in, int16_t *out, int32_t n, float scale,
                             int32_t zp)
{
    for (int32_t i = 0; i < n; i++) {
        int64_t r = edgenn_quantize_f32(in[i], scale);
        r += zp;
        r = r < INT16_MIN ? INT16_MIN : (r > INT16_MAX ? INT16_MAX : r);
        out[i] = (int16_t)r;
    }
}

void edgenn_dequantize_s16_f32(const int16_t *in, float *out, int32_t n, double scale,
                               int32_t zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (float)(scale * (double)((int32_t)in[i] - zp));
    }
}
