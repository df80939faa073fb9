/* Portable float32 LSTM; the sums run in TFLite Micro's order (the input FC from 0 plus the
 * bias, then the recurrent FC added), so only the libm rounding of exp / tanh differs. */
#include "edgenn_lstm_f32.h"

#include <math.h>
#include <stddef.h>

#include "edgenn_math_f32.h" /* edgenn_logistic_f32: reference_ops::Logistic */

static float dot_f32(const float *w, const float *v, int32_t n)
{
    float acc = 0.0f;
    for (int32_t k = 0; k < n; k++) {
        acc += w[k] * v[k];
    }
    return acc;
}

/* gate k for every cell; c is the cell state its peephole reads (the old one for the forget
 * and input gates, the updated one for the output gate). */
static void gate_f32(const edgenn_lstm_f32_params *p, int32_t k, const float *x,
                     const float *h, const float *c, int32_t sigmoid, float *out)
{
    const int32_t n = p->n_cell;
    for (int32_t j = 0; j < n; j++) {
        float z = dot_f32(p->w[k] + j * p->n_input, x, p->n_input);
        if (p->bias[k] != NULL) {
            z += p->bias[k][j];
        }
        z += dot_f32(p->r[k] + j * n, h, n);
        if (p->peephole[k] != NULL) {
            z += p->peephole[k][j] * c[j];
        }
        if (p->gate_clip > 0.0f) {
            z = z > p->gate_clip ? p->gate_clip : (z < -p->gate_clip ? -p->gate_clip : z);
        }
        out[j] = sigmoid ? edgenn_logistic_f32(z) : tanhf(z);
    }
}

static int32_t offset(const edgenn_lstm_f32_params *p, int32_t b, int32_t t, int32_t features)
{
    return (p->time_major ? t * p->batch + b : b * p->steps + t) * features;
}

void edgenn_lstm_f32(const edgenn_lstm_f32_params *p, const float *x, float *y,
                     const float *h0, const float *c0, float *h_final, float *c_final,
                     void *scratch)
{
    const int32_t n = p->n_cell;
    float *h = (float *)scratch;
    float *c = h + n;
    float *f = c + n;
    float *i = f + n;
    float *g = i + n;
    float *o = g + n;
    for (int32_t b = 0; b < p->batch; b++) {
        for (int32_t k = 0; k < n; k++) {
            h[k] = h0[b * n + k];
            c[k] = c0[b * n + k];
        }
        for (int32_t t = 0; t < p->steps; t++) {
            const float *xt = x + offset(p, b, t, p->n_input);
            gate_f32(p, 0, xt, h, c, 1, f);
            gate_f32(p, 1, xt, h, c, 1, i);
            gate_f32(p, 2, xt, h, c, p->cell_sigmoid, g);
            for (int32_t k = 0; k < n; k++) {
                float v = f[k] * c[k] + i[k] * g[k];
                if (p->cell_clip > 0.0f) {
                    v = v > p->cell_clip ? p->cell_clip : (v < -p->cell_clip ? -p->cell_clip : v);
                }
                c[k] = v;
            }
            gate_f32(p, 3, xt, h, c, 1, o);
            float *yt = y + offset(p, b, t, n);
            for (int32_t k = 0; k < n; k++) {
                h[k] = tanhf(c[k]) * o[k];
                yt[k] = h[k];
            }
        }
        for (int32_t k = 0; k < n; k++) {
            if (h_final != NULL) {
                h_final[b * n + k] = h[k];
            }
            if (c_final != NULL) {
                c_final[b * n + k] = c[k];
            }
        }
    }
}
