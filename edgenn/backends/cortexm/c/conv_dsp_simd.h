/* SIMD helpers for the conv_dsp_* kernels: ACLE on ARMv7E-M, plain C on any other host.
 *
 * Why a private header: the kernels must build on the host (gcc + ctypes tests against the
 * numpy reference) with exactly the arithmetic the DSP instructions perform on the core.
 */
#ifndef CONV_DSP_SIMD_H
#define CONV_DSP_SIMD_H

#include <stdint.h>

/* SMLAD, SXTB16, SSAT, SMMULR and their plain-C twins are shared with the fast_* kernels. */
#include "fast_simd.h"

#define CDSP_INLINE FAST_INLINE

CDSP_INLINE uint32_t cdsp_load32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* TFLite's double-rounding MultiplyByQuantizedMultiplier(acc, mult, shift), bit-exact with
 * edgenn/arith/fixed_point.py. mult >= 0 (QuantizeMultiplier gives [2^30, 2^31)
 * or 0), so the SaturatingRoundingDoublingHighMul saturation case cannot occur. */
CDSP_INLINE int32_t cdsp_requant(int32_t acc, int32_t mult, int32_t shift)
{
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    int32_t x = (int32_t)((uint32_t)acc << left); /* int32 wrap, as the C++ */
    int32_t high = (int32_t)(((int64_t)x * mult + (1LL << 30)) >> 31);
    int32_t mask = (int32_t)((1u << right) - 1u);
    int32_t rem = high & mask;
    int32_t threshold = (mask >> 1) + (high < 0);
    return (high >> right) + (rem > threshold);
}

/* The same plus the output zero point, for an accumulator already doubled (weights and bias
 * packed x2); valid when the generator proved |2 acc| < 2^31, shift <= -1 (rshift = -shift)
 * and no overflow below; half = (1 << (rshift - 1)) + (out_zp << rshift):
 * SaturatingRoundingDoublingHighMul(acc, m) = (2 acc * m + 2^31) >> 32 = SMMULR(2 acc, m);
 * the rounding divide (ties away from zero) is (high + 2^(r-1) + (high < 0 ? -1 : 0)) >> r,
 * and adding out_zp << r before the arithmetic shift adds exactly out_zp after it. */
CDSP_INLINE int32_t cdsp_requant_fast(int32_t acc2, int32_t mult, int32_t rshift, int32_t half)
{
    int32_t high = fast_smmulr(acc2, mult);
    return (high + half + (high >> 31)) >> rshift;
}

#endif
