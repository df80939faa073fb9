/* Firmware of an SVM layer that learns on the device: every array is static (no malloc), sized
 * by the generated svm_config.h; the layer's initial weights are in the generated
 * svm_weights.c. edgenn/backends/cortexm/svm_device.py drives it in the emulator:
 *
 *   edgenn_svm_append_input(label)   append the sample in edgenn_arena (the input)
 *   edgenn_svm_train_buffer()        one-vs-one SMO on the buffer, then the carry policy
 *   edgenn_invoke()                  classify the sample in edgenn_arena: scores, decision and
 *                                    the voted class are written after it (manifest.json)
 *
 * On a real device call the same functions from the application (edgenn_svm_layer is the
 * edgenn_svm struct; edgenn_svm.h documents it), as the board application
 * edgenn_svm_cnn_board.c does.
 */
#include <stdint.h>

#include "edgenn_svm.h"
#include "svm_config.h"

#define SVM_PAIRS (SVM_CLASSES * (SVM_CLASSES - 1u) / 2u)
#define SVM_ALIGN8(n) (((n) + 7u) & ~7u)
#define SVM_IN_BYTES (SVM_FEATURES * (uint32_t)sizeof(svm_feature_t))
#define SVM_DECISION_AT SVM_ALIGN8(SVM_IN_BYTES)
#define SVM_SCORES_AT (SVM_DECISION_AT + SVM_PAIRS * 4u)
#define SVM_LABEL_AT (SVM_SCORES_AT + SVM_CLASSES * 4u)
#define SVM_ARENA_BYTES (SVM_LABEL_AT + 4u)

/* the model (svm_weights.c): updated in place by training */
extern edgenn_real edgenn_svm_w[SVM_PAIRS * SVM_FEATURES];
extern edgenn_real edgenn_svm_b[SVM_PAIRS];
extern uint8_t edgenn_svm_active[SVM_PAIRS];

/* the training buffer and the per-sample state */
svm_feature_t edgenn_svm_buffer[SVM_CAPACITY * SVM_FEATURES] __attribute__((aligned(8)));
uint8_t edgenn_svm_labels[SVM_CAPACITY];
uint8_t edgenn_svm_keep[SVM_CAPACITY];
#if SVM_CARRY != EDGENN_SVM_CARRY_NONE
edgenn_real edgenn_svm_alphas[SVM_CAPACITY * (SVM_CLASSES - 1u)];
#define SVM_ALPHAS edgenn_svm_alphas
#else
#define SVM_ALPHAS ((edgenn_real *)0)
#endif

/* the SMO workspace (edgenn_smo_workspace) and its kernel-row cache */
static edgenn_real svm_alpha[SVM_CAPACITY];
static edgenn_real svm_grad[SVM_CAPACITY];
static edgenn_real svm_diag[SVM_CAPACITY];
static uint32_t svm_index[SVM_CAPACITY];
static int32_t svm_slot_of[SVM_CAPACITY];
static uint32_t svm_slot_row[SVM_CAPACITY];
static uint32_t svm_slot_used[SVM_CAPACITY];
static int8_t svm_y[SVM_CAPACITY];
static uint8_t svm_status[SVM_CAPACITY];
static uint8_t svm_set[SVM_CAPACITY];
edgenn_real edgenn_svm_cache[SVM_CACHE_LEN];
#if SVM_KERNEL_MEMO
edgenn_real edgenn_svm_kernel_memo[SVM_CAPACITY * SVM_CAPACITY];
#define SVM_MEMO edgenn_svm_kernel_memo
#else
#define SVM_MEMO ((edgenn_real *)0)
#endif

/* report of the last training */
uint32_t edgenn_svm_iterations[SVM_PAIRS];
uint8_t edgenn_svm_pair_status[SVM_PAIRS];
edgenn_real edgenn_svm_objective[SVM_PAIRS];

/* inference I/O: [sample | decision[pairs] | scores[classes] | label] */
uint8_t edgenn_arena[SVM_ARENA_BYTES] __attribute__((aligned(8)));

edgenn_svm edgenn_svm_layer = {
    .n_classes = SVM_CLASSES,
    .w = edgenn_svm_w,
    .b = edgenn_svm_b,
    .active = edgenn_svm_active,
    .buffer = {.x = edgenn_svm_buffer, .n_rows = SVM_CAPACITY, .d = SVM_FEATURES,
               .dtype = SVM_STORAGE, .scale = SVM_SCALE, .zero_point = SVM_ZERO_POINT},
    .labels = edgenn_svm_labels,
    .C = SVM_C,
    .tol = SVM_TOL,
    .max_iter = SVM_MAX_ITER,
    .carry = SVM_CARRY,
    .carry_limit = SVM_CARRY_LIMIT,
    .alphas = SVM_ALPHAS,
    .ws = {.alpha = svm_alpha, .grad = svm_grad, .diag = svm_diag, .index = svm_index,
           .slot_of = svm_slot_of, .slot_row = svm_slot_row, .slot_used = svm_slot_used,
           .y = svm_y, .status = svm_status, .set = svm_set, .cache = edgenn_svm_cache,
           .capacity = SVM_CAPACITY, .cache_len = SVM_CACHE_LEN},
    .kernel_memo = SVM_MEMO,
    .keep = edgenn_svm_keep,
    .iterations = edgenn_svm_iterations,
    .pair_status = edgenn_svm_pair_status,
    .objective = edgenn_svm_objective,
};

int32_t edgenn_svm_append_input(uint32_t label);
int32_t edgenn_svm_train_buffer(void);
uint32_t edgenn_svm_count(void);
void edgenn_invoke(void);

int32_t edgenn_svm_append_input(uint32_t label)
{
    return edgenn_svm_append(&edgenn_svm_layer, edgenn_arena, label);
}

int32_t edgenn_svm_train_buffer(void)
{
    return edgenn_svm_train(&edgenn_svm_layer);
}

uint32_t edgenn_svm_count(void)
{
    return edgenn_svm_layer.count;
}

void edgenn_invoke(void)
{
    edgenn_real *decision = (edgenn_real *)(void *)(edgenn_arena + SVM_DECISION_AT);
    edgenn_real *scores = (edgenn_real *)(void *)(edgenn_arena + SVM_SCORES_AT);
    const uint32_t label = edgenn_svm_predict(&edgenn_svm_layer, edgenn_arena, decision, scores);
    *(uint32_t *)(void *)(edgenn_arena + SVM_LABEL_AT) = label;
}

/* The emulator's main (the host calls the functions above itself). A board application
 * brings its own main (edgenn_svm_cnn_board.c) and defines EDGENN_SVM_APP_MAIN. */
#ifndef EDGENN_SVM_APP_MAIN
int main(void)
{
    for (;;) {
        edgenn_invoke();
    }
}
#endif
