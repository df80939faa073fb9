/* Binary linear SVM trained by SMO: LIBSVM's solver with second-order working-set selection
 * (Fan, Chen and Lin 2005, "WSS 3"), without shrinking.
 *
 *   min f(a) = 1/2 a'Qa - e'a,  0 <= a_i <= C,  y'a = 0,  Q_ij = y_i y_j x_i.x_j
 *
 * Portable C99 with no malloc: every array lives in memory the caller passes in, so the same
 * source builds for the host (edgenn's ctypes binding) and for Cortex-M firmware.
 *
 * Precision. `edgenn_real` (alphas, gradient, kernel values, w, b) is float; build with
 * -DEDGENN_SMO_DOUBLE=1 to make it double (what the host binding uses to match numpy float64).
 * Dot products accumulate in edgenn_real, in a fixed order (8 interleaved partial sums added
 * pairwise), so a float build gives bit-identical results on any IEEE-754 machine compiled
 * with -ffp-contract=off. int8 samples are multiplied exactly in int32.
 *
 * Kernel rows. Q rows are computed on the fly from the samples (dot products) into an LRU row
 * cache carved from the workspace; a cached row j supplies K(i, j) to a new row i for free
 * (symmetry). With room for n rows per problem each row is computed once; the minimum is two
 * rows. A caller may instead pass a precomputed Gram matrix (host training does).
 */
#ifndef EDGENN_SMO_H
#define EDGENN_SMO_H

#include <stddef.h>
#include <stdint.h>

#if defined(EDGENN_SMO_DOUBLE) && EDGENN_SMO_DOUBLE
typedef double edgenn_real;
#else
typedef float edgenn_real;
#endif

/* Sample storage types (edgenn_smo_samples.dtype). */
#define EDGENN_SMO_F32 0u /* float */
#define EDGENN_SMO_S8 1u  /* int8: real value = scale * (q - zero_point) */
#define EDGENN_SMO_F64 2u /* double: only in EDGENN_SMO_DOUBLE builds */

/* Return codes: >= 0 is a solution, < 0 an error (nothing was written). */
#define EDGENN_SMO_OK 0              /* converged: Gmax + Gmax2 < tol */
#define EDGENN_SMO_MAX_ITER 1        /* stopped after max_iter updates, not converged */
#define EDGENN_SMO_ERR_ARG (-1)      /* n < 2, C <= 0, tol <= 0, bad dtype, index out of range */
#define EDGENN_SMO_ERR_WORKSPACE (-2) /* capacity < n, or a cache of fewer than 2 rows of n */
#define EDGENN_SMO_ERR_ONE_CLASS (-3) /* every y has the same sign */

/* Alpha status (edgenn_smo_workspace.status). */
#define EDGENN_SMO_LOWER 0u /* a_i = 0 */
#define EDGENN_SMO_FREE 1u  /* 0 < a_i < C: a margin support vector */
#define EDGENN_SMO_UPPER 2u /* a_i = C: a bounded support vector */

/* Rows of d features, row-major, one after the other. */
typedef struct {
    const void *x;      /* [n_rows][d] of dtype */
    uint32_t n_rows;
    uint32_t d;
    uint32_t dtype;     /* EDGENN_SMO_F32, _S8 or _F64 */
    float scale;        /* EDGENN_SMO_S8 only */
    int32_t zero_point; /* EDGENN_SMO_S8 only */
} edgenn_smo_samples;

/* A precomputed kernel over the rows of the samples: K(r, s) = values[r * stride + s]. */
typedef struct {
    const void *values;
    uint32_t dtype;          /* EDGENN_SMO_F32 or EDGENN_SMO_F64 (converted to edgenn_real) */
    uint32_t stride;         /* also the number of rows */
} edgenn_smo_gram;

/* One binary problem over n rows of `samples`. */
typedef struct {
    const edgenn_smo_samples *samples; /* may be NULL with a gram (then no w) */
    const uint32_t *index;   /* [n] the rows of `samples`, in order; NULL: rows 0..n-1 */
    const int8_t *y;         /* [n] +1 or -1 */
    uint32_t n;
    const edgenn_smo_gram *gram; /* optional precomputed kernel; NULL: dot products */
    /* Optional memo of kernel values over the rows of `samples`, K(r, s) at
     * memo[r * memo_stride + s], NaN where not computed yet (the caller fills it with NaN
     * once): every dot product is then computed at most once across problems sharing
     * samples, as one-vs-one pairs do. The values are the same either way. */
    edgenn_real *memo;
    uint32_t memo_stride;
    /* Optional warm start [n]: a feasible point (0 <= a <= C, y'a = 0), e.g. the previous
     * solution of the samples kept in a training buffer. NULL: start from a = 0. It may be
     * the workspace's own alpha array. */
    const edgenn_real *alpha0;
    edgenn_real C;
    edgenn_real tol;         /* stop when Gmax + Gmax2 < tol (LIBSVM's eps, 1e-3) */
    uint32_t max_iter;
} edgenn_smo_problem;

/* Scratch for problems of up to `capacity` samples; see edgenn_smo_workspace_init. */
typedef struct {
    edgenn_real *alpha;  /* [capacity] the solution, a_0 .. a_{n-1} */
    edgenn_real *grad;   /* [capacity] y_i G_i, G = Qa - e the gradient */
    edgenn_real *diag;   /* [capacity] K_ii */
    uint32_t *index;     /* [capacity] free for callers (one-vs-one gathers a pair here) */
    int32_t *slot_of;    /* [capacity] cache slot holding row i, or -1 */
    uint32_t *slot_row;  /* [capacity] row held by each slot */
    uint32_t *slot_used; /* [capacity] LRU clock of each slot */
    int8_t *y;           /* [capacity] free for callers (one-vs-one writes labels here) */
    uint8_t *status;     /* [capacity] EDGENN_SMO_LOWER / _FREE / _UPPER */
    uint8_t *set;        /* [capacity] in I_up (1) / I_low (2) of the working-set rule */
    edgenn_real *cache;  /* [cache_len] kernel rows, n values each */
    uint32_t capacity;
    uint32_t cache_len;
} edgenn_smo_workspace;

/* What one solve did. */
typedef struct {
    edgenn_real b;          /* intercept: decision(x) = w.x + b (b = -rho) */
    edgenn_real objective;  /* dual objective as LIBSVM reports it: sum a_i (G_i - 1) / 2 */
    uint32_t iterations;    /* two-variable updates made */
    uint32_t n_support;     /* a_i > 0 */
    uint32_t n_bound;       /* a_i = C */
    uint32_t kernel_rows;   /* Q rows computed (cache misses) */
    uint32_t dot_products;  /* dot products of two samples computed */
} edgenn_smo_result;

#define EDGENN_SMO_ALIGN8_(n) (((size_t)(n) + 7u) & ~(size_t)7u)
/* Bytes of workspace memory for problems of up to `cap` samples with a cache of `cache_len`
 * kernel values (cache_len = cap * cap caches every row of the largest problem). */
#define EDGENN_SMO_WORKSPACE_BYTES(cap, cache_len)                                        \
    (EDGENN_SMO_ALIGN8_(3u * (size_t)(cap) * sizeof(edgenn_real))                          \
     + EDGENN_SMO_ALIGN8_(4u * (size_t)(cap) * sizeof(uint32_t))                           \
     + EDGENN_SMO_ALIGN8_(3u * (size_t)(cap)) + (size_t)(cache_len) * sizeof(edgenn_real))

/* Carve a workspace for `capacity` samples out of `memory` (8-byte aligned, `bytes` long);
 * everything after the fixed arrays becomes the kernel cache. Returns EDGENN_SMO_OK or
 * EDGENN_SMO_ERR_WORKSPACE when the fixed arrays do not fit. */
int32_t edgenn_smo_workspace_init(edgenn_smo_workspace *ws, void *memory, size_t bytes,
                                  uint32_t capacity);

/* Solve `p` (from a = 0, or from p->alpha0). On success (EDGENN_SMO_OK or
 * EDGENN_SMO_MAX_ITER) the alphas are in ws->alpha[0..n), the alpha status in ws->status,
 * `*out` is filled and, when `w` is not NULL, w[0..d) = sum_i a_i y_i x_i. */
int32_t edgenn_smo_solve(const edgenn_smo_problem *p, edgenn_smo_workspace *ws, edgenn_real *w,
                         edgenn_smo_result *out);

/* x_r . x_s of two rows of `s`, as the solver computes it. */
edgenn_real edgenn_smo_dot(const edgenn_smo_samples *s, uint32_t r, uint32_t c);

/* w . x_r for a weight vector w[0..d) and row r of `s`. */
edgenn_real edgenn_smo_dot_weights(const edgenn_smo_samples *s, uint32_t r, const edgenn_real *w);

#endif /* EDGENN_SMO_H */
