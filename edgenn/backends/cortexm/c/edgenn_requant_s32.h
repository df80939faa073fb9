/* Portable QUANTIZE between int32 and int8 / int16 tensors (TFLite Micro's Requantize with
 * an int32 side: int32 -> int8, int32 -> int16, int8 -> int32, int16 -> int32). */
#ifndef EDGENN_REQUANT_S32_H
#define EDGENN_REQUANT_S32_H

#include <stdint.h>

/* out = clamp(MultiplyByQuantizedMultiplier(x - in_zp, mult, shift) + out_zp) with both
 * additions in int32 wrapping as the C++ does, clamped to the output type. */
void edgenn_requant_s32_s8(const int32_t *in, int8_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_requant_s32_s16(const int32_t *in, int16_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_requant_s8_s32(const int8_t *in, int32_t *out, int32_t n, int32_t in_zp,
                           int32_t mult, int32_t shift, int32_t out_zp);
void edgenn_requant_s16_s32(const int16_t *in, int32_t *out, int32_t n, int32_t in_zp,
                            int32_t mult, int32_t shift, int32_t out_zp);

#endif
