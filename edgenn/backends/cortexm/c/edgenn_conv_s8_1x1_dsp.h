/* Support of the generated int8 pointwise (1x1) convolution (kernels/pointwise.py).
 *
 * The per-layer code in model.c is generated for the layer's shape: @P@_widen (the two input
 * pixels of a pair widened to doubled int16 pairs in SXTB16 order, plus the per-pixel
 * correction 128 * sum of the pairs that the +128 weight packing needs) and @P@_run (2-pixel x
 * 4-channel SMLAD blocks in inline assembly, requantization, byte stores). It needs:
 *   - edgenn_requant_s32 (edgenn_fixed_point.h): TFLite's exact double rounding, for layers
 *     where the single-SMMLAR requantization is not provably bit-exact;
 *   - memcpy (string.h): a layer with a single output pixel stages its outputs in scratch.
 */
#ifndef EDGENN_CONV_S8_1X1_DSP_H
#define EDGENN_CONV_S8_1X1_DSP_H

#include <stdint.h>
#include <string.h>

#include "edgenn_fixed_point.h"

#endif
