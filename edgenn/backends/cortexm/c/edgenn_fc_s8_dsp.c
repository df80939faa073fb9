/* Fast int8 fully connected: the input is expanded once to int16 pairs, then 4 output rows
 * run together over it with SMLAD (each input pair loaded once per 4 rows).
 *
 * Expansion order: a word of 4 input bytes b0 b1 b2 b3 becomes the pairs (b0, b2) (SXTB16)
 * and (b1, b3) (SXTB16 ROR 8); the weights were permuted the same way at generation time.
 */
#include "edgenn_fc_s8_dsp.h"

#include "edgenn_fixed_point.h"

/* x: K int8 -> pairs int16 pairs (zero padded) */
static void ffc_expand(const int8_t *x, uint32_t *dst, int depth, int pairs)
{
    const int full = depth & ~3;
    const int full8 = depth & ~7;
    int k = 0;
    for (; k < full8; k += 8) { /* two loads back to back (pipelined), then the shuffles */
        uint32_t v = edgenn_load32(x + k);
        uint32_t u = edgenn_load32(x + k + 4);
        dst[0] = edgenn_sxtb16(v);
        dst[1] = edgenn_sxtb16_ror8(v);
        dst[2] = edgenn_sxtb16(u);
        dst[3] = edgenn_sxtb16_ror8(u);
        dst += 4;
    }
    for (; k < full; k += 4) {
        uint32_t v = edgenn_load32(x + k);
        dst[0] = edgenn_sxtb16(v);
        dst[1] = edgenn_sxtb16_ror8(v);
        dst += 2;
    }
    int done = full >> 1;
    if (k < depth) { /* the last partial word: bytes 0..2 present, the rest zero */
        int32_t b[4] = {0, 0, 0, 0};
        for (int i = 0; k + i < depth; i++) {
            b[i] = x[k + i];
        }
        dst[0] = ((uint32_t)b[0] & 0xFFFFu) | ((uint32_t)b[2] << 16);
        dst[1] = ((uint32_t)b[1] & 0xFFFFu) | ((uint32_t)b[3] << 16);
        dst += 2;
        done += 2;
    }
    for (; done < pairs; done++) {
        *dst++ = 0;
    }
}

#if EDGENN_HAVE_DSP

/* One period: 3 input pairs x 4 rows = 24 MACs in two load chains (the M4 pipelines
 * back-to-back loads: 1 cycle each after the first) and 12 SMLADs: 29 cycles. Post-indexed
 * loads advance both pointers for free. */
#define FFC_PERIOD                                                                          \
    "ldr.w %[t0], [%[xp]], #4\n\t"                                                          \
    "ldr.w %[t1], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t2], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t3], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t4], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t5], [%[xp]], #4\n\t"                                                          \
    "ldr.w %[t6], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t7], [%[wp]], #4\n\t"                                                          \
    "smlad %[a0], %[t0], %[t1], %[a0]\n\t"                                                  \
    "smlad %[a1], %[t0], %[t2], %[a1]\n\t"                                                  \
    "smlad %[a2], %[t0], %[t3], %[a2]\n\t"                                                  \
    "smlad %[a3], %[t0], %[t4], %[a3]\n\t"                                                  \
    "smlad %[a0], %[t5], %[t6], %[a0]\n\t"                                                  \
    "smlad %[a1], %[t5], %[t7], %[a1]\n\t"                                                  \
    "ldr.w %[t6], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t7], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t0], [%[xp]], #4\n\t"                                                          \
    "ldr.w %[t1], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t2], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t3], [%[wp]], #4\n\t"                                                          \
    "ldr.w %[t4], [%[wp]], #4\n\t"                                                          \
    "smlad %[a2], %[t5], %[t6], %[a2]\n\t"                                                  \
    "smlad %[a3], %[t5], %[t7], %[a3]\n\t"                                                  \
    "smlad %[a0], %[t0], %[t1], %[a0]\n\t"                                                  \
    "smlad %[a1], %[t0], %[t2], %[a1]\n\t"                                                  \
    "smlad %[a2], %[t0], %[t3], %[a2]\n\t"                                                  \
    "smlad %[a3], %[t0], %[t4], %[a3]\n\t"

#define FFC_PERIOD4 FFC_PERIOD FFC_PERIOD FFC_PERIOD FFC_PERIOD

/* acc[0..3] += dot(x, w rows 0..3) over `pairs` pairs (a multiple of 3). The remainder of
 * pairs / 48 runs period by period first, then 16 periods (48 pairs) per loop iteration:
 * the loop test (6 cycles) is paid once per 384 MACs. 14 registers: 4 accumulators,
 * 2 pointers, 8 temporaries; the loop ends live on the stack. */
static inline __attribute__((always_inline)) void ffc_dot4(const uint32_t *x,
                                                           const uint32_t *w, int pairs,
                                                           int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const uint32_t *mid = x + pairs % 48;
    const uint32_t *end = x + pairs;
    uint32_t t0, t1, t2, t3, t4, t5, t6, t7;
    __asm__ volatile(
        "ldr %[t0], %[mid]\n\t"
        "cmp %[xp], %[t0]\n\t"
        "beq 2f\n"
        "1:\n\t" FFC_PERIOD
        "ldr %[t0], %[mid]\n\t"
        "cmp %[xp], %[t0]\n\t"
        "bne 1b\n"
        "2:\n\t"
        "ldr %[t0], %[end]\n\t"
        "cmp %[xp], %[t0]\n\t"
        "beq 4f\n"
        "3:\n\t" FFC_PERIOD4 FFC_PERIOD4 FFC_PERIOD4 FFC_PERIOD4
        "ldr %[t0], %[end]\n\t"
        "cmp %[xp], %[t0]\n\t"
        "bne 3b\n"
        "4:\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xp] "+r"(x),
          [wp] "+r"(w), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3),
          [t4] "=&r"(t4), [t5] "=&r"(t5), [t6] "=&r"(t6), [t7] "=&r"(t7)
        : [mid] "m"(mid), [end] "m"(end)
        : "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}

#else

static inline void ffc_dot4(const uint32_t *x, const uint32_t *w, int pairs, int32_t *acc)
{
    for (int p = 0; p < pairs; p++) {
        for (int r = 0; r < 4; r++) {
            acc[r] = edgenn_smlad(x[p], w[4 * p + r], acc[r]);
        }
    }
}

#endif

void edgenn_fc_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                      const int32_t *bias_folded, const int32_t *mult, const int32_t *shift,
                      int32_t batch, int32_t depth, int32_t pairs, int32_t out_c, int32_t out_zp,
                      int32_t act_lo, int32_t act_hi)
{
    uint32_t *xe = (uint32_t *)scratch;
    for (int n = 0; n < batch; n++) {
        ffc_expand(in + n * depth, xe, depth, pairs);
        int8_t *o = out + n * out_c;
        const uint32_t *w = wpack;
        for (int c = 0; c < out_c; c += 4) {
            int32_t acc[4] = {bias_folded[c], bias_folded[c + 1], bias_folded[c + 2],
                              bias_folded[c + 3]};
            ffc_dot4(xe, w, pairs, acc);
            w += 4 * pairs;
            const int rows = out_c - c < 4 ? out_c - c : 4;
            for (int r = 0; r < rows; r++) {
                o[c + r] = (int8_t)edgenn_requant_s32(acc[r], mult[c + r], shift[c + r], out_zp,
                                                act_lo, act_hi);
            }
        }
    }
}
