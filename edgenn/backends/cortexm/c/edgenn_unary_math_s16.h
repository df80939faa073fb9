/* Portable int16 element-wise kernels, bit-exact with TFLite Micro's int16 reference kernels.
 * Every constant (multipliers, shifts, clamp bounds) comes from the reference runtime's
 * build(); out may equal in (each element is read before it is written). */
#ifndef EDGENN_UNARY_MATH_S16_H
#define EDGENN_UNARY_MATH_S16_H

#include <stdint.h>

/* LEAKY_RELU: zp_out + mbqm(x - zp_in) by the identity multiplier for x >= zp_in, by the alpha
 * multiplier (negated afterwards when negate_alpha) below; clamped to int16. */
void edgenn_leaky_relu_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                           int32_t m_identity, int32_t sh_identity, int32_t m_alpha,
                           int32_t sh_alpha, int32_t negate_alpha, int32_t zp_out);

/* ABS of quantized values: |x - zp_in|, requantized when rescale, + zp_out, clamped. */
void edgenn_abs_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                    int32_t rescale, int32_t mult, int32_t shift, int32_t zp_out);

/* ABS of plain integers (no quantization): |x| stored back in 16 bits (-32768 stays). */
void edgenn_abs_plain_s16(const int16_t *in, int16_t *out, int32_t n);

/* RSQRT: gemmlowp's inverse square root of x - zp_in applied to 1 << 20, rescaled by
 * (mult, shift - 20), + zp_out; x <= zp_in gives 32767. */
void edgenn_rsqrt_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                      int32_t mult, int32_t shift, int32_t zp_out);

/* RELU / Clip: mbqm(x - zp_in) + zp_out clamped to [lo, hi]. */
void edgenn_requant_s16(const int16_t *in, int16_t *out, int32_t n, int32_t zp_in,
                        int32_t mult, int32_t shift, int32_t zp_out, int32_t lo, int32_t hi);

/* RELU6: x clamped to [lo, hi] (TFLite Micro keeps the input's quantization). */
void edgenn_clamp_s16(const int16_t *in, int16_t *out, int32_t n, int32_t lo, int32_t hi);

#endif
