/* Data movement kernels: the strided copy and the gather (see edgenn_movement.h). */
#include "edgenn_movement.h"

#include <string.h>

/* Rows of T: four elements per step so the loads issue back to back. Element addresses are
 * multiples of sizeof(T) (checked once per call), so every access is one aligned load or
 * store; a dense row moves through plain pointer increments. */
#define EDGENN_COPY_ROW(T)                                                                 \
    do {                                                                                   \
        const T *sp = (const T *)(const void *)s;                                          \
        T *dp = (T *)(void *)d;                                                            \
        int32_t i = 0;                                                                     \
        if (ss == (int32_t)sizeof(T) && ds == (int32_t)sizeof(T)) {                        \
            for (; i + 4 <= n; i += 4, sp += 4, dp += 4) {                                 \
                const T a = sp[0], b = sp[1], c = sp[2], e = sp[3];                        \
                dp[0] = a;                                                                 \
                dp[1] = b;                                                                 \
                dp[2] = c;                                                                 \
                dp[3] = e;                                                                 \
            }                                                                              \
            for (; i < n; i++) {                                                           \
                *dp++ = *sp++;                                                             \
            }                                                                              \
        } else {                                                                           \
            const int32_t sj = ss / (int32_t)sizeof(T), dj = ds / (int32_t)sizeof(T);      \
            for (; i + 4 <= n; i += 4, sp += 4 * sj, dp += 4 * dj) {                       \
                const T a = sp[0], b = sp[sj], c = sp[2 * sj], e = sp[3 * sj];             \
                dp[0] = a;                                                                 \
                dp[dj] = b;                                                                \
                dp[2 * dj] = c;                                                            \
                dp[3 * dj] = e;                                                            \
            }                                                                              \
            for (; i < n; i++, sp += sj, dp += dj) {                                       \
                *dp = *sp;                                                                 \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* One row of n elements of es bytes; unit is es when the bases are es-aligned, else 0
 * (then each element moves byte by byte). */
static inline void copy_row(uint8_t *d, const uint8_t *s, int32_t n, int32_t ss, int32_t ds,
                            int32_t es, int32_t unit)
{
    switch (unit) {
    case 1:
        EDGENN_COPY_ROW(uint8_t);
        break;
    case 2:
        EDGENN_COPY_ROW(uint16_t);
        break;
    case 4:
        EDGENN_COPY_ROW(uint32_t);
        break;
    default:
        for (int32_t i = 0; i < n; i++, s += ss, d += ds) {
            for (int32_t k = 0; k < es; k++) {
                d[k] = s[k];
            }
        }
        break;
    }
}

void edgenn_strided_copy(const void *src, void *dst, const int32_t *plan, int32_t elem_size)
{
    enum { OUTER = EDGENN_COPY_RANK - 1 };
    const int32_t *n = plan;
    const int32_t *ss = plan + EDGENN_COPY_RANK;
    const int32_t *ds = plan + 2 * EDGENN_COPY_RANK;
    const uint8_t *s = (const uint8_t *)src + plan[3 * EDGENN_COPY_RANK];
    uint8_t *d = (uint8_t *)dst + plan[3 * EDGENN_COPY_RANK + 1];
    /* why one check: the generator makes every stride and offset a multiple of elem_size */
    const uintptr_t misaligned = ((uintptr_t)s | (uintptr_t)d) & (uintptr_t)(elem_size - 1);
    const int32_t unit = (elem_size == 1 || elem_size == 2 || elem_size == 4) && !misaligned
                             ? elem_size : 0;
    /* The outer dimensions run as an odometer: after each row the innermost outer index
     * steps; a wrap rewinds that dimension and steps the next one out. Local copies keep
     * the loop state in registers (stores through d may alias the plan otherwise). */
    int32_t count[OUTER], s_carry[OUTER], d_carry[OUTER], index[OUTER];
    int32_t rows = 1;
    for (int32_t k = 0; k < OUTER; k++) {
        count[k] = n[k];
        rows *= n[k];
        index[k] = 0;
        s_carry[k] = (k ? ss[k - 1] : 0) - n[k] * ss[k];
        d_carry[k] = (k ? ds[k - 1] : 0) - n[k] * ds[k];
    }
    const int32_t row = n[OUTER], row_ss = ss[OUTER], row_ds = ds[OUTER];
    const int32_t step_s = ss[OUTER - 1], step_d = ds[OUTER - 1];
    for (int32_t r = 0; r < rows; r++) {
        copy_row(d, s, row, row_ss, row_ds, elem_size, unit);
        s += step_s;
        d += step_d;
        for (int32_t k = OUTER - 1; ++index[k] == count[k] && k > 0; k--) {
            index[k] = 0;
            s += s_carry[k];
            d += d_carry[k];
        }
    }
}

void edgenn_gather(const void *params, const int32_t *indices, void *out, int32_t groups,
                   int32_t outer, int32_t axis_size, int32_t coords, int32_t block_bytes)
{
    const uint8_t *p = (const uint8_t *)params;
    uint8_t *o = (uint8_t *)out;
    const size_t block = (size_t)block_bytes;
    for (int32_t g = 0; g < groups; g++) {
        const int32_t *idx = indices + g * coords;
        for (int32_t k = 0; k < outer; k++) {
            const uint8_t *base = p + (size_t)(g * outer + k) * (size_t)axis_size * block;
            for (int32_t c = 0; c < coords; c++, o += block) {
                const int32_t v = idx[c];
                if (v < 0 || v >= axis_size) {
                    memset(o, 0, block);
                } else {
                    memcpy(o, base + (size_t)v * block, block);
                }
            }
        }
    }
}
