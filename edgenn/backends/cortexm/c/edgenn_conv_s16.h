/* int16 x int8 (TFLite 16x8) convolution, NHWC, weights [Cout][KH][KW][Cin/groups] in pair
 * order (edgenn_conv_s16_mac.h), per-channel rescale, any groups / stride / dilation / pads. */
#ifndef EDGENN_CONV_S16_H
#define EDGENN_CONV_S16_H

#include <stdint.h>

/* bias: int64 per output channel (zeros when the layer has none); mult / shift and `mode`
 * as edgenn_conv_s16_mac.h describes; taps: scratch of 3 * k_h * k_w int32. */
void edgenn_conv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                     const int32_t *mult, const int32_t *shift, int32_t *taps,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                     int32_t act_min, int32_t act_max, int32_t mode);

#endif
