/* Fast int8 MaxPool2D for ARMv7E-M: 4 channels per word, SSUB8 + SEL per tap (C % 4 == 0).
 * Bit-exact with TFLite Micro's reference MaxPool (padding taps are skipped). */
#ifndef EDGENN_MAXPOOL_S8_DSP_H
#define EDGENN_MAXPOOL_S8_DSP_H

#include <stdint.h>

void edgenn_maxpool_s8_dsp(const int8_t *in, int8_t *out, int32_t in_h, int32_t in_w, int32_t c,
                           int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w, int32_t stride_h,
                           int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t act_min,
                           int32_t act_max);

#endif
