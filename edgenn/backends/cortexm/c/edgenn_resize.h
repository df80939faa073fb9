/* Portable RESIZE_NEAREST_NEIGHBOR (any element size) and int8 RESIZE_BILINEAR of NHWC
 * images (batch 1), bit-exact with TFLite Micro. The source positions are computed at
 * generation time (edgenn/backends/ref/kernels/resize.py) and passed as tables. */
#ifndef EDGENN_RESIZE_H
#define EDGENN_RESIZE_H

#include <stdint.h>

/* out[y, x, :] = in[rows[y], cols[x], :]; pixel_bytes = channels * element size. */
void edgenn_resize_nearest(const void *in, void *out, int32_t in_w, int32_t out_h,
                           int32_t out_w, int32_t pixel_bytes, const int32_t *rows,
                           const int32_t *cols);

/* taps: 4 entries per output row / column: lower index, upper index, lower weight, upper
 * weight (10 fractional bits). Rounds the 20-bit sum half away from zero. */
void edgenn_resize_bilinear_s8(const int8_t *in, int8_t *out, int32_t in_w, int32_t depth,
                               int32_t out_h, int32_t out_w, const int32_t *y_taps,
                               const int32_t *x_taps);

#endif
