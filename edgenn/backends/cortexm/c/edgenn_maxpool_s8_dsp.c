/* 4-lane SIMD int8 max pooling (see edgenn_maxpool_s8_dsp.h). */
#include "edgenn_maxpool_s8_dsp.h"

#include "edgenn_fixed_point.h"

static inline int fpool_max(int a, int b) { return a > b ? a : b; }
static inline int fpool_min(int a, int b) { return a < b ? a : b; }

/* per byte min(a, b): SEL takes b's byte where a - b >= 0 */
EDGENN_INLINE uint32_t fpool_min4(uint32_t a, uint32_t b) { return edgenn_max_s8x4(a, b) ^ a ^ b; }

void edgenn_maxpool_s8_dsp(const int8_t *in, int8_t *out, int32_t in_h, int32_t in_w, int32_t c,
                           int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w, int32_t stride_h,
                           int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t act_min,
                           int32_t act_max)
{
    const int words = c >> 2;
    const int row = in_w * c;
    const int clamp_lo = act_min > -128, clamp_hi = act_max < 127;
    const uint32_t lo4 = 0x01010101u * (uint8_t)act_min;
    const uint32_t hi4 = 0x01010101u * (uint8_t)act_max;
    int8_t *o = out;
    for (int oy = 0; oy < out_h; oy++) {
        const int y0 = fpool_max(oy * stride_h - pad_t, 0);
        const int y1 = fpool_min(oy * stride_h - pad_t + k_h, in_h);
        for (int ox = 0; ox < out_w; ox++) {
            const int x0 = fpool_max(ox * stride_w - pad_l, 0);
            const int x1 = fpool_min(ox * stride_w - pad_l + k_w, in_w);
            const int8_t *first = in + y0 * row + x0 * c;
            if (k_h == 2 && k_w == 2 && y1 - y0 == 2 && x1 - x0 == 2) {
                /* the common 2x2 window, all 4 taps inside */
                const int8_t *p = first;
                for (int i = 0; i < words; i++, p += 4, o += 4) {
                    uint32_t a = edgenn_load32(p), b = edgenn_load32(p + c);
                    uint32_t d = edgenn_load32(p + row), e = edgenn_load32(p + row + c);
                    uint32_t m = edgenn_max_s8x4(edgenn_max_s8x4(a, b), edgenn_max_s8x4(d, e));
                    if (clamp_lo) {
                        m = edgenn_max_s8x4(m, lo4);
                    }
                    if (clamp_hi) {
                        m = fpool_min4(m, hi4);
                    }
                    edgenn_store32(o, m);
                }
                continue;
            }
            for (int i = 0; i < words; i++, o += 4) {
                uint32_t m = 0x80808080u; /* -128 in every lane */
                for (int y = y0; y < y1; y++) {
                    const int8_t *p = in + y * row + x0 * c + 4 * i;
                    for (int x = x0; x < x1; x++, p += c) {
                        m = edgenn_max_s8x4(m, edgenn_load32(p));
                    }
                }
                if (clamp_lo) {
                    m = edgenn_max_s8x4(m, lo4);
                }
                if (clamp_hi) {
                    m = fpool_min4(m, hi4);
                }
                edgenn_store32(o, m);
            }
        }
    }
}
