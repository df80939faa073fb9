/* Element-wise float32 functions as TFLite Micro's reference kernels compute them; the
 * loops around them are generated per layer (kernels/float_elementwise.py). expf / tanhf /
 * logf / sqrtf are newlib's single-precision libm (linked with -lm). */
#ifndef EDGENN_MATH_F32_H
#define EDGENN_MATH_F32_H

#include <math.h>

/* ActivationFunctionWithMinMax: std::min(std::max(v, lo), hi) (NaN passes through) */
static inline float edgenn_clamp_f32(float v, float lo, float hi)
{
    v = v < lo ? lo : v;
    return hi < v ? hi : v;
}

/* reference_ops::Logistic: 1 above 16.619 (where the float result rounds to 1), exp(v)
 * below -9 (where 1 + exp(-v) loses exp's precision) */
static inline float edgenn_logistic_f32(float v)
{
    if (v > 16.619047164916992188f) {
        return 1.0f;
    }
    if (v < -9.0f) {
        return expf(v);
    }
    return 1.0f / (1.0f + expf(-v));
}

/* reference_ops::HardSwish: in * min(6, max(0, in + 3)) / 6 */
static inline float edgenn_hard_swish_f32(float v)
{
    float r = v + 3.0f;
    r = r < 0.0f ? 0.0f : r;
    r = 6.0f < r ? 6.0f : r;
    return v * r / 6.0f;
}

#endif
