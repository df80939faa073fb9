/* The DSP instructions the kernels use, as edgenn_-prefixed inline functions: the compiler's
 * ACLE intrinsics (<arm_acle.h>) or inline asm on cores with the DSP extension (Cortex-M4/M7/
 * M33...), plain C with the same results everywhere else (Armv6-M, the host for the ctypes
 * tests).
 *
 * why a prefix: names such as __smlad, __ror or __ssat are reserved to the implementation;
 * CMSIS's cmsis_gcc.h (__SMLAD, __ROR, __SSAT, ...) and newer compilers' arm_acle.h define
 * them, so a firmware that includes those next to the edgenn runtime must not see a second
 * definition. Only edgenn_* / EDGENN_* names are defined here.
 *
 * edgenn_ssat / edgenn_usat are macros on DSP cores: SSAT / USAT take the bit count as an
 * immediate, so it must be a constant expression there. */
#ifndef EDGENN_ACLE_H
#define EDGENN_ACLE_H

#include <stdint.h>

#define EDGENN_ACLE_INLINE static inline __attribute__((always_inline))
/* the same for the kernels' own helpers: why always_inline: their loops are tuned for the
 * inlined code (a call in an inner loop would cost more than the helper) */
#define EDGENN_INLINE EDGENN_ACLE_INLINE

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define EDGENN_HAVE_DSP 1

/* dual 16x16 multiply, both products added to the accumulator (wraps like the hardware) */
EDGENN_ACLE_INLINE int32_t edgenn_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlad(a, b, acc);
}
/* the same with b's halves exchanged */
EDGENN_ACLE_INLINE int32_t edgenn_smladx(uint32_t a, uint32_t b, int32_t acc)
{
    return __smladx(a, b, acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smuad(uint32_t a, uint32_t b) { return __smuad(a, b); }
/* both products added to a 64-bit accumulator. why a macro: through an inline wrapper gcc
 * 12 allocates the int16 kernels' SMLALD loops differently (one more instruction a step) */
#define edgenn_smlald(a, b, acc) __smlald((a), (b), (acc))
/* one 16x16 product of the bottom (b) / top (t) halves of a and b, added to acc */
EDGENN_ACLE_INLINE int32_t edgenn_smlabb(int32_t a, int32_t b, int32_t acc)
{
    return __smlabb(a, b, acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlabt(int32_t a, int32_t b, int32_t acc)
{
    return __smlabt(a, b, acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlatb(int32_t a, int32_t b, int32_t acc)
{
    return __smlatb(a, b, acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlatt(int32_t a, int32_t b, int32_t acc)
{
    return __smlatt(a, b, acc);
}
/* sign-extend bytes 0 and 2 into two halfwords */
EDGENN_ACLE_INLINE uint32_t edgenn_sxtb16(uint32_t x) { return __sxtb16(x); }
/* sign-extend bytes 1 and 3: one SXTB16 with ROR #8 (gcc turns a C rotate into a separate
 * ROR, so the rotation is spelled out) */
EDGENN_ACLE_INLINE uint32_t edgenn_sxtb16_ror8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
/* a + sign-extended bytes 0 and 2 of b, halfword-wise */
EDGENN_ACLE_INLINE uint32_t edgenn_sxtab16(uint32_t a, uint32_t b) { return __sxtab16(a, b); }
/* the same with bytes 1 and 3 of b (SXTAB16 with its ROR #8 operand) */
EDGENN_ACLE_INLINE uint32_t edgenn_sxtab16_ror8(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* halfword-wise saturating add, wrapping add and wrapping subtract */
EDGENN_ACLE_INLINE uint32_t edgenn_qadd16(uint32_t a, uint32_t b)
{
    return (uint32_t)__qadd16(a, b);
}
EDGENN_ACLE_INLINE uint32_t edgenn_sadd16(uint32_t a, uint32_t b)
{
    return (uint32_t)__sadd16(a, b);
}
EDGENN_ACLE_INLINE uint32_t edgenn_ssub16(uint32_t a, uint32_t b)
{
    return (uint32_t)__ssub16(a, b);
}
/* saturate to a signed (unsigned) range of `bits` bits; bits is an immediate */
#define edgenn_ssat(x, bits) __ssat((x), (bits))
#define edgenn_usat(x, bits) __usat((x), (bits))
/* (a * b + 2^31) >> 32 */
EDGENN_ACLE_INLINE int32_t edgenn_smmulr(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* (acc << 32 + a * b) >> 32, truncating */
EDGENN_ACLE_INLINE int32_t edgenn_smmla(int32_t a, int32_t b, int32_t acc)
{
    int32_t r;
    __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
/* per signed byte max: a - b sets the GE flags (SSUB8); SEL then picks a's byte where
 * a >= b, else b's */
EDGENN_ACLE_INLINE uint32_t edgenn_max_s8x4(uint32_t a, uint32_t b)
{
    (void)__ssub8(a, b);
    return __sel(a, b);
}

#else
#define EDGENN_HAVE_DSP 0

EDGENN_ACLE_INLINE int32_t edgenn_acle_lo16(uint32_t x) { return (int32_t)(int16_t)(x & 0xFFFFu); }
EDGENN_ACLE_INLINE int32_t edgenn_acle_hi16(uint32_t x) { return (int32_t)(int16_t)(x >> 16); }
EDGENN_ACLE_INLINE uint32_t edgenn_acle_pack16(int32_t lo, int32_t hi)
{
    return ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
}
/* saturate to a signed range of `bits` bits (1..32) */
EDGENN_ACLE_INLINE int32_t edgenn_acle_ssat(int32_t x, uint32_t bits)
{
    int32_t hi = (int32_t)((1u << (bits - 1u)) - 1u);
    int32_t lo = -hi - 1;
    return x < lo ? lo : (x > hi ? hi : x);
}
/* saturate to an unsigned range of `bits` bits (0..31) */
EDGENN_ACLE_INLINE uint32_t edgenn_acle_usat(int32_t x, uint32_t bits)
{
    int32_t hi = (int32_t)((1u << bits) - 1u);
    return (uint32_t)(x < 0 ? 0 : (x > hi ? hi : x));
}
#define edgenn_ssat(x, bits) edgenn_acle_ssat((x), (bits))
#define edgenn_usat(x, bits) edgenn_acle_usat((x), (bits))

EDGENN_ACLE_INLINE int32_t edgenn_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    int32_t p0 = (int32_t)(int16_t)(a & 0xFFFFu) * (int32_t)(int16_t)(b & 0xFFFFu);
    int32_t p1 = (int32_t)(int16_t)(a >> 16) * (int32_t)(int16_t)(b >> 16);
    return (int32_t)((uint32_t)acc + (uint32_t)p0 + (uint32_t)p1); /* wraps as the core does */
}
EDGENN_ACLE_INLINE int32_t edgenn_smladx(uint32_t a, uint32_t b, int32_t acc)
{
    uint32_t p0 = (uint32_t)(edgenn_acle_lo16(a) * edgenn_acle_hi16(b));
    uint32_t p1 = (uint32_t)(edgenn_acle_hi16(a) * edgenn_acle_lo16(b));
    return (int32_t)((uint32_t)acc + p0 + p1);
}
EDGENN_ACLE_INLINE int32_t edgenn_smuad(uint32_t a, uint32_t b)
{
    uint32_t p0 = (uint32_t)(edgenn_acle_lo16(a) * edgenn_acle_lo16(b));
    uint32_t p1 = (uint32_t)(edgenn_acle_hi16(a) * edgenn_acle_hi16(b));
    return (int32_t)(p0 + p1); /* wraps as the core does */
}
/* why the int32 sum: the kernels' products (int16 x int8) cannot reach it; SMLALD itself
 * adds the exact products, which differs only where both are (-2^15)^2 */
EDGENN_ACLE_INLINE int64_t edgenn_smlald(uint32_t a, uint32_t b, int64_t acc)
{
    return acc + (int64_t)edgenn_smuad(a, b);
}
/* the products wrap into the accumulator as the core does */
EDGENN_ACLE_INLINE int32_t edgenn_acle_mla16(int32_t x, int32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(x * y));
}
EDGENN_ACLE_INLINE int32_t edgenn_smlabb(int32_t a, int32_t b, int32_t acc)
{
    return edgenn_acle_mla16(edgenn_acle_lo16((uint32_t)a), edgenn_acle_lo16((uint32_t)b), acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlabt(int32_t a, int32_t b, int32_t acc)
{
    return edgenn_acle_mla16(edgenn_acle_lo16((uint32_t)a), edgenn_acle_hi16((uint32_t)b), acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlatb(int32_t a, int32_t b, int32_t acc)
{
    return edgenn_acle_mla16(edgenn_acle_hi16((uint32_t)a), edgenn_acle_lo16((uint32_t)b), acc);
}
EDGENN_ACLE_INLINE int32_t edgenn_smlatt(int32_t a, int32_t b, int32_t acc)
{
    return edgenn_acle_mla16(edgenn_acle_hi16((uint32_t)a), edgenn_acle_hi16((uint32_t)b), acc);
}
EDGENN_ACLE_INLINE uint32_t edgenn_sxtb16(uint32_t x)
{
    uint32_t lo = (uint32_t)(int32_t)(int8_t)(x & 0xFFu) & 0xFFFFu;
    uint32_t hi = (uint32_t)(int32_t)(int8_t)((x >> 16) & 0xFFu) & 0xFFFFu;
    return lo | (hi << 16);
}
EDGENN_ACLE_INLINE uint32_t edgenn_sxtb16_ror8(uint32_t x)
{
    return edgenn_sxtb16((x >> 8) | (x << 24));
}
EDGENN_ACLE_INLINE uint32_t edgenn_sxtab16(uint32_t a, uint32_t b)
{
    uint32_t lo = (a + (uint32_t)(int32_t)(int8_t)(b & 0xFFu)) & 0xFFFFu;
    uint32_t hi = ((a >> 16) + (uint32_t)(int32_t)(int8_t)((b >> 16) & 0xFFu)) & 0xFFFFu;
    return lo | (hi << 16);
}
EDGENN_ACLE_INLINE uint32_t edgenn_sxtab16_ror8(uint32_t a, uint32_t b)
{
    return edgenn_sxtab16(a, (b >> 8) | (b << 24));
}
EDGENN_ACLE_INLINE uint32_t edgenn_qadd16(uint32_t a, uint32_t b)
{
    return edgenn_acle_pack16(edgenn_acle_ssat(edgenn_acle_lo16(a) + edgenn_acle_lo16(b), 16),
                              edgenn_acle_ssat(edgenn_acle_hi16(a) + edgenn_acle_hi16(b), 16));
}
EDGENN_ACLE_INLINE uint32_t edgenn_sadd16(uint32_t a, uint32_t b)
{
    return edgenn_acle_pack16(edgenn_acle_lo16(a) + edgenn_acle_lo16(b),
                              edgenn_acle_hi16(a) + edgenn_acle_hi16(b));
}
EDGENN_ACLE_INLINE uint32_t edgenn_ssub16(uint32_t a, uint32_t b)
{
    return edgenn_acle_pack16(edgenn_acle_lo16(a) - edgenn_acle_lo16(b),
                              edgenn_acle_hi16(a) - edgenn_acle_hi16(b));
}
EDGENN_ACLE_INLINE int32_t edgenn_smmulr(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + 0x80000000LL) >> 32);
}
EDGENN_ACLE_INLINE int32_t edgenn_smmla(int32_t a, int32_t b, int32_t acc)
{
    return (int32_t)((((int64_t)acc * 4294967296LL) + (int64_t)a * b) >> 32);
}
EDGENN_ACLE_INLINE uint32_t edgenn_max_s8x4(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i += 8) {
        int8_t x = (int8_t)(a >> i), y = (int8_t)(b >> i);
        r |= (uint32_t)(uint8_t)(x >= y ? x : y) << i;
    }
    return r;
}
#endif

/* saturate to int8 (one SSAT #8 on DSP cores) */
EDGENN_ACLE_INLINE int32_t edgenn_ssat8(int32_t v) { return edgenn_ssat(v, 8); }

/* unaligned 32-bit load / store (LDR/STR allow unaligned addresses on ARMv7-M) */
EDGENN_ACLE_INLINE uint32_t edgenn_load32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
EDGENN_ACLE_INLINE void edgenn_store32(void *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }

/* rotate right by r (0..31): gcc emits one ROR */
EDGENN_ACLE_INLINE uint32_t edgenn_ror(uint32_t x, uint32_t r)
{
    r &= 31u;
    return r == 0u ? x : (x >> r) | (x << (32u - r));
}

/* PKHBT / PKHTB: a's bottom (top) halfword with the other half from b shifted left (right)
 * by sh (PKHTB: 1..16, where the hardware's arithmetic shift gives the same low half); plain
 * C on every core (gcc forms the instruction where it pays; asm would need sh an immediate) */
EDGENN_ACLE_INLINE uint32_t edgenn_pkhbt(uint32_t a, uint32_t b, uint32_t sh)
{
    return (a & 0xFFFFu) | ((b << sh) & 0xFFFF0000u);
}
EDGENN_ACLE_INLINE uint32_t edgenn_pkhtb(uint32_t a, uint32_t b, uint32_t sh)
{
    return (a & 0xFFFF0000u) | ((b >> sh) & 0xFFFFu);
}

#endif
