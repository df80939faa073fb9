/* Portable SVDF: int8 bit-exact with TFLite Micro's EvalIntegerSvdfReference (int8 input and
 * feature weights, an int16 or int8 state and time weights, int32 bias, int8 output) and
 * float32 as its EvalFloatSvdfReference. */
#ifndef EDGENN_SVDF_H
#define EDGENN_SVDF_H

#include <stdint.h>

typedef struct {
    const int8_t *weights_feature; /* [filters, n_input] */
    const void *weights_time;      /* [filters, memory], int16_t or int8_t like the state */
    const int32_t *bias;           /* [units] */
    int32_t batch, n_input, filters, memory, rank;
    int32_t input_zp, state_zp, output_zp;
    int32_t scale_1_multiplier, scale_1_shift; /* feature product -> state */
    int32_t scale_2_multiplier, scale_2_shift; /* time product -> output */
    int32_t state_int16;                       /* 1: int16 state, 0: int8 */
} edgenn_svdf_params;

/* The scratch: the running state ([batch, filters * memory] of the state type) and one
 * int32 per filter. */
#define EDGENN_SVDF_SCRATCH_BYTES(batch, filters, memory, state_bytes) \
    ((((batch) * (filters) * (memory) * (state_bytes) + 3) / 4 + (filters)) * 4)

/* state0: the state the inference starts from ([batch, filters * memory]); state_out (NULL:
 * not wanted): the new state, kept by a stateful model for the next invocation. */
void edgenn_svdf_s8(const edgenn_svdf_params *p, const int8_t *x, int8_t *y,
                    const void *state0, void *state_out, void *scratch);

/* float32 (EvalFloatSvdfReference): bias may be NULL; the output is clamped to [lo, hi]
 * (the fused activation). Scratch: the running state, float per state value and filter. */
typedef struct {
    const float *weights_feature; /* [filters, n_input] */
    const float *weights_time;    /* [filters, memory] */
    const float *bias;            /* [units] or NULL */
    int32_t batch, n_input, filters, memory, rank;
    float lo, hi;
} edgenn_svdf_f32_params;

void edgenn_svdf_f32(const edgenn_svdf_f32_params *p, const float *x, float *y,
                     const float *state0, float *state_out, void *scratch);

#endif
