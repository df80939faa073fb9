/* Run-time input widening of the int8-weight DSP FullyConnected kernel (see
 * edgenn_fc_widen_s8_dsp.h). */
#include "edgenn_fc_widen_s8_dsp.h"

void edgenn_fc_widen_s8_dsp(const int8_t *x, uint32_t *dst, int32_t depth)
{
    const int full16 = depth & ~15;
    int k = 0;
    /* four input words per iteration: the loads sit back to back (the M4 pipelines them) */
    for (; k < full16; k += 16) {
        uint32_t v0 = edgenn_load32(x + k);
        uint32_t v1 = edgenn_load32(x + k + 4);
        uint32_t v2 = edgenn_load32(x + k + 8);
        uint32_t v3 = edgenn_load32(x + k + 12);
        dst[0] = edgenn_sxtb16(v0);
        dst[1] = edgenn_sxtb16_ror8(v0);
        dst[2] = edgenn_sxtb16(v1);
        dst[3] = edgenn_sxtb16_ror8(v1);
        dst[4] = edgenn_sxtb16(v2);
        dst[5] = edgenn_sxtb16_ror8(v2);
        dst[6] = edgenn_sxtb16(v3);
        dst[7] = edgenn_sxtb16_ror8(v3);
        dst += 8;
    }
    for (; k + 4 <= depth; k += 4) {
        uint32_t v = edgenn_load32(x + k);
        dst[0] = edgenn_sxtb16(v);
        dst[1] = edgenn_sxtb16_ror8(v);
        dst += 2;
    }
    if (k < depth) {
        /* last partial word, byte by byte: never read past the input tensor */
        uint32_t v = 0;
        for (int i = 0; k + i < depth; i++) {
            v |= (uint32_t)(uint8_t)x[k + i] << (8 * i);
        }
        dst[0] = edgenn_sxtb16(v);
        dst[1] = edgenn_sxtb16_ror8(v);
    }
}
