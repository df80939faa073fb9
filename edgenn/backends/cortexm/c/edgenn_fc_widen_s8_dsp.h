/* Shared C side of the int8-weight DSP FullyConnected kernel (kernels/dense.py).
 *
 * The dot-product loops and the requantization are generated per layer by the plug-in (its
 * KernelCall.code); this file only holds the run-time input widening they share and pulls in
 * the SIMD shims (edgenn_acle.h) the generated code uses.
 */
#ifndef EDGENN_FC_WIDEN_S8_DSP_H
#define EDGENN_FC_WIDEN_S8_DSP_H

#include <stdint.h>

#include "edgenn_fixed_point.h"

/* x: depth int8 -> 2 * ceil(depth / 4) words of int16 pairs in SXTB16 order: input word k
 * (bytes b0 b1 b2 b3 = x[4k..4k+3]) gives dst[2k] = (b0, b2) and dst[2k + 1] = (b1, b3);
 * the missing bytes of a last partial word are zero. dst must be 4-byte aligned. */
void edgenn_fc_widen_s8_dsp(const int8_t *x, uint32_t *dst, int32_t depth);

#endif
