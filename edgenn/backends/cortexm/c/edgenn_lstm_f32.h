/* Portable float32 LSTM over a whole sequence: TFLite Micro's EvalLstm<float> (gate =
 * act((W x + b) + R h), c = f * c + i * g clipped, h = tanh(c) * o), plus what ONNX models
 * add: peepholes and a clip of the gate pre-activations. */
#ifndef EDGENN_LSTM_F32_H
#define EDGENN_LSTM_F32_H

#include <stdint.h>

typedef struct {
    /* per gate, in the order forget, input, cell, output */
    const float *w[4];        /* [n_cell, n_input] */
    const float *r[4];        /* [n_cell, n_cell] */
    const float *bias[4];     /* [n_cell] */
    const float *peephole[4]; /* [n_cell] or NULL (never for the cell gate) */
    float cell_clip;          /* 0: none */
    float gate_clip;          /* 0: none */
    int32_t cell_sigmoid;     /* the cell gate's activation: 1 sigmoid, 0 tanh */
    int32_t batch, steps, n_input, n_cell;
    int32_t time_major;
} edgenn_lstm_f32_params;

/* Scratch: the hidden and cell state and four gate buffers. */
#define EDGENN_LSTM_F32_SCRATCH_BYTES(n_cell) ((6 * (n_cell) * 4 + 15) / 16 * 16)

/* x, y as edgenn_lstm_s8; h_final / c_final receive the last hidden and cell state of every
 * row ([batch, n_cell]) when not NULL. */
void edgenn_lstm_f32(const edgenn_lstm_f32_params *p, const float *x, float *y,
                     const float *h0, const float *c0, float *h_final, float *c_final,
                     void *scratch);

#endif
