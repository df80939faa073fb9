/* Portable element-wise int8 kernels: clamp, requantize, table lookup, (de)quantize. */
#ifndef EDGENN_UNARY_S8_H
#define EDGENN_UNARY_S8_H

#include <stdint.h>

/* out may equal in for all of these (in-place). */
void edgenn_clamp_s8(const int8_t *in, int8_t *out, int32_t n, int32_t lo, int32_t hi);
void edgenn_requant_s8(const int8_t *in, int8_t *out, int32_t n, int32_t in_zp,
                       int32_t mult, int32_t shift, int32_t out_zp, int32_t lo, int32_t hi);
/* int8 -> uint8 (TFLite Micro's Requantize to a uint8 output), clamped to [0, 255] */
void edgenn_requant_s8_u8(const int8_t *in, uint8_t *out, int32_t n, int32_t in_zp,
                          int32_t mult, int32_t shift, int32_t out_zp);
/* table: 256 outputs for inputs -128..127 */
void edgenn_lut_s8(const int8_t *in, int8_t *out, int32_t n, const int8_t *table);
/* TFLite AffineQuantize: round(x / scale) half away from zero (float32 division) + zp */
void edgenn_quantize_f32_s8(const float *in, int8_t *out, int32_t n, float scale,
                            int32_t zp);
/* (float)((double)scale * (x - zp)) */
void edgenn_dequantize_s8_f32(const int8_t *in, float *out, int32_t n, double scale,
                              int32_t zp);

#endif
