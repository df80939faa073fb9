/* Inner products of the fused-chain kernels over int16 ring rows (see edgenn_fused_chain_s8_dsp.h).
 *
 * x points at the first tap of one output pixel in a ring row (int16, zero point already
 * subtracted); for one kernel row ky the KW*C taps are contiguous, so kp = ceil(KW*C / 2)
 * 32-bit words are SMLAD operand pairs as they are (an odd last pair reads one element past
 * the taps, multiplied by a packed zero weight). w: 4 words (output channels 0..3) per pair.
 *
 * fused_mac_2x4_PB(rows, kh, w, kp, acc): all KH rows of 2 horizontally adjacent output pixels
 * (rows[ky] = pixel a's taps in row ky; pixel b's start pb bytes
 * later) x 4 channels, each weight word loaded once for both pixels. On ARMv7E-M the loop is
 * hand-scheduled assembly, 4 loads + 4 SMLAD + 2 loads + 4 SMLAD = 16 cycles per 16 MACs;
 * that needs 14 registers, so the second pixel's offset must be an immediate: the function is
 * instantiated for the common pixel strides (pb = stride_w * C * 2 bytes) and falls back to C
 * for others. fused_mac_1x4: one pixel (the ring_modulo / ring_hoisted variants).
 */
#ifndef EDGENN_FUSED_CHAIN_MAC_H
#define EDGENN_FUSED_CHAIN_MAC_H

#include "edgenn_fixed_point.h"

EDGENN_INLINE void fused_mac_1x4(const int16_t *x, const uint32_t *w, int kp, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int p = 0; p < kp; p++, w += 4) {
        const uint32_t xv = edgenn_load32(x + 2 * p);
        a0 = edgenn_smlad(xv, w[0], a0);
        a1 = edgenn_smlad(xv, w[1], a1);
        a2 = edgenn_smlad(xv, w[2], a2);
        a3 = edgenn_smlad(xv, w[3], a3);
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}

/* portable 2x4 (host builds, and pixel offsets without an assembly instance) */
static inline void fused_mac_2x4_c(const int16_t *x, const uint32_t *w, int kp, int pb,
                                   int32_t *acc)
{
    const int16_t *xb = (const int16_t *)((const uint8_t *)x + pb);
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
    for (int p = 0; p < kp; p++, w += 4) {
        const uint32_t xa = edgenn_load32(x + 2 * p), xv = edgenn_load32(xb + 2 * p);
        a0 = edgenn_smlad(xa, w[0], a0); b0 = edgenn_smlad(xv, w[0], b0);
        a1 = edgenn_smlad(xa, w[1], a1); b1 = edgenn_smlad(xv, w[1], b1);
        a2 = edgenn_smlad(xa, w[2], a2); b2 = edgenn_smlad(xv, w[2], b2);
        a3 = edgenn_smlad(xa, w[3], a3); b3 = edgenn_smlad(xv, w[3], b3);
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
    acc[4] = b0; acc[5] = b1; acc[6] = b2; acc[7] = b3;
}

#if EDGENN_HAVE_DSP

#define FMAC_STR_(v) #v
#define FMAC_STR(v) FMAC_STR_(v)
/* one pair: xa at [xp + XO], xb at [xp + XO + PB], channel words at [wp + WO ..] */
#define FMAC_STEP(XO, WO, PB)                                                               \
    "ldr %[xa], [%[xp], #" FMAC_STR(XO) "]\n\t"                                             \
    "ldr %[xb], [%[xp], #(" FMAC_STR(XO) "+" FMAC_STR(PB) ")]\n\t"                          \
    "ldr %[w0], [%[wp], #" FMAC_STR(WO) "]\n\t"                                             \
    "ldr %[w1], [%[wp], #" FMAC_STR(WO) "+4]\n\t"                                           \
    "smlad %[a0], %[xa], %[w0], %[a0]\n\t"                                                  \
    "smlad %[a1], %[xa], %[w1], %[a1]\n\t"                                                  \
    "smlad %[b0], %[xb], %[w0], %[b0]\n\t"                                                  \
    "smlad %[b1], %[xb], %[w1], %[b1]\n\t"                                                  \
    "ldr %[w0], [%[wp], #" FMAC_STR(WO) "+8]\n\t"                                           \
    "ldr %[w1], [%[wp], #" FMAC_STR(WO) "+12]\n\t"                                          \
    "smlad %[a2], %[xa], %[w0], %[a2]\n\t"                                                  \
    "smlad %[a3], %[xa], %[w1], %[a3]\n\t"                                                  \
    "smlad %[b2], %[xb], %[w0], %[b2]\n\t"                                                  \
    "smlad %[b3], %[xb], %[w1], %[b3]\n\t"

/* the whole kernel height in one call: for each ky, x = rows[ky], then kp & 7
 * single steps and 8 steps per iteration (w runs on across ky: [ky][kp][4] per group);
 * loop bounds live on the stack (all 14 allocatable registers are in use) */
#define FMAC_DEFINE(PB)                                                                      \
    static void fused_mac_2x4_##PB(const int16_t *const *rows, int kh, const uint32_t *w,    \
                                   int kp, int32_t *acc)                                     \
    {                                                                                        \
        int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];                          \
        int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];                          \
        const int16_t *const *rp = rows;                                                     \
        const int16_t *const *rp_end = rows + kh;                                            \
        const int rem_b = 4 * (kp & 7), all_b = 4 * kp;                                      \
        const int16_t *rem_end, *end, *x;                                                    \
        uint32_t xa, xb, w0, w1;                                                             \
        __asm__ volatile(                                                                    \
            "0:\n\t"                                                                         \
            "ldr %[xa], %[rp]\n\t"                                                           \
            "ldr %[xp], [%[xa]], #4\n\t"                                                     \
            "str %[xa], %[rp]\n\t"                                                           \
            "ldr %[xa], %[remb]\n\t"                                                         \
            "ldr %[xb], %[allb]\n\t"                                                         \
            "add %[xa], %[xp], %[xa]\n\t"                                                    \
            "add %[xb], %[xp], %[xb]\n\t"                                                    \
            "str %[xa], %[rem_end]\n\t"                                                      \
            "str %[xb], %[end]\n\t"                                                          \
            "cmp %[xp], %[xa]\n\t"                                                           \
            "beq 2f\n"                                                                       \
            "1:\n\t" FMAC_STEP(0, 0, PB)                                                     \
            "adds %[xp], %[xp], #4\n\t"                                                      \
            "adds %[wp], %[wp], #16\n\t"                                                     \
            "ldr %[xa], %[rem_end]\n\t"                                                      \
            "cmp %[xp], %[xa]\n\t"                                                           \
            "bne 1b\n"                                                                       \
            "2:\n\t"                                                                         \
            "ldr %[xa], %[end]\n\t"                                                          \
            "cmp %[xp], %[xa]\n\t"                                                           \
            "beq 4f\n"                                                                       \
            "3:\n\t"                                                                         \
            FMAC_STEP(0, 0, PB) FMAC_STEP(4, 16, PB) FMAC_STEP(8, 32, PB)                    \
            FMAC_STEP(12, 48, PB) FMAC_STEP(16, 64, PB) FMAC_STEP(20, 80, PB)                \
            FMAC_STEP(24, 96, PB) FMAC_STEP(28, 112, PB)                                     \
            "adds %[xp], %[xp], #32\n\t"                                                     \
            "adds %[wp], %[wp], #128\n\t"                                                    \
            "ldr %[xa], %[end]\n\t"                                                          \
            "cmp %[xp], %[xa]\n\t"                                                           \
            "bne 3b\n"                                                                       \
            "4:\n\t"                                                                         \
            "ldr %[xa], %[rp]\n\t"                                                           \
            "ldr %[xb], %[rp_end]\n\t"                                                       \
            "cmp %[xa], %[xb]\n\t"                                                           \
            "bne 0b\n"                                                                       \
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b0] "+r"(b0),     \
              [b1] "+r"(b1), [b2] "+r"(b2), [b3] "+r"(b3), [xp] "=&r"(x), [wp] "+r"(w),      \
              [xa] "=&r"(xa), [xb] "=&r"(xb), [w0] "=&r"(w0), [w1] "=&r"(w1),                \
              [rp] "+m"(rp), [rem_end] "=m"(rem_end), [end] "=m"(end)                        \
            : [rp_end] "m"(rp_end), [remb] "m"(rem_b), [allb] "m"(all_b)                     \
            : "cc", "memory");                                                               \
        acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;                                  \
        acc[4] = b0; acc[5] = b1; acc[6] = b2; acc[7] = b3;                                  \
    }

FMAC_DEFINE(2)
FMAC_DEFINE(4)
FMAC_DEFINE(6)
FMAC_DEFINE(8)
FMAC_DEFINE(16)
FMAC_DEFINE(24)
FMAC_DEFINE(32)
FMAC_DEFINE(48)
FMAC_DEFINE(64)
FMAC_DEFINE(128)

typedef void (*fused_mac_fn)(const int16_t *const *, int, const uint32_t *, int, int32_t *);

/* Fully unrolled instances for 3-row kernels with a fixed pair count KP and pixel offset PB
 * (3x3 stride-1 convs over C = 2*KP/3 channels: KP 6/12/24/48 for C 4/8/16/32): no loop
 * control at all, every offset an immediate (GNU as .rept/.set), one stack load per kernel row.
 * 16 cycles per 16 MACs, plus ~3 per row and the call. */
#define FMAC_ROW(KP, PB)                                                                     \
    ".set fm_xo, 0\n\t"                                                                      \
    ".rept " FMAC_STR(KP) "\n\t"                                                             \
    "ldr %[xa], [%[xp], #fm_xo]\n\t"                                                         \
    "ldr %[xb], [%[xp], #(fm_xo+" FMAC_STR(PB) ")]\n\t"                                      \
    "ldr %[w0], [%[wp], #fm_wo]\n\t"                                                         \
    "ldr %[w1], [%[wp], #(fm_wo+4)]\n\t"                                                     \
    "smlad %[a0], %[xa], %[w0], %[a0]\n\t"                                                   \
    "smlad %[a1], %[xa], %[w1], %[a1]\n\t"                                                   \
    "smlad %[b0], %[xb], %[w0], %[b0]\n\t"                                                   \
    "smlad %[b1], %[xb], %[w1], %[b1]\n\t"                                                   \
    "ldr %[w0], [%[wp], #(fm_wo+8)]\n\t"                                                     \
    "ldr %[w1], [%[wp], #(fm_wo+12)]\n\t"                                                    \
    "smlad %[a2], %[xa], %[w0], %[a2]\n\t"                                                   \
    "smlad %[a3], %[xa], %[w1], %[a3]\n\t"                                                   \
    "smlad %[b2], %[xb], %[w0], %[b2]\n\t"                                                   \
    "smlad %[b3], %[xb], %[w1], %[b3]\n\t"                                                   \
    ".set fm_xo, fm_xo+4\n\t"                                                                \
    ".set fm_wo, fm_wo+16\n\t"                                                               \
    ".endr\n\t"

#define FMAC3_DEFINE(KP, PB)                                                                 \
    static void fused_mac3_##KP##_##PB(const int16_t *const *rows, int kh, const uint32_t *w, \
                                       int kp, int32_t *acc)                                 \
    {                                                                                        \
        (void)kh; (void)kp;                                                                  \
        int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];                          \
        int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];                          \
        const int16_t *const *rp = rows;                                                     \
        const int16_t *x;                                                                    \
        uint32_t xa, xb, w0, w1;                                                             \
        __asm__ volatile(                                                                    \
            ".set fm_wo, 0\n\t"                                                              \
            "ldr %[xa], %[rp]\n\t"                                                           \
            "ldr %[xp], [%[xa]]\n\t"                                                         \
            FMAC_ROW(KP, PB)                                                                 \
            "ldr %[xa], %[rp]\n\t"                                                           \
            "ldr %[xp], [%[xa], #4]\n\t"                                                     \
            FMAC_ROW(KP, PB)                                                                 \
            "ldr %[xa], %[rp]\n\t"                                                           \
            "ldr %[xp], [%[xa], #8]\n\t"                                                     \
            FMAC_ROW(KP, PB)                                                                 \
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b0] "+r"(b0),     \
              [b1] "+r"(b1), [b2] "+r"(b2), [b3] "+r"(b3), [xp] "=&r"(x), [xa] "=&r"(xa),    \
              [xb] "=&r"(xb), [w0] "=&r"(w0), [w1] "=&r"(w1)                                 \
            : [wp] "r"(w), [rp] "m"(rp)                                                      \
            : "memory");                                                                     \
        acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;                                  \
        acc[4] = b0; acc[5] = b1; acc[6] = b2; acc[7] = b3;                                  \
    }

FMAC3_DEFINE(6, 8)
FMAC3_DEFINE(12, 16)
FMAC3_DEFINE(24, 32)
FMAC3_DEFINE(48, 64)

/* 1-input-channel 3x3 member, one output channel along the row, 2 pixels per step, writing a
 * ring (fast requantization without a low clamp): x = the gathered taps (5 words per pixel),
 * o = the first pixel's int16 slot, OB = bytes between pixels in the ring row (2 * channels).
 * Weights are reloaded from flash inside the load bursts (an LDR after an LDR costs 1), which
 * frees the registers for bias, requantization constants and zero point: ~50 cycles / 2 MACs x9. */
#define CHAIN1_TAP(K)                                                                        \
    "ldr %[t0], [%[xp], #(4*" #K ")]\n\t"                                                    \
    "ldr %[t1], [%[xp], #(20+4*" #K ")]\n\t"                                                 \
    "ldr %[t2], [%[wp], #(4*" #K ")]\n\t"                                                    \
    "smlad %[a], %[t0], %[t2], %[a]\n\t"                                                     \
    "smlad %[b], %[t1], %[t2], %[b]\n\t"
#define CHAIN1_REQ(R, OFF)                                                                   \
    "smmulr " R ", " R ", %[mult]\n\t"                                                       \
    "add " R ", " R ", " R ", asr #31\n\t"                                                   \
    "add " R ", " R ", %[half]\n\t"                                                          \
    "asr " R ", " R ", %[shift]\n\t"                                                         \
    "ssat " R ", #8, " R "\n\t"                                                              \
    "sub " R ", " R ", %[zp]\n\t"                                                            \
    "strh " R ", [%[op], #" OFF "]\n\t"
#define CHAIN1_DEFINE(OB)                                                                    \
    static void chain1_pairs_##OB(const uint32_t *x, const uint32_t *xend, int16_t *o,       \
                               const uint32_t *w, const int32_t *q, int32_t zp)              \
    {                                                                                        \
        int32_t a, b;                                                                        \
        uint32_t t0, t1, t2;                                                                 \
        __asm__ volatile(                                                                    \
            "0:\n\t"                                                                         \
            "ldr %[t0], [%[xp]]\n\t"                                                         \
            "ldr %[t1], [%[xp], #20]\n\t"                                                    \
            "ldr %[t2], [%[wp]]\n\t"                                                         \
            "smlad %[a], %[t0], %[t2], %[bias]\n\t"                                          \
            "smlad %[b], %[t1], %[t2], %[bias]\n\t"                                          \
            CHAIN1_TAP(1) CHAIN1_TAP(2) CHAIN1_TAP(3) CHAIN1_TAP(4)                          \
            CHAIN1_REQ("%[a]", "0") CHAIN1_REQ("%[b]", FMAC_STR(OB))                         \
            "adds %[op], %[op], #(2*" FMAC_STR(OB) ")\n\t"                                   \
            "adds %[xp], %[xp], #40\n\t"                                                     \
            "cmp %[xp], %[end]\n\t"                                                          \
            "bne 0b\n\t"                                                                     \
            : [xp] "+r"(x), [op] "+r"(o), [a] "=&r"(a), [b] "=&r"(b), [t0] "=&r"(t0),        \
              [t1] "=&r"(t1), [t2] "=&r"(t2)                                                 \
            : [end] "r"(xend), [wp] "r"(w), [bias] "r"(q[0]), [mult] "r"(q[1]),              \
              [shift] "r"(q[2]), [half] "r"(q[3]), [zp] "r"(zp)                              \
            : "cc", "memory");                                                               \
    }
CHAIN1_DEFINE(16)
CHAIN1_DEFINE(32)
CHAIN1_DEFINE(64)

typedef void (*chain1_pairs_fn)(const uint32_t *, const uint32_t *, int16_t *, const uint32_t *,
                                const int32_t *, int32_t);

/* the 1-channel row instance for OB bytes between ring pixels, or NULL */
static inline chain1_pairs_fn chain1_pairs_for(int ob)
{
    switch (ob) {
    case 16: return chain1_pairs_16;
    case 32: return chain1_pairs_32;
    case 64: return chain1_pairs_64;
    default: return (chain1_pairs_fn)0;
    }
}

/* the assembly instance for a pixel offset of pb bytes, or NULL */
static inline fused_mac_fn fused_mac_2x4_for(int kh, int kp, int pb)
{
    if (kh == 3) {
        switch (kp * 1024 + pb) {
        case 6 * 1024 + 8: return fused_mac3_6_8;
        case 12 * 1024 + 16: return fused_mac3_12_16;
        case 24 * 1024 + 32: return fused_mac3_24_32;
        case 48 * 1024 + 64: return fused_mac3_48_64;
        default: break;
        }
    }
    switch (pb) {
    case 2: return fused_mac_2x4_2;
    case 4: return fused_mac_2x4_4;
    case 6: return fused_mac_2x4_6;
    case 8: return fused_mac_2x4_8;
    case 16: return fused_mac_2x4_16;
    case 24: return fused_mac_2x4_24;
    case 32: return fused_mac_2x4_32;
    case 48: return fused_mac_2x4_48;
    case 64: return fused_mac_2x4_64;
    case 128: return fused_mac_2x4_128;
    default: return (fused_mac_fn)0;
    }
}

#else

typedef void (*chain1_pairs_fn)(const uint32_t *, const uint32_t *, int16_t *, const uint32_t *,
                                const int32_t *, int32_t);
static inline chain1_pairs_fn chain1_pairs_for(int ob)
{
    (void)ob;
    return (chain1_pairs_fn)0;
}

typedef void (*fused_mac_fn)(const int16_t *const *, int, const uint32_t *, int, int32_t *);
static inline fused_mac_fn fused_mac_2x4_for(int kh, int kp, int pb)
{
    (void)kh; (void)kp; (void)pb;
    return (fused_mac_fn)0;
}

#endif
#endif
