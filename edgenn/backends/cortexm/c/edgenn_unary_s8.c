/* Portable element-wise int8 kernels, bit-exact with TFLite Micro. */
#include "edgenn_unary_s8.h"

#include "edgenn_fixed_point.h"

void edgenn_clamp_s8(const int8_t *in, int8_t *out, int32_t n, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (int8_t)edgenn_clamp(in[i], lo, hi);
    }
}

void edgenn_requant_s8(const int8_t *in, int8_t *out, int32_t n, int32_t in_zp,
                       int32_t mult, int32_t shift, int32_t out_zp, int32_t lo, int32_t hi)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = edgenn_requant((int32_t)in[i] - in_zp, mult, shift, out_zp, lo, hi);
    }
}

void edgenn_requant_s8_u8(const int8_t *in, uint8_t *out, int32_t n, int32_t in_zp,
                          int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (uint8_t)edgenn_requant((int32_t)in[i] - in_zp, mult, shift, out_zp, 0, 255);
    }
}

void edgenn_lut_s8(const int8_t *in, int8_t *out, int32_t n, const int8_t *table)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = table[(uint8_t)in[i] ^ 0x80u];
    }
}

void edgenn_quantize_f32_s8(const float *in, int8_t *out, int32_t n, float scale, int32_t zp)
{
    for (int32_t i = 0; i < n; i++) {
        int64_t r = edgenn_quantize_f32(in[i], scale);
        r += zp;
        r = r < -128 ? -128 : (r > 127 ? 127 : r);
        out[i] = (int8_t)r;
    }
}

void edgenn_dequantize_s8_f32(const int8_t *in, float *out, int32_t n, double scale,
                              int32_t zp)
{
    for (int32_t i = 0; i < n; i++) {
        out[i] = (float)(scale * (double)((int32_t)in[i] - zp));
    }
}
