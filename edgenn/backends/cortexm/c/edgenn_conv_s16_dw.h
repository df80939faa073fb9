/* int16 x int8 (TFLite 16x8) depthwise convolution, NHWC, weights [KH][KW][Cout] (channels
 * contiguous per tap; with depth multiplier 1 in quad order: bytes w0 w2 w1 w3 per run of 4
 * channels, any tail plain), per-channel rescale, any stride / dilation / pads / multiplier.
 * scratch: 8 * out_c bytes, 8-aligned (one pixel's sums). */
#ifndef EDGENN_CONV_S16_DW_H
#define EDGENN_CONV_S16_DW_H

#include <stdint.h>

void edgenn_dwconv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                       const int32_t *mult, const int32_t *shift, void *scratch,
                       int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_h, int32_t out_w, int32_t out_c,
                       int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                       int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                       int32_t act_min, int32_t act_max, int32_t mode);

#endif
