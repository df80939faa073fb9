/* Portable reductions, bit-exact with TFLite Micro's REDUCE_MAX / REDUCE_MIN / SUM / MEAN /
 * ARG_MAX / ARG_MIN. */
#include "edgenn_reduce.h"

#include "edgenn_fixed_point.h"

/* Visit the 6-D input in order; BODY sees the input index p and the output index o. */
#define EDGENN_REDUCE_WALK(BODY)                                                           \
    do {                                                                                   \
        int32_t p = 0;                                                                     \
        for (int32_t a = 0; a < dims[0]; a++)                                              \
        for (int32_t b = 0; b < dims[1]; b++)                                              \
        for (int32_t c = 0; c < dims[2]; c++)                                              \
        for (int32_t d = 0; d < dims[3]; d++)                                              \
        for (int32_t e = 0; e < dims[4]; e++) {                                            \
            const int32_t base = a * out_strides[0] + b * out_strides[1] +                 \
                                 c * out_strides[2] + d * out_strides[3] +                 \
                                 e * out_strides[4];                                       \
            for (int32_t f = 0; f < dims[5]; f++, p++) {                                   \
                const int32_t o = base + f * out_strides[5];                               \
                BODY;                                                                      \
            }                                                                              \
        }                                                                                  \
    } while (0)

void edgenn_reduce_extreme_s8(const int8_t *in, int8_t *out, const int32_t *dims,
                              const int32_t *out_strides, int32_t out_n, int32_t largest)
{
    /* why flip: one max loop serves both; min(x) = ~max(~x) and ~ maps int8 onto itself */
    const int8_t flip = largest ? 0 : (int8_t)-1;
    for (int32_t j = 0; j < out_n; j++) {
        out[j] = -128;
    }
    EDGENN_REDUCE_WALK({
        const int8_t v = (int8_t)(in[p] ^ flip);
        if (v > out[o]) {
            out[o] = v;
        }
    });
    for (int32_t j = 0; j < out_n; j++) {
        out[j] = (int8_t)(out[j] ^ flip);
    }
}

void edgenn_reduce_sum_s8(const int8_t *in, int8_t *out, int32_t *scratch, const int32_t *dims,
                          const int32_t *out_strides, int32_t out_n, int32_t offset,
                          int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t j = 0; j < out_n; j++) {
        scratch[j] = 0;
    }
    EDGENN_REDUCE_WALK(scratch[o] += in[p]);
    for (int32_t j = 0; j < out_n; j++) {
        out[j] = edgenn_requant(scratch[j] - offset, mult, shift, out_zp, -128, 127);
    }
}

void edgenn_reduce_sum_s16(const int16_t *in, int16_t *out, int32_t *scratch,
                           const int32_t *dims, const int32_t *out_strides, int32_t out_n,
                           int32_t offset, int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t j = 0; j < out_n; j++) {
        scratch[j] = 0;
    }
    EDGENN_REDUCE_WALK(scratch[o] += in[p]);
    for (int32_t j = 0; j < out_n; j++) {
        const int32_t v = edgenn_mbqm(scratch[j] - offset, mult, shift) + out_zp;
        out[j] = (int16_t)edgenn_clamp(v, -32768, 32767);
    }
}

void edgenn_arg_s8(const int8_t *in, int32_t *out, int32_t outer, int32_t axis, int32_t inner,
                   int32_t largest, int32_t last)
{
    const int8_t flip = largest ? 0 : (int8_t)-1;
    for (int32_t o = 0; o < outer; o++) {
        const int8_t *row = in + o * axis * inner;
        for (int32_t i = 0; i < inner; i++) {
            int8_t best = (int8_t)(row[i] ^ flip);
            int32_t at = 0;
            for (int32_t k = 1; k < axis; k++) {
                const int8_t v = (int8_t)(row[k * inner + i] ^ flip);
                if (v > best || (last && v == best)) {
                    best = v;
                    at = k;
                }
            }
            out[o * inner + i] = at;
        }
    }
}
