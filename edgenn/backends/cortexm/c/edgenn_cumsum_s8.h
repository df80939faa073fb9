/* Portable int8 CUMSUM, bit-exact with TFLite Micro (its ADD-like rescaling). */
#ifndef EDGENN_CUMSUM_S8_H
#define EDGENN_CUMSUM_S8_H

#include <stdint.h>

/* in / out are [outer, depth, inner], summed along depth. Each input becomes
 * mbqm((x - in_zp) << 20, in_mult, in_shift); the int32 running sum starts at `start`; each
 * output is clamp(mbqm(sum, out_mult, out_shift) + out_zp). Shifts are <= 0. */
void edgenn_cumsum_s8(const int8_t *in, int8_t *out, int32_t outer, int32_t depth,
                      int32_t inner, int32_t exclusive, int32_t reverse, int32_t in_zp,
                      int32_t in_mult, int32_t in_shift, int32_t start, int32_t out_mult,
                      int32_t out_shift, int32_t out_zp);

#endif
