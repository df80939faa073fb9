/* int16 x int8 fully connected, bit-exact with TFLite Micro's int16 FullyConnected: two output
 * rows at a time over the input with SMLAD (or SMLALD when an int32 sum could overflow). */
#include "edgenn_conv_s16_fc.h"

#include "edgenn_conv_s16_mac.h"

void edgenn_fc_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias,
                   const int32_t *mult, const int32_t *shift, int32_t batch, int32_t depth,
                   int32_t out_c, int32_t act_min, int32_t act_max, int32_t mode)
{
    /* one run covering the whole row: the dense layer is a 1x1 window */
    const int32_t run[3] = {0, 0, depth};
    for (int32_t n = 0; n < batch; n++) {
        edgenn_s16_pixel(in + n * depth, out + n * out_c, w, bias, mult, shift, run, 1, depth,
                         out_c, 1, depth, act_min, act_max, mode);
    }
}
