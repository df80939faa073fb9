/* Portable SVDF: int8 bit-exact with TFLite Micro's EvalIntegerSvdfReference<int16|int8>,
 * float32 in the order of its EvalFloatSvdfReference. */
#include "edgenn_svdf.h"

#include <stddef.h>
#include <string.h>

#include "edgenn_fixed_point.h"

static inline int32_t state_get(const void *state, int32_t i, int32_t is16)
{
    return is16 ? ((const int16_t *)state)[i] : ((const int8_t *)state)[i];
}

/* why the cast: TFLM narrows (zero point + clamped value) without saturating */
static inline void state_set(void *state, int32_t i, int32_t v, int32_t is16)
{
    if (is16) {
        ((int16_t *)state)[i] = (int16_t)v;
    } else {
        ((int8_t *)state)[i] = (int8_t)v;
    }
}

void edgenn_svdf_s8(const edgenn_svdf_params *p, const int8_t *x, int8_t *y,
                    const void *state0, void *state_out, void *scratch)
{
    const int32_t is16 = p->state_int16;
    const int32_t lo = is16 ? -32768 : -128;
    const int32_t hi = is16 ? 32767 : 127;
    const int32_t per_batch = p->filters * p->memory;
    const int32_t total = p->batch * per_batch;
    void *state = scratch;
    int32_t *acc = (int32_t *)scratch + (total * (is16 ? 2 : 1) + 3) / 4;
    const int32_t units = p->filters / p->rank;

    /* The state shifted left by one; each filter's newest slot is overwritten below. */
    for (int32_t i = 0; i + 1 < total; i++) {
        state_set(state, i, state_get(state0, i + 1, is16), is16);
    }
    for (int32_t b = 0; b < p->batch; b++) {
        const int8_t *xb = x + b * p->n_input;
        for (int32_t f = 0; f < p->filters; f++) {
            const int8_t *w = p->weights_feature + f * p->n_input;
            int32_t dot = 0;
            for (int32_t k = 0; k < p->n_input; k++) {
                dot += (int32_t)w[k] * ((int32_t)xb[k] - p->input_zp);
            }
            dot = edgenn_mbqm(dot, p->scale_1_multiplier, p->scale_1_shift);
            dot = edgenn_clamp(dot, lo, hi) + p->state_zp;
            state_set(state, b * per_batch + f * p->memory + p->memory - 1, dot, is16);
        }
        const int32_t base = b * per_batch;
        for (int32_t f = 0; f < p->filters; f++) {
            int32_t sum = 0;
            for (int32_t m = 0; m < p->memory; m++) {
                const int32_t i = f * p->memory + m;
                sum += state_get(p->weights_time, i, is16) *
                       (state_get(state, base + i, is16) - p->state_zp);
            }
            acc[f] = sum;
        }
        for (int32_t u = 0; u < units; u++) {
            int32_t v = p->bias[u];
            for (int32_t r = 0; r < p->rank; r++) {
                v += acc[u * p->rank + r];
            }
            v = edgenn_mbqm(v, p->scale_2_multiplier, p->scale_2_shift) + p->output_zp;
            y[b * units + u] = (int8_t)edgenn_clamp(v, -128, 127);
        }
    }
    if (state_out != NULL) {
        memcpy(state_out, state, (size_t)total * (is16 ? 2u : 1u));
    }
}

void edgenn_svdf_f32(const edgenn_svdf_f32_params *p, const float *x, float *y,
                     const float *state0, float *state_out, void *scratch)
{
    const int32_t per_batch = p->filters * p->memory;
    const int32_t total = p->batch * per_batch;
    const int32_t units = p->filters / p->rank;
    float *state = (float *)scratch;
    float *acc = state + total;
    for (int32_t i = 0; i + 1 < total; i++) {
        state[i] = state0[i + 1];
    }
    for (int32_t b = 0; b < p->batch; b++) {
        const float *xb = x + b * p->n_input;
        float *sb = state + b * per_batch;
        for (int32_t f = 0; f < p->filters; f++) {
            const float *w = p->weights_feature + f * p->n_input;
            float dot = 0.0f;
            for (int32_t k = 0; k < p->n_input; k++) {
                dot += w[k] * xb[k];
            }
            sb[f * p->memory + p->memory - 1] = dot;
        }
        for (int32_t f = 0; f < p->filters; f++) {
            const float *wt = p->weights_time + f * p->memory;
            float sum = 0.0f;
            for (int32_t m = 0; m < p->memory; m++) {
                sum += wt[m] * sb[f * p->memory + m];
            }
            acc[f] = sum;
        }
        for (int32_t u = 0; u < units; u++) {
            float v = p->bias != NULL ? p->bias[u] : 0.0f;
            for (int32_t r = 0; r < p->rank; r++) {
                v += acc[u * p->rank + r];
            }
            y[b * units + u] = v < p->lo ? p->lo : (v > p->hi ? p->hi : v);
        }
    }
    if (state_out != NULL) {
        memcpy(state_out, state, (size_t)total * sizeof(float));
    }
}
