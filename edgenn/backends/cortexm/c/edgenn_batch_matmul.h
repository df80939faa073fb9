/* Portable int8 / int16 / float32 BATCH_MATMUL, as TFLite Micro computes it. */
#ifndef EDGENN_BATCH_MATMUL_H
#define EDGENN_BATCH_MATMUL_H

#include <stdint.h>

/* For each of `batches` products b: out[b] (m x n) = a[a_off[b]] (m x k, or k x m when
 * adj_x) times b[b_off[b]] (k x n, or n x k when adj_y), the operands offset by -a_zp and
 * -b_zp. int8: int32 sums through mbqm(mult, shift); int16: int64 sums through TFLite's
 * 64-bit rounding (reduced 16-bit multiplier, right shift total_shift). + out_zp, clamped. */
void edgenn_batch_matmul_s8(const int8_t *a, const int8_t *b, int8_t *out, int32_t batches,
                            const int32_t *a_off, const int32_t *b_off, int32_t m, int32_t n,
                            int32_t k, int32_t adj_x, int32_t adj_y, int32_t a_zp,
                            int32_t b_zp, int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_batch_matmul_s16(const int16_t *a, const int16_t *b, int16_t *out,
                             int32_t batches, const int32_t *a_off, const int32_t *b_off,
                             int32_t m, int32_t n, int32_t k, int32_t adj_x, int32_t adj_y,
                             int32_t reduced_mult, int32_t total_shift, int32_t out_zp);
/* float32: the same products, float sums (no zero points, no requantization, no clamp). */
void edgenn_batch_matmul_f32(const float *a, const float *b, float *out, int32_t batches,
                             const int32_t *a_off, const int32_t *b_off, int32_t m, int32_t n,
                             int32_t k, int32_t adj_x, int32_t adj_y);

#endif
