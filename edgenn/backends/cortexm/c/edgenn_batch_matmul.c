/* Portable BATCH_MATMUL, bit-exact with TFLite Micro's reference_ops::BatchMatMul (float32:
 * each sum from 0 over the depth in order, as TFLite Micro's, so it rounds the same). */
#include "edgenn_batch_matmul.h"

#include "edgenn_fixed_point.h"

void edgenn_batch_matmul_s8(const int8_t *a, const int8_t *b, int8_t *out, int32_t batches,
                            const int32_t *a_off, const int32_t *b_off, int32_t m, int32_t n,
                            int32_t k, int32_t adj_x, int32_t adj_y, int32_t a_zp,
                            int32_t b_zp, int32_t mult, int32_t shift, int32_t out_zp)
{
    /* element strides of the row / depth index of each operand */
    const int32_t a_row = adj_x ? 1 : k, a_dep = adj_x ? m : 1;
    const int32_t b_col = adj_y ? k : 1, b_dep = adj_y ? 1 : n;
    for (int32_t bt = 0; bt < batches; bt++) {
        const int8_t *pa = a + a_off[bt];
        const int8_t *pb = b + b_off[bt];
        for (int32_t i = 0; i < m; i++) {
            for (int32_t j = 0; j < n; j++) {
                uint32_t acc = 0; /* why unsigned: TFLM's int32 sum wraps */
                for (int32_t d = 0; d < k; d++) {
                    const int32_t x = pa[i * a_row + d * a_dep] - a_zp;
                    const int32_t y = pb[j * b_col + d * b_dep] - b_zp;
                    acc += (uint32_t)(x * y);
                }
                *out++ = edgenn_requant((int32_t)acc, mult, shift, out_zp, -128, 127);
            }
        }
    }
}

void edgenn_batch_matmul_s16(const int16_t *a, const int16_t *b, int16_t *out,
                             int32_t batches, const int32_t *a_off, const int32_t *b_off,
                             int32_t m, int32_t n, int32_t k, int32_t adj_x, int32_t adj_y,
                             int32_t reduced_mult, int32_t total_shift, int32_t out_zp)
{
    const int32_t a_row = adj_x ? 1 : k, a_dep = adj_x ? m : 1;
    const int32_t b_col = adj_y ? k : 1, b_dep = adj_y ? 1 : n;
    const int64_t round = (int64_t)1 << (total_shift - 1);
    for (int32_t bt = 0; bt < batches; bt++) {
        const int16_t *pa = a + a_off[bt];
        const int16_t *pb = b + b_off[bt];
        for (int32_t i = 0; i < m; i++) {
            for (int32_t j = 0; j < n; j++) {
                int64_t acc = 0;
                for (int32_t d = 0; d < k; d++) {
                    acc += (int64_t)pa[i * a_row + d * a_dep] * pb[j * b_col + d * b_dep];
                }
                /* TFLite's MultiplyByQuantizedMultiplier(int64_t x, ...): one rounding */
                const int64_t scaled = (acc * reduced_mult + round) >> total_shift;
                *out++ = (int16_t)edgenn_clamp((int32_t)scaled + out_zp, -32768, 32767);
            }
        }
    }
}

void edgenn_batch_matmul_f32(const float *a, const float *b, float *out, int32_t batches,
                             const int32_t *a_off, const int32_t *b_off, int32_t m, int32_t n,
                             int32_t k, int32_t adj_x, int32_t adj_y)
{
    const int32_t a_row = adj_x ? 1 : k, a_dep = adj_x ? m : 1;
    const int32_t b_col = adj_y ? k : 1, b_dep = adj_y ? 1 : n;
    for (int32_t bt = 0; bt < batches; bt++) {
        const float *pa = a + a_off[bt];
        const float *pb = b + b_off[bt];
        for (int32_t i = 0; i < m; i++) {
            for (int32_t j = 0; j < n; j++) {
                float acc = 0.0f; /* BATCH_MATMUL has no fused activation: no clamp */
                for (int32_t d = 0; d < k; d++) {
                    acc += pa[i * a_row + d * a_dep] * pb[j * b_col + d * b_dep];
                }
                *out++ = acc;
            }
        }
    }
}
