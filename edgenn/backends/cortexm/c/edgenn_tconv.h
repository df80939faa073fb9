/* Transposed 2-D convolution, NHWC, weights [Cout][KH][KW][Cin/groups]: int8 (TFLite's
 * per-channel int8 TRANSPOSE_CONV) and int16 x int8 (its 16x8 scheme). Output pixel
 * (oy, ox) gathers input pixel (iy, ix) through tap (ky, kx) where
 * oy = iy * stride_h + ky * dil_h - pad_t (likewise x): the scatter of TFLite Micro, read from
 * the output side, so no accumulator buffer the size of the output is needed. */
#ifndef EDGENN_TCONV_H
#define EDGENN_TCONV_H

#include <stdint.h>

/* int8: w plain order, bias int32 (zeros when absent), TFLite's int32 sums and 32-bit
 * rescale, + out_zp; taps: scratch of 3 * k_h * k_w int32. */
void edgenn_tconv_s8(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias,
                     const int32_t *mult, const int32_t *shift, int32_t *taps,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                     int32_t in_zp, int32_t out_zp, int32_t act_min, int32_t act_max);

/* int16 x int8: w in pair order, bias int64, `mult` / `shift` / `mode` as
 * edgenn_conv_s16_mac.h; taps: scratch of 3 * k_h * k_w int32. */
void edgenn_tconv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                      const int32_t *mult, const int32_t *shift, int32_t *taps,
                      int32_t in_h, int32_t in_w, int32_t in_c,
                      int32_t out_h, int32_t out_w, int32_t out_c,
                      int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                      int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                      int32_t act_min, int32_t act_max, int32_t mode);

#endif
