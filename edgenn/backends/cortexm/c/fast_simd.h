/* SIMD helpers of the fast_* kernels: ACLE on ARMv7E-M, plain C with identical results on any
 * other host (so the kernels build with the host gcc for ctypes tests against the reference).
 */
#ifndef FAST_SIMD_H
#define FAST_SIMD_H

#include <stdint.h>

#define FAST_INLINE static inline __attribute__((always_inline))

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define FAST_HAVE_DSP 1
FAST_INLINE int32_t fast_smlad(uint32_t x, uint32_t y, int32_t acc) { return __smlad(x, y, acc); }
FAST_INLINE uint32_t fast_sxtb16(uint32_t x) { return __sxtb16(x); }
/* sign-extend bytes 1 and 3: one SXTB16 with ROR #8 (gcc turns the C rotate into a separate
 * ROR, so the rotation is spelled out) */
FAST_INLINE uint32_t fast_sxtb16_ror8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
FAST_INLINE int32_t fast_ssat8(int32_t v) { return __ssat(v, 8); }
/* (a * b + 2^31) >> 32 */
FAST_INLINE int32_t fast_smmulr(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* per byte: a - b sets the GE flags; __sel then picks a's byte where a >= b, else b's */
FAST_INLINE uint32_t fast_max4(uint32_t a, uint32_t b)
{
    (void)__ssub8(a, b);
    return __sel(a, b);
}
#else
#define FAST_HAVE_DSP 0
FAST_INLINE int32_t fast_smlad(uint32_t x, uint32_t y, int32_t acc)
{
    int32_t p0 = (int32_t)(int16_t)(x & 0xFFFFu) * (int32_t)(int16_t)(y & 0xFFFFu);
    int32_t p1 = (int32_t)(int16_t)(x >> 16) * (int32_t)(int16_t)(y >> 16);
    return (int32_t)((uint32_t)acc + (uint32_t)p0 + (uint32_t)p1); /* wraps as the core does */
}
FAST_INLINE uint32_t fast_sxtb16(uint32_t x)
{
    uint32_t lo = (uint32_t)(int32_t)(int8_t)(x & 0xFFu) & 0xFFFFu;
    uint32_t hi = (uint32_t)(int32_t)(int8_t)((x >> 16) & 0xFFu) & 0xFFFFu;
    return lo | (hi << 16);
}
FAST_INLINE uint32_t fast_sxtb16_ror8(uint32_t x) { return fast_sxtb16((x >> 8) | (x << 24)); }
FAST_INLINE int32_t fast_ssat8(int32_t v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }
FAST_INLINE int32_t fast_smmulr(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + 0x80000000LL) >> 32);
}
FAST_INLINE uint32_t fast_max4(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i += 8) {
        int8_t x = (int8_t)(a >> i), y = (int8_t)(b >> i);
        r |= (uint32_t)(uint8_t)(x >= y ? x : y) << i;
    }
    return r;
}
#endif

/* unaligned 32-bit load / store (LDR/STR allow unaligned addresses on ARMv7-M) */
FAST_INLINE uint32_t fast_load32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
FAST_INLINE void fast_store32(void *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }

/* TFLite's double-rounding MultiplyByQuantizedMultiplier(acc, mult, shift) + out_zp, clamped:
 * bit-exact with edgenn/backends/ref/kernels/fixed_point.py (mult >= 0, so the saturating case
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
