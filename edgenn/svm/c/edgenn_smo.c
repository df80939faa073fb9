/* Binary linear SVM by SMO: see edgenn_smo.h for the problem, precision and memory. */
#include "edgenn_smo.h"

#include <string.h>

#include "edgenn_smo_dot.h"

/* LIBSVM's TAU: the curvature used when x_i and x_j coincide (a_ij <= 0). */
#define SMO_TAU ((edgenn_real)1e-12)
#if SMO_IS_DOUBLE
#define SMO_INF ((edgenn_real)1e300)
#else
#define SMO_INF ((edgenn_real)3.0e38f)
#endif
/* |q - zero_point| <= 255, so an int32 sum of products is exact up to this many features. */
#define SMO_S8_MAX_D 33025u

/* ------------------------------------------------------------------ dot products ---------- */

/* x_lo . x_hi for two rows of `s` (always the lower row first, so K(r, c) and K(c, r) are the
 * same operations even if a compiler peels loops by pointer alignment) */
static inline edgenn_real dot_rows(const edgenn_smo_samples *s, uint32_t r, uint32_t c)
{
    const uint32_t lo = r < c ? r : c, hi = r < c ? c : r;
    const size_t d = s->d;
    switch (s->dtype) {
    case EDGENN_SMO_S8: {
        const int8_t *x = (const int8_t *)s->x;
        const edgenn_real scale = (edgenn_real)s->scale;
        return (edgenn_real)smo_dot_s8(x + lo * d, x + hi * d, s->d, s->zero_point)
               * (scale * scale);
    }
#if SMO_IS_DOUBLE
    case EDGENN_SMO_F64: {
        const double *x = (const double *)s->x;
        return smo_dot_f64(x + lo * d, x + hi * d, s->d);
    }
#endif
    default: {
        const float *x = (const float *)s->x;
        return smo_dot_f32(x + lo * d, x + hi * d, s->d);
    }
    }
}

edgenn_real edgenn_smo_dot(const edgenn_smo_samples *s, uint32_t r, uint32_t c)
{
    return dot_rows(s, r, c);
}

edgenn_real edgenn_smo_dot_weights(const edgenn_smo_samples *s, uint32_t r, const edgenn_real *w)
{
    const uint32_t d = s->d;
    switch (s->dtype) {
    case EDGENN_SMO_S8:
        return smo_dot_w_s8(w, (const int8_t *)s->x + (size_t)r * d, d, s->zero_point)
               * (edgenn_real)s->scale;
#if SMO_IS_DOUBLE
    case EDGENN_SMO_F64:
        return smo_dot_f64((const double *)s->x + (size_t)r * d, w, d);
#endif
    default:
        return smo_dot_w_f32(w, (const float *)s->x + (size_t)r * d, d);
    }
}

/* ------------------------------------------------------------------ workspace ------------- */

int32_t edgenn_smo_workspace_init(edgenn_smo_workspace *ws, void *memory, size_t bytes,
                                  uint32_t capacity)
{
    const size_t fixed = EDGENN_SMO_WORKSPACE_BYTES(capacity, 0u);
    uint8_t *m = (uint8_t *)memory;
    if (ws == NULL || memory == NULL || capacity == 0u || bytes < fixed) {
        return EDGENN_SMO_ERR_WORKSPACE;
    }
    const size_t reals = (size_t)capacity * sizeof(edgenn_real);
    const size_t words = (size_t)capacity * sizeof(uint32_t);
    ws->alpha = (edgenn_real *)(void *)m;
    ws->grad = (edgenn_real *)(void *)(m + reals);
    ws->diag = (edgenn_real *)(void *)(m + 2u * reals);
    m += EDGENN_SMO_ALIGN8_(3u * reals);
    ws->index = (uint32_t *)(void *)m;
    ws->slot_of = (int32_t *)(void *)(m + words);
    ws->slot_row = (uint32_t *)(void *)(m + 2u * words);
    ws->slot_used = (uint32_t *)(void *)(m + 3u * words);
    m += EDGENN_SMO_ALIGN8_(4u * words);
    ws->y = (int8_t *)(void *)m;
    ws->status = m + capacity;
    ws->set = m + 2u * (size_t)capacity;
    m += EDGENN_SMO_ALIGN8_(3u * (size_t)capacity);
    ws->cache = (edgenn_real *)(void *)m;
    const size_t left = (bytes - fixed) / sizeof(edgenn_real);
    ws->cache_len = left > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)left;
    ws->capacity = capacity;
    return EDGENN_SMO_OK;
}

/* ------------------------------------------------------------------ kernel rows ----------- */

typedef struct {
    const edgenn_smo_problem *p;
    edgenn_smo_workspace *ws;
    uint32_t n;
    uint32_t rows;       /* cache slots available for this problem */
    uint32_t used;       /* slots filled so far */
    uint32_t clock;      /* LRU time */
    uint32_t kernel_rows;
    uint32_t dots;
} smo_rows;

static uint32_t row_of(const edgenn_smo_problem *p, uint32_t i)
{
    return p->index != NULL ? p->index[i] : i;
}

static edgenn_real kernel_value(smo_rows *r, uint32_t i, uint32_t t)
{
    const edgenn_smo_problem *p = r->p;
    const uint32_t ri = row_of(p, i), rt = row_of(p, t);
    const edgenn_smo_gram *g = p->gram;
    if (g != NULL) {
        const size_t at = (size_t)ri * g->stride + rt;
        if (g->dtype == EDGENN_SMO_F64) {
            return (edgenn_real)((const double *)g->values)[at];
        }
        return (edgenn_real)((const float *)g->values)[at];
    }
    if (p->memo != NULL) {
        edgenn_real *m = p->memo + (size_t)ri * p->memo_stride + rt;
        if (*m == *m) { /* not NaN: known */
            return *m;
        }
        r->dots++;
        *m = dot_rows(p->samples, ri, rt);
        p->memo[(size_t)rt * p->memo_stride + ri] = *m;
        return *m;
    }
    r->dots++;
    return dot_rows(p->samples, ri, rt);
}

/* A Gram matrix of edgenn_real over exactly the problem's rows: no copies needed. */
static int zero_copy(const edgenn_smo_problem *p)
{
    const uint32_t real = sizeof(edgenn_real) == sizeof(double) ? EDGENN_SMO_F64 : EDGENN_SMO_F32;
    return p->gram != NULL && p->index == NULL && p->gram->dtype == real;
}

/* K(i, 0..n-1). The pointer stays valid until the next call for a different row. */
static const edgenn_real *kernel_row(smo_rows *r, uint32_t i)
{
    const edgenn_smo_problem *p = r->p;
    edgenn_smo_workspace *ws = r->ws;
    const uint32_t n = r->n;
    if (zero_copy(p)) { /* rows of the Gram matrix are the kernel rows */
        return (const edgenn_real *)p->gram->values + (size_t)i * p->gram->stride;
    }
    r->clock++;
    int32_t slot = ws->slot_of[i];
    if (slot >= 0) {
        ws->slot_used[slot] = r->clock;
        return ws->cache + (size_t)slot * n;
    }
    if (r->used < r->rows) {
        slot = (int32_t)r->used++;
    } else { /* evict the least recently used row (never the one just handed out) */
        uint32_t oldest = 0;
        for (uint32_t s = 1; s < r->rows; s++) {
            if (ws->slot_used[s] < ws->slot_used[oldest]) {
                oldest = s;
            }
        }
        slot = (int32_t)oldest;
        ws->slot_of[ws->slot_row[oldest]] = -1;
    }
    edgenn_real *row = ws->cache + (size_t)slot * n;
    for (uint32_t t = 0; t < n; t++) {
        const int32_t other = ws->slot_of[t];
        /* symmetry: K(i, t) is already in cached row t (computed by the same operations) */
        row[t] = other >= 0 ? ws->cache[(size_t)other * n + i] : kernel_value(r, i, t);
    }
    ws->slot_of[i] = slot;
    ws->slot_row[slot] = i;
    ws->slot_used[slot] = r->clock;
    r->kernel_rows++;
    return row;
}

/* ------------------------------------------------------------------ the solver ------------ */

/* membership of I_up / I_low (edgenn_smo_workspace.set) */
#define SMO_UP 1u
#define SMO_LOW 2u

static inline void set_status(edgenn_smo_workspace *ws, const int8_t *y, uint32_t t,
                              edgenn_real C)
{
    const edgenn_real a = ws->alpha[t];
    const uint8_t st = (uint8_t)(a >= C ? EDGENN_SMO_UPPER
                                        : (a <= 0 ? EDGENN_SMO_LOWER : EDGENN_SMO_FREE));
    /* I_up: y=+1 and a<C, or y=-1 and a>0; I_low: y=+1 and a>0, or y=-1 and a<C */
    const unsigned below_c = st != EDGENN_SMO_UPPER, above_0 = st != EDGENN_SMO_LOWER;
    const unsigned up = y[t] > 0 ? below_c : above_0, low = y[t] > 0 ? above_0 : below_c;
    ws->status[t] = st;
    ws->set[t] = (uint8_t)((up ? SMO_UP : 0u) | (low ? SMO_LOW : 0u));
}

/* LIBSVM's select_working_set (WSS 3). Returns 0 with (i, j), or 1 when optimal. Ties go to
 * the first index (strict comparisons), as numpy's argmax / argmin. */
static int select_pair(smo_rows *r, uint32_t *out_i, uint32_t *out_j)
{
    const edgenn_smo_problem *p = r->p;
    const edgenn_smo_workspace *ws = r->ws;
    const uint32_t n = r->n;
    const edgenn_real *F = ws->grad; /* y_t G_t */
    const uint8_t *set = ws->set;

    edgenn_real gmax = -SMO_INF;
    int32_t best_i = -1;
    for (uint32_t t = 0; t < n; t++) { /* maximise -y G over I_up */
        if ((set[t] & SMO_UP) && -F[t] > gmax) {
            gmax = -F[t];
            best_i = (int32_t)t;
        }
    }
    if (best_i < 0) {
        return 1;
    }
    const uint32_t i = (uint32_t)best_i;
    const edgenn_real *Ki = kernel_row(r, i);
    const edgenn_real Kii = ws->diag[i];
    edgenn_real gmax2 = -SMO_INF, obj_min = SMO_INF;
    int32_t best_j = -1;
    for (uint32_t t = 0; t < n; t++) { /* over I_low: Gmax2 and the second-order choice */
        if (!(set[t] & SMO_LOW)) {
            continue;
        }
        const edgenn_real yg = F[t];
        if (yg > gmax2) {
            gmax2 = yg;
        }
        const edgenn_real b = gmax + yg;
        if (b > 0) {
            edgenn_real a = Kii + ws->diag[t] - 2 * Ki[t];
            if (a <= 0) {
                a = SMO_TAU;
            }
            const edgenn_real obj = -(b * b) / a;
            if (obj < obj_min) {
                obj_min = obj;
                best_j = (int32_t)t;
            }
        }
    }
    if (gmax + gmax2 < p->tol || best_j < 0) {
        return 1;
    }
    *out_i = i;
    *out_j = (uint32_t)best_j;
    return 0;
}

/* LIBSVM's two-variable update with clipping to the box (C_i = C_j = C). */
static void update_pair(const edgenn_smo_problem *p, edgenn_real *alpha, edgenn_real Gi,
                        edgenn_real Gj, const edgenn_real *Ki, const edgenn_real *diag,
                        uint32_t i, uint32_t j)
{
    const edgenn_real C = p->C;
    edgenn_real quad = diag[i] + diag[j] - 2 * Ki[j]; /* K_ii + K_jj - 2 K_ij in both cases */
    if (quad <= 0) {
        quad = SMO_TAU;
    }
    edgenn_real ai = alpha[i], aj = alpha[j];
    if (p->y[i] != p->y[j]) {
        const edgenn_real delta = (-Gi - Gj) / quad;
        const edgenn_real diff = ai - aj;
        ai += delta;
        aj += delta;
        if (diff > 0) {
            if (aj < 0) {
                aj = 0;
                ai = diff;
            }
        } else if (ai < 0) {
            ai = 0;
            aj = -diff;
        }
        if (diff > 0) { /* diff > C_i - C_j = 0 */
            if (ai > C) {
                ai = C;
                aj = C - diff;
            }
        } else if (aj > C) {
            aj = C;
            ai = C + diff;
        }
    } else {
        const edgenn_real delta = (Gi - Gj) / quad;
        const edgenn_real sum = ai + aj;
        ai -= delta;
        aj += delta;
        if (sum > C) {
            if (ai > C) {
                ai = C;
                aj = sum - C;
            }
        } else if (aj < 0) {
            aj = 0;
            ai = sum;
        }
        if (sum > C) {
            if (aj > C) {
                aj = C;
                ai = sum - C;
            }
        } else if (ai < 0) {
            ai = 0;
            aj = sum;
        }
    }
    alpha[i] = ai;
    alpha[j] = aj;
}

/* LIBSVM's calculate_rho: the mean of y G over free alphas, else the middle of the bounds. */
static edgenn_real compute_rho(const edgenn_smo_problem *p, const edgenn_smo_workspace *ws)
{
    edgenn_real ub = SMO_INF, lb = -SMO_INF, sum_free = 0;
    uint32_t n_free = 0;
    for (uint32_t t = 0; t < p->n; t++) {
        const edgenn_real yg = ws->grad[t]; /* y G */
        const uint8_t s = ws->status[t];
        if (s == EDGENN_SMO_FREE) {
            n_free++;
            sum_free += yg;
        } else if ((s == EDGENN_SMO_UPPER) == (p->y[t] < 0)) { /* upper & y=-1, lower & y=+1 */
            if (yg < ub) {
                ub = yg;
            }
        } else if (yg > lb) {
            lb = yg;
        }
    }
    return n_free > 0 ? sum_free / (edgenn_real)n_free : (ub + lb) / 2;
}

static int32_t check_problem(const edgenn_smo_problem *p, const edgenn_smo_workspace *ws)
{
    const edgenn_smo_samples *s = p->samples;
    const edgenn_smo_gram *g = p->gram;
    if (p->n < 2u || p->y == NULL || !(p->C > 0) || !(p->tol > 0)) {
        return EDGENN_SMO_ERR_ARG;
    }
    if (g != NULL && (g->values == NULL || (g->dtype != EDGENN_SMO_F32
                                            && g->dtype != EDGENN_SMO_F64))) {
        return EDGENN_SMO_ERR_ARG;
    }
    if (s != NULL) {
        const int double_build = (int)(sizeof(edgenn_real) == sizeof(double));
        if (s->x == NULL || s->d == 0u
            || !(s->dtype == EDGENN_SMO_F32 || (s->dtype == EDGENN_SMO_S8 && s->d <= SMO_S8_MAX_D)
                 || (s->dtype == EDGENN_SMO_F64 && double_build))) {
            return EDGENN_SMO_ERR_ARG;
        }
    } else if (g == NULL) {
        return EDGENN_SMO_ERR_ARG;
    }
    uint32_t n_rows = g != NULL ? g->stride : s->n_rows;
    if (g != NULL && s != NULL && s->n_rows < n_rows) {
        n_rows = s->n_rows;
    }
    uint32_t pos = 0;
    for (uint32_t t = 0; t < p->n; t++) {
        if (row_of(p, t) >= n_rows || (p->y[t] != 1 && p->y[t] != -1)) {
            return EDGENN_SMO_ERR_ARG;
        }
        if (p->alpha0 != NULL && !(p->alpha0[t] >= 0 && p->alpha0[t] <= p->C)) {
            return EDGENN_SMO_ERR_ARG;
        }
        pos += p->y[t] > 0 ? 1u : 0u;
    }
    if (pos == 0u || pos == p->n) {
        return EDGENN_SMO_ERR_ONE_CLASS;
    }
    if (ws == NULL || ws->capacity < p->n) {
        return EDGENN_SMO_ERR_WORKSPACE;
    }
    if (!zero_copy(p) && ws->cache_len / p->n < 2u) {
        return EDGENN_SMO_ERR_WORKSPACE;
    }
    return EDGENN_SMO_OK;
}

int32_t edgenn_smo_solve(const edgenn_smo_problem *p, edgenn_smo_workspace *ws, edgenn_real *w,
                         edgenn_smo_result *out)
{
    const int32_t bad = check_problem(p, ws);
    if (bad != EDGENN_SMO_OK) {
        return bad;
    }
    const uint32_t n = p->n;
    const uint32_t rows = ws->cache_len / n;
    smo_rows r = {p, ws, n, rows < n ? rows : n, 0u, 0u, 0u, 0u};
    /* the solver keeps F = y G (G = Qa - e): with y = +-1 this is exact, and the selection
     * and the update need no sign per element (G_k = y_k F_k wherever G is needed) */
    edgenn_real *alpha = ws->alpha, *F = ws->grad;
    const int8_t *y = p->y;
    for (uint32_t t = 0; t < n; t++) {
        alpha[t] = p->alpha0 != NULL ? p->alpha0[t] : 0;
        F[t] = y[t] > 0 ? -1 : 1;
        set_status(ws, y, t, p->C);
        ws->slot_of[t] = -1;
        ws->diag[t] = kernel_value(&r, t, t);
    }
    /* warm start: G = Qa - e, one kernel row per nonzero alpha (SMO needs most of them soon) */
    for (uint32_t s = 0; s < n; s++) {
        if (alpha[s] > 0) {
            const edgenn_real *Ks = kernel_row(&r, s);
            const edgenn_real c = y[s] > 0 ? alpha[s] : -alpha[s];
            for (uint32_t k = 0; k < n; k++) {
                F[k] += Ks[k] * c;
            }
        }
    }

    uint32_t iter = 0;
    int32_t result = EDGENN_SMO_OK;
    for (;;) {
        uint32_t i = 0, j = 0;
        if (select_pair(&r, &i, &j) != 0) {
            break;
        }
        if (iter >= p->max_iter) {
            result = EDGENN_SMO_MAX_ITER;
            break;
        }
        iter++;
        const edgenn_real *Ki = kernel_row(&r, i); /* still cached: a hit */
        const edgenn_real *Kj = kernel_row(&r, j);
        const edgenn_real old_i = alpha[i], old_j = alpha[j];
        update_pair(p, alpha, y[i] > 0 ? F[i] : -F[i], y[j] > 0 ? F[j] : -F[j], Ki, ws->diag,
                    i, j);
        set_status(ws, y, i, p->C);
        set_status(ws, y, j, p->C);
        /* G_k += Q_ki da_i + Q_kj da_j with Q_kt = y_k y_t K_kt, i.e.
         * F_k += K_ki y_i da_i + K_kj y_j da_j */
        const edgenn_real ci = y[i] > 0 ? alpha[i] - old_i : old_i - alpha[i];
        const edgenn_real cj = y[j] > 0 ? alpha[j] - old_j : old_j - alpha[j];
        for (uint32_t k = 0; k < n; k++) {
            F[k] += Ki[k] * ci + Kj[k] * cj;
        }
    }

    edgenn_real obj = 0;
    uint32_t n_sv = 0, n_bound = 0;
    for (uint32_t t = 0; t < n; t++) {
        obj += alpha[t] * ((y[t] > 0 ? F[t] : -F[t]) - 1);
        n_sv += alpha[t] > 0 ? 1u : 0u;
        n_bound += ws->status[t] == EDGENN_SMO_UPPER ? 1u : 0u;
    }
    if (w != NULL && p->samples != NULL) {
        const edgenn_smo_samples *s = p->samples;
        memset(w, 0, (size_t)s->d * sizeof(edgenn_real));
        for (uint32_t t = 0; t < n; t++) {
            if (alpha[t] > 0) {
                const edgenn_real c = y[t] > 0 ? alpha[t] : -alpha[t];
                const size_t off = (size_t)row_of(p, t) * s->d;
                if (s->dtype == EDGENN_SMO_S8) {
                    const int8_t *x = (const int8_t *)s->x + off;
                    const edgenn_real cs = c * (edgenn_real)s->scale;
                    for (uint32_t k = 0; k < s->d; k++) {
                        w[k] += cs * (edgenn_real)((int32_t)x[k] - s->zero_point);
                    }
#if SMO_IS_DOUBLE
                } else if (s->dtype == EDGENN_SMO_F64) {
                    const double *x = (const double *)s->x + off;
                    for (uint32_t k = 0; k < s->d; k++) {
                        w[k] += c * x[k];
                    }
#endif
                } else {
                    const float *x = (const float *)s->x + off;
                    for (uint32_t k = 0; k < s->d; k++) {
                        w[k] += c * (edgenn_real)x[k];
                    }
                }
            }
        }
    }
    if (out != NULL) {
        out->b = -compute_rho(p, ws);
        out->objective = obj / 2;
        out->iterations = iter;
        out->n_support = n_sv;
        out->n_bound = n_bound;
        out->kernel_rows = r.kernel_rows;
        out->dot_products = r.dots;
    }
    return result;
}
