/* Portable int16 max and average pooling over NHWC (TFLite's 16x8 scheme), bit-exact with
 * TFLite Micro's reference_integer_ops int16 MaxPool / AveragePool: windows cover in-bounds
 * taps only, averages round half away from zero. */
#ifndef EDGENN_S16_MISC_POOL_H
#define EDGENN_S16_MISC_POOL_H

#include <stdint.h>

void edgenn_maxpool_s16(const int16_t *in, int16_t *out, int32_t in_h, int32_t in_w,
                        int32_t c, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t act_min, int32_t act_max);

/* count_include_pad: divide by k_h * k_w, padding taps counting as in_zp (ONNX). scratch:
 * c int32 accumulators. */
void edgenn_avgpool_s16(const int16_t *in, int16_t *out, int32_t *scratch,
                        int32_t in_h, int32_t in_w, int32_t c,
                        int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t count_include_pad, int32_t in_zp,
                        int32_t act_min, int32_t act_max);

#endif
