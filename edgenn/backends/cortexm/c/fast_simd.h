/* SIMD helpers of the fast_* kernels. The intrinsics come from edgenn_acle.h: ACLE on
 * ARMv7E-M, plain C with identical results on any other host (so the kernels build with the
 * host gcc for ctypes tests against the reference). */
#ifndef FAST_SIMD_H
#define FAST_SIMD_H

#include <stdint.h>

#include "edgenn_acle.h"

#define FAST_INLINE static inline __attribute__((always_inline))
#define FAST_HAVE_DSP EDGENN_HAVE_DSP

/* the fast_* kernels' names for the shared intrinsics of edgenn_acle.h (generated code uses
 * them too) */
FAST_INLINE int32_t fast_smlad(uint32_t x, uint32_t y, int32_t acc)
{
    return edgenn_smlad(x, y, acc);
}
FAST_INLINE uint32_t fast_sxtb16(uint32_t x) { return edgenn_sxtb16(x); }
/* sign-extend bytes 1 and 3 (one SXTB16 with ROR #8 on DSP cores) */
FAST_INLINE uint32_t fast_sxtb16_ror8(uint32_t x) { return edgenn_sxtb16_ror8(x); }
FAST_INLINE int32_t fast_ssat8(int32_t v) { return edgenn_ssat(v, 8); }
/* (a * b + 2^31) >> 32 */
FAST_INLINE int32_t fast_smmulr(int32_t a, int32_t b) { return edgenn_smmulr(a, b); }
/* per signed byte max (SSUB8 + SEL on DSP cores) */
FAST_INLINE uint32_t fast_max4(uint32_t a, uint32_t b) { return edgenn_max_s8x4(a, b); }

/* unaligned 32-bit load / store (LDR/STR allow unaligned addresses on ARMv7-M) */
FAST_INLINE uint32_t fast_load32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
FAST_INLINE void fast_store32(void *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }

/* TFLite's double-rounding MultiplyByQuantizedMultiplier(acc, mult, shift) + out_zp, clamped:
 * bit-exact with edgenn/arith/fixed_point.py (mult >= 0, so the saturating case
 * of SaturatingRoundingDoublingHighMul cannot occur). */
FAST_INLINE int32_t fast_requant(int32_t acc, int32_t mult, int32_t shift, int32_t out_zp,
                                 int32_t lo, int32_t hi)
{
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    int32_t x = (int32_t)((uint32_t)acc << left); /* int32 wrap, as the C++ */
    int32_t high = (int32_t)(((int64_t)x * mult + (1LL << 30)) >> 31);
    int32_t mask = (int32_t)((1u << right) - 1u);
    int32_t rem = high & mask;
    int32_t threshold = (mask >> 1) + (high < 0);
    int32_t v = (high >> right) + (rem > threshold) + out_zp;
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* The same for an accumulator already doubled (weights and bias packed x2), valid only when
 * the generator proved it (kernels/fast_common.py fast_requant_mode): shift is a right shift
 * r >= 1 and half = (1 << (r - 1)) + (out_zp << r), so
 * SaturatingRoundingDoublingHighMul(acc, m) = SMMULR(2 acc, m), the rounding divide (ties away
 * from zero) is (high + 2^(r-1) - (high < 0)) >> r, and out_zp << r added before the shift adds
 * out_zp after it. The caller clamps (SSAT to int8, then max with lo unless lo == -128). */
FAST_INLINE int32_t fast_requant2(int32_t acc2, int32_t mult, int32_t rshift, int32_t half)
{
    int32_t high = fast_smmulr(acc2, mult);
    return (high + half + (high >> 31)) >> rshift;
}

#endif
