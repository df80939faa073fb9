/* Portable int8 CUMSUM, bit-exact with TFLite Micro's reference_ops::CumSum. */
#include "edgenn_cumsum_s8.h"

#include "edgenn_fixed_point.h"

void edgenn_cumsum_s8(const int8_t *in, int8_t *out, int32_t outer, int32_t depth,
                      int32_t inner, int32_t exclusive, int32_t reverse, int32_t in_zp,
                      int32_t in_mult, int32_t in_shift, int32_t start, int32_t out_mult,
                      int32_t out_shift, int32_t out_zp)
{
    for (int32_t o = 0; o < outer; o++) {
        for (int32_t i = 0; i < inner; i++) {
            const int32_t base = o * depth * inner + i;
            uint32_t acc = (uint32_t)start; /* why unsigned: TFLM's int32 sum wraps */
            for (int32_t k = 0; k < depth; k++) {
                const int32_t idx = base + (reverse ? depth - 1 - k : k) * inner;
                const uint32_t shifted = (uint32_t)(in[idx] - in_zp) << 20;
                const int32_t scaled = edgenn_mbqm((int32_t)shifted, in_mult, in_shift);
                int32_t value;
                if (exclusive) {
                    value = (int32_t)acc;
                    acc += (uint32_t)scaled;
                } else {
                    acc += (uint32_t)scaled;
                    value = (int32_t)acc;
                }
                out[idx] = edgenn_requant(value, out_mult, out_shift, out_zp, -128, 127);
            }
        }
    }
}
