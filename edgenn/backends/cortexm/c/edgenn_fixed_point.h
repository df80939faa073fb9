/* Fixed-point arithmetic of TFLite Micro (double-rounding build) and gemmlowp, in C.
 * Bit-exact with edgenn/arith/fixed_point.py.
 *
 * The runtime's one copy of the requantization arithmetic: every kernel, portable or DSP,
 * uses these functions (docs/cortexm.md, "C runtime conventions"). The forms the DSP kernels
 * call in their inner loops (edgenn_requant_s32, edgenn_requant_doubled, edgenn_requant_record)
 * are always_inline: those loops are scheduled for the inlined code. */
#ifndef EDGENN_FIXED_POINT_H
#define EDGENN_FIXED_POINT_H

#include <stdint.h>

#include "edgenn_acle.h"

#define EDGENN_INT32_MIN ((int32_t)0x80000000)
#define EDGENN_INT32_MAX ((int32_t)0x7fffffff)

/* gemmlowp SaturatingRoundingDoublingHighMul. The C++ nudge-then-truncating-divide equals
 * an arithmetic shift of (ab + 2^30) for both signs, so no 64-bit division is needed. */
static inline int32_t edgenn_srdhm(int32_t a, int32_t b)
{
    if (a == b && a == EDGENN_INT32_MIN) {
        return EDGENN_INT32_MAX;
    }
    int64_t ab = (int64_t)a * (int64_t)b;
    return (int32_t)((ab + ((int64_t)1 << 30)) >> 31);
}

/* The same for a multiplier known to be non-negative (QuantizeMultiplier's output):
 * the saturating case cannot occur. */
static inline int32_t edgenn_srdhm_pos(int32_t a, int32_t b)
{
    int64_t ab = (int64_t)a * (int64_t)b;
    return (int32_t)((ab + ((int64_t)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: x / 2^e rounded half away from zero (0 <= e <= 31). */
static inline int32_t edgenn_rdbpot(int32_t x, int32_t e)
{
    int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

/* TFLite MultiplyByQuantizedMultiplier(int32 x, multiplier, shift), double rounding. */
static inline int32_t edgenn_mbqm(int32_t x, int32_t multiplier, int32_t shift)
{
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    /* why unsigned: the C++ multiplies by (1 << left) in int32 and wraps */
    int32_t xs = (int32_t)((uint32_t)x << left);
    return edgenn_rdbpot(edgenn_srdhm_pos(xs, multiplier), right);
}

static inline int32_t edgenn_clamp(int32_t v, int32_t lo, int32_t hi)
{
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* Requantize an int32 accumulator to int8: mbqm, + zero point, clamp. */
static inline int8_t edgenn_requant(int32_t acc, int32_t multiplier, int32_t shift,
                                    int32_t out_zp, int32_t lo, int32_t hi)
{
    int32_t v = edgenn_mbqm(acc, multiplier, shift) + out_zp;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return (int8_t)v;
}

/* The same value as int32 (edgenn_requant == (int8_t)edgenn_requant_s32), for the DSP kernels.
 * why written out as one expression rather than through edgenn_mbqm: gcc 12 schedules the
 * kernels' loops around this form differently from the composed one (register allocation and
 * instruction order change in both directions), and the cycle counts are pinned; the two are
 * bit-identical (tests/test_cortexm_*: the kernels against the reference). */
EDGENN_INLINE int32_t edgenn_requant_s32(int32_t acc, int32_t multiplier, int32_t shift,
                                         int32_t out_zp, int32_t lo, int32_t hi)
{
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    int32_t x = (int32_t)((uint32_t)acc << left); /* int32 wrap, as the C++ */
    int32_t high = (int32_t)(((int64_t)x * multiplier + (1LL << 30)) >> 31);
    int32_t mask = (int32_t)((1u << right) - 1u);
    int32_t rem = high & mask;
    int32_t threshold = (mask >> 1) + (high < 0);
    int32_t v = (high >> right) + (rem > threshold) + out_zp;
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* mbqm + out_zp for an accumulator already doubled (weights and bias packed x2), valid only
 * where the generator proved it (kernels/fast_common.py fast_requant_mode): |2 acc| < 2^31,
 * shift is a right shift r >= 1 and half = (1 << (r - 1)) + (out_zp << r). Then
 * SaturatingRoundingDoublingHighMul(acc, m) = (2 acc * m + 2^31) >> 32 = SMMULR(2 acc, m), the
 * rounding divide (ties away from zero) is (high + 2^(r-1) - (high < 0)) >> r, and out_zp << r
 * added before the arithmetic shift adds exactly out_zp after it. The caller clamps (SSAT to
 * int8, then max with lo unless lo == -128). */
EDGENN_INLINE int32_t edgenn_requant_doubled(int32_t acc2, int32_t mult, int32_t rshift,
                                             int32_t half)
{
    int32_t high = edgenn_smmulr(acc2, mult);
    return (high + half + (high >> 31)) >> rshift;
}

/* Requantize with a DSP kernel's per-channel record q = {bias, mult, shift, half}: fast == 0
 * is edgenn_requant_s32; fast == 1 or 2 (the generator proved edgenn_requant_doubled exact and
 * folded out_zp into half; kernels/fast_common.py fast_requant_mode) saturates to int8 and
 * clamps at lo, which fast == 2 (lo == -128) skips. Callers pass fast as a literal, so each
 * specialisation keeps one branch. */
EDGENN_INLINE int32_t edgenn_requant_record(int32_t acc, const int32_t *q, int32_t out_zp,
                                            int32_t lo, int32_t hi, const int32_t fast)
{
    if (fast) {
        int32_t v = edgenn_ssat8(edgenn_requant_doubled(acc, q[1], q[2], q[3]));
        if (fast == 1) {
            v = v < lo ? lo : v;
        }
        return v;
    }
    return edgenn_requant_s32(acc, q[1], q[2], out_zp, lo, hi);
}

/* gemmlowp SaturatingRoundingMultiplyByPOT on raw int32 values. */
static inline int32_t edgenn_srmpot(int32_t x, int32_t exponent)
{
    if (exponent == 0) {
        return x;
    }
    if (exponent < 0) {
        return edgenn_rdbpot(x, -exponent);
    }
    int32_t threshold = (int32_t)(((uint32_t)1 << (31 - exponent)) - 1u);
    if (x > threshold) {
        return EDGENN_INT32_MAX;
    }
    if (x < -threshold) {
        return EDGENN_INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/* gemmlowp RoundingHalfSum of two int32: (a + b) / 2 rounded half away from zero. */
static inline int32_t edgenn_rounding_half_sum(int32_t a, int32_t b)
{
    int64_t s = (int64_t)a + (int64_t)b;
    int64_t sign = s >= 0 ? 1 : -1;
    return (int32_t)((s + sign) / 2);
}

/* gemmlowp one_over_one_plus_x_for_x_in_0_1: Q0.31 in and out. */
static inline int32_t edgenn_one_over_one_plus_x(int32_t a)
{
    int32_t half_denominator = edgenn_rounding_half_sum(a, EDGENN_INT32_MAX);
    int32_t x = 1515870810 + edgenn_srdhm(half_denominator, -1010580540);
    const int32_t one_q2 = 1 << 29;
    for (int i = 0; i < 3; i++) {
        int32_t hdx = edgenn_srdhm(half_denominator, x);
        int32_t one_minus = (int32_t)((uint32_t)one_q2 - (uint32_t)hdx);
        x = (int32_t)((uint32_t)x + (uint32_t)edgenn_srmpot(edgenn_srdhm(x, one_minus), 2));
    }
    return edgenn_srmpot(x, 1);
}

static inline int32_t edgenn_clz32(uint32_t x)
{
    if (x == 0u) {
        return 32;
    }
    return __builtin_clz(x);
}

/* TFLite GetReciprocal: Q0.31 raw of the scaled reciprocal of x > 0, and the bit count. */
static inline int32_t edgenn_get_reciprocal(int32_t x, int32_t x_integer_digits,
                                            int32_t *num_bits_over_unit)
{
    int32_t headroom_plus_one = edgenn_clz32((uint32_t)x);
    *num_bits_over_unit = x_integer_digits - headroom_plus_one;
    uint32_t shifted = headroom_plus_one >= 32 ? 0u : ((uint32_t)x << headroom_plus_one);
    int32_t shifted_sum_minus_one = (int32_t)(shifted - 0x80000000u);
    return edgenn_one_over_one_plus_x(shifted_sum_minus_one);
}

/* TFLite's AffineQuantize step: x / scale (float32 division) rounded half away from zero,
 * saturated to int32 (NaN gives 0); the caller adds the zero point and clamps to its type.
 * Single precision only: q - trunc(q) is exact, so comparing it with 1/2 decides the
 * rounding (no doubles, which some FPUs lack). */
static inline int64_t edgenn_quantize_f32(float x, float scale)
{
    const float q = x / scale;
    if (q != q) {
        return 0;
    }
    if (q >= 2147483647.0f) {
        return 2147483647;
    }
    if (q <= -2147483648.0f) {
        return -2147483647 - 1;
    }
    int32_t t = (int32_t)q;
    const float frac = q - (float)t;
    if (frac >= 0.5f) {
        t++;
    } else if (frac <= -0.5f) {
        t--;
    }
    return t;
}

#endif
