/* Portable float32 pooling, softmax and reductions, in the order of TFLite Micro's
 * reference_ops (MaxPool / AveragePool, Softmax, ReduceGeneric / Mean): window taps row by
 * row, sums from 0, one division by the count, the fused activation clamp last. */
#include "edgenn_pool_f32.h"

#include <float.h>
#include <math.h>

#include "edgenn_math_f32.h"

static inline int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t imin(int32_t a, int32_t b) { return a < b ? a : b; }

void edgenn_maxpool_f32(const float *in, float *out, int32_t in_h, int32_t in_w, int32_t c,
                        int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        float act_min, float act_max)
{
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t y0 = imax(oy * stride_h - pad_t, 0);
        const int32_t y1 = imin(oy * stride_h - pad_t + k_h, in_h);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t x0 = imax(ox * stride_w - pad_l, 0);
            const int32_t x1 = imin(ox * stride_w - pad_l + k_w, in_w);
            float *op = out + (oy * out_w + ox) * c;
            for (int32_t ch = 0; ch < c; ch++) {
                float m = -FLT_MAX;
                for (int32_t y = y0; y < y1; y++) {
                    const float *ip = in + (y * in_w) * c + ch;
                    for (int32_t x = x0; x < x1; x++) {
                        const float v = ip[x * c];
                        m = m < v ? v : m; /* std::max(m, v) */
                    }
                }
                op[ch] = edgenn_clamp_f32(m, act_min, act_max);
            }
        }
    }
}

void edgenn_avgpool_f32(const float *in, float *out, int32_t in_h, int32_t in_w, int32_t c,
                        int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t count_include_pad, float act_min, float act_max)
{
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t y0 = imax(oy * stride_h - pad_t, 0);
        const int32_t y1 = imin(oy * stride_h - pad_t + k_h, in_h);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t x0 = imax(ox * stride_w - pad_l, 0);
            const int32_t x1 = imin(ox * stride_w - pad_l + k_w, in_w);
            const int32_t n = count_include_pad ? k_h * k_w : (y1 - y0) * (x1 - x0);
            const float count = (float)n;
            float *op = out + (oy * out_w + ox) * c;
            for (int32_t ch = 0; ch < c; ch++) {
                float total = 0.0f;
                for (int32_t y = y0; y < y1; y++) {
                    const float *ip = in + (y * in_w) * c + ch;
                    for (int32_t x = x0; x < x1; x++) {
                        total += ip[x * c];
                    }
                }
                op[ch] = edgenn_clamp_f32(total / count, act_min, act_max);
            }
        }
    }
}

void edgenn_softmax_f32(const float *in, float *out, int32_t rows, int32_t depth, float beta)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *x = in + r * depth;
        float *y = out + r * depth;
        float m = -FLT_MAX;
        for (int32_t c = 0; c < depth; c++) {
            m = m < x[c] ? x[c] : m;
        }
        float sum = 0.0f;
        for (int32_t c = 0; c < depth; c++) {
            const float e = expf((x[c] - m) * beta);
            y[c] = e;
            sum += e;
        }
        for (int32_t c = 0; c < depth; c++) {
            y[c] = y[c] / sum;
        }
    }
}

void edgenn_reduce_f32(const float *in, float *out, const int32_t *dims,
                       const int32_t *out_strides, int32_t out_n, int32_t kind, int32_t count)
{
    const float init = kind == 2 ? -FLT_MAX : (kind == 3 ? FLT_MAX : 0.0f);
    for (int32_t i = 0; i < out_n; i++) {
        out[i] = init;
    }
    const float *p = in;
    for (int32_t a = 0; a < dims[0]; a++)
    for (int32_t b = 0; b < dims[1]; b++)
    for (int32_t c = 0; c < dims[2]; c++)
    for (int32_t d = 0; d < dims[3]; d++)
    for (int32_t e = 0; e < dims[4]; e++) {
        float *s = out + a * out_strides[0] + b * out_strides[1] + c * out_strides[2] +
                   d * out_strides[3] + e * out_strides[4];
        const int32_t so = out_strides[5];
        for (int32_t f = 0; f < dims[5]; f++) {
            const float v = *p++;
            float *t = s + f * so;
            if (kind == 2) {
                *t = *t < v ? v : *t; /* std::max */
            } else if (kind == 3) {
                *t = v < *t ? v : *t; /* std::min */
            } else {
                *t += v;
            }
        }
    }
    if (kind == 1) {
        const float n = (float)count;
        for (int32_t i = 0; i < out_n; i++) {
            out[i] = out[i] / n;
        }
    }
}
