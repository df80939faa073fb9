/* Data movement without arithmetic: one strided copy for slices, splits, concatenation,
 * transposes and space <-> depth, and a gather at run-time indices. */
#ifndef EDGENN_MOVEMENT_H
#define EDGENN_MOVEMENT_H

#include <stdint.h>

#define EDGENN_COPY_RANK 6

/* Copy a box of dims[0] x ... x dims[5] elements of elem_size bytes:
 *   dst[dst_offset + sum i_k * dst_strides[k]] = src[src_offset + sum i_k * src_strides[k]]
 * plan (int32, strides and offsets in bytes, strides may be negative):
 *   [0..5] dims, [6..11] source strides, [12..17] destination strides,
 *   [18] source offset, [19] destination offset.
 * elem_size is the unit moved (1, 2 or 4 bytes; the generator widens contiguous rows to
 * the largest unit every stride and offset allows); src and dst must not overlap. */
void edgenn_strided_copy(const void *src, void *dst, const int32_t *plan, int32_t elem_size);

/* TFLite's GATHER over [groups, outer, axis_size, block] params:
 *   out[g][o][c] = params[g][o][indices[g * coords + c]]   (block_bytes each)
 * An index outside [0, axis_size) writes a block of zeros (TFLite Micro stops with an
 * error; firmware has no error path, so the output is defined instead). */
void edgenn_gather(const void *params, const int32_t *indices, void *out, int32_t groups,
                   int32_t outer, int32_t axis_size, int32_t coords, int32_t block_bytes);

#endif
