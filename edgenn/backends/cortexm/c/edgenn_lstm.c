/* Portable integer LSTM, bit-exact with TFLite Micro's EvalLstm<int8|int16, int8, int16>.
 * The batch rows of a sequence are independent, so each row runs all its time steps with its
 * own state (TFLM's batch-major order; its time-major batching gives the same numbers). */
#include "edgenn_lstm.h"

#include <string.h>

#include "edgenn_acle.h"
#include "edgenn_curves_s16.h"
#include "edgenn_fixed_point.h"
#include "edgenn_sigmoid_table.h" /* generated from edgenn/arith/int16_curves.py */

static inline int32_t clamp16(int32_t v)
{
    return edgenn_clamp(v, -32768, 32767);
}

/* (x * multiplier + round) >> shift: the int16 activations' input scaling. */
static inline int32_t scale_input(int32_t x, int32_t multiplier, int32_t shift)
{
    int32_t round = shift > 0 ? (int32_t)1 << (shift - 1) : 0;
    return (x * multiplier + round) >> shift;
}

/* reference_integer_ops::Logistic (int16): Q3.12 (times 3) in, Q0.15 out. */
static int16_t sigmoid16(int32_t x)
{
    return edgenn_sigmoid16(x * 3, edgenn_sigmoid_table);
}

/* reference_integer_ops::Tanh (int16) after the LSTM's input scaling; Q0.15 out. */
static int16_t tanh16(int32_t x, int32_t multiplier, int32_t shift)
{
    return edgenn_tanh16(scale_input(x, multiplier, shift), edgenn_sigmoid_table);
}

/* TFLite's MultiplyByQuantizedMultiplier(int64_t x, ...) of the 16x8 kernels. */
static int32_t mbqm64(int64_t x, int32_t multiplier, int32_t shift)
{
    int64_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    int32_t total_shift = 15 - shift;
    int64_t round = (int64_t)1 << (total_shift - 1);
    return (int32_t)((x * reduced + round) >> total_shift);
}

/* Gate pre-activations: clamp16(FC_w) + clamp16(FC_r) in Q3.12, saturated, activated. */
static int16_t activate(const edgenn_lstm_gate *g, int32_t zw, int32_t zr)
{
    int32_t z = clamp16(clamp16(zw) + clamp16(zr));
    return g->tanh ? tanh16(z, 3, 0) : sigmoid16(z);
}

/* acc + w . v over n_pad (a multiple of 4) values: w int8 in the w0 w2 w1 w3 order, v int16. */
static int32_t dot32(const int8_t *w, const int16_t *v, int32_t n_pad, int32_t acc)
{
    for (int32_t k = 0; k < n_pad; k += 4) {
        const uint32_t wv = edgenn_load32(w + k);
        acc = edgenn_smlad(edgenn_sxtb16(wv), edgenn_load32(v + k), acc);
        acc = edgenn_smlad(edgenn_sxtb16_ror8(wv), edgenn_load32(v + k + 2), acc);
    }
    return acc;
}

/* Two rows at once (each input pair loaded once for both): acc[j] += w_j . v. */
static void dot32x2(const int8_t *w0, const int8_t *w1, const int16_t *v, int32_t n_pad,
                    int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1];
    for (int32_t k = 0; k < n_pad; k += 4) {
        const uint32_t p0 = edgenn_load32(w0 + k), p1 = edgenn_load32(w1 + k);
        const uint32_t v01 = edgenn_load32(v + k), v23 = edgenn_load32(v + k + 2);
        a0 = edgenn_smlad(edgenn_sxtb16(p0), v01, a0);
        a1 = edgenn_smlad(edgenn_sxtb16(p1), v01, a1);
        a0 = edgenn_smlad(edgenn_sxtb16_ror8(p0), v23, a0);
        a1 = edgenn_smlad(edgenn_sxtb16_ror8(p1), v23, a1);
    }
    acc[0] = a0;
    acc[1] = a1;
}

/* The same with a 64-bit accumulator (the 16x8 kernel's int64 sums). */
static int64_t dot64(const int8_t *w, const int16_t *v, int32_t n_pad, int64_t acc)
{
    for (int32_t k = 0; k < n_pad; k += 4) {
        const uint32_t wv = edgenn_load32(w + k);
        acc = edgenn_smlald(edgenn_sxtb16(wv), edgenn_load32(v + k), acc);
        acc = edgenn_smlald(edgenn_sxtb16_ror8(wv), edgenn_load32(v + k + 2), acc);
    }
    return acc;
}

/* One gate for every cell: xw / hw are the step's input and hidden state widened to int16. */
static void gate(const edgenn_lstm_gate *g, const int16_t *xw, const int16_t *hw,
                 int32_t n_input, int32_t n_cell, int32_t wide, int16_t *out)
{
    const int32_t in_pad = EDGENN_LSTM_PAD4(n_input);
    const int32_t cell_pad = EDGENN_LSTM_PAD4(n_cell);
    int32_t c = 0;
    if (!wide) {
        for (; c + 1 < n_cell; c += 2) {
            int32_t aw[2] = {g->bias_w[c], g->bias_w[c + 1]};
            int32_t ar[2] = {g->bias_r[c], g->bias_r[c + 1]};
            dot32x2(g->w + c * in_pad, g->w + (c + 1) * in_pad, xw, in_pad, aw);
            dot32x2(g->r + c * cell_pad, g->r + (c + 1) * cell_pad, hw, cell_pad, ar);
            for (int32_t j = 0; j < 2; j++) {
                out[c + j] = activate(g, edgenn_mbqm(aw[j], g->w_multiplier, g->w_shift),
                                      edgenn_mbqm(ar[j], g->r_multiplier, g->r_shift));
            }
        }
    }
    for (; c < n_cell; c++) {
        const int8_t *w = g->w + c * in_pad;
        const int8_t *r = g->r + c * cell_pad;
        int32_t zw, zr;
        if (wide) {
            zw = mbqm64(dot64(w, xw, in_pad, g->bias_w[c]), g->w_multiplier, g->w_shift);
            zr = mbqm64(dot64(r, hw, cell_pad, g->bias_r[c]), g->r_multiplier, g->r_shift);
        } else {
            zw = edgenn_mbqm(dot32(w, xw, in_pad, g->bias_w[c]), g->w_multiplier, g->w_shift);
            zr = edgenn_mbqm(dot32(r, hw, cell_pad, g->bias_r[c]), g->r_multiplier,
                             g->r_shift);
        }
        out[c] = activate(g, zw, zr);
    }
}

/* c = clamp16(f * c + i * g), clipped to the cell clip, in place. */
static void update_cell(const edgenn_lstm_params *p, int16_t *c, const int16_t *f,
                        const int16_t *i, const int16_t *g)
{
    for (int32_t k = 0; k < p->n_cell; k++) {
        int32_t fc = clamp16(edgenn_mbqm((int32_t)f[k] * c[k], p->forget_multiplier,
                                         p->forget_shift));
        int32_t ig = clamp16(edgenn_mbqm((int32_t)i[k] * g[k], p->input_multiplier,
                                         p->input_shift));
        int32_t v = clamp16(fc + ig);
        if (p->cell_clip > 0) {
            v = edgenn_clamp(v, -p->cell_clip, p->cell_clip);
        }
        c[k] = (int16_t)v;
    }
}

/* tanh(c) * o requantized to the hidden state's type (zero point, range). */
static int32_t hidden_value(const edgenn_lstm_params *p, int16_t c, int16_t o)
{
    int32_t t = tanh16(c, p->cell_tanh_multiplier, p->cell_tanh_shift);
    int32_t v = edgenn_mbqm(t * o, p->output_multiplier, p->output_shift) + p->output_zp;
    return edgenn_clamp(v, p->output_min, p->output_max);
}

typedef struct {
    int16_t *c, *f, *i, *g, *o; /* cell state and gate outputs */
    int16_t *h;                 /* hidden state (int8 values in the 8x8 kernel) */
    int16_t *xw, *hw;           /* the step's input and hidden state as int16, zero-padded */
} lstm_buffers;

static lstm_buffers buffers(const edgenn_lstm_params *p, void *scratch)
{
    const int32_t cell_pad = EDGENN_LSTM_PAD4(p->n_cell);
    int16_t *base = (int16_t *)scratch;
    lstm_buffers b;
    b.c = base;
    b.f = base + cell_pad;
    b.i = base + 2 * cell_pad;
    b.g = base + 3 * cell_pad;
    b.o = base + 4 * cell_pad;
    b.h = base + 5 * cell_pad;
    b.hw = base + 6 * cell_pad;
    b.xw = base + 7 * cell_pad;
    for (int32_t k = p->n_cell; k < cell_pad; k++) {
        b.hw[k] = 0;
    }
    for (int32_t k = p->n_input; k < EDGENN_LSTM_PAD4(p->n_input); k++) {
        b.xw[k] = 0;
    }
    return b;
}

/* Element offset of row b, step t in x (n_input features) or y (n_cell). */
static int32_t offset(const edgenn_lstm_params *p, int32_t b, int32_t t, int32_t features)
{
    return (p->time_major ? t * p->batch + b : b * p->steps + t) * features;
}

/* The four gates, the cell update and the new hidden state (into s->h) of one step. */
static void step(const edgenn_lstm_params *p, const lstm_buffers *s, int32_t wide)
{
    const int32_t n = p->n_cell;
    gate(&p->gates[0], s->xw, s->hw, p->n_input, n, wide, s->f);
    gate(&p->gates[1], s->xw, s->hw, p->n_input, n, wide, s->i);
    gate(&p->gates[2], s->xw, s->hw, p->n_input, n, wide, s->g);
    update_cell(p, s->c, s->f, s->i, s->g);
    gate(&p->gates[3], s->xw, s->hw, p->n_input, n, wide, s->o);
    for (int32_t k = 0; k < n; k++) {
        s->h[k] = (int16_t)hidden_value(p, s->c[k], s->o[k]);
        s->hw[k] = s->h[k];
    }
}

/* The state after a row's last step into h_final / c_final (NULL: not wanted). */
static void store_final(const lstm_buffers *s, int32_t row, int32_t n, int32_t wide,
                        void *h_final, int16_t *c_final)
{
    for (int32_t k = 0; k < n; k++) {
        if (h_final != NULL) {
            if (wide) {
                ((int16_t *)h_final)[row * n + k] = s->h[k];
            } else {
                ((int8_t *)h_final)[row * n + k] = (int8_t)s->h[k];
            }
        }
        if (c_final != NULL) {
            c_final[row * n + k] = s->c[k];
        }
    }
}

void edgenn_lstm_s8(const edgenn_lstm_params *p, const int8_t *x, int8_t *y,
                    const int8_t *h0, const int16_t *c0, int8_t *h_final, int16_t *c_final,
                    void *scratch)
{
    lstm_buffers s = buffers(p, scratch);
    const int32_t n = p->n_cell;
    for (int32_t b = 0; b < p->batch; b++) {
        for (int32_t k = 0; k < n; k++) {
            s.hw[k] = h0[b * n + k];
            s.c[k] = c0[b * n + k];
        }
        for (int32_t t = 0; t < p->steps; t++) {
            const int8_t *xt = x + offset(p, b, t, p->n_input);
            for (int32_t k = 0; k < p->n_input; k++) {
                s.xw[k] = xt[k];
            }
            step(p, &s, 0);
            int8_t *yt = y + offset(p, b, t, n);
            for (int32_t k = 0; k < n; k++) {
                yt[k] = (int8_t)s.h[k];
            }
        }
        store_final(&s, b, n, 0, h_final, c_final);
    }
}

void edgenn_lstm_s16(const edgenn_lstm_params *p, const int16_t *x, int16_t *y,
                     const int16_t *h0, const int16_t *c0, int16_t *h_final, int16_t *c_final,
                     void *scratch)
{
    lstm_buffers s = buffers(p, scratch);
    const int32_t n = p->n_cell;
    for (int32_t b = 0; b < p->batch; b++) {
        for (int32_t k = 0; k < n; k++) {
            s.hw[k] = h0[b * n + k];
            s.c[k] = c0[b * n + k];
        }
        for (int32_t t = 0; t < p->steps; t++) {
            const int16_t *xt = x + offset(p, b, t, p->n_input);
            for (int32_t k = 0; k < p->n_input; k++) {
                s.xw[k] = xt[k];
            }
            step(p, &s, 1);
            memcpy(y + offset(p, b, t, n), s.h, (size_t)n * sizeof(int16_t));
        }
        store_final(&s, b, n, 1, h_final, c_final);
    }
}
