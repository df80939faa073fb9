/* edgenn host kernels: the vector vocabulary every generated kernel is written in.
 *
 * Generated code names a vector width explicitly (LD8, FMA, BC4, ...). With EDGENN_SIMD set
 * the widths are GCC/clang vector extensions, so ONE generated source becomes AVX-512, AVX2
 * or NEON code depending only on the -m flags it is compiled with (the compiler lowers a
 * width the target lacks into several registers). Without it (the portable fallback) the
 * generator emits width 1 only, and width 1 is a plain float: ISO C, any compiler.
 *
 * why unaligned types: packed weights are 64-byte aligned but activations and row pointers
 * (im2col rows, indirect pointers, channel offsets) are not; unaligned vector loads cost
 * nothing extra on the targets we care about when the data happens to be aligned.
 */
#ifndef EDGENN_HOST_VEC_H
#define EDGENN_HOST_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EV_RESTRICT __restrict__

/* width 1: plain floats (the portable fallback and scalar tails) */
typedef float ev1;
#define LD1(p) (*(p))
#define ST1(p, v) (*(p) = (v))
#define BC1(x) ((float)(x))
#define MAX1(a, b) ((a) > (b) ? (a) : (b))
#define MIN1(a, b) ((a) < (b) ? (a) : (b))

#if EDGENN_SIMD
typedef float ev4 __attribute__((vector_size(16)));
typedef float ev8 __attribute__((vector_size(32)));
typedef float ev16 __attribute__((vector_size(64)));
typedef float ev4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef float ev8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float ev16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t ei4 __attribute__((vector_size(16)));
typedef int32_t ei8 __attribute__((vector_size(32)));
typedef int32_t ei16 __attribute__((vector_size(64)));

#define LD4(p) (*(const ev4u *)(p))
#define LD8(p) (*(const ev8u *)(p))
#define LD16(p) (*(const ev16u *)(p))
#define ST4(p, v) (*(ev4u *)(p) = (v))
#define ST8(p, v) (*(ev8u *)(p) = (v))
#define ST16(p, v) (*(ev16u *)(p) = (v))
#define BC4(x) (__extension__({ float x_ = (x); (ev4){x_, x_, x_, x_}; }))
#define BC8(x) (__extension__({ float x_ = (x); (ev8){x_, x_, x_, x_, x_, x_, x_, x_}; }))
#define BC16(x) (__extension__({ float x_ = (x); \
    (ev16){x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_, x_}; }))
/* why a mask blend: C (unlike C++) has no vector ?:, and the blend compiles to max/min */
#define EV_SEL(T, I, m, a, b) ((T)(((I)(m) & (I)(a)) | (~(I)(m) & (I)(b))))
#define MAX4(a, b) (__extension__({ ev4 a_ = (a), b_ = (b); EV_SEL(ev4, ei4, a_ > b_, a_, b_); }))
#define MAX8(a, b) (__extension__({ ev8 a_ = (a), b_ = (b); EV_SEL(ev8, ei8, a_ > b_, a_, b_); }))
#define MAX16(a, b) (__extension__({ ev16 a_ = (a), b_ = (b); \
    EV_SEL(ev16, ei16, a_ > b_, a_, b_); }))
#define MIN4(a, b) (__extension__({ ev4 a_ = (a), b_ = (b); EV_SEL(ev4, ei4, a_ < b_, a_, b_); }))
#define MIN8(a, b) (__extension__({ ev8 a_ = (a), b_ = (b); EV_SEL(ev8, ei8, a_ < b_, a_, b_); }))
#define MIN16(a, b) (__extension__({ ev16 a_ = (a), b_ = (b); \
    EV_SEL(ev16, ei16, a_ < b_, a_, b_); }))
#define EV_LO4(v) (__builtin_shufflevector((v), (v), 0, 1, 2, 3))

/* Transpose 8 vectors of 8 in place (r[i][j] -> r[j][i]): unpack pairs, then pairs of
 * pairs, then 128-bit halves; GCC/clang lower it to unpcklps/shufps/vperm2f128 on AVX. */
static inline void ev_transpose8(ev8 *r) {
    const ev8 t0 = __builtin_shufflevector(r[0], r[1], 0, 8, 1, 9, 4, 12, 5, 13);
    const ev8 t1 = __builtin_shufflevector(r[0], r[1], 2, 10, 3, 11, 6, 14, 7, 15);
    const ev8 t2 = __builtin_shufflevector(r[2], r[3], 0, 8, 1, 9, 4, 12, 5, 13);
    const ev8 t3 = __builtin_shufflevector(r[2], r[3], 2, 10, 3, 11, 6, 14, 7, 15);
    const ev8 t4 = __builtin_shufflevector(r[4], r[5], 0, 8, 1, 9, 4, 12, 5, 13);
    const ev8 t5 = __builtin_shufflevector(r[4], r[5], 2, 10, 3, 11, 6, 14, 7, 15);
    const ev8 t6 = __builtin_shufflevector(r[6], r[7], 0, 8, 1, 9, 4, 12, 5, 13);
    const ev8 t7 = __builtin_shufflevector(r[6], r[7], 2, 10, 3, 11, 6, 14, 7, 15);
    const ev8 u0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    const ev8 u1 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    const ev8 u2 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    const ev8 u3 = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
    const ev8 u4 = __builtin_shufflevector(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
    const ev8 u5 = __builtin_shufflevector(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
    const ev8 u6 = __builtin_shufflevector(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
    const ev8 u7 = __builtin_shufflevector(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
    r[0] = __builtin_shufflevector(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11);
    r[1] = __builtin_shufflevector(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11);
    r[2] = __builtin_shufflevector(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11);
    r[3] = __builtin_shufflevector(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11);
    r[4] = __builtin_shufflevector(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15);
    r[5] = __builtin_shufflevector(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15);
    r[6] = __builtin_shufflevector(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15);
    r[7] = __builtin_shufflevector(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15);
}
#endif

/* c += a * b; contracted to one fused multiply-add by -ffp-contract=fast where the target
 * has FMA (every width above shares the operator syntax) */
#define FMA(c, a, b) ((c) += (a) * (b))

static inline int ev_min_i(int a, int b) { return a < b ? a : b; }
static inline int ev_max_i(int a, int b) { return a > b ? a : b; }

#endif
