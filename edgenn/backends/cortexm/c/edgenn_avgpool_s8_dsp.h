/* Fast int8 AvgPool2D (and Mean over H, W) for ARMv7E-M (Cortex-M4/M7), bit-exact with TFLite
 * Micro.
 *
 * Window sums 4 channels per 32-bit load: SXTAB16 adds bytes 0 and 2 (and, with ROR #8,
 * bytes 1 and 3) into two 16-bit lanes, 16 channels per pass in 8 registers, at most 256
 * taps per pass (|sum| <= 256 * 128 fits a lane); row pointers advance by constant steps.
 * The average is TFLite's division rounding half away from zero, done without a divide: for
 * a window of n taps the generator (kernels/pool_simd.py) proves, over every possible sum,
 *     round_half_away(s / n) = umulhi(s + bias[n] + (s < 0 ? fix[n] : 0), magic[n]) - 256
 * with bias = n / 2 + 256 n (the sum made non-negative) and fix = -1 for even n (ties of a
 * negative sum go toward zero after the floor), and passes one {taps, magic, bias, fix}
 * record per window size that occurs. Windows of at most 256 taps are summed in registers and
 * written straight to the output; larger ones in passes through an int32 scratch row.
 */
#ifndef EDGENN_AVGPOOL_S8_DSP_H
#define EDGENN_AVGPOOL_S8_DSP_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

#define POOL_SIMD_OFFSET 256 /* the bias offset, in units of the window size */
#define POOL_SIMD_MAX_PASS 256 /* taps summed in 16-bit lanes before a flush */

/* records: int32 [][4] = {taps, magic, bias, fix}, one per window size that occurs (the
 * kernel searches them); sums: int32 scratch [c], used only for windows of more than
 * POOL_SIMD_MAX_PASS taps (may be NULL otherwise).
 * why not edgenn_avgpool_s8's argument list: the division is replaced by the generator's
 * proven multiply records, computed at generation time (a run-time search would cost
 * cycles). */
void edgenn_avgpool_s8_dsp(const int8_t *in, int8_t *out, int32_t *sums, int32_t in_h, int32_t in_w,
                           int32_t c, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                           int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                           const int32_t *records, int32_t act_min, int32_t act_max);

/* -- the global average pool (one window covering the whole input, <= 256 taps) and Mean over
 * H and W, expanded in a function generated per layer so that the channel count, tap count
 * and the division / requantization constants are immediates -- */

EDGENN_INLINE uint32_t ps_sxtab16(uint32_t acc, uint32_t x) { return edgenn_sxtab16(acc, x); }
/* SXTAB16 with its ROR #8 operand on DSP cores (gcc emits a separate ROR for the ACLE form) */
EDGENN_INLINE uint32_t ps_sxtab16_ror8(uint32_t acc, uint32_t x)
{
    return edgenn_sxtab16_ror8(acc, x);
}

/* four words at p + off, p + off + 4, ...: back to back, so the loads pipeline (gcc would
 * spread them between the SXTAB16s, 2 cycles each); off is a constant below 4084 */
#if EDGENN_HAVE_DSP
EDGENN_INLINE void ps_load4(const int8_t *p, const int32_t off, uint32_t *w0, uint32_t *w1,
                            uint32_t *w2, uint32_t *w3)
{
    uint32_t a, b, c, d;
    __asm__("ldr %0, [%4, #%c5]\n\t"
            "ldr %1, [%4, #%c5 + 4]\n\t"
            "ldr %2, [%4, #%c5 + 8]\n\t"
            "ldr %3, [%4, #%c5 + 12]"
            : "=&r"(a), "=&r"(b), "=&r"(c), "=r"(d)
            : "r"(p), "n"(off), "m"(*(const uint8_t(*)[16])(p + off)));
    *w0 = a;
    *w1 = b;
    *w2 = c;
    *w3 = d;
}
#else
EDGENN_INLINE void ps_load4(const int8_t *p, const int32_t off, uint32_t *w0, uint32_t *w1,
                            uint32_t *w2, uint32_t *w3)
{
    *w0 = edgenn_load32(p + off);
    *w1 = edgenn_load32(p + off + 4);
    *w2 = edgenn_load32(p + off + 8);
    *w3 = edgenn_load32(p + off + 12);
}
#endif

/* the average of one sum, plus POOL_SIMD_OFFSET (dropped by the byte store / pack) */
EDGENN_INLINE int32_t ps_avg(int32_t s, uint32_t magic, int32_t bias, int32_t fix)
{
    const uint32_t x = (uint32_t)(s + bias + ((s >> 31) & fix));
    return (int32_t)(((uint64_t)x * magic) >> 32);
}

EDGENN_INLINE int32_t ps_act(int32_t v, int32_t lo, int32_t hi)
{
    v -= POOL_SIMD_OFFSET;
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* How a channel sum becomes the output byte: the average (magic, bias, fix; act clamps to
 * [lo, hi]), or, for Mean, TFLite's requantization of sum - in_zp * taps (offset). */
typedef struct {
    uint32_t magic;
    int32_t bias, fix, act, lo, hi;
    int32_t mean, offset, mult, shift, out_zp;
} ps_final_t;

EDGENN_INLINE int32_t ps_final(int32_t s, const ps_final_t f)
{
    if (f.mean) {
        return edgenn_requant_s32(s - f.offset, f.mult, f.shift, f.out_zp, -128, 127);
    }
    const int32_t v = ps_avg(s, f.magic, f.bias, f.fix);
    return f.act ? ps_act(v, f.lo, f.hi) : v;
}

/* w with bits [lsb, lsb + 8) replaced by v's low byte (BFI: gcc builds it from AND / ORR) */
#if EDGENN_HAVE_DSP
#define PS_BFI8(W, V, LSB) __asm__("bfi %0, %1, #" #LSB ", #8" : "+r"(W) : "r"(V))
#else
#define PS_BFI8(W, V, LSB) ((W) = ((W) & ~(0xFFu << (LSB))) | (((uint32_t)(V) & 0xFFu) << (LSB)))
#endif

/* 4 outputs from an even-lane and an odd-lane accumulator, packed into one word (only the low
 * byte of each output matters, so the first one is the base of the word) */
EDGENN_INLINE uint32_t ps_pack4(uint32_t e, uint32_t o, const ps_final_t f)
{
    uint32_t w = (uint32_t)ps_final((int16_t)e, f);
    PS_BFI8(w, ps_final((int16_t)o, f), 8);
    PS_BFI8(w, ps_final((int32_t)e >> 16, f), 16);
    PS_BFI8(w, ps_final((int32_t)o >> 16, f), 24);
    return w;
}

/* in: [taps][c] int8; out: [c]. All but the pointers are compile-time constants. */
EDGENN_INLINE void ps_global_pool(const int8_t *in, int8_t *out, const int32_t c,
                                  const int32_t taps, const ps_final_t f)
{
    int32_t ch = 0;
    for (; ch + 16 <= c; ch += 16) {
        const int8_t *p = in + ch;
        uint32_t e0 = 0, o0 = 0, e1 = 0, o1 = 0, e2 = 0, o2 = 0, e3 = 0, o3 = 0;
#define PS_TAP16(P, OFF)                                                                       \
    do {                                                                                       \
        uint32_t w0, w1, w2, w3;                                                               \
        ps_load4(P, OFF, &w0, &w1, &w2, &w3);                                                  \
        e0 = ps_sxtab16(e0, w0);                                                               \
        o0 = ps_sxtab16_ror8(o0, w0);                                                          \
        e1 = ps_sxtab16(e1, w1);                                                               \
        o1 = ps_sxtab16_ror8(o1, w1);                                                          \
        e2 = ps_sxtab16(e2, w2);                                                               \
        o2 = ps_sxtab16_ror8(o2, w2);                                                          \
        e3 = ps_sxtab16(e3, w3);                                                               \
        o3 = ps_sxtab16_ror8(o3, w3);                                                          \
    } while (0)
        int32_t t = 0;
        if (c + 12 <= 4095) {
            /* two taps per iteration, the second at an immediate offset */
            for (; t + 2 <= taps; t += 2, p += 2 * c) {
                PS_TAP16(p, 0);
                PS_TAP16(p, c);
            }
        }
        for (; t < taps; t++, p += c) {
            PS_TAP16(p, 0);
        }
#undef PS_TAP16
        edgenn_store32(out + ch, ps_pack4(e0, o0, f));
        edgenn_store32(out + ch + 4, ps_pack4(e1, o1, f));
        edgenn_store32(out + ch + 8, ps_pack4(e2, o2, f));
        edgenn_store32(out + ch + 12, ps_pack4(e3, o3, f));
    }
    for (; ch + 4 <= c; ch += 4) {
        const int8_t *p = in + ch;
        uint32_t e = 0, o = 0;
        for (int32_t t = 0; t < taps; t++, p += c) {
            const uint32_t w = edgenn_load32(p);
            e = ps_sxtab16(e, w);
            o = ps_sxtab16_ror8(o, w);
        }
        edgenn_store32(out + ch, ps_pack4(e, o, f));
    }
    for (; ch < c; ch++) {
        const int8_t *p = in + ch;
        int32_t s = 0;
        for (int32_t t = 0; t < taps; t++, p += c) {
            s += *p;
        }
        out[ch] = (int8_t)ps_final(s, f);
    }
}

#endif
