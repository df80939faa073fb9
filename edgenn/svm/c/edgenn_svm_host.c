/* Flat entry points for the host binding (edgenn/svm/native.py): pointers and scalars
 * only, so ctypes needs no struct layouts. Not part of firmware. */
#include <string.h>

#include "edgenn_svm.h"

/* The state of an SVM layer as flat arrays (the binding keeps them in numpy). */
typedef struct {
    void *x;                /* [capacity][d] buffer */
    uint32_t capacity, d, dtype;
    float scale;
    int32_t zero_point;
    uint8_t *labels;        /* [capacity] */
    uint32_t *counts;       /* [2]: count, carried (in/out) */
    uint32_t n_classes;
    double C, tol;
    uint32_t max_iter, carry, carry_limit;
    edgenn_real *alphas;    /* [capacity][n_classes - 1] or NULL */
    edgenn_real *w, *b;     /* [n_pairs][d], [n_pairs] */
    uint8_t *active;        /* [n_pairs] */
    uint32_t *iterations;   /* [n_pairs] */
    uint8_t *pair_status;   /* [n_pairs] */
    edgenn_real *objective; /* [n_pairs] */
    uint8_t *keep;          /* [capacity] */
    uint32_t *kernel_rows;  /* [1] */
    void *work;
    size_t work_bytes;
    const void *gram;       /* optional [capacity][capacity] kernel over the buffer rows */
    uint32_t gram_dtype;
    edgenn_real *memo;      /* optional [capacity * capacity] kernel memo */
} host_layer;

uint32_t edgenn_host_real_bytes(void);
size_t edgenn_host_workspace_bytes(uint32_t capacity, uint32_t cache_len);
size_t edgenn_host_layer_bytes(void);
int32_t edgenn_host_solve_binary(const void *x, uint32_t n_rows, uint32_t d, uint32_t dtype,
                                 float scale, int32_t zero_point, const uint32_t *index,
                                 const int8_t *y, uint32_t n, const void *gram,
                                 uint32_t gram_dtype, uint32_t gram_stride,
                                 const edgenn_real *alpha0, double C, double tol,
                                 uint32_t max_iter, void *work, size_t work_bytes,
                                 edgenn_real *alpha, edgenn_real *w, double *info);
int32_t edgenn_host_svm(const host_layer *h, uint32_t train);
void edgenn_host_predict(const void *x, uint32_t n, uint32_t d, uint32_t dtype, float scale,
                         int32_t zero_point, const edgenn_real *w, const edgenn_real *b,
                         const uint8_t *active, uint32_t n_classes, uint32_t *labels,
                         edgenn_real *decision, edgenn_real *scores);

uint32_t edgenn_host_real_bytes(void)
{
    return (uint32_t)sizeof(edgenn_real);
}

size_t edgenn_host_layer_bytes(void)
{
    return sizeof(host_layer);
}

size_t edgenn_host_workspace_bytes(uint32_t capacity, uint32_t cache_len)
{
    return EDGENN_SMO_WORKSPACE_BYTES(capacity, cache_len);
}

/* info[0..6] = b, objective, iterations, n_support, n_bound, kernel_rows, dot_products */
int32_t edgenn_host_solve_binary(const void *x, uint32_t n_rows, uint32_t d, uint32_t dtype,
                                 float scale, int32_t zero_point, const uint32_t *index,
                                 const int8_t *y, uint32_t n, const void *gram,
                                 uint32_t gram_dtype, uint32_t gram_stride,
                                 const edgenn_real *alpha0, double C, double tol,
                                 uint32_t max_iter, void *work, size_t work_bytes,
                                 edgenn_real *alpha, edgenn_real *w, double *info)
{
    edgenn_smo_workspace ws;
    const int32_t ok = edgenn_smo_workspace_init(&ws, work, work_bytes, n);
    if (ok != EDGENN_SMO_OK) {
        return ok;
    }
    const edgenn_smo_samples samples = {x, n_rows, d, dtype, scale, zero_point};
    const edgenn_smo_gram g = {gram, gram_dtype, gram_stride};
    const edgenn_smo_problem p = {x != NULL ? &samples : NULL, index, y, n,
                                  gram != NULL ? &g : NULL, NULL, 0u, alpha0, (edgenn_real)C,
                                  (edgenn_real)tol, max_iter};
    edgenn_smo_result res;
    const int32_t st = edgenn_smo_solve(&p, &ws, w, &res);
    if (st < 0) {
        return st;
    }
    memcpy(alpha, ws.alpha, (size_t)n * sizeof(edgenn_real));
    info[0] = (double)res.b;
    info[1] = (double)res.objective;
    info[2] = (double)res.iterations;
    info[3] = (double)res.n_support;
    info[4] = (double)res.n_bound;
    info[5] = (double)res.kernel_rows;
    info[6] = (double)res.dot_products;
    return st;
}

/* train = 0: edgenn_svm_fit (buffer unchanged); 1: edgenn_svm_train (fit + carry). */
int32_t edgenn_host_svm(const host_layer *h, uint32_t train)
{
    edgenn_svm s;
    memset(&s, 0, sizeof s);
    const int32_t ok = edgenn_smo_workspace_init(&s.ws, h->work, h->work_bytes, h->capacity);
    if (ok != EDGENN_SMO_OK) {
        return ok;
    }
    const edgenn_smo_samples buffer = {h->x, h->capacity, h->d, h->dtype, h->scale,
                                       h->zero_point};
    s.buffer = buffer;
    s.n_classes = h->n_classes;
    s.w = h->w;
    s.b = h->b;
    s.active = h->active;
    s.labels = h->labels;
    s.count = h->counts[0];
    s.carried = h->counts[1];
    s.C = (edgenn_real)h->C;
    s.tol = (edgenn_real)h->tol;
    s.max_iter = h->max_iter;
    s.carry = h->carry;
    s.carry_limit = h->carry_limit;
    s.alphas = h->alphas;
    s.keep = h->keep;
    s.iterations = h->iterations;
    s.pair_status = h->pair_status;
    s.objective = h->objective;
    s.kernel_memo = h->memo;
    const edgenn_smo_gram g = {h->gram, h->gram_dtype, h->capacity};
    const int32_t st = train ? edgenn_svm_train(&s) : edgenn_svm_fit(&s, h->gram ? &g : NULL);
    h->counts[0] = s.count;
    h->counts[1] = s.carried;
    h->kernel_rows[0] = s.kernel_rows;
    return st;
}

void edgenn_host_predict(const void *x, uint32_t n, uint32_t d, uint32_t dtype, float scale,
                         int32_t zero_point, const edgenn_real *w, const edgenn_real *b,
                         const uint8_t *active, uint32_t n_classes, uint32_t *labels,
                         edgenn_real *decision, edgenn_real *scores)
{
    edgenn_svm s;
    memset(&s, 0, sizeof s);
    s.n_classes = n_classes;
    s.w = (edgenn_real *)(uintptr_t)w; /* predict only reads the model */
    s.b = (edgenn_real *)(uintptr_t)b;
    s.active = (uint8_t *)(uintptr_t)active;
    const edgenn_smo_samples buffer = {NULL, 0u, d, dtype, scale, zero_point};
    s.buffer = buffer;
    const size_t item = dtype == EDGENN_SMO_S8 ? 1u : (dtype == EDGENN_SMO_F64 ? 8u : 4u);
    const size_t row = (size_t)d * item;
    const uint32_t pairs = edgenn_svm_pairs(n_classes);
    for (uint32_t r = 0; r < n; r++) {
        labels[r] = edgenn_svm_predict(&s, (const uint8_t *)x + (size_t)r * row,
                                       decision + (size_t)r * pairs,
                                       scores + (size_t)r * n_classes);
    }
}
