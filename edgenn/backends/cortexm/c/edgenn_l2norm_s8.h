/* Portable int8 L2_NORMALIZATION over the last axis, bit-exact with TFLite Micro. */
#ifndef EDGENN_L2NORM_S8_H
#define EDGENN_L2NORM_S8_H

#include <stdint.h>

/* in / out are [rows, depth]; the output is in units of 1/128 with zero point 0. */
void edgenn_l2norm_s8(const int8_t *in, int8_t *out, int32_t rows, int32_t depth,
                      int32_t in_zp);

#endif
