/* Portable image resizing, bit-exact with TFLite Micro's reference_ops::ResizeNearestNeighbor
 * and ResizeBilinearInteger. */
#include "edgenn_resize.h"

#include <string.h>

void edgenn_resize_nearest(const void *in, void *out, int32_t in_w, int32_t out_h,
                           int32_t out_w, int32_t pixel_bytes, const int32_t *rows,
                           const int32_t *cols)
{
    const uint8_t *src = (const uint8_t *)in;
    uint8_t *dst = (uint8_t *)out;
    for (int32_t y = 0; y < out_h; y++) {
        const uint8_t *row = src + rows[y] * in_w * pixel_bytes;
        for (int32_t x = 0; x < out_w; x++) {
            memcpy(dst, row + cols[x] * pixel_bytes, (size_t)pixel_bytes);
            dst += pixel_bytes;
        }
    }
}

void edgenn_resize_bilinear_s8(const int8_t *in, int8_t *out, int32_t in_w, int32_t depth,
                               int32_t out_h, int32_t out_w, const int32_t *y_taps,
                               const int32_t *x_taps)
{
    for (int32_t y = 0; y < out_h; y++) {
        const int32_t *ty = y_taps + 4 * y;
        const int8_t *top = in + ty[0] * in_w * depth;
        const int8_t *bottom = in + ty[1] * in_w * depth;
        for (int32_t x = 0; x < out_w; x++) {
            const int32_t *tx = x_taps + 4 * x;
            /* why int32: the weights sum to 2^20 and |pixel| <= 128, so no sum overflows */
            const int32_t w00 = ty[2] * tx[2], w10 = ty[3] * tx[2];
            const int32_t w01 = ty[2] * tx[3], w11 = ty[3] * tx[3];
            const int8_t *tl = top + tx[0] * depth, *bl = bottom + tx[0] * depth;
            const int8_t *tr = top + tx[1] * depth, *br = bottom + tx[1] * depth;
            for (int32_t c = 0; c < depth; c++) {
                const int32_t acc = tl[c] * w00 + bl[c] * w10 + tr[c] * w01 + br[c] * w11;
                /* the double-rounding build: +-2^19, then a division truncating to zero */
                *out++ = (int8_t)((acc + (acc > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20));
            }
        }
    }
}
