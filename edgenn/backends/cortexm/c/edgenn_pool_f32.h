/* Portable float32 pooling, softmax and reductions, in TFLite Micro's reference order. */
#ifndef EDGENN_POOL_F32_H
#define EDGENN_POOL_F32_H

#include <stdint.h>

/* windows cover in-bounds taps only (padding is never a candidate for the max) */
void edgenn_maxpool_f32(const float *in, float *out, int32_t in_h, int32_t in_w, int32_t c,
                        int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        float act_min, float act_max);

/* the sum of the in-bounds taps divided by their count (by k_h * k_w when
 * count_include_pad: padding then adds zeros) */
void edgenn_avgpool_f32(const float *in, float *out, int32_t in_h, int32_t in_w, int32_t c,
                        int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t count_include_pad, float act_min, float act_max);

/* softmax over the last axis (rows x depth); may run in place */
void edgenn_softmax_f32(const float *in, float *out, int32_t rows, int32_t depth, float beta);

/* reductions over any axes of a 6-D view: dims of the input, out_strides 0 on reduced axes.
 * kind: 0 sum, 1 mean (the sum divided by count), 2 max, 3 min. */
void edgenn_reduce_f32(const float *in, float *out, const int32_t *dims,
                       const int32_t *out_strides, int32_t out_n, int32_t kind, int32_t count);

#endif
