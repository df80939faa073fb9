/* A linear SVM layer that learns on the device: a training buffer, one-vs-one SMO training of
 * every class pair, continued training across batches, and voting inference.
 *
 * Life cycle (no malloc; the caller owns every array, e.g. as static arrays in firmware):
 *   edgenn_svm s = {...};                     fill the fields below, ws with
 *                                             edgenn_smo_workspace_init
 *   edgenn_svm_append(&s, x, label) ...       until it returns EDGENN_SVM_FULL
 *   edgenn_svm_train(&s);                     SMO for every pair -> w, b; then the carry policy
 *                                             decides what stays in the buffer
 *   edgenn_svm_predict(&s, x, dec, scores);   the voted class
 *
 * Pairs are (a, c), a < c, in class order: (0,1), (0,2), ..., (1,2), ...; pair p's samples are
 * those of class a (y = +1, buffer order) then those of class c (y = -1), as in LIBSVM, and its
 * decision w_p . x + b_p > 0 votes for class a. This is the Python layer's
 * (edgenn/svm/buffer.py) algorithm step for step, so the two can be compared.
 */
#ifndef EDGENN_SVM_H
#define EDGENN_SVM_H

#include <stdint.h>

#include "edgenn_smo.h"

#define EDGENN_SVM_FULL 2           /* append: the buffer is full, train first */
#define EDGENN_SVM_ERR_LABEL (-10)  /* a label >= n_classes */
#define EDGENN_SVM_ERR_CONFIG (-11) /* inconsistent sizes or settings in the edgenn_svm struct */
#define EDGENN_SVM_ERR_VALUE (-12)  /* append: a NaN or infinite feature */
#define EDGENN_SVM_ERR_EMPTY (-13)  /* train: the buffer is empty */

/* Continued training: what edgenn_svm_train keeps in the buffer for the next batch. */
#define EDGENN_SVM_CARRY_NONE 0u            /* clear it: each batch is a new problem */
#define EDGENN_SVM_CARRY_SUPPORT_VECTORS 1u /* keep the support vectors (a > 0 in some pair) */
#define EDGENN_SVM_CARRY_WARM_START 2u      /* keep them and start SMO from their alphas */

/* Per-pair outcome of the last training (edgenn_svm.pair_status). */
#define EDGENN_SVM_PAIR_CONVERGED 0u
#define EDGENN_SVM_PAIR_MAX_ITER 1u /* stopped at max_iter; w and b are still updated */
#define EDGENN_SVM_PAIR_SKIPPED 2u  /* a class of the pair is not in the buffer: its w and b
                                       are left as they were */

/* keep[] after edgenn_svm_fit: this training's support vectors (scratch afterwards) */
#define EDGENN_SVM_KEEP_BOUND 1u  /* a > 0 in some pair, always at a = C */
#define EDGENN_SVM_KEEP_MARGIN 2u /* 0 < a < C in some pair */

typedef struct {
    /* the model: the layer's weight and bias tensors */
    uint32_t n_classes;
    edgenn_real *w;          /* [n_pairs][d] */
    edgenn_real *b;          /* [n_pairs] */
    uint8_t *active;         /* [n_pairs] pairs that vote: trained, or given nonzero initial
                                weights (NULL: all vote) */
    /* the training buffer: buffer.x is [capacity][d] of buffer.dtype, buffer.n_rows = capacity */
    edgenn_smo_samples buffer;
    uint8_t *labels;         /* [capacity] class indices 0..n_classes-1 */
    uint32_t count;          /* samples in the buffer */
    uint32_t carried;        /* of which the first `carried` were kept from the last training */
    /* training settings */
    edgenn_real C;
    edgenn_real tol;
    uint32_t max_iter;
    uint32_t carry;          /* EDGENN_SVM_CARRY_* */
    uint32_t carry_limit;    /* carry at most this many (< capacity); when there are more
                                candidates the classes take turns (see edgenn_svm_train) */
    /* state and scratch */
    edgenn_real *alphas;     /* [capacity][n_classes - 1]: each sample's alpha in the pairs of
                                its class (LIBSVM's layout: class a's alpha for pair (a, c) in
                                column c - 1 if a < c, else c). Needed unless carry is NONE. */
    edgenn_smo_workspace ws; /* for `capacity` samples */
    edgenn_real *kernel_memo; /* [capacity * capacity] or NULL: every dot product of a
                                 training computed once for all pairs (see edgenn_smo.h) */
    uint8_t *keep;           /* [capacity] EDGENN_SVM_KEEP_* after a training */
    /* report of the last training, per pair */
    uint32_t *iterations;    /* [n_pairs] */
    uint8_t *pair_status;    /* [n_pairs] EDGENN_SVM_PAIR_* */
    edgenn_real *objective;  /* [n_pairs] dual objectives (NULL: not reported) */
    uint32_t kernel_rows;    /* Q rows computed, all pairs */
} edgenn_svm;

static inline uint32_t edgenn_svm_pairs(uint32_t n_classes)
{
    return n_classes * (n_classes - 1u) / 2u;
}

/* Index of pair (a, c), a < c, in the pair order above. */
static inline uint32_t edgenn_svm_pair_index(uint32_t n_classes, uint32_t a, uint32_t c)
{
    return a * (2u * n_classes - a - 1u) / 2u + (c - a - 1u);
}

/* Copy sample x (d values of buffer.dtype) with its class into the buffer.
 * EDGENN_SMO_OK, EDGENN_SVM_FULL, EDGENN_SVM_ERR_LABEL or EDGENN_SVM_ERR_VALUE. */
int32_t edgenn_svm_append(edgenn_svm *s, const void *x, uint32_t label);

/* Train every pair that has samples of both its classes in the buffer (`gram`: optional
 * precomputed kernel over the buffer rows, NULL on devices); update its w, b, active flag,
 * report and the buffered samples' alphas. The buffer itself is not changed.
 * EDGENN_SMO_OK, or an error (< 0) with nothing changed. */
int32_t edgenn_svm_fit(edgenn_svm *s, const edgenn_smo_gram *gram);

/* edgenn_svm_fit, then the carry policy. NONE clears the buffer. The others keep, at its
 * front in buffer order with their alphas, the support vectors (a > 0 in some pair) and the
 * samples of classes that took part in no trained pair; at most carry_limit of them: the
 * classes take turns (every class's best candidate, then every class's second best ..., ties
 * to the lower class), a class's candidates ranked free support vectors first, then unused
 * samples, then bounded support vectors, newest first within each. The Python layer
 * (edgenn/svm/buffer.py) does the same. */
int32_t edgenn_svm_train(edgenn_svm *s);

/* Classify x (d values of buffer.dtype): the class with the most votes of the active pairs,
 * ties to the lowest class index (LIBSVM's svm_predict; a decision of exactly 0 votes for the
 * pair's second class). decision[n_pairs] receives w_p . x + b_p; scores[n_classes]
 * scikit-learn's "ovr" decision (votes + summed confidences / (3 (|sum| + 1)), 0 voting for
 * the first class as scikit-learn does), whose argmax is the voted class except among classes
 * tied on votes, where it is the most confident one. */
uint32_t edgenn_svm_predict(const edgenn_svm *s, const void *x, edgenn_real *decision,
                            edgenn_real *scores);

#endif /* EDGENN_SVM_H */
