/* The inner step of the fused chain's one-channel producer (edgenn_fused_chain_s8_dsp.c): a 3x3
 * filter's nine taps as five int16-pair words, applied to two neighbouring output pixels at
 * once (1x2 output reuse: every weight word loaded once serves both pixels).
 *
 * x: the gathered tap pairs of the two pixels, x[0..4] and x[5..9]; w0..w4: the packed
 * weight pairs (held in registers by the caller along a row); bias: the accumulator start. */
#ifndef EDGENN_CONV_S8_1CH_MAC_H
#define EDGENN_CONV_S8_1CH_MAC_H

#include <stdint.h>

#include "edgenn_acle.h"

EDGENN_INLINE void edgenn_conv1ch_3x3_pair(const uint32_t *x, uint32_t w0, uint32_t w1,
                                           uint32_t w2, uint32_t w3, uint32_t w4,
                                           int32_t bias, int32_t *a_out, int32_t *b_out) {
    int32_t a = edgenn_smlad(x[0], w0, bias);
    int32_t b = edgenn_smlad(x[5], w0, bias);
    a = edgenn_smlad(x[1], w1, a);
    b = edgenn_smlad(x[6], w1, b);
    a = edgenn_smlad(x[2], w2, a);
    b = edgenn_smlad(x[7], w2, b);
    a = edgenn_smlad(x[3], w3, a);
    b = edgenn_smlad(x[8], w3, b);
    a = edgenn_smlad(x[4], w4, a);
    b = edgenn_smlad(x[9], w4, b);
    *a_out = a;
    *b_out = b;
}

#endif
