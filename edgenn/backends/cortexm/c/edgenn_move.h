/* Data movement for any element size: pad, block copies (concat, reshape). Transposes and
 * other strided gathers are edgenn_strided_copy's (edgenn_movement.h). */
#ifndef EDGENN_MOVE_H
#define EDGENN_MOVE_H

#include <stdint.h>

/* fill the output with `value` (elem_size bytes, little-endian), then copy each input row
 * (dims[5] elements) to its place: out offset = sum (i_k + before[k]) * out_strides[k]. */
void edgenn_pad(const void *in, void *out, const int32_t *in_dims, const int32_t *before,
                const int32_t *out_strides, int32_t out_n, uint32_t value, int32_t elem_size);

/* outer blocks of inner_bytes, source dense, destination every dst_stride bytes */
void edgenn_copy_blocks(const void *src, void *dst, int32_t outer, int32_t inner_bytes,
                        int32_t dst_stride);

/* the same for int8 with a requantization on the way */
void edgenn_copy_blocks_requant_s8(const int8_t *src, int8_t *dst, int32_t outer,
                                   int32_t inner, int32_t dst_stride, int32_t in_zp,
                                   int32_t mult, int32_t shift, int32_t out_zp);

#endif
