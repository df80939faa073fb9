/* Fast int8 Add / Mul for ARMv7E-M (Cortex-M4/M7), bit-exact with TFLite Micro.
 *
 * TFLite's int8 ADD rescales each input on its own ((x - zp) << 20, then a multiplier) before
 * summing, so for an 8-bit input the rescaled value is one of 256 numbers: the generator
 * (kernels/eltwise_simd.py) stores them in a 256-entry int32 table per input, indexed by the
 * input byte read as uint8, computed with the reference arithmetic itself. What is left per
 * element is the output requantization of tab_a[a] + tab_b[b], in one of three forms the
 * generator picks after checking every one of the 65,536 input pairs against the reference:
 *   2: the tables are pre-scaled so that out = SSAT((tab_a[a] + tab_b[b]) ASR k, 8):
 *      one ADD and one SSAT per element (k is a constant: per-layer code, EWS_BIN2_BODY);
 *   1: SMMULR of the (doubled) sum, rounding shift, SSAT (edgenn_add_s8_dsp_smmulr);
 *   0: TFLite's full MultiplyByQuantizedMultiplier on the sum (edgenn_add_s8_dsp).
 * Mul: mode 2 with ta[a] = (a - a_zp) << (left + 1), tb[b] = b - b_zp (the exact product),
 * out = SSAT(ews_mul_one(ta[a] * tb[b], m, c) ASR k, 8): TFLite's two roundings as one
 * SMMLAR with TFLite's own multiplier m (EWS_BIN2_BODY with MUL = 1); else
 * edgenn_mul_s8_dsp_smmulr / edgenn_mul_s8_dsp.
 * When one input is a single value, out depends on the other byte only: a 256-byte output
 * table (edgenn_lut_s8_dsp), for Add and Mul.
 * The second input may repeat with a period (broadcast over the leading axes): b restarts
 * every `period` elements (period == n for same-shape inputs).
 */
#ifndef EDGENN_ELTWISE_S8_DSP_H
#define EDGENN_ELTWISE_S8_DSP_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

/* Mul mode 2, one element: p = ta[a] * tb[b] = (a - a_zp) (b - b_zp) << (left + 1) (exact);
 * TFLite computes h = SaturatingRoundingDoublingHighMul(p >> 1, m) = floor((p m + 2^31) /
 * 2^32), then a rounding divide by 2^k with ties away from zero, + out_zp. Both roundings
 * are one floor: floor((p m + 2^31 + c 2^32) / 2^32) = SMMLAR(p, m, c) with
 * c = 2^(k-1) + (out_zp << k), less 1 where h < 0 (ties of negative values round down),
 * and h < 0 exactly where p < 0 (the generator checks every input pair); then ASR k. */
EDGENN_INLINE int32_t ews_mul_one(int32_t p, int32_t m, int32_t c)
{
#if EDGENN_HAVE_DSP
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(p), "r"(m), "r"(c));
#else
    int32_t r = (int32_t)((((int64_t)c << 32) + (int64_t)p * m + 0x80000000LL) >> 32);
#endif
    return r + (p >> 31);
}

/* V = SSAT(x ASR k, 8); k must be a compile-time constant on the target (an immediate).
 * why a statement, not an expression: an asm result needs a statement expression otherwise,
 * which ISO C lacks. */
#if EDGENN_HAVE_DSP
#define EWS_SSAT_ASR(V, x, k) __asm__("ssat %0, #8, %1, asr %2" : "=r"(V) : "r"(x), "I"(k))
#else
#define EWS_SSAT_ASR(V, x, k) ((V) = edgenn_ssat8((int32_t)(x) >> (k)))
#endif

/* Mode 2, 8 elements per iteration, hand-scheduled (cycles per 8: four runs of 8 pipelined
 * loads (2 LDRB a, 2 LDRB b, 4 table LDR) 36, ADD + SSAT 16, BFI 6, 2 STR, pointer updates,
 * compare and branch; about 8.3 per element). With ACT (an activation narrower than int8)
 * the packed words are clamped 4 bytes at a time (SSUB8 + SEL for max and for min) with
 * lo x 4 and hi x 4 stored in the a-table after its 256 entries (ta[256], ta[257]): about
 * 1.4 more per element. Pointers advance past the processed elements. */
#if EDGENN_HAVE_DSP
#define EWS_ADD2_COMBINE                                                                        \
    "add %[x0], %[x0], %[y0]\n\t"                                                               \
    "add %[x1], %[x1], %[y1]\n\t"
#define EWS_ADD2_GROUP(OFF, COMBINE)                                                         \
    "ldrb %[x0], [%[pa], #" #OFF "]\n\t"                                                     \
    "ldrb %[x1], [%[pa], #" #OFF "+1]\n\t"                                                   \
    "ldrb %[y0], [%[pb], #" #OFF "]\n\t"                                                     \
    "ldrb %[y1], [%[pb], #" #OFF "+1]\n\t"                                                   \
    "ldr %[x0], [%[ta], %[x0], lsl #2]\n\t"                                                  \
    "ldr %[x1], [%[ta], %[x1], lsl #2]\n\t"                                                  \
    "ldr %[y0], [%[tb], %[y0], lsl #2]\n\t"                                                  \
    "ldr %[y1], [%[tb], %[y1], lsl #2]\n\t" COMBINE
/* per byte max(W, lo) then min(W, hi); lo x 4 in x0, hi x 4 in x1 (loaded just before) */
#define EWS_ADD2_CLAMP(W)                                                                    \
    "ssub8 %[y0], " W ", %[x0]\n\t"                                                          \
    "sel " W ", " W ", %[x0]\n\t"                                                            \
    "ssub8 %[y0], " W ", %[x1]\n\t"                                                          \
    "sel " W ", %[x1], " W "\n\t"
#define EWS_ADD2_ACT_ON                                                                        \
    "ldr %[x0], [%[ta], #1024]\n\t"                                                            \
    "ldr %[x1], [%[ta], #1028]\n\t" EWS_ADD2_CLAMP("%[w0]") EWS_ADD2_CLAMP("%[w1]")
#define EWS_ADD2_ACT_OFF ""
#define EWS_BIN2_LOOP(CLAMP, COMB)                                                            \
                "1:\n\t" EWS_ADD2_GROUP(0, COMB)                                              \
                "ssat %[w0], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w0], %[x1], #8, #8\n\t" EWS_ADD2_GROUP(2, COMB)                        \
                "ssat %[x0], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w0], %[x0], #16, #8\n\t"                                               \
                "bfi %[w0], %[x1], #24, #8\n\t" EWS_ADD2_GROUP(4, COMB)                       \
                "ssat %[w1], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w1], %[x1], #8, #8\n\t" EWS_ADD2_GROUP(6, COMB)                        \
                "ssat %[x0], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w1], %[x0], #16, #8\n\t"                                               \
                "bfi %[w1], %[x1], #24, #8\n\t" CLAMP                                         \
                "adds %[pa], %[pa], #8\n\t"                                                   \
                "adds %[pb], %[pb], #8\n\t"                                                   \
                "str %[w0], [%[po]], #4\n\t"                                                  \
                "str %[w1], [%[po]], #4\n\t"                                                  \
                "cmp %[pa], %[end]\n\t"                                                       \
                "bne 1b\n\t"
#define EWS_ADD2_FAST(PA, PB, PO, N8, TA, TB, K, CLAMP)                                        \
    do {                                                                                       \
        if ((N8) > 0) {                                                                        \
            int32_t x0, x1, y0, y1, w0, w1;                                                    \
            const uint8_t *ews_end = (PA) + 8 * (N8);                                          \
            __asm__ volatile(                                                                  \
                EWS_BIN2_LOOP(CLAMP, EWS_ADD2_COMBINE)                                         \
                : [x0] "=&r"(x0), [x1] "=&r"(x1), [y0] "=&r"(y0), [y1] "=&r"(y1),              \
                  [w0] "=&r"(w0), [w1] "=&r"(w1), [pa] "+&r"(PA), [pb] "+&r"(PB),              \
                  [po] "+&r"(PO)                                                               \
                : [ta] "r"(TA), [tb] "r"(TB), [end] "r"(ews_end), [k] "I"(K)                   \
                : "cc", "memory");                                                             \
        }                                                                                      \
    } while (0)
/* Mul, 4 elements per iteration (two more constant registers than Add: m and c):
 * p' = ta[a] * tb[b] (= (a - a_zp) (b - b_zp) << (left + 1), exact), SMMLAR(p', m, c),
 * minus 1 when p' < 0, then SSAT ASR k (see EWS_MUL_ONE). */
#define EWS_MUL2_COMBINE                                                                     \
    "mul %[x0], %[x0], %[y0]\n\t"                                                            \
    "mul %[x1], %[x1], %[y1]\n\t"                                                            \
    "smmlar %[y0], %[x0], %[m], %[c]\n\t"                                                    \
    "smmlar %[y1], %[x1], %[m], %[c]\n\t"                                                    \
    "add %[x0], %[y0], %[x0], asr #31\n\t"                                                   \
    "add %[x1], %[y1], %[x1], asr #31\n\t"
#define EWS_MUL2_ACT_ON                                                                        \
    "ldr %[x0], [%[ta], #1024]\n\t"                                                            \
    "ldr %[x1], [%[ta], #1028]\n\t" EWS_ADD2_CLAMP("%[w0]")
#define EWS_MUL2_FAST(PA, PB, PO, N4, TA, TB, M, C, K, CLAMP)                                 \
    do {                                                                                      \
        if ((N4) > 0) {                                                                       \
            int32_t x0, x1, y0, y1, w0;                                                       \
            const uint8_t *ews_end = (PA) + 4 * (N4);                                         \
            __asm__ volatile(                                                                 \
                "1:\n\t" EWS_ADD2_GROUP(0, EWS_MUL2_COMBINE)                                  \
                "ssat %[w0], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w0], %[x1], #8, #8\n\t" EWS_ADD2_GROUP(2, EWS_MUL2_COMBINE)            \
                "ssat %[x0], #8, %[x0], asr %[k]\n\t"                                         \
                "ssat %[x1], #8, %[x1], asr %[k]\n\t"                                         \
                "bfi %[w0], %[x0], #16, #8\n\t"                                               \
                "bfi %[w0], %[x1], #24, #8\n\t" CLAMP                                         \
                "adds %[pa], %[pa], #4\n\t"                                                   \
                "adds %[pb], %[pb], #4\n\t"                                                   \
                "str %[w0], [%[po]], #4\n\t"                                                  \
                "cmp %[pa], %[end]\n\t"                                                       \
                "bne 1b\n\t"                                                                  \
                : [x0] "=&r"(x0), [x1] "=&r"(x1), [y0] "=&r"(y0), [y1] "=&r"(y1),             \
                  [w0] "=&r"(w0), [pa] "+&r"(PA), [pb] "+&r"(PB), [po] "+&r"(PO)              \
                : [ta] "r"(TA), [tb] "r"(TB), [end] "r"(ews_end), [m] "r"(M), [c] "r"(C),     \
                  [k] "I"(K)                                                                  \
                : "cc", "memory");                                                            \
        }                                                                                     \
    } while (0)
#else
#define EWS_ADD2_FAST(PA, PB, PO, N8, TA, TB, K, CLAMP) ((void)0)
#define EWS_MUL2_FAST(PA, PB, PO, N4, TA, TB, M, C, K, CLAMP) ((void)0)
#endif

/* Mode 2 loop over n elements, a and b dense (the caller handles the period), K constant,
 * ACT nonzero when the activation range is narrower than int8 (then TA has the 258 entries
 * described above). MUL: ews_mul_one(ta[a] * tb[b], M, C) instead of ta[a] + tb[b]. In a
 * function generated per layer, so that K is an immediate. */
#define EWS_COMB(MUL, X, Y, M, C) ((MUL) ? ews_mul_one((X) * (Y), M, C) : (X) + (Y))
#define EWS_BIN2_BODY(MUL, A, B, O, N, TA, TB, M, C, K, ACT, LO, HI)                       \
    do {                                                                                   \
        const uint8_t *ews_a = (const uint8_t *)(A);                                       \
        const uint8_t *ews_b = (const uint8_t *)(B);                                       \
        int8_t *ews_o = (O);                                                               \
        int32_t ews_n = (N);                                                               \
        if (EDGENN_HAVE_DSP) {                                                             \
            if (MUL && ACT) {                                                              \
                EWS_MUL2_FAST(ews_a, ews_b, ews_o, ews_n >> 2, TA, TB, M, C, K,            \
                              EWS_MUL2_ACT_ON);                                            \
            } else if (MUL) {                                                              \
                EWS_MUL2_FAST(ews_a, ews_b, ews_o, ews_n >> 2, TA, TB, M, C, K, "");       \
            } else if (ACT) {                                                              \
                EWS_ADD2_FAST(ews_a, ews_b, ews_o, ews_n >> 3, TA, TB, K, EWS_ADD2_ACT_ON); \
            } else {                                                                       \
                EWS_ADD2_FAST(ews_a, ews_b, ews_o, ews_n >> 3, TA, TB, K, EWS_ADD2_ACT_OFF);\
            }                                                                              \
            ews_n &= (MUL) ? 3 : 7;                                                        \
        }                                                                                  \
        for (; ews_n >= 4; ews_n -= 4) {                                                   \
            int32_t a0 = ews_a[0], a1 = ews_a[1], a2 = ews_a[2], a3 = ews_a[3];            \
            int32_t b0 = ews_b[0], b1 = ews_b[1], b2 = ews_b[2], b3 = ews_b[3];            \
            a0 = (TA)[a0]; a1 = (TA)[a1]; a2 = (TA)[a2]; a3 = (TA)[a3];                    \
            b0 = (TB)[b0]; b1 = (TB)[b1]; b2 = (TB)[b2]; b3 = (TB)[b3];                    \
            int32_t v0; EWS_SSAT_ASR(v0, EWS_COMB(MUL, a0, b0, M, C), K);                  \
            int32_t v1; EWS_SSAT_ASR(v1, EWS_COMB(MUL, a1, b1, M, C), K);                  \
            int32_t v2; EWS_SSAT_ASR(v2, EWS_COMB(MUL, a2, b2, M, C), K);                  \
            int32_t v3; EWS_SSAT_ASR(v3, EWS_COMB(MUL, a3, b3, M, C), K);                  \
            if (ACT) {                                                                     \
                v0 = edgenn_clamp(v0, LO, HI); v1 = edgenn_clamp(v1, LO, HI);              \
                v2 = edgenn_clamp(v2, LO, HI); v3 = edgenn_clamp(v3, LO, HI);              \
            }                                                                              \
            ews_o[0] = (int8_t)v0; ews_o[1] = (int8_t)v1;                                  \
            ews_o[2] = (int8_t)v2; ews_o[3] = (int8_t)v3;                                  \
            ews_a += 4; ews_b += 4; ews_o += 4;                                            \
        }                                                                                  \
        for (; ews_n > 0; ews_n--) {                                                       \
            int32_t x = (TA)[*ews_a++], y = (TB)[*ews_b++];                                \
            int32_t v; EWS_SSAT_ASR(v, EWS_COMB(MUL, x, y, M, C), K);                      \
            if (ACT) {                                                                     \
                v = edgenn_clamp(v, LO, HI);                                               \
            }                                                                              \
            *ews_o++ = (int8_t)v;                                                          \
        }                                                                                  \
    } while (0)

/* why not edgenn_add_s8's / edgenn_mul_s8's argument lists: these take the generator's
 * per-input tables and broadcast by a period instead of 4-D strides; building the tables
 * or walking strides at run time would cost the cycles these variants save.
 * edgenn_lut_s8_dsp has edgenn_lut_s8's arguments. */

/* Mode 1: tables hold 2 * (rescaled input << left); out = SSAT(rounding shift of
 * SMMULR(sum, mult)) with half = (1 << (rshift - 1)) + (out_zp << rshift), rshift >= 1. */
void edgenn_add_s8_dsp_smmulr(const int8_t *a, const int8_t *b, int8_t *out, int32_t n,
                              int32_t period, const int32_t *ta, const int32_t *tb, int32_t mult,
                              int32_t rshift, int32_t half, int32_t lo, int32_t hi);

/* Mode 0: tables hold the rescaled inputs; TFLite's requantization of their sum. */
void edgenn_add_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int32_t n, int32_t period,
                       const int32_t *ta, const int32_t *tb, int32_t mult, int32_t shift,
                       int32_t out_zp, int32_t lo, int32_t hi);

/* out[i] = lut[(uint8_t)a[i]] (one input is a single value; lut includes the clamp). */
void edgenn_lut_s8_dsp(const int8_t *a, int8_t *out, int32_t n, const int8_t *lut);

/* Mul, exact forms (b with a period): mul1 = SMMULR(p << left1, mult) (left1 = left shift + 1,
 * proven not to overflow), rounding shift rshift >= 1 with half as in mode 1, SSAT, clamp;
 * mul (mode 0) = TFLite's requantization of p = (a - a_zp) * (b - b_zp). */
void edgenn_mul_s8_dsp_smmulr(const int8_t *a, const int8_t *b, int8_t *out, int32_t n,
                              int32_t period, int32_t a_zp, int32_t b_zp, int32_t left1,
                              int32_t mult, int32_t rshift, int32_t half, int32_t lo, int32_t hi);
void edgenn_mul_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int32_t n, int32_t period,
                       int32_t a_zp, int32_t b_zp, int32_t mult, int32_t shift, int32_t out_zp,
                       int32_t lo, int32_t hi);

#endif
