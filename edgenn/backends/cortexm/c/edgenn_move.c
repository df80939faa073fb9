/* Data movement kernels (byte copies; no arithmetic except the requantizing copy). */
#include "edgenn_move.h"

#include <string.h>

#include "edgenn_fixed_point.h"

void edgenn_pad(const void *in, void *out, const int32_t *in_dims, const int32_t *before,
                const int32_t *out_strides, int32_t out_n, uint32_t value, int32_t elem_size)
{
    uint8_t *dst = (uint8_t *)out;
    const uint8_t *src = (const uint8_t *)in;
    if (elem_size == 1) {
        memset(dst, (int)(value & 0xffu), (size_t)out_n);
    } else {
        for (int32_t i = 0; i < out_n; i++) {
            memcpy(dst + i * elem_size, &value, (size_t)elem_size);
        }
    }
    const size_t row = (size_t)in_dims[5] * (size_t)elem_size;
    for (int32_t a = 0; a < in_dims[0]; a++)
    for (int32_t b = 0; b < in_dims[1]; b++)
    for (int32_t c = 0; c < in_dims[2]; c++)
    for (int32_t d = 0; d < in_dims[3]; d++)
    for (int32_t e = 0; e < in_dims[4]; e++) {
        const int32_t o = (a + before[0]) * out_strides[0] + (b + before[1]) * out_strides[1] +
                          (c + before[2]) * out_strides[2] + (d + before[3]) * out_strides[3] +
                          (e + before[4]) * out_strides[4] + before[5] * out_strides[5];
        memcpy(dst + o * elem_size, src, row);
        src += row;
    }
}

void edgenn_copy_blocks(const void *src, void *dst, int32_t outer, int32_t inner_bytes,
                        int32_t dst_stride)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    if (s == d && inner_bytes == dst_stride) {
        return; /* an aliased Reshape: the bytes are already in place */
    }
    for (int32_t i = 0; i < outer; i++) {
        memmove(d + i * dst_stride, s + i * inner_bytes, (size_t)inner_bytes);
    }
}

void edgenn_copy_blocks_requant_s8(const int8_t *src, int8_t *dst, int32_t outer,
                                   int32_t inner, int32_t dst_stride, int32_t in_zp,
                                   int32_t mult, int32_t shift, int32_t out_zp)
{
    for (int32_t i = 0; i < outer; i++) {
        for (int32_t j = 0; j < inner; j++) {
            dst[i * dst_stride + j] = edgenn_requant((int32_t)src[i * inner + j] - in_zp, mult,
                                                     shift, out_zp, -128, 127);
        }
    }
}
