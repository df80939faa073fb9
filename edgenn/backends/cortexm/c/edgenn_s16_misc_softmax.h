/* Portable int16 softmax over the last axis, bit-exact with TFLite Micro's SoftmaxInt16:
 * exp and 1 / (1 + x) from 513-entry int16 tables with linear interpolation. */
#ifndef EDGENN_S16_MISC_SOFTMAX_H
#define EDGENN_S16_MISC_SOFTMAX_H

#include <stdint.h>

/* mult / shift rescale a difference to the row maximum so that -65535 means -10;
 * exp_lut covers [-10, 0], recip_lut [0, 1] (513 entries each). Output scale 1/32768. */
void edgenn_softmax_s16(const int16_t *in, int16_t *out, int32_t rows, int32_t depth,
                        int32_t mult, int32_t shift, const int16_t *exp_lut,
                        const int16_t *recip_lut);

/* int8 input, int16 output (scale 1/65536, zero point -32768): TFLM's gemmlowp softmax with
 * the exps tabulated per difference (exp_lut Q0.31, acc_lut Q12.19, 256 entries each). */
void edgenn_softmax_s8_s16(const int8_t *in, int16_t *out, int32_t rows, int32_t depth,
                           const int32_t *exp_lut, const int32_t *acc_lut, int32_t diff_min);

#endif
