/* Portable reductions over any axes (6-D; output strides 0 on reduced axes): max / min of
 * int8, sums of int8 / int16 requantized (SUM, and MEAN with 1/count in the multiplier), and
 * the arg max / arg min of int8 along one axis. Bit-exact with TFLite Micro. */
#ifndef EDGENN_REDUCE_H
#define EDGENN_REDUCE_H

#include <stdint.h>

/* out[j] = max (largest != 0) or min over the input elements that map to j. */
void edgenn_reduce_extreme_s8(const int8_t *in, int8_t *out, const int32_t *dims,
                              const int32_t *out_strides, int32_t out_n, int32_t largest);

/* scratch: out_n int32 sums; out[j] = clamp(mbqm(sum_j - offset, mult, shift) + out_zp). */
void edgenn_reduce_sum_s8(const int8_t *in, int8_t *out, int32_t *scratch, const int32_t *dims,
                          const int32_t *out_strides, int32_t out_n, int32_t offset,
                          int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_reduce_sum_s16(const int16_t *in, int16_t *out, int32_t *scratch,
                           const int32_t *dims, const int32_t *out_strides, int32_t out_n,
                           int32_t offset, int32_t mult, int32_t shift, int32_t out_zp);

/* in is [outer, axis, inner]; out[o * inner + i] is the index of the first (last != 0: the
 * last) largest (largest != 0) or smallest value along the axis. */
void edgenn_arg_s8(const int8_t *in, int32_t *out, int32_t outer, int32_t axis, int32_t inner,
                   int32_t largest, int32_t last);

#endif
