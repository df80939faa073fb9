/* One-vs-one SVM layer: buffer, training of every pair, carry policy, voting. See edgenn_svm.h. */
#include "edgenn_svm.h"

#include <math.h>
#include <string.h>

#include "edgenn_smo_dot.h"

static size_t row_bytes(const edgenn_smo_samples *x)
{
    const size_t size = x->dtype == EDGENN_SMO_S8 ? 1u : (x->dtype == EDGENN_SMO_F64 ? 8u : 4u);
    return (size_t)x->d * size;
}

static int finite_row(const edgenn_smo_samples *x, const void *row)
{
    if (x->dtype == EDGENN_SMO_F32) {
        const float *v = (const float *)row;
        for (uint32_t k = 0; k < x->d; k++) {
            if (!(v[k] - v[k] == 0.0f)) { /* NaN - NaN and inf - inf are NaN */
                return 0;
            }
        }
    }
    return 1;
}

int32_t edgenn_svm_append(edgenn_svm *s, const void *x, uint32_t label)
{
    if (label >= s->n_classes) {
        return EDGENN_SVM_ERR_LABEL;
    }
    if (s->count >= s->buffer.n_rows) {
        return EDGENN_SVM_FULL;
    }
    if (!finite_row(&s->buffer, x)) {
        return EDGENN_SVM_ERR_VALUE;
    }
    const size_t row = row_bytes(&s->buffer);
    memcpy((uint8_t *)(uintptr_t)s->buffer.x + (size_t)s->count * row, x, row);
    s->labels[s->count] = (uint8_t)label;
    if (s->alphas != NULL) {
        memset(s->alphas + (size_t)s->count * (s->n_classes - 1u), 0,
               (s->n_classes - 1u) * sizeof(edgenn_real));
    }
    s->count++;
    return EDGENN_SMO_OK;
}

/* Gather pair (a, c): class a's rows then class c's, in buffer order. Returns the size. */
static uint32_t gather_pair(const edgenn_svm *s, uint32_t a, uint32_t c, uint32_t *n_a)
{
    uint32_t m = 0;
    for (uint32_t pass = 0; pass < 2u; pass++) {
        const uint8_t want = (uint8_t)(pass == 0u ? a : c);
        for (uint32_t r = 0; r < s->count; r++) {
            if (s->labels[r] == want) {
                s->ws.index[m] = r;
                s->ws.y[m] = pass == 0u ? (int8_t)1 : (int8_t)-1;
                m++;
            }
        }
        if (pass == 0u) {
            *n_a = m;
        }
    }
    return m;
}

/* The pair's column in a sample's row of s->alphas (LIBSVM's layout). */
static uint32_t alpha_column(uint32_t own, uint32_t other)
{
    return own < other ? other - 1u : other;
}

/* Copy the carried alphas of pair (a, c) into ws.alpha as a feasible start; 0 if there is
 * none. y'a = 0 breaks when carry_limit dropped some of the pair's support vectors: scaling
 * the heavier side down restores it and stays inside the box (as the Python layer does). */
static int warm_start(edgenn_svm *s, uint32_t a, uint32_t c, uint32_t m, uint32_t n_a)
{
    const uint32_t cols = s->n_classes - 1u;
    edgenn_real *alpha = s->ws.alpha;
    edgenn_real pos = 0, neg = 0;
    for (uint32_t t = 0; t < m; t++) {
        const uint32_t col = t < n_a ? alpha_column(a, c) : alpha_column(c, a);
        alpha[t] = s->alphas[(size_t)s->ws.index[t] * cols + col];
        if (t < n_a) {
            pos += alpha[t];
        } else {
            neg += alpha[t];
        }
    }
    if (pos == 0 || neg == 0) {
        return 0;
    }
    const edgenn_real ratio = pos > neg ? neg / pos : pos / neg;
    const uint32_t from = pos > neg ? 0u : n_a, to = pos > neg ? n_a : m;
    if (pos != neg) {
        for (uint32_t t = from; t < to; t++) {
            alpha[t] *= ratio;
        }
    }
    return 1;
}

static int32_t check_layer(const edgenn_svm *s)
{
    if (s->n_classes < 2u || s->n_classes > 256u || s->count > s->buffer.n_rows
        || s->count > s->ws.capacity || s->carried > s->count || s->carry > 2u
        || s->carry_limit >= s->buffer.n_rows
        || (s->carry != EDGENN_SVM_CARRY_NONE && s->alphas == NULL)) {
        return EDGENN_SVM_ERR_CONFIG;
    }
    for (uint32_t r = 0; r < s->count; r++) {
        if (s->labels[r] >= s->n_classes) {
            return EDGENN_SVM_ERR_LABEL;
        }
    }
    return s->count == 0u ? EDGENN_SVM_ERR_EMPTY : EDGENN_SMO_OK;
}

int32_t edgenn_svm_fit(edgenn_svm *s, const edgenn_smo_gram *gram)
{
    const int32_t bad = check_layer(s);
    if (bad != EDGENN_SMO_OK) {
        return bad;
    }
    const uint32_t k = s->n_classes, d = s->buffer.d, cols = k - 1u;
    const int warm = s->carry == EDGENN_SVM_CARRY_WARM_START && s->carried > 0u;
    memset(s->keep, 0, s->count);
    s->kernel_rows = 0;
    if (s->kernel_memo != NULL) { /* nothing known yet: stride = count for this training */
        for (size_t e = 0; e < (size_t)s->count * s->count; e++) {
            s->kernel_memo[e] = (edgenn_real)NAN;
        }
    }
    uint32_t pair = 0;
    for (uint32_t a = 0; a < k; a++) {
        for (uint32_t c = a + 1u; c < k; c++, pair++) {
            uint32_t n_a = 0;
            const uint32_t m = gather_pair(s, a, c, &n_a);
            s->iterations[pair] = 0;
            if (n_a == 0u || n_a == m) {
                s->pair_status[pair] = EDGENN_SVM_PAIR_SKIPPED;
                continue;
            }
            const int from_alphas = warm && warm_start(s, a, c, m, n_a);
            const edgenn_smo_problem p = {&s->buffer, s->ws.index, s->ws.y, m, gram,
                                          s->kernel_memo, s->count,
                                          from_alphas ? s->ws.alpha : NULL, s->C, s->tol,
                                          s->max_iter};
            edgenn_smo_result res;
            const int32_t st = edgenn_smo_solve(&p, &s->ws, s->w + (size_t)pair * d, &res);
            if (st < 0) {
                return st;
            }
            s->b[pair] = res.b;
            if (s->active != NULL) {
                s->active[pair] = 1u;
            }
            s->iterations[pair] = res.iterations;
            s->pair_status[pair] = (uint8_t)(st == EDGENN_SMO_OK ? EDGENN_SVM_PAIR_CONVERGED
                                                                 : EDGENN_SVM_PAIR_MAX_ITER);
            if (s->objective != NULL) {
                s->objective[pair] = res.objective;
            }
            s->kernel_rows += res.kernel_rows;
            for (uint32_t t = 0; t < m; t++) {
                const uint32_t r = s->ws.index[t];
                if (s->alphas != NULL) {
                    const uint32_t col = t < n_a ? alpha_column(a, c) : alpha_column(c, a);
                    s->alphas[(size_t)r * cols + col] = s->ws.alpha[t];
                }
                if (s->ws.status[t] == EDGENN_SMO_FREE) {
                    s->keep[r] = EDGENN_SVM_KEEP_MARGIN;
                } else if (s->ws.status[t] == EDGENN_SMO_UPPER && s->keep[r] == 0u) {
                    s->keep[r] = EDGENN_SVM_KEEP_BOUND;
                }
            }
        }
    }
    return EDGENN_SMO_OK;
}

/* Did class k take part in a pair trained this time? */
static int class_learned(const edgenn_svm *s, uint32_t k)
{
    for (uint32_t o = 0; o < s->n_classes; o++) {
        if (o != k) {
            const uint32_t p = o < k ? edgenn_svm_pair_index(s->n_classes, o, k)
                                     : edgenn_svm_pair_index(s->n_classes, k, o);
            if (s->pair_status[p] != EDGENN_SVM_PAIR_SKIPPED) {
                return 1;
            }
        }
    }
    return 0;
}

/* Carry candidates, keep[r] = their group + 1 (0: not carried): 1 free support vector
 * (0 < a < C in some pair), 2 unused (its class was in no trained pair: kept for the next
 * batch instead of thrown away), 3 bounded support vector. Returns how many. */
static uint32_t flag_candidates(edgenn_svm *s)
{
    const uint32_t cols = s->n_classes - 1u;
    uint32_t n = 0;
    for (uint32_t r = 0; r < s->count; r++) {
        const edgenn_real *a = s->alphas + (size_t)r * cols;
        int sv = 0, free_sv = 0;
        for (uint32_t col = 0; col < cols; col++) {
            sv |= a[col] > 0;
            free_sv |= a[col] > 0 && a[col] < s->C;
        }
        const int unused = !class_learned(s, s->labels[r]);
        s->keep[r] = (uint8_t)(free_sv ? 1u : (unused ? 2u : (sv ? 3u : 0u)));
        n += s->keep[r] != 0u ? 1u : 0u;
    }
    return n;
}

/* More candidates than carry_limit: the classes take turns -- every class's best candidate,
 * then every class's second best ... (ties to the lower class); within a class by group,
 * newest first. keep[r] becomes 1 for the first carry_limit in that order. O(k n) plus
 * O(n) per turn, no memory beyond the workspace's index array (free after training). */
static void choose_carried(edgenn_svm *s)
{
    const uint32_t none = 0xFFFFFFFFu;
    uint32_t *rank = s->ws.index;
    const uint8_t *g = s->keep, *lab = s->labels;
    const uint32_t n = s->count;
    for (uint32_t r = 0; r < n; r++) {
        rank[r] = none;
    }
    for (uint32_t k = 0; k < s->n_classes; k++) { /* rank within class k */
        uint32_t next[4] = {0, 0, 0, 0};          /* next rank of group 1, 2, 3 */
        for (uint32_t r = 0; r < n; r++) {
            if (g[r] != 0u && lab[r] == k) {
                for (uint32_t h = g[r] + 1u; h < 4u; h++) {
                    next[h]++; /* groups after this one start later */
                }
            }
        }
        for (uint32_t r = n; r-- > 0u;) { /* newest first */
            if (g[r] != 0u && lab[r] == k) {
                rank[r] = next[g[r]]++;
            }
        }
    }
    uint32_t left = s->carry_limit, turn = 0, cut = s->n_classes;
    for (;; turn++) { /* how many turns fit, and where the last one stops */
        uint32_t at = 0;
        for (uint32_t r = 0; r < n; r++) {
            at += rank[r] == turn ? 1u : 0u;
        }
        if (at == 0u || at >= left) {
            if (at > left) { /* the lowest classes of this turn */
                for (cut = 0; left > 0u; cut++) {
                    for (uint32_t r = 0; r < n; r++) {
                        left -= (rank[r] == turn && lab[r] == cut) ? 1u : 0u;
                    }
                }
            }
            break;
        }
        left -= at;
    }
    for (uint32_t r = 0; r < n; r++) {
        s->keep[r] = (uint8_t)(rank[r] < turn || (rank[r] == turn && lab[r] < cut) ? 1u : 0u);
    }
}

/* Compact the kept samples (keep[r] != 0) to the front, in buffer order, with their alphas. */
static void carry_over(edgenn_svm *s)
{
    if (flag_candidates(s) > s->carry_limit) {
        choose_carried(s);
    }
    const size_t row = row_bytes(&s->buffer);
    const uint32_t cols = s->n_classes - 1u;
    uint8_t *x = (uint8_t *)(uintptr_t)s->buffer.x;
    uint32_t kept = 0;
    for (uint32_t r = 0; r < s->count; r++) {
        if (s->keep[r] != 0u) {
            if (kept != r) {
                memmove(x + (size_t)kept * row, x + (size_t)r * row, row);
                memmove(s->alphas + (size_t)kept * cols, s->alphas + (size_t)r * cols,
                        cols * sizeof(edgenn_real));
                s->labels[kept] = s->labels[r];
            }
            kept++;
        }
    }
    s->count = s->carried = kept;
}

int32_t edgenn_svm_train(edgenn_svm *s)
{
    const int32_t st = edgenn_svm_fit(s, NULL);
    if (st < 0) {
        return st;
    }
    if (s->carry == EDGENN_SVM_CARRY_NONE) {
        s->count = s->carried = 0;
    } else {
        carry_over(s);
    }
    return EDGENN_SMO_OK;
}

uint32_t edgenn_svm_predict(const edgenn_svm *s, const void *x, edgenn_real *decision,
                            edgenn_real *scores)
{
    const uint32_t k = s->n_classes, d = s->buffer.d;
    const edgenn_smo_samples one = {x, 1u, d, s->buffer.dtype, s->buffer.scale,
                                    s->buffer.zero_point};
    if (s->buffer.dtype == EDGENN_SMO_S8 && s->ws.cache != NULL && s->ws.cache_len >= d) {
        /* int8 sample: widen it once into the (idle) kernel cache, then float dot products;
         * the same products w_k * (q_k - zp) in the same order as edgenn_smo_dot_weights */
        edgenn_real *xr = s->ws.cache;
        const int8_t *q = (const int8_t *)x;
        for (uint32_t j = 0; j < d; j++) {
            xr[j] = (edgenn_real)((int32_t)q[j] - s->buffer.zero_point);
        }
        for (uint32_t p = 0; p < edgenn_svm_pairs(k); p++) {
            decision[p] = smo_dot_reals(s->w + (size_t)p * d, xr, d) * (edgenn_real)s->buffer.scale
                          + s->b[p];
        }
    } else {
        for (uint32_t p = 0; p < edgenn_svm_pairs(k); p++) {
            decision[p] = edgenn_smo_dot_weights(&one, 0u, s->w + (size_t)p * d) + s->b[p];
        }
    }
    uint32_t best = 0, best_votes = 0;
    for (uint32_t c = 0; c < k; c++) {
        uint32_t votes = 0, ovr_votes = 0;
        edgenn_real conf = 0;
        for (uint32_t o = 0; o < k; o++) {
            if (o == c) {
                continue;
            }
            const uint32_t p = o < c ? edgenn_svm_pair_index(k, o, c)
                                     : edgenn_svm_pair_index(k, c, o);
            if (s->active != NULL && !s->active[p]) {
                continue; /* never trained: abstains */
            }
            const edgenn_real f = o < c ? -decision[p] : decision[p]; /* > 0: for c */
            votes += (o < c ? !(decision[p] > 0) : decision[p] > 0) ? 1u : 0u;
            ovr_votes += (o < c ? decision[p] < 0 : !(decision[p] < 0)) ? 1u : 0u;
            conf += f;
        }
        const edgenn_real mag = conf < 0 ? -conf : conf;
        scores[c] = (edgenn_real)ovr_votes + conf / (3 * (mag + 1));
        if (votes > best_votes) { /* strict: ties to the lowest class index */
            best_votes = votes;
            best = c;
        }
    }
    return best;
}
