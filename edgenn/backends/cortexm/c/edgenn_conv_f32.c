/* Portable float32 convolution and fully connected layers.
 *
 * Every output sums its products from 0 in TFLite Micro's reference order (filter row,
 * filter column, input channel; for FullyConnected the depth), then adds the bias and clamps:
 * the same float operations in the same order as reference_ops::Conv / DepthwiseConv /
 * FullyConnected, so only a fused multiply-add chosen by a compiler could differ (the
 * project builds with -std=c99, where gcc does not contract a * b + c). Four output channels
 * are computed together so one input load serves four products; each channel's sum keeps
 * its own order. */
#include "edgenn_conv_f32.h"

#include <stddef.h>

#include "edgenn_math_f32.h"

/* the taps k in [lo, hi) of a window starting at `origin` (stride `dil`) that lie inside
 * [0, size): what TFLite Micro's per-tap bounds check keeps, found once per output */
static inline void tap_range(int32_t origin, int32_t dil, int32_t k, int32_t size,
                             int32_t *lo, int32_t *hi)
{
    int32_t a = origin < 0 ? (-origin + dil - 1) / dil : 0;
    int32_t b = origin >= size ? 0 : (size - 1 - origin) / dil + 1;
    b = b < k ? b : k;
    *lo = a;
    *hi = b > a ? b : a;
}

void edgenn_conv_f32(const float *in, float *out, const float *w, const float *bias,
                     int32_t in_h, int32_t in_w, int32_t in_c,
                     int32_t out_h, int32_t out_w, int32_t out_c,
                     int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                     int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                     int32_t groups, float act_min, float act_max)
{
    const int32_t cig = in_c / groups;
    const int32_t cog = out_c / groups;
    const int32_t w_stride = k_h * k_w * cig;
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t iy0 = oy * stride_h - pad_t;
        int32_t ky0, ky1;
        tap_range(iy0, dil_h, k_h, in_h, &ky0, &ky1);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t ix0 = ox * stride_w - pad_l;
            int32_t kx0, kx1;
            tap_range(ix0, dil_w, k_w, in_w, &kx0, &kx1);
            float *op = out + (oy * out_w + ox) * out_c;
            for (int32_t g = 0; g < groups; g++) {
                const float *xg = in + g * cig;
                int32_t co = g * cog;
                const int32_t co_end = co + cog;
                for (; co + 4 <= co_end; co += 4) {
                    const float *w0 = w + co * w_stride;
                    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const float *xr = xg + (iy0 + ky * dil_h) * in_w * in_c;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            const float *xp = xr + (ix0 + kx * dil_w) * in_c;
                            const float *wp = w0 + (ky * k_w + kx) * cig;
                            for (int32_t ci = 0; ci < cig; ci++) {
                                const float x = xp[ci];
                                a0 += x * wp[ci];
                                a1 += x * wp[ci + w_stride];
                                a2 += x * wp[ci + 2 * w_stride];
                                a3 += x * wp[ci + 3 * w_stride];
                            }
                        }
                    }
                    if (bias != NULL) {
                        a0 += bias[co];
                        a1 += bias[co + 1];
                        a2 += bias[co + 2];
                        a3 += bias[co + 3];
                    }
                    op[co] = edgenn_clamp_f32(a0, act_min, act_max);
                    op[co + 1] = edgenn_clamp_f32(a1, act_min, act_max);
                    op[co + 2] = edgenn_clamp_f32(a2, act_min, act_max);
                    op[co + 3] = edgenn_clamp_f32(a3, act_min, act_max);
                }
                for (; co < co_end; co++) {
                    const float *w0 = w + co * w_stride;
                    float a0 = 0.0f;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const float *xr = xg + (iy0 + ky * dil_h) * in_w * in_c;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            const float *xp = xr + (ix0 + kx * dil_w) * in_c;
                            const float *wp = w0 + (ky * k_w + kx) * cig;
                            for (int32_t ci = 0; ci < cig; ci++) {
                                a0 += xp[ci] * wp[ci];
                            }
                        }
                    }
                    if (bias != NULL) {
                        a0 += bias[co];
                    }
                    op[co] = edgenn_clamp_f32(a0, act_min, act_max);
                }
            }
        }
    }
}

void edgenn_dwconv_f32(const float *in, float *out, const float *w, const float *bias,
                       int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_h, int32_t out_w, int32_t out_c,
                       int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                       int32_t dil_h, int32_t dil_w, int32_t pad_t, int32_t pad_l,
                       float act_min, float act_max)
{
    const int32_t mult = out_c / in_c;
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t iy0 = oy * stride_h - pad_t;
        int32_t ky0, ky1;
        tap_range(iy0, dil_h, k_h, in_h, &ky0, &ky1);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t ix0 = ox * stride_w - pad_l;
            int32_t kx0, kx1;
            tap_range(ix0, dil_w, k_w, in_w, &kx0, &kx1);
            float *op = out + (oy * out_w + ox) * out_c;
            int32_t co = 0;
            if (mult == 1) { /* four channels per pass: neighbours in both input and weights */
                for (; co + 4 <= out_c; co += 4) {
                    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const float *xr = in + (iy0 + ky * dil_h) * in_w * in_c + co;
                        const float *wr = w + ky * k_w * out_c + co;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            const float *xp = xr + (ix0 + kx * dil_w) * in_c;
                            const float *wp = wr + kx * out_c;
                            a0 += xp[0] * wp[0];
                            a1 += xp[1] * wp[1];
                            a2 += xp[2] * wp[2];
                            a3 += xp[3] * wp[3];
                        }
                    }
                    if (bias != NULL) {
                        a0 += bias[co];
                        a1 += bias[co + 1];
                        a2 += bias[co + 2];
                        a3 += bias[co + 3];
                    }
                    op[co] = edgenn_clamp_f32(a0, act_min, act_max);
                    op[co + 1] = edgenn_clamp_f32(a1, act_min, act_max);
                    op[co + 2] = edgenn_clamp_f32(a2, act_min, act_max);
                    op[co + 3] = edgenn_clamp_f32(a3, act_min, act_max);
                }
            }
            for (int32_t ic = co / mult; co < out_c; ic++) {
                for (int32_t m = 0; m < mult && co < out_c; m++, co++) {
                    float acc = 0.0f;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const float *xr = in + (iy0 + ky * dil_h) * in_w * in_c + ic;
                        const float *wr = w + ky * k_w * out_c + co;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            acc += xr[(ix0 + kx * dil_w) * in_c] * wr[kx * out_c];
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[co];
                    }
                    op[co] = edgenn_clamp_f32(acc, act_min, act_max);
                }
            }
        }
    }
}

void edgenn_fc_f32(const float *in, float *out, const float *w, const float *bias,
                   int32_t rows, int32_t depth, int32_t out_c, float act_min, float act_max)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *x = in + r * depth;
        float *op = out + r * out_c;
        int32_t co = 0;
        for (; co + 4 <= out_c; co += 4) {
            const float *w0 = w + co * depth;
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
            for (int32_t d = 0; d < depth; d++) {
                const float v = x[d];
                a0 += v * w0[d];
                a1 += v * w0[d + depth];
                a2 += v * w0[d + 2 * depth];
                a3 += v * w0[d + 3 * depth];
            }
            if (bias != NULL) {
                a0 += bias[co];
                a1 += bias[co + 1];
                a2 += bias[co + 2];
                a3 += bias[co + 3];
            }
            op[co] = edgenn_clamp_f32(a0, act_min, act_max);
            op[co + 1] = edgenn_clamp_f32(a1, act_min, act_max);
            op[co + 2] = edgenn_clamp_f32(a2, act_min, act_max);
            op[co + 3] = edgenn_clamp_f32(a3, act_min, act_max);
        }
        for (; co < out_c; co++) {
            const float *w0 = w + co * depth;
            float a0 = 0.0f;
            for (int32_t d = 0; d < depth; d++) {
                a0 += x[d] * w0[d];
            }
            if (bias != NULL) {
                a0 += bias[co];
            }
            op[co] = edgenn_clamp_f32(a0, act_min, act_max);
        }
    }
}
