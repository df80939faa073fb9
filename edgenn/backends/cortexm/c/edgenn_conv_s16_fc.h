/* int16 x int8 (TFLite 16x8) fully connected: out[n][c] = rescale(sum_k x[n][k] w[c][k] + b[c]),
 * weights [Cout][K] in pair order (edgenn_conv_s16_mac.h). */
#ifndef EDGENN_CONV_S16_FC_H
#define EDGENN_CONV_S16_FC_H

#include <stdint.h>

void edgenn_fc_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                   const int32_t *mult, const int32_t *shift, int32_t batch, int32_t depth,
                   int32_t out_c, int32_t act_min, int32_t act_max, int32_t mode);

#endif
