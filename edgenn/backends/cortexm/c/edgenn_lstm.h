/* Portable integer LSTM over a whole sequence, bit-exact with TFLite Micro's
 * UNIDIRECTIONAL_SEQUENCE_LSTM (lstm_eval.h): int8 activations (8x8->16) or int16 activations
 * (16x8->16), int8 weights, int16 gates and cell state. Every constant comes from the
 * reference layer's build (edgenn/backends/ref/kernels/lstm.py). */
#ifndef EDGENN_LSTM_H
#define EDGENN_LSTM_H

#include <stdint.h>

/* One gate: act(requant(W x + bias_w) + requant(R h + bias_r)), the input and hidden zero
 * points folded into the biases. The weight rows are zero-padded to a multiple of 4 and each
 * group of 4 stored as w0 w2 w1 w3, so that SXTB16 and SXTB16 ROR 8 of a word give the int16
 * pairs (w0, w1) and (w2, w3) that SMLAD multiplies with the widened inputs. */
typedef struct {
    const int8_t *w;       /* [n_cell, pad4(n_input)] */
    const int8_t *r;       /* [n_cell, pad4(n_cell)] */
    const int32_t *bias_w; /* [n_cell] */
    const int32_t *bias_r; /* [n_cell] */
    int32_t w_multiplier, w_shift;
    int32_t r_multiplier, r_shift;
    int32_t tanh;          /* 1: tanh (Q3.12 in), 0: sigmoid */
} edgenn_lstm_gate;

typedef struct {
    edgenn_lstm_gate gates[4]; /* forget, input, cell, output */
    int32_t forget_multiplier, forget_shift; /* f * c -> c */
    int32_t input_multiplier, input_shift;   /* i * g -> c */
    int32_t output_multiplier, output_shift; /* tanh(c) * o -> h */
    int32_t output_zp, output_min, output_max;
    int32_t cell_tanh_multiplier, cell_tanh_shift; /* tanh input scaling of the cell state */
    int32_t cell_clip;                             /* 0: none */
    int32_t batch, steps, n_input, n_cell;
    int32_t time_major;
} edgenn_lstm_params;

#define EDGENN_LSTM_PAD4(n) (((n) + 3) / 4 * 4)

/* Bytes of scratch the kernels need (16-aligned): the hidden and cell state, four gate
 * buffers and the step's input and hidden state widened to int16, each padded to 4. */
#define EDGENN_LSTM_SCRATCH_BYTES(n_input, n_cell) \
    ((2 * (7 * EDGENN_LSTM_PAD4(n_cell) + EDGENN_LSTM_PAD4(n_input)) + 15) / 16 * 16)

/* x: [batch, steps, n_input] (or [steps, batch, n_input] when time_major); y likewise with
 * n_cell; h0 / c0: the initial hidden and cell state, [batch, n_cell]; h_final / c_final
 * (NULL: not wanted): the state after the last step, [batch, n_cell] (a stateful model keeps
 * it for the next invocation). */
void edgenn_lstm_s8(const edgenn_lstm_params *p, const int8_t *x, int8_t *y,
                    const int8_t *h0, const int16_t *c0, int8_t *h_final, int16_t *c_final,
                    void *scratch);
void edgenn_lstm_s16(const edgenn_lstm_params *p, const int16_t *x, int16_t *y,
                     const int16_t *h0, const int16_t *c0, int16_t *h_final, int16_t *c_final,
                     void *scratch);

#endif
