/* The 2-pixel x 4-channel SMLAD inner product of edgenn_conv_s8_dsp.
 *
 * x: interleaved int16-pair patch (word 2p = pixel a's pair p, word 2p+1 = pixel b's);
 * w: 4 words per pair (channels 0..3); kp pairs. acc[0..3] pixel a, acc[4..7] pixel b.
 *
 * On ARMv7E-M this is hand-scheduled assembly: gcc interleaves loads with SMLADs and spills,
 * while the M4 pipelines back-to-back loads (1 cycle each after the first), so the loads are
 * grouped: 4 loads + 4 SMLAD + 2 loads + 4 SMLAD = 16 cycles for 16 MACs, 8 steps unrolled.
 * 14 registers: 8 accumulators, 2 pointers, 4 temporaries; loop ends live on the stack.
 */
#ifndef EDGENN_CONV_S8_DSP_MAC_H
#define EDGENN_CONV_S8_DSP_MAC_H

#include "edgenn_fixed_point.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP

#define CDSP_STR_(v) #v
#define CDSP_STR(v) CDSP_STR_(v)
#define CDSP_STEP(XO, WO)                                                                   \
    "ldr %[xa], [%[xp], #" CDSP_STR(XO) "]\n\t"                                             \
    "ldr %[xb], [%[xp], #" CDSP_STR(XO) "+4]\n\t"                                           \
    "ldr %[w0], [%[wp], #" CDSP_STR(WO) "]\n\t"                                             \
    "ldr %[w1], [%[wp], #" CDSP_STR(WO) "+4]\n\t"                                           \
    "smlad %[a0], %[xa], %[w0], %[a0]\n\t"                                                  \
    "smlad %[a1], %[xa], %[w1], %[a1]\n\t"                                                  \
    "smlad %[b0], %[xb], %[w0], %[b0]\n\t"                                                  \
    "smlad %[b1], %[xb], %[w1], %[b1]\n\t"                                                  \
    "ldr %[w0], [%[wp], #" CDSP_STR(WO) "+8]\n\t"                                           \
    "ldr %[w1], [%[wp], #" CDSP_STR(WO) "+12]\n\t"                                          \
    "smlad %[a2], %[xa], %[w0], %[a2]\n\t"                                                  \
    "smlad %[a3], %[xa], %[w1], %[a3]\n\t"                                                  \
    "smlad %[b2], %[xb], %[w0], %[b2]\n\t"                                                  \
    "smlad %[b3], %[xb], %[w1], %[b3]\n\t"

EDGENN_INLINE void cdsp_mac_2x4(const uint32_t *x, const uint32_t *w, int kp, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
    const uint32_t *rem_end = x + 2 * (kp & 7);
    const uint32_t *end = x + 2 * kp;
    uint32_t xa, xb, w0, w1;
    __asm__ volatile(
        "ldr %[xa], %[rem_end]\n\t"
        "cmp %[xp], %[xa]\n\t"
        "beq 2f\n"
        "1:\n\t" CDSP_STEP(0, 0)
        "adds %[xp], %[xp], #8\n\t"
        "adds %[wp], %[wp], #16\n\t"
        "ldr %[xa], %[rem_end]\n\t"
        "cmp %[xp], %[xa]\n\t"
        "bne 1b\n"
        "2:\n\t"
        "ldr %[xa], %[end]\n\t"
        "cmp %[xp], %[xa]\n\t"
        "beq 4f\n"
        "3:\n\t"
        CDSP_STEP(0, 0) CDSP_STEP(8, 16) CDSP_STEP(16, 32) CDSP_STEP(24, 48)
        CDSP_STEP(32, 64) CDSP_STEP(40, 80) CDSP_STEP(48, 96) CDSP_STEP(56, 112)
        "adds %[xp], %[xp], #64\n\t"
        "adds %[wp], %[wp], #128\n\t"
        "ldr %[xa], %[end]\n\t"
        "cmp %[xp], %[xa]\n\t"
        "bne 3b\n"
        "4:\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b0] "+r"(b0),
          [b1] "+r"(b1), [b2] "+r"(b2), [b3] "+r"(b3), [xp] "+r"(x), [wp] "+r"(w),
          [xa] "=&r"(xa), [xb] "=&r"(xb), [w0] "=&r"(w0), [w1] "=&r"(w1)
        : [rem_end] "m"(rem_end), [end] "m"(end)
        : "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
    acc[4] = b0; acc[5] = b1; acc[6] = b2; acc[7] = b3;
}

#else

EDGENN_INLINE void cdsp_mac_2x4(const uint32_t *x, const uint32_t *w, int kp, int32_t *acc)
{
    for (int p = 0; p < kp; p++) {
        uint32_t xa = x[2 * p], xb = x[2 * p + 1];
        for (int c = 0; c < 4; c++) {
            acc[c] = edgenn_smlad(xa, w[4 * p + c], acc[c]);
            acc[4 + c] = edgenn_smlad(xb, w[4 * p + c], acc[4 + c]);
        }
    }
}

#endif
#endif
