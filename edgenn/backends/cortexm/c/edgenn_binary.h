/* Element-wise binary operators of TFLite Micro, one element at a time, bit-exact with
 * edgenn/backends/ref/kernels/binary.py. Stored int8 / int16 values come in widened to
 * int32; the result is clamped to [lo, hi] (the output type's range or a fused activation's).
 *
 * The broadcasting loops are generated per layer (kernels/binary.py) and call these with the
 * layer's constants as literals, so the compiler folds them. */
#ifndef EDGENN_BINARY_H
#define EDGENN_BINARY_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

/* TFLM ADD / SUB (int8 left shift 20, int16 15): each input rescaled to twice the larger
 * input scale, then summed or subtracted and rescaled to the output. */
static inline int32_t edgenn_addsub_q(int32_t a, int32_t b, int32_t subtract,
                                      int32_t left_shift, int32_t a_zp, int32_t a_mult,
                                      int32_t a_shift, int32_t b_zp, int32_t b_mult,
                                      int32_t b_shift, int32_t out_mult, int32_t out_shift,
                                      int32_t out_zp, int32_t lo, int32_t hi)
{
    const int32_t sa = edgenn_mbqm((a - a_zp) * (1 << left_shift), a_mult, a_shift);
    const int32_t sb = edgenn_mbqm((b - b_zp) * (1 << left_shift), b_mult, b_shift);
    const int32_t raw = subtract ? sa - sb : sa + sb;
    return edgenn_clamp(edgenn_mbqm(raw, out_mult, out_shift) + out_zp, lo, hi);
}

/* TFLM MUL: the zero-point-corrected product (|.| <= 2^30 for int16) rescaled. */
static inline int32_t edgenn_mul_q(int32_t a, int32_t b, int32_t a_zp, int32_t b_zp,
                                   int32_t mult, int32_t shift, int32_t out_zp, int32_t lo,
                                   int32_t hi)
{
    return edgenn_clamp(edgenn_mbqm((a - a_zp) * (b - b_zp), mult, shift) + out_zp, lo, hi);
}

/* TFLite CountLeadingSignBits of an int32 (31 for 0 and -1). */
static inline int32_t edgenn_clrsb32(int32_t x)
{
    return edgenn_clz32((uint32_t)(x >= 0 ? x : ~x)) - 1;
}

/* gemmlowp RoundingDivideByPOT for 0 <= e <= 63 as TFLM's x86 build computes it: beyond 31
 * its mask (1ll << e) - 1 truncates to int32 -1 and the shift count is taken modulo 32. */
static inline int32_t edgenn_rdbpot_wide(int32_t x, int32_t e)
{
    if (e <= 31) {
        return edgenn_rdbpot(x, e);
    }
    return (x >> (e & 31)) + (x >= 0 ? 1 : 0);
}

/* TFLM int8 DIV: the divisor's 31-bit reciprocal (signs moved to the dividend), the dividend
 * shifted to its headroom, one rescale and the combined shift. A divisor equal to its zero
 * point gives what TFLM's x86 build gives (GetReciprocal(0)). */
static inline int32_t edgenn_div_q(int32_t a, int32_t b, int32_t a_zp, int32_t b_zp,
                                   int32_t mult, int32_t shift, int32_t out_zp, int32_t lo,
                                   int32_t hi)
{
    int32_t num = a - a_zp;
    int32_t den = b - b_zp;
    if (den < 0) {
        num = -num;
        den = -den;
    }
    int32_t recip_shift;
    const int32_t inv = edgenn_get_reciprocal(den, 31, &recip_shift);
    const int32_t headroom = edgenn_clrsb32(num);
    /* why unsigned: MultiplyByQuantizedMultiplierGreaterThanOne shifts in int32 */
    const int32_t quotient = edgenn_srdhm((int32_t)((uint32_t)num << headroom), inv);
    const int32_t right = headroom + recip_shift - shift;
    return edgenn_clamp(edgenn_rdbpot_wide(edgenn_srdhm_pos(quotient, mult), right) + out_zp,
                        lo, hi);
}

/* TFLM SQUARED_DIFFERENCE (int8 left shift 7, int16 0): the inputs rescaled as for SUB, the
 * difference squared in int32 (no overflow for either shift) and rescaled. */
static inline int32_t edgenn_sqdiff_q(int32_t a, int32_t b, int32_t left_shift, int32_t a_zp,
                                      int32_t a_mult, int32_t a_shift, int32_t b_zp,
                                      int32_t b_mult, int32_t b_shift, int32_t out_mult,
                                      int32_t out_shift, int32_t out_zp, int32_t lo, int32_t hi)
{
    const int32_t sa = edgenn_mbqm((a - a_zp) * (1 << left_shift), a_mult, a_shift);
    const int32_t sb = edgenn_mbqm((b - b_zp) * (1 << left_shift), b_mult, b_shift);
    const int32_t d = sa - sb;
    return edgenn_clamp(edgenn_mbqm(d * d, out_mult, out_shift) + out_zp, lo, hi);
}

/* TFLM PRELU: x rescaled where x >= its zero point, else x * alpha rescaled. */
static inline int32_t edgenn_prelu_q(int32_t x, int32_t alpha, int32_t x_zp, int32_t alpha_zp,
                                     int32_t pos_mult, int32_t pos_shift, int32_t neg_mult,
                                     int32_t neg_shift, int32_t out_zp, int32_t lo, int32_t hi)
{
    const int32_t v = x - x_zp;
    const int32_t r = v >= 0 ? edgenn_mbqm(v, pos_mult, pos_shift)
                             : edgenn_mbqm(v * (alpha - alpha_zp), neg_mult, neg_shift);
    return edgenn_clamp(r + out_zp, lo, hi);
}

/* TFLM MAXIMUM / MINIMUM: the stored values compared (one quantization for all). */
static inline int32_t edgenn_max_q(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static inline int32_t edgenn_min_q(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

#endif
