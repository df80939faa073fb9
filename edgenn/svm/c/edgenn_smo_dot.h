/* Dot products of the SMO solver, header-only so they inline into the kernel-row loop.
 *
 * Float: eight interleaved partial sums (lane m takes products k = m, m + 8, ...; the tail
 * continues lane 0, 1, ...), then added pairwise. Every build does exactly these operations in
 * this order, so a float build is bit-identical on any IEEE-754 machine compiled with
 * -ffp-contract=off: the host's ctypes build reproduces the firmware. On Cortex-M4F the 8-wide
 * blocks run as VLDM + VMUL + VADD (~4.8 cycles per product instead of ~6.5 with VLDR) --
 * the same operations, so the same results.
 *
 * int8: exact int32 sums of (a - zp)(b - zp); on cores with the DSP extension SXTAB16 widens
 * two bytes and subtracts the zero point in one instruction and SMLAD does two
 * multiply-adds (~2.6 cycles per product instead of ~5). Integer results do not depend on
 * the order.
 */
#ifndef EDGENN_SMO_DOT_H
#define EDGENN_SMO_DOT_H

#include <stdint.h>
#include <string.h>

#include "edgenn_smo.h"

#if defined(EDGENN_SMO_DOUBLE) && EDGENN_SMO_DOUBLE
#define SMO_IS_DOUBLE 1
#else
#define SMO_IS_DOUBLE 0
#endif

/* Armv7E-M with a single-precision FPU (Cortex-M4F, M7): the VLDM inner loop */
#if !SMO_IS_DOUBLE && defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 4) \
    && defined(__thumb2__)
#define SMO_VLDM_F32 1
#else
#define SMO_VLDM_F32 0
#endif

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define SMO_DSP 1
#else
#define SMO_DSP 0
#endif

/* The portable order: lanes s0..s7 over blocks of 8 from index k, the tail, the reduction.
 * T(k) is the k-th product (an edgenn_real expression). */
#define SMO_DOT8_BLOCKS(T, d, k)                                                              \
    for (; (k) + 8u <= (d); (k) += 8u) {                                                      \
        s0 += T(k);                                                                           \
        s1 += T((k) + 1u);                                                                    \
        s2 += T((k) + 2u);                                                                    \
        s3 += T((k) + 3u);                                                                    \
        s4 += T((k) + 4u);                                                                    \
        s5 += T((k) + 5u);                                                                    \
        s6 += T((k) + 6u);                                                                    \
        s7 += T((k) + 7u);                                                                    \
    }
#define SMO_DOT8_TAIL(T, d, k)                                                                \
    do {                                                                                      \
        if ((k) < (d)) { s0 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s1 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s2 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s3 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s4 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s5 += T(k); (k)++; }                                                 \
        if ((k) < (d)) { s6 += T(k); }                                                        \
    } while (0)
#define SMO_DOT8_SUM() (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))

/* sum a_k b_k of two float vectors */
static inline edgenn_real smo_dot_f32(const float *a, const float *b, uint32_t d)
{
    edgenn_real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    uint32_t k = 0;
#if SMO_VLDM_F32
    uint32_t blocks = d / 8u;
    if (blocks > 0u) {
        const float *pa = a, *pb = b;
        __asm__ volatile(
            "1:\n\t"
            "vldmia %[pa]!, {s16-s23}\n\t"
            "vldmia %[pb]!, {s24-s31}\n\t"
            "vmul.f32 s16, s16, s24\n\t"
            "vmul.f32 s17, s17, s25\n\t"
            "vmul.f32 s18, s18, s26\n\t"
            "vmul.f32 s19, s19, s27\n\t"
            "vmul.f32 s20, s20, s28\n\t"
            "vmul.f32 s21, s21, s29\n\t"
            "vmul.f32 s22, s22, s30\n\t"
            "vmul.f32 s23, s23, s31\n\t"
            "vadd.f32 %[s0], %[s0], s16\n\t"
            "vadd.f32 %[s1], %[s1], s17\n\t"
            "vadd.f32 %[s2], %[s2], s18\n\t"
            "vadd.f32 %[s3], %[s3], s19\n\t"
            "vadd.f32 %[s4], %[s4], s20\n\t"
            "vadd.f32 %[s5], %[s5], s21\n\t"
            "vadd.f32 %[s6], %[s6], s22\n\t"
            "vadd.f32 %[s7], %[s7], s23\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [pa] "+r"(pa), [pb] "+r"(pb), [n] "+r"(blocks), [s0] "+t"(s0), [s1] "+t"(s1),
              [s2] "+t"(s2), [s3] "+t"(s3), [s4] "+t"(s4), [s5] "+t"(s5), [s6] "+t"(s6),
              [s7] "+t"(s7)
            :
            : "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26",
              "s27", "s28", "s29", "s30", "s31", "cc", "memory");
        k = d & ~7u;
    }
#endif
#define T(j) ((edgenn_real)a[j] * (edgenn_real)b[j])
    SMO_DOT8_BLOCKS(T, d, k)
    SMO_DOT8_TAIL(T, d, k);
#undef T
    return SMO_DOT8_SUM();
}

#if SMO_DSP
/* halfwords of acc + sign-extended bytes 1 and 3 of x (SXTAB16 with its ROR #8 operand) */
static inline int32_t smo_sxtab16_ror8(int32_t acc, uint32_t x)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(acc), "r"(x));
    return r;
}
#endif

/* sum (a_k - zp)(b_k - zp) of two int8 vectors, exact in int32 (d <= 33,025) */
static inline int32_t smo_dot_s8(const int8_t *a, const int8_t *b, uint32_t d, int32_t zp)
{
    int32_t s0 = 0, s1 = 0;
    uint32_t k = 0;
#if SMO_DSP
    const int32_t nzp = (int32_t)(((uint32_t)(-zp) & 0xFFFFu) * 0x10001u); /* -zp, -zp */
    const int8_t *pa = a, *pb = b;
    const int8_t *const end = a + (d & ~7u);
    while (pa < end) { /* four loads back to back (pipelined), then the arithmetic */
        uint32_t a0, a1, b0, b1;
        memcpy(&a0, pa, 4u);
        memcpy(&a1, pa + 4, 4u);
        memcpy(&b0, pb, 4u);
        memcpy(&b1, pb + 4, 4u);
        pa += 8;
        pb += 8;
        s0 = __smlad(__sxtab16(nzp, (int32_t)a0), __sxtab16(nzp, (int32_t)b0), s0);
        s1 = __smlad(smo_sxtab16_ror8(nzp, a0), smo_sxtab16_ror8(nzp, b0), s1);
        s0 = __smlad(__sxtab16(nzp, (int32_t)a1), __sxtab16(nzp, (int32_t)b1), s0);
        s1 = __smlad(smo_sxtab16_ror8(nzp, a1), smo_sxtab16_ror8(nzp, b1), s1);
    }
    k = d & ~7u;
#else
    for (; k + 4u <= d; k += 4u) {
        s0 += ((int32_t)a[k] - zp) * ((int32_t)b[k] - zp);
        s1 += ((int32_t)a[k + 1u] - zp) * ((int32_t)b[k + 1u] - zp);
        s0 += ((int32_t)a[k + 2u] - zp) * ((int32_t)b[k + 2u] - zp);
        s1 += ((int32_t)a[k + 3u] - zp) * ((int32_t)b[k + 3u] - zp);
    }
#endif
    for (; k < d; k++) {
        s0 += ((int32_t)a[k] - zp) * ((int32_t)b[k] - zp);
    }
    return s0 + s1;
}

/* sum w_k (q_k - zp) of real weights and an int8 vector (the caller scales by `scale`) */
static inline edgenn_real smo_dot_w_s8(const edgenn_real *w, const int8_t *q, uint32_t d,
                                       int32_t zp)
{
    edgenn_real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    uint32_t k = 0;
#define T(j) (w[j] * (edgenn_real)((int32_t)q[j] - zp))
    SMO_DOT8_BLOCKS(T, d, k)
    SMO_DOT8_TAIL(T, d, k);
#undef T
    return SMO_DOT8_SUM();
}

#if SMO_IS_DOUBLE
static inline edgenn_real smo_dot_f64(const double *a, const double *b, uint32_t d)
{
    edgenn_real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    uint32_t k = 0;
#define T(j) (a[j] * b[j])
    SMO_DOT8_BLOCKS(T, d, k)
    SMO_DOT8_TAIL(T, d, k);
#undef T
    return SMO_DOT8_SUM();
}

/* double weights . float samples */
static inline edgenn_real smo_dot_w_f32(const edgenn_real *w, const float *x, uint32_t d)
{
    edgenn_real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    uint32_t k = 0;
#define T(j) (w[j] * (edgenn_real)x[j])
    SMO_DOT8_BLOCKS(T, d, k)
    SMO_DOT8_TAIL(T, d, k);
#undef T
    return SMO_DOT8_SUM();
}
#else
static inline edgenn_real smo_dot_w_f32(const edgenn_real *w, const float *x, uint32_t d)
{
    return smo_dot_f32(w, x, d);
}
#endif

/* sum a_k b_k of two edgenn_real vectors (the portable order; VLDM on Cortex-M4F) */
static inline edgenn_real smo_dot_reals(const edgenn_real *a, const edgenn_real *b, uint32_t d)
{
#if SMO_IS_DOUBLE
    return smo_dot_f64(a, b, d);
#else
    return smo_dot_f32(a, b, d);
#endif
}

#endif /* EDGENN_SMO_DOT_H */
