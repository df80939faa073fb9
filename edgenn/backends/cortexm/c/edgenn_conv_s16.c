/* int16 x int8 convolution, bit-exact with TFLite Micro's int16 ConvPerChannel.
 * Per output pixel the window's in-bounds taps are listed once as runs (padding contributes
 * nothing: the scheme has no zero points; with groups 1 and no dilation a window row is one
 * run), then every output channel pair runs SMLAD dot products over them
 * (edgenn_conv_s16_mac.h). */
#include "edgenn_conv_s16.h"

#include "edgenn_conv_s16_mac.h"

void edgenn_conv_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                     const int32_t *mult, const int32_t *shift, int32_t *taps,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l, int32_t groups,
                     int32_t act_min, int32_t act_max, int32_t mode)
{
    const int32_t cig = in_c / groups;
    const int32_t w_stride = k_h * k_w * cig;
    /* why: runs may cross taps only where the input is contiguous across them (groups 1)
     * and the weights' pair order does not restart inside a run (cig a multiple of 4) */
    const int32_t merge = groups == 1 && (cig & 3) == 0;
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t iy0 = oy * stride_h - pad_t;
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t ix0 = ox * stride_w - pad_l;
            int32_t n = 0;
            for (int32_t ky = 0; ky < k_h; ky++) {
                const int32_t iy = iy0 + ky * dil_h;
                if (iy < 0 || iy >= in_h) {
                    continue;
                }
                for (int32_t kx = 0; kx < k_w; kx++) {
                    const int32_t ix = ix0 + kx * dil_w;
                    if (ix < 0 || ix >= in_w) {
                        continue;
                    }
                    n = edgenn_s16_add_tap(taps, n, (iy * in_w + ix) * in_c,
                                           (ky * k_w + kx) * cig, cig, merge);
                }
            }
            edgenn_s16_pixel(in, out + (oy * out_w + ox) * out_c, w, bias, mult, shift, taps, n,
                             cig, out_c, groups, w_stride, act_min, act_max, mode);
        }
    }
}
