/* int16 LOGISTIC and TANH as TFLite Micro's int16 reference: the input rescaled by
 * (mult, shift) to steps of 1 / (3 * 4096), sigmoid(i / 24) interpolated in a 256-entry
 * Q0.16 table (tanh as 2 sigmoid(2x) - 1), rounded to the 2^-15 output scale. */
#ifndef EDGENN_UNARY_MATH_CURVES_S16_H
#define EDGENN_UNARY_MATH_CURVES_S16_H

#include <stdint.h>

/* out may equal in. table: TFLite's sigmoid_table_uint16 (256 entries). */
void edgenn_logistic_s16(const int16_t *in, int16_t *out, int32_t n, int32_t mult,
                         int32_t shift, const uint16_t *table);
void edgenn_tanh_s16(const int16_t *in, int16_t *out, int32_t n, int32_t mult, int32_t shift,
                     const uint16_t *table);

#endif
