/* Portable float32 convolution, depthwise convolution and fully connected layers (NHWC),
 * summed in TFLite Micro's reference order so results agree with it to rounding. */
#ifndef EDGENN_CONV_F32_H
#define EDGENN_CONV_F32_H

#include <stdint.h>

/* w: [Cout][KH][KW][Cin/groups]; bias: Cout values or NULL; the output is clamped to
 * [act_min, act_max] (+-FLT_MAX without a fused activation, as TFLite Micro does). */
void edgenn_conv_f32(const float *in, float *out, const float *w, const float *bias,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                     int32_t groups, float act_min, float act_max);

/* w: [KH][KW][Cout] (TFLite's depthwise layout); output channel o reads input channel
 * o / depth_mult. */
void edgenn_dwconv_f32(const float *in, float *out, const float *w, const float *bias,
                       int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_h, int32_t out_w, int32_t out_c,
                       int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                       int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                       float act_min, float act_max);

/* in: [rows][depth]; w: [out_c][depth]; out: [rows][out_c]. */
void edgenn_fc_f32(const float *in, float *out, const float *w, const float *bias,
                   int32_t rows, int32_t depth, int32_t out_c, float act_min, float act_max);

#endif
