/* Portable QUANTIZE / DEQUANTIZE kernels for int16 tensors (TFLite's 16x8 scheme),
 * bit-exact with TFLite Micro's AffineQuantize, Requantize and Dequantize. */
#ifndef EDGENN_S16_MISC_QUANT_H
#define EDGENN_S16_MISC_QUANT_H

#include <stdint.h>

/* Requantize: clamp(MultiplyByQuantizedMultiplier(x - in_zp, mult, shift) + out_zp, lo, hi).
 * out may equal in where the element sizes match (s16 -> s16). */
void edgenn_requant_s16_s16(const int16_t *in, int16_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp, int32_t lo,
                            int32_t hi);
void edgenn_requant_s16_s8(const int16_t *in, int8_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_requant_s8_s16(const int8_t *in, int16_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp);
/* AffineQuantize: round(x / scale) half away from zero (float32 division) + zp, clamped */
void edgenn_quantize_f32_s16(const float *in, int16_t *out, int32_t n, float scale,
                             int32_t zp);
/* (float)((double)scale * (x - zp)) */
void edgenn_dequantize_s16_f32(const int16_t *in, float *out, int32_t n, double scale,
                               int32_t zp);

#endif
