/* Helpers of the generated int8 depthwise Conv2D (kernels/depthwise.py): the halfword
 * multiplies (SMLAD / SMLAxy), SMMLA and a word load, as ACLE / inline asm on ARMv7E-M and as
 * plain-C twins with identical results elsewhere (so generated layers also build on a host).
 *
 * The generated code works on one channel at a time: the channel's input plane is gathered
 * from NHWC into an int16 scratch plane bordered with the input zero point, so that a 32-bit
 * load yields two horizontally adjacent inputs ready for SMLAD against a weight pair, and
 * every window (border ones included) runs the same straight-line code. */
#ifndef EDGENN_DWCONV_S8_GEN_DSP_H
#define EDGENN_DWCONV_S8_GEN_DSP_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

/* the halfword multiply-accumulates (SMLAxy), SXTB16 ROR #8 and SMMLA of edgenn_acle.h */
EDGENN_INLINE int32_t dwk_smlabb(uint32_t x, uint32_t w, int32_t a)
{
    return edgenn_smlabb((int32_t)x, (int32_t)w, a);
}
EDGENN_INLINE int32_t dwk_smlabt(uint32_t x, uint32_t w, int32_t a)
{
    return edgenn_smlabt((int32_t)x, (int32_t)w, a);
}
EDGENN_INLINE int32_t dwk_smlatb(uint32_t x, uint32_t w, int32_t a)
{
    return edgenn_smlatb((int32_t)x, (int32_t)w, a);
}
EDGENN_INLINE int32_t dwk_smlatt(uint32_t x, uint32_t w, int32_t a)
{
    return edgenn_smlatt((int32_t)x, (int32_t)w, a);
}
EDGENN_INLINE uint32_t dwk_sxtb16_ror8(uint32_t x) { return edgenn_sxtb16_ror8(x); }
/* (ra << 32 + a * b) >> 32, truncating */
EDGENN_INLINE int32_t dwk_smmla(int32_t a, int32_t b, int32_t ra)
{
    return edgenn_smmla(a, b, ra);
}

/* two adjacent int16 plane entries (the first in the low half); p is 4-byte aligned */
EDGENN_INLINE uint32_t dwk_pair(const int16_t *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* two int8 plane entries of one channel, read from NHWC, as an int16 pair (PKHBT) */
EDGENN_INLINE uint32_t dwk_pk(int32_t lo, int32_t hi)
{
    return ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
}

/* the bytes of channels c, c+1 of one pixel (unaligned for odd channel counts: LDRH allows it) */
EDGENN_INLINE uint32_t dwk_ld16(const int8_t *p)
{
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return v;
}

/* a weight pair register: (lo << sc, hi << sc) as int16 halves (sc proven to fit) */
EDGENN_INLINE uint32_t dwk_wpair(int32_t lo, int32_t hi, int32_t sc)
{
    const int32_t f = (int32_t)1 << sc; /* why a product: a left shift of a negative is UB */
#if EDGENN_HAVE_DSP
    /* why asm: gcc packs with UXTH + ORR; PKHBT is one instruction (per channel, 2-3 pairs a
     * kernel row: it matters on layers with few outputs per channel) */
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo * f), "r"(hi * f));
    return r;
#else
    return ((uint32_t)(lo * f) & 0xFFFFu) | ((uint32_t)(hi * f) << 16);
#endif
}


/* the lower clamp after SSAT (modes whose act_min is above -128) */
EDGENN_INLINE int32_t dwk_max(int32_t v, int32_t lo) { return v < lo ? lo : v; }

#endif
