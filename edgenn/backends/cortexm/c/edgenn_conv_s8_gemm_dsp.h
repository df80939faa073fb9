/* Helpers of the generated int8 general Conv2D (kernels/conv_gemm.py): blocks of 4 pixels x 2
 * channels (signed weights) or 2 pixels x 4 channels (packed-pair weights).
 *
 * The generator writes, per layer, a patch-copy function unrolled for the layer's shape, a
 * K loop of hand-scheduled SMLADs unrolled for the layer's K, and the pixel/channel loops;
 * this header only holds what does not depend on the shape.
 *
 * Patch: int16 pairs of the block's output pixels interleaved (word P p + j = pixel j's pair p),
 * so the MAC loop reads them with immediate offsets from one pointer. Weights: int8, one word per
 * (channel pair, k pair): bytes {w[c][2p], w[c+1][2p], w[c][2p+1], w[c+1][2p+1]}, so SXTB16
 * gives channel c's int16 pair and SXTB16 ROR 8 channel c+1's (widened in registers only).
 */
#ifndef EDGENN_CONV_S8_GEMM_DSP_H
#define EDGENN_CONV_S8_GEMM_DSP_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

#define CGEMM_STR_(v) #v
#define CGEMM_STR(v) CGEMM_STR_(v)

/* The second half of a 4x2 step: pixels c and d (patch words XO+8, XO+12) times the weight
 * pair already in wt / wv (shared by CGEMM_STEP and CGEMM_P4STEP). */
#define CGEMM_PIXELS_CD(XO)                                                                  \
    "ldr %[xa], [%[xp], #" CGEMM_STR(XO) "+8]\n\t"                                           \
    "ldr %[xb], [%[xp], #" CGEMM_STR(XO) "+12]\n\t"                                          \
    "smlad %[c0], %[xa], %[wt], %[c0]\n\t"                                                   \
    "smlad %[c1], %[xa], %[wv], %[c1]\n\t"                                                   \
    "smlad %[d0], %[xb], %[wt], %[d0]\n\t"                                                   \
    "smlad %[d1], %[xb], %[wv], %[d1]\n\t"

/* One k pair of the 4x2 block: 17 cycles for 16 MACs on the M4 (3 loads pipelined, 2 SXTB16,
 * 4 SMLAD, 2 loads pipelined, 4 SMLAD). XO / WO: byte offsets of the pair in patch / weights.
 * 14 registers: 8 accumulators, 2 pointers, 4 temporaries (the most the core has). */
#define CGEMM_STEP(XO, WO)                                                                   \
    "ldr %[wv], [%[wp], #" CGEMM_STR(WO) "]\n\t"                                             \
    "ldr %[xa], [%[xp], #" CGEMM_STR(XO) "]\n\t"                                             \
    "ldr %[xb], [%[xp], #" CGEMM_STR(XO) "+4]\n\t"                                           \
    "sxtb16 %[wt], %[wv]\n\t"                                                                \
    "sxtb16 %[wv], %[wv], ror #8\n\t"                                                        \
    "smlad %[a0], %[xa], %[wt], %[a0]\n\t"                                                   \
    "smlad %[a1], %[xa], %[wv], %[a1]\n\t"                                                   \
    "smlad %[b0], %[xb], %[wt], %[b0]\n\t"                                                   \
    "smlad %[b1], %[xb], %[wv], %[b1]\n\t"                                                   \
    CGEMM_PIXELS_CD(XO)

/* CGEMM_STEP with packed-pair weights (below): the raw word is channel c+1's operand
 * (accumulator T), no second SXTB16: 16 cycles for 16 MACs. */
#define CGEMM_P4STEP(XO, WO)                                                                 \
    "ldr %[wv], [%[wp], #" CGEMM_STR(WO) "]\n\t"                                             \
    "ldr %[xa], [%[xp], #" CGEMM_STR(XO) "]\n\t"                                             \
    "ldr %[xb], [%[xp], #" CGEMM_STR(XO) "+4]\n\t"                                           \
    "sxtb16 %[wt], %[wv]\n\t"                                                                \
    "smlad %[a0], %[xa], %[wt], %[a0]\n\t"                                                   \
    "smlad %[a1], %[xa], %[wv], %[a1]\n\t"                                                   \
    "smlad %[b0], %[xb], %[wt], %[b0]\n\t"                                                   \
    "smlad %[b1], %[xb], %[wv], %[b1]\n\t"                                                   \
    CGEMM_PIXELS_CD(XO)

/* One k pair of the 2-pixel x 4-channel block with packed-pair weights
 * (kernels/conv_gemm.py packed_ok): each of the pair's 2 weight words holds channels c, c+1
 * so that every raw int16 half is w[c] + 256 w[c+1] and SXTB16 gives channel c's pair:
 * accumulators U = acc[c] and T = acc[c] + 256 acc[c+1], 16 cycles for 16 MACs (3 loads,
 * SXTB16, 4 SMLAD, load, SXTB16, 4 SMLAD); acc[c+1] = (T - U) / 256 at requantization.
 * a/b: pixels 0/1 of channels c, c+1; c/d: pixels 0/1 of channels c+2, c+3. */
#define CGEMM_PSTEP(XO, WO)                                                                  \
    "ldr %[wv], [%[wp], #" CGEMM_STR(WO) "]\n\t"                                             \
    "ldr %[xa], [%[xp], #" CGEMM_STR(XO) "]\n\t"                                             \
    "ldr %[xb], [%[xp], #" CGEMM_STR(XO) "+4]\n\t"                                           \
    "sxtb16 %[wt], %[wv]\n\t"                                                                \
    "smlad %[a0], %[xa], %[wt], %[a0]\n\t"                                                   \
    "smlad %[a1], %[xa], %[wv], %[a1]\n\t"                                                   \
    "smlad %[b0], %[xb], %[wt], %[b0]\n\t"                                                   \
    "smlad %[b1], %[xb], %[wv], %[b1]\n\t"                                                   \
    "ldr %[wv], [%[wp], #" CGEMM_STR(WO) "+4]\n\t"                                           \
    "sxtb16 %[wt], %[wv]\n\t"                                                                \
    "smlad %[c0], %[xa], %[wt], %[c0]\n\t"                                                   \
    "smlad %[c1], %[xa], %[wv], %[c1]\n\t"                                                   \
    "smlad %[d0], %[xb], %[wt], %[d0]\n\t"                                                   \
    "smlad %[d1], %[xb], %[wv], %[d1]\n\t"

/* the asm operand list shared by the generated MAC functions (the first step writes every
 * accumulator: biases + first products) */
#define CGEMM_OPERANDS                                                                      \
    [a0] "=&r"(a0), [a1] "=&r"(a1), [b0] "=&r"(b0), [b1] "=&r"(b1), [c0] "=&r"(c0),         \
        [c1] "=&r"(c1), [d0] "=&r"(d0), [d1] "=&r"(d1), [xp] "+r"(x), [wp] "+r"(w),         \
        [xa] "=&r"(xa), [xb] "=&r"(xb), [wv] "=&r"(wv), [wt] "=&r"(wt)

#if EDGENN_HAVE_DSP
/* SXTB16 ROR 8 as one instruction (gcc splits the C rotate into MOV ROR + SXTB16) */
EDGENN_INLINE uint32_t cgemm_sxtb16_ror8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
/* 4 words (unaligned allowed) by back-to-back LDRs in one asm statement: they pipeline
 * (1 cycle each after the first), while gcc would interleave them with the stores or pair
 * them into LDRD (3 cycles). Offsets are the generator's constants. */
#define CGEMM_M(s, o) "m"(*(const uint32_t *)(const void *)((s) + (o)))
#define CGEMM_LDR4(s, o0, o1, o2, o3, v0, v1, v2, v3)                                       \
    __asm__("ldr %0, %4\n\tldr %1, %5\n\tldr %2, %6\n\tldr %3, %7"                          \
            : "=&r"(v0), "=&r"(v1), "=&r"(v2), "=&r"(v3)                                    \
            : CGEMM_M(s, o0), CGEMM_M(s, o1), CGEMM_M(s, o2), CGEMM_M(s, o3))
#define CGEMM_LDR3(s, o0, o1, o2, v0, v1, v2)                                               \
    __asm__("ldr %0, %3\n\tldr %1, %4\n\tldr %2, %5"                                        \
            : "=&r"(v0), "=&r"(v1), "=&r"(v2)                                               \
            : CGEMM_M(s, o0), CGEMM_M(s, o1), CGEMM_M(s, o2))
#define CGEMM_LDR2(s, o0, o1, v0, v1)                                                       \
    __asm__("ldr %0, %2\n\tldr %1, %3" : "=&r"(v0), "=&r"(v1) : CGEMM_M(s, o0), CGEMM_M(s, o1))
#define CGEMM_LDR1(s, o0, v0) __asm__("ldr %0, %1" : "=r"(v0) : CGEMM_M(s, o0))
#else
#define cgemm_sxtb16_ror8 edgenn_sxtb16_ror8
#define CGEMM_LDR4(s, o0, o1, o2, o3, v0, v1, v2, v3)                                       \
    (v0 = edgenn_load32((s) + (o0)), v1 = edgenn_load32((s) + (o1)),                        \
     v2 = edgenn_load32((s) + (o2)), v3 = edgenn_load32((s) + (o3)))
#define CGEMM_LDR3(s, o0, o1, o2, v0, v1, v2)                                               \
    (v0 = edgenn_load32((s) + (o0)), v1 = edgenn_load32((s) + (o1)), v2 = edgenn_load32((s) + (o2)))
#define CGEMM_LDR2(s, o0, o1, v0, v1)                                                         \
    (v0 = edgenn_load32((s) + (o0)), v1 = edgenn_load32((s) + (o1)))
#define CGEMM_LDR1(s, o0, v0) (v0 = edgenn_load32((s) + (o0)))
#endif

/* Portable twin of one k pair (host builds and cores without the DSP extension). */
EDGENN_INLINE void cgemm_step_c(const uint32_t *x, uint32_t wword, int32_t *acc)
{
    uint32_t w0 = edgenn_sxtb16(wword), w1 = edgenn_sxtb16_ror8(wword);
    for (int j = 0; j < 4; j++) {
        acc[2 * j] = edgenn_smlad(x[j], w0, acc[2 * j]);
        acc[2 * j + 1] = edgenn_smlad(x[j], w1, acc[2 * j + 1]);
    }
}

/* Portable twin of CGEMM_P4STEP. */
EDGENN_INLINE void cgemm_p4step_c(const uint32_t *x, uint32_t wword, int32_t *acc)
{
    uint32_t w0 = edgenn_sxtb16(wword);
    for (int j = 0; j < 4; j++) {
        acc[2 * j] = edgenn_smlad(x[j], w0, acc[2 * j]);
        acc[2 * j + 1] = edgenn_smlad(x[j], wword, acc[2 * j + 1]);
    }
}

/* Portable twin of CGEMM_PSTEP (acc in the asm order a0 a1 b0 b1 c0 c1 d0 d1). */
EDGENN_INLINE void cgemm_pstep_c(const uint32_t *x, const uint32_t *w, int32_t *acc)
{
    for (int g = 0; g < 2; g++) {
        const uint32_t u = edgenn_sxtb16(w[g]);
        for (int j = 0; j < 2; j++) {
            acc[4 * g + 2 * j] = edgenn_smlad(x[j], u, acc[4 * g + 2 * j]);
            acc[4 * g + 2 * j + 1] = edgenn_smlad(x[j], w[g], acc[4 * g + 2 * j + 1]);
        }
    }
}

/* Fill n bytes with v (padding taps of a border window hold the input zero point). */
EDGENN_INLINE void cgemm_fill(int8_t *d, int n, int8_t v)
{
    for (int i = 0; i < n; i++) d[i] = v;
}

EDGENN_INLINE void cgemm_copy(int8_t *d, const int8_t *s, int n)
{
    for (int i = 0; i < n; i++) d[i] = s[i];
}

#endif
