/* Dual 16-bit MACs and the epilogues of TFLite's 16x8 scheme (int16 activations, int8
 * weights), shared by the int16 convolution, depthwise, dense and transposed-convolution
 * kernels. Bit-exact with edgenn/backends/ref/kernels/fixed_point_s16.py.
 *
 * Weight order ("pair order"): every run of 4 int8 weights w0 w1 w2 w3 along the summed axis
 * is stored as the bytes w0 w2 w1 w3, so SXTB16 of the word gives the int16 pair (w0, w1) and
 * SXTB16 ROR 8 gives (w2, w3): the pairs line up with the int16 input words (x0, x1) and
 * (x2, x3), and one SMLAD adds x0 w0 + x1 w1. A tail of fewer than 4 stays in plain order.
 * |x * w| <= 2^22, so each product is exact; the sums wrap modulo 2^32 in an int32 accumulator
 * (TFLite Micro's int32 path, or an int64 sum the generator proved fits) or are exact in
 * int64 with SMLALD.
 *
 * Accumulation modes (chosen per layer at generation time, kernels/conv_s16.py):
 *   EDGENN_S16_NARROW   int32 sum + int32 bias, 32-bit double-rounding rescale (an int32 bias)
 *   EDGENN_S16_WIDE32   int32 sum (provably no overflow), + int64 bias, 64-bit rescale
 *   EDGENN_S16_WIDE64   int64 sum (SMLALD), + int64 bias, 64-bit rescale
 * In the wide modes `mult` holds the 16-bit reduced multipliers, `shift` 15 - shift and the
 * int64 `bias` the folded bias_r of edgenn_s16_shift64; in the narrow mode `bias` holds the
 * int32 bias. */
#ifndef EDGENN_CONV_S16_MAC_H
#define EDGENN_CONV_S16_MAC_H

#include <stdint.h>

#include "edgenn_acle.h"
#include "edgenn_fixed_point.h"

#define EDGENN_S16_NARROW 0
#define EDGENN_S16_WIDE32 1
#define EDGENN_S16_WIDE64 2

#define EDGENN_S16_INLINE static inline __attribute__((always_inline))

/* unaligned 32-bit load (LDR takes unaligned addresses on ARMv7-M) */
EDGENN_S16_INLINE uint32_t edgenn_s16_load32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* wrapping int32 addition (TFLite Micro's int32 sums wrap; signed overflow is UB in C) */
EDGENN_S16_INLINE int32_t edgenn_s16_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* sums of x[i] * w0[i] and x[i] * w1[i] (pair order) added to *a0, *a1 in wrapping int32:
 * each input word is loaded once for both rows; 8 values per iteration */
EDGENN_S16_INLINE void edgenn_s16_dot32x2(const int16_t *x, const int8_t *w0, const int8_t *w1,
                                          int32_t n, int32_t *a0, int32_t *a1)
{
    int32_t s0 = *a0, s1 = *a1, i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint32_t x01 = edgenn_s16_load32(x + i), x23 = edgenn_s16_load32(x + i + 2);
        const uint32_t x45 = edgenn_s16_load32(x + i + 4), x67 = edgenn_s16_load32(x + i + 6);
        const uint32_t p = edgenn_s16_load32(w0 + i), q = edgenn_s16_load32(w1 + i);
        const uint32_t p2 = edgenn_s16_load32(w0 + i + 4), q2 = edgenn_s16_load32(w1 + i + 4);
        s0 = edgenn_smlad(x01, edgenn_sxtb16(p), s0);
        s1 = edgenn_smlad(x01, edgenn_sxtb16(q), s1);
        s0 = edgenn_smlad(x23, edgenn_sxtb16_ror8(p), s0);
        s1 = edgenn_smlad(x23, edgenn_sxtb16_ror8(q), s1);
        s0 = edgenn_smlad(x45, edgenn_sxtb16(p2), s0);
        s1 = edgenn_smlad(x45, edgenn_sxtb16(q2), s1);
        s0 = edgenn_smlad(x67, edgenn_sxtb16_ror8(p2), s0);
        s1 = edgenn_smlad(x67, edgenn_sxtb16_ror8(q2), s1);
    }
    if (i + 4 <= n) {
        const uint32_t x01 = edgenn_s16_load32(x + i), x23 = edgenn_s16_load32(x + i + 2);
        const uint32_t p = edgenn_s16_load32(w0 + i), q = edgenn_s16_load32(w1 + i);
        s0 = edgenn_smlad(x01, edgenn_sxtb16(p), s0);
        s1 = edgenn_smlad(x01, edgenn_sxtb16(q), s1);
        s0 = edgenn_smlad(x23, edgenn_sxtb16_ror8(p), s0);
        s1 = edgenn_smlad(x23, edgenn_sxtb16_ror8(q), s1);
        i += 4;
    }
    for (; i < n; i++) {
        s0 = edgenn_s16_add(s0, (int32_t)x[i] * (int32_t)w0[i]);
        s1 = edgenn_s16_add(s1, (int32_t)x[i] * (int32_t)w1[i]);
    }
    *a0 = s0;
    *a1 = s1;
}

/* the same with exact int64 sums (SMLALD: both products added to a 64-bit accumulator) */
EDGENN_S16_INLINE void edgenn_s16_dot64x2(const int16_t *x, const int8_t *w0, const int8_t *w1,
                                          int32_t n, int64_t *a0, int64_t *a1)
{
    int64_t s0 = *a0, s1 = *a1;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32_t x01 = edgenn_s16_load32(x + i), x23 = edgenn_s16_load32(x + i + 2);
        const uint32_t p = edgenn_s16_load32(w0 + i), q = edgenn_s16_load32(w1 + i);
        s0 = edgenn_smlald(x01, edgenn_sxtb16(p), s0);
        s1 = edgenn_smlald(x01, edgenn_sxtb16(q), s1);
        s0 = edgenn_smlald(x23, edgenn_sxtb16_ror8(p), s0);
        s1 = edgenn_smlald(x23, edgenn_sxtb16_ror8(q), s1);
    }
    for (; i < n; i++) {
        s0 += (int32_t)x[i] * (int32_t)w0[i];
        s1 += (int32_t)x[i] * (int32_t)w1[i];
    }
    *a0 = s0;
    *a1 = s1;
}

/* TFLite's MultiplyByQuantizedMultiplier(int64_t x, ...) of x = acc + bias: with the multiplier
 * reduced to 16 bits (`reduced`), total = 15 - shift (1 .. 46) and the generator's
 * bias_r = bias * reduced + 2^(total - 1), it is (acc * reduced + bias_r) >> total truncated
 * to int32, as the C++ assigns it (the products distribute modulo 2^64, so folding the bias
 * and the rounding term is exact). One SMLAL for an int32 acc, then a split 64-bit shift. */
EDGENN_S16_INLINE int32_t edgenn_s16_shift64(uint64_t r, int32_t total)
{
    const uint32_t lo = (uint32_t)r;
    const int32_t hi = (int32_t)(uint32_t)(r >> 32);
    if (total < 32) { /* the low word of r >> total */
        return (int32_t)((lo >> total) | ((uint32_t)hi << (32 - total)));
    }
    return hi >> (total - 32);
}

EDGENN_S16_INLINE int16_t edgenn_s16_clamp(int32_t v, int32_t lo, int32_t hi)
{
    v = v < lo ? lo : v;
    return (int16_t)(v > hi ? hi : v);
}

/* the epilogue of a narrow sum: + int32 bias (wrapping), 32-bit rescale, clamp */
EDGENN_S16_INLINE int16_t edgenn_s16_out32(int32_t acc, int64_t bias, int32_t mult,
                                           int32_t shift, int32_t lo, int32_t hi)
{
    return edgenn_s16_clamp(edgenn_mbqm(edgenn_s16_add(acc, (int32_t)bias), mult, shift), lo, hi);
}

/* the epilogue of a wide sum; bias_r as edgenn_s16_shift64 says */
EDGENN_S16_INLINE int16_t edgenn_s16_out64(int64_t acc, int64_t bias_r, int32_t reduced,
                                           int32_t total, int32_t lo, int32_t hi)
{
    const uint64_t r = (uint64_t)acc * (uint64_t)(int64_t)reduced + (uint64_t)bias_r;
    return edgenn_s16_clamp(edgenn_s16_shift64(r, total), lo, hi);
}

/* the same for an int32 sum: one SMLAL */
EDGENN_S16_INLINE int16_t edgenn_s16_out64_32(int32_t acc, int64_t bias_r, int32_t reduced,
                                              int32_t total, int32_t lo, int32_t hi)
{
    const uint64_t r = (uint64_t)((int64_t)acc * reduced) + (uint64_t)bias_r;
    return edgenn_s16_clamp(edgenn_s16_shift64(r, total), lo, hi);
}

/* any mode's epilogue for an accumulator held as int64 */
EDGENN_S16_INLINE int16_t edgenn_s16_out(int64_t acc, int64_t bias, int32_t mult, int32_t shift,
                                         int32_t lo, int32_t hi, int32_t mode)
{
    if (mode == EDGENN_S16_NARROW) {
        return edgenn_s16_out32((int32_t)acc, bias, mult, shift, lo, hi);
    }
    if (mode == EDGENN_S16_WIDE32) {
        return edgenn_s16_out64_32((int32_t)acc, bias, mult, shift, lo, hi);
    }
    return edgenn_s16_out64(acc, bias, mult, shift, lo, hi);
}

/* A gathering kernel's per-pixel list of tap runs: (input offset, weight offset, length)
 * triples. A tap that continues the previous run in both the input and the weights extends
 * it (a full window row of a convolution with groups 1 and no dilation is one run of
 * KW * Cin values); `merge` is 0 when runs must keep tap boundaries (the pair order of the
 * weights restarts at each tap unless the tap length is a multiple of 4). */
EDGENN_S16_INLINE int32_t edgenn_s16_add_tap(int32_t *runs, int32_t n, int32_t x_off,
                                             int32_t w_off, int32_t len, int32_t merge)
{
    if (merge && n > 0) {
        int32_t *last = runs + 3 * (n - 1);
        if (last[0] + last[2] == x_off && last[1] + last[2] == w_off) {
            last[2] += len;
            return n;
        }
    }
    runs[3 * n] = x_off;
    runs[3 * n + 1] = w_off;
    runs[3 * n + 2] = len;
    return n + 1;
}

/* One output pixel of a gathering kernel: for each output channel, the sum over the pixel's
 * tap runs (`runs`, `n` of them) of x * w, then the epilogue. Weights are [out_c][w_stride];
 * channels of group g read the input from g * group_c on. Two channels at a time. */
EDGENN_S16_INLINE void edgenn_s16_pixel(const int16_t *in, int16_t *op, const int8_t *w,
                                        const int64_t *bias, const int32_t *mult,
                                        const int32_t *shift, const int32_t *runs, int32_t n,
                                        int32_t group_c, int32_t out_c, int32_t groups,
                                        int32_t w_stride, int32_t lo, int32_t hi, int32_t mode)
{
    const int32_t cog = out_c / groups;
    for (int32_t g = 0; g < groups; g++) {
        const int16_t *xg = in + g * group_c;
        const int32_t end = (g + 1) * cog;
        for (int32_t c = g * cog; c < end; c += 2) {
            const int32_t two = c + 1 < end;
            const int8_t *w0 = w + c * w_stride;
            const int8_t *w1 = two ? w0 + w_stride : w0;
            int64_t a0, a1;
            if (mode == EDGENN_S16_WIDE64) {
                a0 = 0, a1 = 0;
                for (int32_t t = 0; t < n; t++) {
                    const int32_t *r = runs + 3 * t;
                    edgenn_s16_dot64x2(xg + r[0], w0 + r[1], w1 + r[1], r[2], &a0, &a1);
                }
            } else {
                int32_t s0 = 0, s1 = 0;
                for (int32_t t = 0; t < n; t++) {
                    const int32_t *r = runs + 3 * t;
                    edgenn_s16_dot32x2(xg + r[0], w0 + r[1], w1 + r[1], r[2], &s0, &s1);
                }
                a0 = s0, a1 = s1;
            }
            op[c] = edgenn_s16_out(a0, bias[c], mult[c], shift[c], lo, hi, mode);
            if (two) {
                op[c + 1] = edgenn_s16_out(a1, bias[c + 1], mult[c + 1], shift[c + 1], lo, hi,
                                           mode);
            }
        }
    }
}

#endif
