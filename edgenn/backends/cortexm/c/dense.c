/* Run-time input widening of the int8-weight DSP FullyConnected kernel (see dense.h). */
#include "dense.h"

#if FAST_HAVE_DSP
/* why: gcc does not fold the rotate of fast_sxtb16_ror8 into SXTB16's ROR operand (it emits
 * a separate MOV ROR), so the one-instruction form is spelled out here. */
static inline __attribute__((always_inline)) uint32_t dense_sxtb16_ror8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
#else
#define dense_sxtb16_ror8 fast_sxtb16_ror8
#endif

void dense_widen(const int8_t *x, uint32_t *dst, int depth)
{
    const int full16 = depth & ~15;
    int k = 0;
    /* four input words per iteration: the loads sit back to back (the M4 pipelines them) */
    for (; k < full16; k += 16) {
        uint32_t v0 = fast_load32(x + k);
        uint32_t v1 = fast_load32(x + k + 4);
        uint32_t v2 = fast_load32(x + k + 8);
        uint32_t v3 = fast_load32(x + k + 12);
        dst[0] = fast_sxtb16(v0);
        dst[1] = dense_sxtb16_ror8(v0);
        dst[2] = fast_sxtb16(v1);
        dst[3] = dense_sxtb16_ror8(v1);
        dst[4] = fast_sxtb16(v2);
        dst[5] = dense_sxtb16_ror8(v2);
        dst[6] = fast_sxtb16(v3);
        dst[7] = dense_sxtb16_ror8(v3);
        dst += 8;
    }
    for (; k + 4 <= depth; k += 4) {
        uint32_t v = fast_load32(x + k);
        dst[0] = fast_sxtb16(v);
        dst[1] = dense_sxtb16_ror8(v);
        dst += 2;
    }
    if (k < depth) {
        /* last partial word, byte by byte: never read past the input tensor */
        uint32_t v = 0;
        for (int i = 0; k + i < depth; i++) {
            v |= (uint32_t)(uint8_t)x[k + i] << (8 * i);
        }
        dst[0] = fast_sxtb16(v);
        dst[1] = dense_sxtb16_ror8(v);
    }
}
