/* The portable max and average pooling loops over NHWC, written once for every element type
 * (windows cover in-bounds taps only; averages round half away from zero, as TFLite Micro's
 * reference kernels). A .c file instantiates them with EDGENN_POOL_FUNCTIONS(s8, int8_t,
 * INT8_MIN): edgenn_maxpool_s8 and edgenn_avgpool_s8. */
#ifndef EDGENN_POOL_GENERIC_H
#define EDGENN_POOL_GENERIC_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

static inline int32_t edgenn_pool_imax(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t edgenn_pool_imin(int32_t a, int32_t b) { return a < b ? a : b; }

#define EDGENN_POOL_FUNCTIONS(SUFFIX, T, T_MIN) \
void edgenn_maxpool_##SUFFIX(const T *in, T *out, int32_t in_h, int32_t in_w, int32_t c, \
                       int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,           \
                       int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l, \
                       int32_t act_min, int32_t act_max)                                 \
{                                                                                        \
    for (int32_t oy = 0; oy < out_h; oy++) {                                             \
        const int32_t y0 = edgenn_pool_imax(oy * stride_h - pad_t, 0);                   \
        const int32_t y1 = edgenn_pool_imin(oy * stride_h - pad_t + k_h, in_h);          \
        for (int32_t ox = 0; ox < out_w; ox++) {                                         \
            const int32_t x0 = edgenn_pool_imax(ox * stride_w - pad_l, 0);               \
            const int32_t x1 = edgenn_pool_imin(ox * stride_w - pad_l + k_w, in_w);      \
            T *op = out + (oy * out_w + ox) * c;                                         \
            for (int32_t ch = 0; ch < c; ch++) {                                         \
                op[ch] = (T)(T_MIN);                                                     \
            }                                                                            \
            for (int32_t y = y0; y < y1; y++) {                                          \
                for (int32_t x = x0; x < x1; x++) {                                      \
                    const T *ip = in + (y * in_w + x) * c;                               \
                    for (int32_t ch = 0; ch < c; ch++) {                                 \
                        op[ch] = ip[ch] > op[ch] ? ip[ch] : op[ch];                      \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
            for (int32_t ch = 0; ch < c; ch++) {                                         \
                op[ch] = (T)edgenn_clamp(op[ch], act_min, act_max);                      \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
                                                                                         \
void edgenn_avgpool_##SUFFIX(const T *in, T *out, int32_t *scratch,                      \
                       int32_t in_h, int32_t in_w, int32_t c,                            \
                       int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,           \
                       int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l, \
                       int32_t count_include_pad, int32_t in_zp,                         \
                       int32_t act_min, int32_t act_max)                                 \
{                                                                                        \
    int32_t *acc = scratch;                                                              \
    for (int32_t oy = 0; oy < out_h; oy++) {                                             \
        const int32_t y0 = edgenn_pool_imax(oy * stride_h - pad_t, 0);                   \
        const int32_t y1 = edgenn_pool_imin(oy * stride_h - pad_t + k_h, in_h);          \
        for (int32_t ox = 0; ox < out_w; ox++) {                                         \
            const int32_t x0 = edgenn_pool_imax(ox * stride_w - pad_l, 0);               \
            const int32_t x1 = edgenn_pool_imin(ox * stride_w - pad_l + k_w, in_w);      \
            int32_t count = (y1 - y0) * (x1 - x0);                                       \
            int32_t init = 0;                                                            \
            if (count_include_pad) {                                                     \
                /* padding taps hold the zero point (real 0) and count */                \
                init = in_zp * (k_h * k_w - count);                                      \
                count = k_h * k_w;                                                       \
            }                                                                            \
            for (int32_t ch = 0; ch < c; ch++) {                                         \
                acc[ch] = init;                                                          \
            }                                                                            \
            for (int32_t y = y0; y < y1; y++) {                                          \
                for (int32_t x = x0; x < x1; x++) {                                      \
                    const T *ip = in + (y * in_w + x) * c;                               \
                    for (int32_t ch = 0; ch < c; ch++) {                                 \
                        acc[ch] += ip[ch];                                               \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
            T *op = out + (oy * out_w + ox) * c;                                         \
            const int32_t half = count / 2;                                              \
            for (int32_t ch = 0; ch < c; ch++) {                                         \
                const int32_t a = acc[ch];                                               \
                const int32_t v = a > 0 ? (a + half) / count : (a - half) / count;       \
                op[ch] = (T)edgenn_clamp(v, act_min, act_max);                           \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}

#endif
